// End to end: the real service (`node scripts/start.ts` on a free port, fresh --persist-to) delivers
// signed webhooks to a receiver this test runs on 127.0.0.1; every request received is verified
// with `standardwebhooks` (the reference implementation). item.expired (at midnight) is covered by
// test/worker/webhook-delivery.test.ts.
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_CLIENTS } from "../../scripts/seed-data.ts";
import { sleep, startService, type Service } from "./support/service.ts";

const owner = DEMO_CLIENTS.find((c) => c.clientId === "demo-owner")!;

let service: Service | undefined;
let base = "";

interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
}
let receiver: Server | undefined;
let receiverBase = "";
const received: Received[] = [];
/** Status the receiver answers per path (default 200); a function sees how many times the path was hit. */
const answers = new Map<string, (hits: number) => number>();

const flat = (headers: IncomingHttpHeaders) =>
  Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : String(v ?? "")]));

async function http(method: string, path: string, token?: string, body?: unknown) {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, body: parsed };
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(
        `timed out waiting for ${what}; received: ${JSON.stringify(received.map((r) => [r.path, r.body.slice(0, 80)]))}\n${service?.output().slice(-2000) ?? ""}`,
      );
    await sleep(100);
  }
}

beforeAll(async () => {
  receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const path = req.url ?? "/";
      received.push({ path, headers: flat(req.headers), body: Buffer.concat(chunks).toString("utf8") });
      const hits = received.filter((r) => r.path === path).length;
      res.writeHead(answers.get(path)?.(hits) ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;

  // --var: the webhook settings of .dev.vars.example, even where an older .dev.vars lacks them.
  const vars = [
    "--var",
    "WEBHOOK_SECRETS_KEY:e2e-webhook-secrets-key-0123456789abcdef",
    "--var",
    "WEBHOOKS_ALLOW_PRIVATE_URLS:true",
  ];
  service = await startService("expiry-e2e-webhooks-", vars);
  base = service.base;
});

afterAll(async () => {
  try {
    await service?.stop();
  } finally {
    await new Promise((r) => receiver?.close(r));
  }
});

describe("webhooks over HTTP", () => {
  it("delivers item.created, a retried delivery with one webhook-id, and reminder.sent for a reminder due at the next minute; a deleted endpoint gets nothing more", async () => {
    const token = (
      await http("POST", "/v1/oauth/token", undefined, {
        grant_type: "client_credentials",
        client_id: owner.clientId,
        client_secret: owner.secret,
      })
    ).body.access_token as string;
    expect(token).toEqual(expect.any(String));

    const register = async (path: string, events: string[]) => {
      const res = await http("POST", "/v1/webhooks", token, {
        url: `${receiverBase}${path}`,
        events,
        description: `e2e ${path}`,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      expect(res.body.data.secret).toMatch(/^whsec_/);
      return { id: res.body.data.webhook_id as number, secret: res.body.data.secret as string, path };
    };
    const main = await register("/main", ["item.created", "reminder.sent"]);
    const flaky = await register("/flaky", ["item.created"]);
    answers.set("/flaky", (hits) => (hits === 1 ? 500 : 200));
    const doomed = await register("/doomed", ["*"]);

    const verifyAll = (hook: { secret: string; path: string }) =>
      received
        .filter((r) => r.path === hook.path)
        .map((r) => new Webhook(hook.secret).verify(r.body, r.headers) as any);

    // item.created, to all three endpoints.
    const due = new Date(Date.now() + 200 * 86_400_000).toISOString().slice(0, 10);
    const item = await http("POST", "/v1/items", token, { title: "E2E webhook permit", expiry_date: due, seqid: 0 });
    expect(item.status, JSON.stringify(item.body)).toBe(201);
    const itemId = item.body.data.item_id;
    const created = await waitFor(
      "item.created at /main",
      () => verifyAll(main).find((p) => p.type === "item.created"),
      15_000,
    );
    expect(created.data).toMatchObject({
      item_id: itemId,
      title: "E2E webhook permit",
      expiry_date: due,
      status: "pending",
      active: true,
    });
    await waitFor("item.created at /doomed", () => verifyAll(doomed)[0], 15_000);

    // The doomed endpoint is deleted: nothing more reaches it.
    expect((await http("DELETE", `/v1/webhooks/${doomed.id}`, token)).status).toBe(200);

    // A reminder due at the next minute boundary at least 5 s away (the demo company is on UTC).
    const at = new Date(Math.ceil((Date.now() + 5_000) / 60_000) * 60_000);
    const reminder = await http("POST", `/v1/items/${itemId}/reminders`, token, {
      date: at.toISOString().slice(0, 10),
      hour: at.toISOString().slice(11, 16),
    });
    expect(reminder.status, JSON.stringify(reminder.body)).toBe(201);

    // Meanwhile the flaky endpoint's first attempt failed; its retry 5 s later carries the same webhook-id.
    const flakyHits = await waitFor(
      "the flaky endpoint's retry",
      () =>
        received.filter((r) => r.path === "/flaky").length >= 2
          ? received.filter((r) => r.path === "/flaky")
          : undefined,
      20_000,
    );
    expect(flakyHits[0]!.headers["webhook-id"]).toBe(flakyHits[1]!.headers["webhook-id"]);
    for (const p of verifyAll(flaky)) expect(p).toMatchObject({ type: "item.created", data: { item_id: itemId } });
    let flakyList = await http("GET", `/v1/webhooks/${flaky.id}/deliveries`, token);
    for (let i = 0; i < 50 && flakyList.body.data?.[0]?.state !== "delivered"; i++) {
      await sleep(100);
      flakyList = await http("GET", `/v1/webhooks/${flaky.id}/deliveries`, token);
    }
    expect(flakyList.status, JSON.stringify(flakyList.body)).toBe(200);
    expect(flakyList.body.data[0]).toMatchObject({
      message_id: flakyHits[0]!.headers["webhook-id"],
      event_type: "item.created",
      attempts: 2,
      state: "delivered",
      last_status: 200,
    });

    const sent = await waitFor(
      "reminder.sent at /main",
      () =>
        verifyAll(main).find(
          (p) => p.type === "reminder.sent" && p.data.reminder.reminder_id === reminder.body.data.reminder_id,
        ),
      Math.max(0, at.getTime() - Date.now()) + 20_000,
    );
    expect(sent.data.reminder).toMatchObject({
      reminder_id: reminder.body.data.reminder_id,
      sent: true,
      state: "sent",
    });
    expect(sent.data.item).toMatchObject({ item_id: itemId, title: "E2E webhook permit" });
    expect(Date.parse(sent.timestamp)).toBeGreaterThanOrEqual(at.getTime());

    // Every request was signed for its endpoint; the deleted one got only its item.created.
    for (const hook of [main, flaky, doomed]) expect(() => verifyAll(hook)).not.toThrow();
    expect(received.filter((r) => r.path === "/doomed")).toHaveLength(1);
    const list = await http("GET", `/v1/webhooks/${main.id}/deliveries`, token);
    expect(list.status).toBe(200);
    const states = list.body.data.map((d: any) => [d.event_type, d.state]);
    expect(states).toContainEqual(["reminder.sent", "delivered"]);
    expect(states).toContainEqual(["item.created", "delivered"]);
  }, 90_000);
});
