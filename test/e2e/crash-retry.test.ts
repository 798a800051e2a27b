// End to end: keyed creates are in flight when the whole server is killed (SIGKILL: no clean-up
// runs, wherever each request was: before its key, between its write and its response, ...). The
// server is started again on the same state and every request is retried with its key until it
// has a final answer. Each key must leave exactly one item, and each answer must be the stored one
// (201) or the documented 409 for a change whose response was lost; never a second record.
import { afterAll, expect, it } from "vitest";
import { ownerToken, sleep, startService, type Service } from "./support/service.ts";

const REQUESTS = 40;

let service: Service | undefined;

afterAll(async () => {
  await service?.stop();
});

interface Answer {
  status: number;
  body: any;
  replayed: boolean;
}

async function createItem(base: string, bearer: string, key: string, title: string): Promise<Answer> {
  const res = await fetch(`${base}/v1/items`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${bearer}`, "Idempotency-Key": key },
    body: JSON.stringify({ title, expiry_date: "2033-01-31", folder_path: `Crash/${title}` }),
  });
  return { status: res.status, body: await res.json(), replayed: res.headers.get("Idempotent-Replayed") === "true" };
}

it("a server killed mid-request loses nothing and repeats nothing: retried keys answer their stored result or 409", async () => {
  service = await startService("expiry-e2e-crash-");
  const run = crypto.randomUUID().slice(0, 8);
  const requests = Array.from({ length: REQUESTS }, (_, i) => ({
    key: `crash-${run}-${i}`,
    title: `crash ${run} ${i}`,
  }));
  const bearer = await ownerToken(service.base);

  // Fire them a few milliseconds apart, and kill the server once a quarter have been answered: the
  // others are then at every stage (waiting, claimed, written but not answered, ...).
  // The kill goes out from the answer that reaches a quarter (its signals are sent before it
  // awaits): waiting for the count in a loop let a loaded machine answer all 40 first.
  let answered = 0;
  let killed: Promise<void> | undefined;
  const first = service;
  const inFlight: Array<Promise<Answer | null>> = [];
  for (const r of requests) {
    inFlight.push(
      createItem(first.base, bearer, r.key, r.title).then(
        (a) => {
          if (a.status === 201 && ++answered >= REQUESTS / 4) killed ??= first.kill();
          return a;
        },
        () => null,
      ),
    );
    await sleep(5);
  }
  while (!killed) await sleep(2);
  await killed;
  const before = await Promise.all(inFlight);
  const answeredBeforeKill = before.filter((a) => a?.status === 201).length;

  service = await startService("expiry-e2e-crash-", [], { persistDir: service.persistDir });
  const bearer2 = await ownerToken(service.base);
  const answers = new Map<string, Answer>();
  const deadline = Date.now() + 60_000;
  for (const r of requests) {
    for (;;) {
      const answer = await createItem(service.base, bearer2, r.key, r.title);
      // "Still in progress": a killed attempt's lease (10 s) has not run out yet.
      if (answer.status === 409 && /still in progress/.test(answer.body.msg) && Date.now() < deadline) {
        await sleep(500);
        continue;
      }
      answers.set(r.key, answer);
      break;
    }
  }

  const list = await fetch(`${service.base}/v1/items?q=${encodeURIComponent(`crash ${run}`)}&limit=200`, {
    headers: { Authorization: `Bearer ${bearer2}` },
  });
  const items = ((await list.json()) as { data: Array<{ item_id: number; title: string }> }).data;
  for (const r of requests) {
    const matching = items.filter((i) => i.title === r.title);
    expect(matching, r.title).toHaveLength(1);
    const answer = answers.get(r.key)!;
    if (answer.status === 201) {
      expect(answer.body.data.item_id, r.title).toBe(matching[0]!.item_id);
    } else {
      expect(answer.status, JSON.stringify(answer.body)).toBe(409);
      expect(answer.body.msg).toMatch(
        /already applied with this Idempotency-Key, but the service stopped before its response was recorded/,
      );
      expect(answer.replayed).toBe(true);
    }
  }
  const outcomes: Record<string, number> = {};
  for (const a of answers.values()) {
    const outcome = a.status === 409 ? "response lost (409)" : a.replayed ? "replayed" : "ran after the restart";
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }
  console.log(
    `crash-retry: ${answeredBeforeKill} of ${REQUESTS} answered before the kill; retries: ${JSON.stringify(outcomes)}`,
  );
  // The kill came while requests were running: some had finished, some had not (or the test proves little).
  expect(answeredBeforeKill, "requests answered before the kill").toBeLessThan(REQUESTS);
});
