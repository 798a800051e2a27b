// End to end: reminders delivered to channel endpoints (issue 35, part 4; docs/channels.md) by the
// real service (`node scripts/start.ts`, fresh --persist-to), to a receiver this test runs on
// 127.0.0.1 standing in for Slack incoming webhooks (WEBHOOKS_ALLOW_PRIVATE_URLS on). Every
// reminder is due at one coming minute M, one more at M + 1 minute, so the file waits for two
// minute boundaries at most:
//   - two endpoints of 4 reminders each: each message arrives once, no two requests to one endpoint
//     less than 900 ms apart (Slack's 1 a second; a slow machine only widens the gaps);
//   - an endpoint answering its first request 429 with `Retry-After: 2`: retried no sooner, then sent;
//   - endpoints that hang, answer 500 or answer 10 MB: the paced endpoints' messages all arrive before
//     the hanging one's 5 s timeout has passed twice;
//   - an endpoint answering 404: the delivery fails, the channel is disabled with its reason, a
//     `channel.disabled` webhook event (verified with `standardwebhooks`) reaches a subscribed
//     endpoint, and its reminder at M + 1 minute is `suppressed`;
//   - 30 reminders to one endpoint, paced: the server is SIGKILLed after 10 and started again on the
//     same state; every item arrives, none twice.
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OK, pacingByPath, startReceiver, type ReceivedRequest, type Receiver } from "./support/receiver.ts";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

const VARS = [
  "--var",
  "WEBHOOK_SECRETS_KEY:e2e-webhook-secrets-key-0123456789abcdef",
  "--var",
  "RATE_LIMITS:off",
  "--var",
  "WEBHOOKS_ALLOW_PRIVATE_URLS:true",
];
/** The endpoints (receiver paths) and how many reminders each gets at M. */
const AT_M = { pace_a: 4, pace_b: 4, throttle: 1, hang: 2, fail: 1, big: 1, gone: 1, kill: 30 } as const;
type Endpoint = keyof typeof AT_M;
const KILL_AFTER = 10;
const HOOK_PATH = "/hooks/channel-disabled";

const run = Math.random().toString(36).slice(2, 8);
const titleOf = (endpoint: string, i: number) => `cd-${run}-${endpoint.replace("_", "")}-${i}`;
const ITEM_IN_BODY = new RegExp(`cd-${run}-[a-z]+-\\d+`);
const itemIn = (r: ReceivedRequest) => ITEM_IN_BODY.exec(r.body)?.[0];

let service: Service | undefined;
let receiver: Receiver;
let token = "";
let throttled = false;

interface Reminder {
  endpoint: Endpoint;
  itemId: number;
  reminderId: number;
}

/** The whole minute at least `ms` away, as POST …/reminders takes it (the demo company is on UTC). */
function minuteAfter(ms: number): { at: number; date: string; hour: string } {
  const at = Math.ceil((Date.now() + ms) / 60_000) * 60_000;
  const iso = new Date(at).toISOString();
  return { at, date: iso.slice(0, 10), hour: iso.slice(11, 16) };
}

/** Runs `task` over `list`, `concurrency` at a time. */
async function inPool<T>(list: T[], concurrency: number, task: (entry: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < list.length) await task(list[next++]!);
    }),
  );
}

const http = (method: string, path: string, body?: unknown) => callApi(service!.base, method, path, token, body);
const at = (endpoint: Endpoint) => receiver.requests.filter((r) => r.path === `/${endpoint}`);
const okItems = (endpoint: Endpoint) =>
  at(endpoint)
    .filter((r) => r.status === 200)
    .map((r) => itemIn(r));

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

beforeAll(async () => {
  receiver = await startReceiver((r) => {
    switch (r.path) {
      case "/throttle":
        if (throttled) return OK;
        throttled = true;
        return { status: 429, headers: { "retry-after": "2" }, body: "rate_limited" };
      case "/hang":
        return "hang";
      case "/fail":
        return { status: 500, body: '{"error":"platform down"}' };
      case "/big":
        return "big";
      case "/gone":
        return { status: 404, body: "no_service" };
      default:
        return OK;
    }
  });
  service = await startService("expiry-e2e-channel-deliveries-", VARS);
  token = await ownerToken(service.base);
});

afterAll(async () => {
  try {
    await service?.stop();
  } finally {
    await receiver?.close();
  }
});

