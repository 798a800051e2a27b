// End to end: recurrence rules that renew at expiry are set on long-past items while the whole
// server is killed (SIGKILL) mid-way: some rules not written, some written but not yet renewed,
// some renewed in D1 before the clock learnt of it. Started again on the same state, with the
// cron sweep run, every item with a rule is renewed exactly once, to the first occurrence not yet
// expired; every item without one is untouched.
import { afterAll, expect, it } from "vitest";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

const ITEMS = 120;
const PAST = "2020-01-15";

let service: Service | undefined;
afterAll(async () => {
  await service?.stop();
});

/** The first monthly occurrence of PAST on or after `today` (the 15th keeps its day every month). */
function caughtUp(today: string): string {
  const [y, m, d] = today.split("-").map(Number) as [number, number, number];
  const date = (yy: number, mm: number) =>
    `${yy + Math.floor((mm - 1) / 12)}-${String(((mm - 1) % 12) + 1).padStart(2, "0")}-15`;
  return d <= 15 ? date(y, m) : date(y, m + 1);
}

it("a server killed while rules catch items up renews each item exactly once", async () => {
  service = await startService("expiry-e2e-renewal-crash-");
  const bearer = await ownerToken(service.base);
  const run = crypto.randomUUID().slice(0, 8);
  const ids: number[] = [];
  for (let i = 0; i < ITEMS; i += 20) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(20, ITEMS - i) }, (_, k) =>
        callApi(service!.base, "POST", "/v1/items", bearer, {
          title: `renewal crash ${run} ${i + k}`,
          expiry_date: PAST,
        }),
      ),
    );
    for (const res of batch) {
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      ids.push(res.body.data.item_id);
    }
  }

  // Every rule set at once; the kill comes once a quarter have answered, sent from the answer's own
  // callback (its signals go out before it awaits): polling for the count let a loaded machine see
  // every answer arrive before the kill.
  let answered = 0;
  let killed: Promise<void> | undefined;
  const first = service;
  const inFlight = ids.map((id) =>
    callApi(first.base, "PATCH", `/v1/items/${id}`, bearer, {
      recurrence: { every: 1, unit: "month", renew_on: "expired" },
    }).then(
      (res) => {
        if (res.status === 200 && ++answered >= ITEMS / 4) killed ??= first.kill();
        return res;
      },
      () => null,
    ),
  );
  while (!killed) await sleep(2);
  await killed;
  const before = await Promise.all(inFlight);
  const answeredBeforeKill = before.filter((r) => r?.status === 200).length;

  service = await startService("expiry-e2e-renewal-crash-", [], { persistDir: service.persistDir });
  const bearer2 = await ownerToken(service.base);
  // The sweep replays what the clock missed (changes older than its 30 s grace) and wakes it.
  const details = async () =>
    Promise.all(
      ids.map(
        async (id) =>
          (await callApi(service!.base, "GET", `/v1/items/${id}`, bearer2)).body.data as {
            expiry_date: string;
            recurrence: unknown;
            renewals: unknown[];
          },
      ),
    );
  const today = new Date().toISOString().slice(0, 10);
  const settled = (items: Awaited<ReturnType<typeof details>>) =>
    items.every((i) => (i.recurrence === null ? i.expiry_date === PAST : i.expiry_date >= today));
  let items = await details();
  const deadline = Date.now() + 90_000;
  while (!settled(items) && Date.now() < deadline) {
    await fetch(`${service.base}/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}`).catch(
      () => undefined,
    );
    await sleep(2000);
    items = await details();
  }
  let withRule = 0;
  for (const [k, item] of items.entries()) {
    if (item.recurrence === null) {
      expect(item.expiry_date, `item ${ids[k]} without a rule`).toBe(PAST);
      expect(item.renewals).toEqual([]);
    } else {
      withRule++;
      expect(item.expiry_date, `item ${ids[k]}`).toBe(caughtUp(today));
      expect(item.renewals, `item ${ids[k]}`).toHaveLength(1);
    }
  }
  console.log(
    `renewal-crash: ${answeredBeforeKill} of ${ITEMS} rules answered before the kill; ${withRule} items have a rule, each renewed once`,
  );
  expect(answeredBeforeKill).toBeLessThan(ITEMS);
  expect(withRule).toBeGreaterThanOrEqual(answeredBeforeKill);
});