describe("channel deliveries against a local receiver standing in for Slack", () => {
  const channel: Partial<Record<Endpoint, number>> = {};
  /** Each endpoint's reminders: at M, and `gone`'s at M + 1 minute last. */
  const reminders: Partial<Record<Endpoint, Reminder[]>> = {};
  let hookSecret = "";
  let minute = 0;
  /** Set once every reminder is created: a later test without it fails at once instead of waiting. */
  let ready = false;
  const setUp = () => {
    if (!ready) throw new Error("the channels and reminders were not set up (see the first test)");
  };

  /** The one delivery of a reminder, as its item lists it (undefined before it fired). */
  async function deliveryOf({ endpoint, itemId, reminderId }: Reminder) {
    const res = await http("GET", `/v1/items/${itemId}/reminders`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const all = [...res.body.data.sent, ...res.body.data.queued];
    const reminder = all.find((r: { reminder_id: number }) => r.reminder_id === reminderId);
    expect(reminder, JSON.stringify(res.body.data)).toBeDefined();
    expect(reminder).toMatchObject({ channel_id: channel[endpoint], channels: ["slack"] });
    expect(reminder.deliveries.length, JSON.stringify(reminder)).toBeLessThanOrEqual(1);
    return reminder.deliveries[0] as Record<string, any> | undefined;
  }
  const sentDelivery = (reminder: Reminder) =>
    waitFor(`the ${reminder.endpoint} delivery sent`, async () => {
      const d = await deliveryOf(reminder);
      return d?.state === "sent" ? d : undefined;
    });

  it("sends each reminder at its minute once, no endpoint faster than one request in 900 ms", async () => {
    for (const endpoint of Object.keys(AT_M) as Endpoint[]) {
      const res = await http("POST", "/v1/channels", {
        type: "slack",
        name: `#${endpoint}`,
        url: `${receiver.base}/${endpoint}`,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      channel[endpoint] = res.body.data.channel_id;
    }
    const hook = await http("POST", "/v1/webhooks", {
      url: `${receiver.base}${HOOK_PATH}`,
      events: ["channel.disabled"],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    hookSecret = hook.body.data.secret;

    // The items first, then the minute (15 s ahead at least), then the reminders.
    const planned = (Object.entries(AT_M) as Array<[Endpoint, number]>).flatMap(([endpoint, count]) =>
      Array.from({ length: endpoint === "gone" ? 2 : count }, (_, i) => ({ endpoint, i, itemId: 0 })),
    );
    await inPool(planned, 6, async (p) => {
      const item = await http("POST", "/v1/items", {
        title: titleOf(p.endpoint, p.i),
        expiry_date: "2031-01-31",
        seqid: 0,
      });
      expect(item.status, JSON.stringify(item.body)).toBe(201);
      p.itemId = item.body.data.item_id;
    });
    const when = minuteAfter(10_000);
    const later = minuteAfter(when.at - Date.now() + 60_000);
    minute = when.at;
    await inPool(planned, 6, async (p) => {
      const at = p.endpoint === "gone" && p.i === 1 ? later : when;
      const res = await http("POST", `/v1/items/${p.itemId}/reminders`, {
        date: at.date,
        hour: at.hour,
        channel_id: channel[p.endpoint],
      });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
    });
    for (const p of planned) {
      const listed = await http("GET", `/v1/items/${p.itemId}/reminders`);
      expect(listed.body.data.queued, JSON.stringify(listed.body)).toHaveLength(1);
      (reminders[p.endpoint] ??= [])[p.i] = {
        endpoint: p.endpoint,
        itemId: p.itemId,
        reminderId: listed.body.data.queued[0].reminder_id,
      };
    }
    expect(Date.now(), "the reminders were created before their minute").toBeLessThan(minute);
    console.log(
      `channel-deliveries: reminders created ${((minute - Date.now()) / 1000).toFixed(1)} s before their minute`,
    );
    expect(later.at).toBe(minute + 60_000);
    ready = true;
    expect(await deliveryOf(reminders.pace_a![0]!)).toBeUndefined();

    await waitFor("the paced endpoints' messages", () => okItems("pace_a").length + okItems("pace_b").length >= 8);
    for (const endpoint of ["pace_a", "pace_b"] as const) {
      expect(okItems(endpoint).sort()).toEqual(Array.from({ length: 4 }, (_, i) => titleOf(endpoint, i)).sort());
      expect(Math.min(...at(endpoint).map((r) => r.at))).toBeGreaterThanOrEqual(minute);
      const body = JSON.parse(at(endpoint)[0]!.body);
      expect(body).toMatchObject({ text: expect.stringContaining(`cd-${run}`), blocks: expect.any(Array) });
    }
    for (const reminder of reminders.pace_a!) {
      expect(await sentDelivery(reminder)).toMatchObject({
        channel: "slack",
        channel_id: channel.pace_a,
        contact_id: null,
        state: "sent",
        attempts: 1,
        recipient: "#pace_a",
        last_error: null,
        delivered_at: expect.any(String),
      });
    }
  });

  it("honours a 429's Retry-After: 2: retried no sooner, then sent (two attempts)", async () => {
    setUp();
    await waitFor("the throttled endpoint's retry", () => okItems("throttle").length >= 1);
    const [first, second, ...more] = at("throttle");
    expect(more).toEqual([]);
    expect(first!.status).toBe(429);
    expect(second!.status).toBe(200);
    expect(itemIn(second!)).toBe(itemIn(first!));
    expect(second!.at - first!.at, "the retry waited out Retry-After").toBeGreaterThanOrEqual(2000);
    expect(await sentDelivery(reminders.throttle![0]!)).toMatchObject({ attempts: 2, last_error: null });
  });

  it("a receiver that hangs, one answering 500 and one answering 10 MB hold up no other endpoint", async () => {
    setUp();
    const hang = await waitFor("the hanging endpoint's first request", () => at("hang")[0]);
    const paced = [...at("pace_a"), ...at("pace_b")];
    expect(paced).toHaveLength(8);
    for (const r of paced) expect(r.at - hang.at, "before the hang's 5 s timeout passed twice").toBeLessThan(10_000);
    await waitFor("the 500 and the 10 MB answers", () => at("fail").length >= 1 && at("big").length >= 1);
    expect(await sentDelivery(reminders.big![0]!)).toMatchObject({ attempts: 1 });
    for (const endpoint of ["fail", "hang"] as const) {
      const delivery = await waitFor(`the ${endpoint} delivery's first attempt recorded`, async () => {
        const d = await deliveryOf(reminders[endpoint]![0]!);
        return d?.last_error ? d : undefined;
      });
      // Retried after 30 s: still pending, the next attempt set.
      expect(delivery, endpoint).toMatchObject({ state: "pending", attempts: 1, next_attempt_at: expect.any(String) });
    }
  });

  it("a 404 fails the delivery and disables the channel, with the status as its reason", async () => {
    setUp();
    const delivery = await waitFor("the 404 recorded", async () => {
      const d = await deliveryOf(reminders.gone![0]!);
      return d?.state === "failed" ? d : undefined;
    });
    expect(delivery).toMatchObject({ attempts: 1, last_error: expect.stringContaining("404") });
    const got = await http("GET", `/v1/channels/${channel.gone}`);
    expect(got.body.data).toMatchObject({ disabled: true, disabled_reason: expect.stringContaining("404") });
  });

  it("SIGKILLed while 30 deliveries to one endpoint are paced, then restarted: every item arrives, none twice", async () => {
    setUp();
    const expected = Array.from({ length: AT_M.kill }, (_, i) => titleOf("kill", i));
    // Kill between two paced requests (the 10th answered a while ago, the 11th not yet sent), or 2 s
    // after the 10th at the latest.
    await waitFor("10 paced deliveries", () => okItems("kill").length >= KILL_AFTER);
    const reached = Date.now();
    for (;;) {
      const last = at("kill").at(-1)!;
      const since = performance.timeOrigin + performance.now() - last.at;
      if ((since >= 300 && since <= 600) || Date.now() - reached > 2_000) break;
      await sleep(10);
    }
    await service!.kill();
    const beforeKill = at("kill");
    expect(beforeKill.length, "the kill came while deliveries were being paced").toBeLessThan(AT_M.kill);
    service = await startService("expiry-e2e-channel-deliveries-", VARS, { persistDir: service!.persistDir });
    token = await ownerToken(service.base);
    await waitFor("every item after the restart", () => new Set(okItems("kill")).size >= AT_M.kill, 120_000);
    const items = okItems("kill");
    expect([...new Set(items)].sort()).toEqual([...expected].sort());
    // The request in flight at the kill may be sent again after the restart (at-least-once, as an
    // email's is): that one repeat, of the last item sent before the kill, is allowed; no other.
    const repeated = items.filter((item, i) => items.indexOf(item) !== i);
    expect(repeated.length, JSON.stringify(repeated)).toBeLessThanOrEqual(1);
    if (repeated.length === 1) expect(repeated[0]).toBe(itemIn(beforeKill.at(-1)!));
    console.log(
      `channel-deliveries: ${beforeKill.length} of ${AT_M.kill} requests before the kill, ${repeated.length} repeated after the restart`,
    );
    for (const reminder of reminders.kill!) expect((await deliveryOf(reminder))?.state).toBe("sent");
  });

  it("no endpoint got two requests less than 900 ms apart", () => {
    setUp();
    const pacing = pacingByPath(receiver.requests.filter((r) => r.path !== HOOK_PATH));
    expect(pacing.map((p) => p.path).sort()).toEqual(
      Object.keys(AT_M)
        .map((e) => `/${e}`)
        .sort(),
    );
    for (const p of pacing) expect(p.minGapMs, p.path).toBeGreaterThanOrEqual(900);
  });

  it("the channel.disabled webhook event is signed and names the channel; the next reminder to it is suppressed", async () => {
    setUp();
    const event = await waitFor("the channel.disabled event", () =>
      receiver.requests.find((r) => r.path === HOOK_PATH),
    );
    const payload = new Webhook(hookSecret).verify(event.body, event.headers) as any;
    const got = await http("GET", `/v1/channels/${channel.gone}`);
    expect(payload).toMatchObject({ type: "channel.disabled", data: { channel: got.body.data, status: 404 } });
    expect(receiver.requests.filter((r) => r.path === HOOK_PATH)).toHaveLength(1);

    const delivery = await waitFor("the reminder at M + 1 minute", async () => {
      const d = await deliveryOf(reminders.gone![1]!);
      return d && d.state !== "pending" ? d : undefined;
    });
    expect(delivery).toMatchObject({ state: "suppressed", last_error: expect.stringMatching(/^channel_disabled: /) });
    expect(at("gone"), "nothing sent to the disabled channel").toHaveLength(1);
    expect(minute).toBeGreaterThan(0);
  });
});
