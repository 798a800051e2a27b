import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { CHANNEL_RATES, outcomeOf, paceAt } from "../../src/company-clock/channel-deliveries";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import type { WebhookRequest } from "../../src/webhooks/delivery";
import { encryptSecret, generateSecret } from "../../src/webhooks/secrets";
import { retryAfterDelay } from "../../src/lib/time";
import {
  call,
  createAccount,
  createContact,
  createItem,
  env,
  expectShapeB,
  expectStatus,
  ok,
  type TestAccount,
} from "./helpers";
import { minutesAhead } from "./support/recipient";

// Reminders posted to channel endpoints (docs/channels.md "Delivery"): routing by channel_id on a
// reminder and a sequence step, one delivery per reminder with email's states, the platform's rate
// per endpoint, 429 and Retry-After, a 404/410 disabling the channel with channel.disabled, the
// contact's `chat` preference, and the views (deliveries[], GET /v1/deliveries). A stand-in for the
// platform replaces the clock's fetch; the e2e test uses real local receivers.

interface Request {
  url: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

const stub = (companyId: number) => clockFor(env, companyId);

/** The clock's channel sender replaced: requests captured, `answer(n)` the n-th answer (default 200 ok). */
async function platform(
  companyId: number,
  answer: (n: number, request: Request) => Response = () => new Response("ok"),
) {
  const requests: Request[] = [];
  await runInDurableObject(stub(companyId), (instance: CompanyClock) => {
    instance.channelFetch = async (input, init) => {
      const request: Request = {
        url: String(input),
        headers: Object.fromEntries(new Headers(init?.headers).entries()),
        body: String(init?.body ?? ""),
        at: Date.now(),
      };
      requests.push(request);
      return answer(requests.length, request);
    };
  });
  return requests;
}

/** One alarm run, then every send it started has recorded its outcome. */
async function runClock(companyId: number) {
  await runDurableObjectAlarm(stub(companyId));
  await runInDurableObject(stub(companyId), async (instance: CompanyClock) => {
    await instance.channelSending;
  });
}

/** The channels' rates spent (as if a while had passed since their last message). */
async function paceSpent(companyId: number) {
  await runInDurableObject(stub(companyId), (_i, state) => {
    state.storage.sql.exec("UPDATE channel_pace SET tat = ?", Date.now() - 1);
  });
}

/** Every waiting delivery due now, and the channels' rates spent (as if time had passed). */
async function fastForward(companyId: number) {
  await runInDurableObject(stub(companyId), (_i, state) => {
    const sql = state.storage.sql;
    sql.exec("UPDATE deliveries SET next_at = ? WHERE state = 'pending'", Date.now() - 1);
    sql.exec("UPDATE channel_pace SET tat = ?", Date.now() - 1);
  });
}

async function slackChannel(token: string, body: Record<string, unknown> = {}) {
  const res = await call("createChannel", "/v1/channels", {
    token,
    body: { type: "slack", name: "#facilities", url: "http://127.0.0.1:9/slack/hook", ...body },
  });
  return ok(res).body.data;
}

/** A reminder to the channel, due now (queued ahead, then moved into the past). */
async function dueReminder(account: TestAccount, itemId: number, body: Record<string, unknown>) {
  const res = await call("createItemReminder", `/v1/items/${itemId}/reminders`, {
    token: account.ownerToken,
    body: { ...minutesAhead(3), ...body },
  });
  const reminder = ok(res).body.data;
  await runInDurableObject(stub(account.companyId), (_i, state) => {
    state.storage.sql.exec(
      "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
      Date.now() - 1000,
      reminder.reminder_id,
    );
  });
  return reminder;
}

async function sentReminders(token: string, itemId: number) {
  const res = await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token });
  return ok(res).body.data.sent;
}

describe("routing a reminder to a channel endpoint", () => {
  it("takes channel_id on a reminder: its channels are the platform, it posts once, the delivery names the channel", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const contact = await createContact(account.ownerToken, { first_name: "Ada", last_name: "Lovelace" });
    const item = await createItem(account.ownerToken, { title: "Boiler inspection", contact_id: contact.contact_id });
    const requests = await platform(account.companyId);
    const reminder = await dueReminder(account, item.item_id, { channel_id: channel.channel_id });
    expect(reminder).toMatchObject({ channel_id: channel.channel_id, channels: ["slack"], group_id: null });
    await runClock(account.companyId);
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe("http://127.0.0.1:9/slack/hook");
    const body = JSON.parse(requests[0]!.body);
    expect(body.text).toContain("Boiler inspection");
    expect(JSON.stringify(body.blocks)).toContain("Ada Lovelace");
    const [sent] = await sentReminders(account.ownerToken, item.item_id);
    expect(sent!.deliveries).toEqual([
      {
        channel: "slack",
        channel_id: channel.channel_id,
        contact_id: null,
        state: "sent",
        attempts: 1,
        recipient: "#facilities",
        last_error: null,
        delivered_at: expect.any(String),
        next_attempt_at: null,
      },
    ]);
  });

  it("refuses a channel of another company, channel_id with channels or group_id, and names the field", async () => {
    const account = await createAccount();
    const other = await createAccount();
    const foreign = await slackChannel(other.ownerToken);
    const item = await createItem(account.ownerToken);
    const path = `/v1/items/${item.item_id}/reminders`;
    const post = (body: Record<string, unknown>) =>
      call("createItemReminder", path, { token: account.ownerToken, body: { ...minutesAhead(30), ...body } });
    expectShapeB(
      await post({ channel_id: foreign.channel_id }),
      400,
      new RegExp(`channel_id ${foreign.channel_id} is not a channel of the company`),
    );
    const mine = await slackChannel(account.ownerToken);
    expectShapeB(
      await post({ channel_id: mine.channel_id, channels: ["email"] }),
      400,
      /channels: give channel_id or channels/,
    );
    expectShapeB(
      await post({ channel_id: mine.channel_id, group_id: 1 }),
      400,
      /group_id: give channel_id or group_id/,
    );
    expectShapeB(await post({ channel_id: 0 }), 400, /channel_id/);
  });

  it("PATCH moves a reminder to a channel and back to contacts", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const item = await createItem(account.ownerToken);
    const created = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: account.ownerToken,
        body: minutesAhead(30),
      }),
    ).body.data;
    const path = `/v1/items/${item.item_id}/reminders/${created.reminder_id}`;
    const patch = (body: Record<string, unknown>) =>
      call("updateItemReminder", path, { token: account.ownerToken, body });
    expect(ok(await patch({ channel_id: channel.channel_id })).body.data).toMatchObject({
      channel_id: channel.channel_id,
      channels: ["slack"],
    });
    expect(ok(await patch({ channel_id: null })).body.data).toMatchObject({
      channel_id: null,
      channels: created.channels,
    });
    expect(ok(await patch({ channel_id: channel.channel_id })).body.data.channel_id).toBe(channel.channel_id);
    expect(ok(await patch({ channels: ["email"] })).body.data).toMatchObject({ channel_id: null, channels: ["email"] });
  });

  it("takes channel_id on a sequence step: the item's reminder for that step posts to the channel", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const res = await call("createReminderSequence", "/v1/reminder-sequences", {
      token: account.ownerToken,
      body: {
        name: "Escalate to Slack",
        reminders: [
          { period: 7, unit: "day", type: 1 },
          { period: 3, unit: "day", type: 1, channel_id: channel.channel_id, unless_acknowledged: true },
        ],
      },
    });
    const sequence = ok(res).body.data;
    expect(sequence.reminders.map((s) => s.channel_id)).toEqual([null, channel.channel_id]);
    const item = await createItem(account.ownerToken, { seqid: sequence.seqid, expiry_date: "2031-06-10" });
    const reminders = ok(
      await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: account.ownerToken }),
    ).body.data.queued;
    expect(reminders.map((r) => [r.date, r.channel_id, r.channels])).toEqual([
      ["2031-06-03", null, ["email"]],
      ["2031-06-07", channel.channel_id, ["slack"]],
    ]);
    const other = await createAccount();
    const foreign = await slackChannel(other.ownerToken);
    expectShapeB(
      await call("createReminderSequence", "/v1/reminder-sequences", {
        token: account.ownerToken,
        body: { name: "Foreign", reminders: [{ period: 1, unit: "day", type: 1, channel_id: foreign.channel_id }] },
      }),
      400,
      new RegExp(`reminders.0.channel_id: channel ${foreign.channel_id} is not a channel of the company`),
    );
  });
});

describe("pacing, retries and refusals", () => {
  it("holds each endpoint to its platform's rate: one Slack message a second, the rest wait for their turn", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const requests = await platform(account.companyId);
    const items = await Promise.all([1, 2, 3].map(() => createItem(account.ownerToken)));
    for (const item of items) await dueReminder(account, item.item_id, { channel_id: channel.channel_id });
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    // Their next attempt is the channel's next turn, a second on.
    const waiting = (await Promise.all(items.map((i) => sentReminders(account.ownerToken, i.item_id))))
      .flatMap((list) => list.flatMap((r) => r.deliveries))
      .filter((d) => d.state === "pending");
    expect(waiting).toHaveLength(2);
    for (const d of waiting) expect(Date.parse(d.next_attempt_at!)).toBeGreaterThan(Date.now() + 500);
    // Due again by their own clock, but not by the channel's: nothing more is sent.
    await runInDurableObject(stub(account.companyId), (_i, state) => {
      state.storage.sql.exec("UPDATE deliveries SET next_at = ? WHERE state = 'pending'", Date.now() - 1);
    });
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    await fastForward(account.companyId);
    await runClock(account.companyId);
    expect(requests).toHaveLength(2);
  });

  it("a 429 waits its Retry-After, and the endpoint sends nothing else before it", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const requests = await platform(account.companyId, (n) =>
      n === 1 ? new Response("rate_limited", { status: 429, headers: { "retry-after": "30" } }) : new Response("ok"),
    );
    const item = await createItem(account.ownerToken);
    await dueReminder(account, item.item_id, { channel_id: channel.channel_id });
    await runClock(account.companyId);
    const [delivery] = (await sentReminders(account.ownerToken, item.item_id))[0]!.deliveries;
    expect(delivery).toMatchObject({ state: "pending", attempts: 1 });
    expect(delivery!.last_error).toContain("HTTP 429");
    const wait = Date.parse(delivery!.next_attempt_at!) - Date.now();
    expect(wait).toBeGreaterThan(25_000);
    expect(wait).toBeLessThanOrEqual(30_000);
    // Another reminder to the same channel, due now: the channel is throttled till then.
    const second = await createItem(account.ownerToken);
    await dueReminder(account, second.item_id, { channel_id: channel.channel_id });
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    await fastForward(account.companyId);
    await runClock(account.companyId);
    await fastForward(account.companyId);
    await runClock(account.companyId);
    expect(requests).toHaveLength(3);
    expect((await sentReminders(account.ownerToken, item.item_id))[0]!.deliveries[0]).toMatchObject({
      state: "sent",
      attempts: 2,
    });
  });

  it("a throttle spends none of the failed attempts: a delivery answered 429 eight times is still sent", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const requests = await platform(account.companyId, (n) =>
      n <= 8 ? new Response("rate_limited", { status: 429, headers: { "retry-after": "1" } }) : new Response("ok"),
    );
    const item = await createItem(account.ownerToken);
    await dueReminder(account, item.item_id, { channel_id: channel.channel_id });
    for (let i = 0; i < 9; i++) {
      await fastForward(account.companyId);
      await runClock(account.companyId);
    }
    expect(requests).toHaveLength(9);
    expect((await sentReminders(account.ownerToken, item.item_id))[0]!.deliveries[0]).toMatchObject({
      state: "sent",
      attempts: 9,
    });
  });

  it("a 5xx or no answer is retried later; a 400 or a redirect fails at once", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const answers = [
      () => new Response("oops", { status: 503 }),
      () => new Response("invalid_payload", { status: 400 }),
      () => new Response(null, { status: 302, headers: { location: "https://example.com/" } }),
    ];
    await platform(account.companyId, (n) => answers[n - 1]?.() ?? new Response("ok"));
    const items = [];
    for (let i = 0; i < 3; i++) {
      const item = await createItem(account.ownerToken);
      items.push(item);
      await dueReminder(account, item.item_id, { channel_id: channel.channel_id });
      await paceSpent(account.companyId);
      await runClock(account.companyId);
    }
    const deliveries = await Promise.all(
      items.map(async (i) => (await sentReminders(account.ownerToken, i.item_id))[0]!.deliveries[0]!),
    );
    expect(
      deliveries.map((d) => d.state),
      JSON.stringify(deliveries),
    ).toEqual(["pending", "failed", "failed"]);
    expect(Date.parse(deliveries[0]!.next_attempt_at!) - Date.now()).toBeGreaterThan(20_000);
    expect(deliveries[1]!.last_error).toBe("the platform answered HTTP 400: invalid_payload");
    expect(deliveries[2]!.last_error).toContain("HTTP 302 (a redirect, not followed)");
    // The channel stays enabled.
    expect(
      ok(await call("getChannel", `/v1/channels/${channel.channel_id}`, { token: account.ownerToken })).body.data
        .disabled,
    ).toBe(false);
  });

  it("a 404 disables the channel with its reason and channel.disabled; its other deliveries are suppressed", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const secret = generateSecret();
    await env.DB.prepare(
      "INSERT INTO webhook_endpoints (company_id, url, events, secret_ciphertext, created_by) VALUES (?, 'http://127.0.0.1:9/hook', ?, ?, 1)",
    )
      .bind(
        account.companyId,
        JSON.stringify(["channel.disabled"]),
        await encryptSecret(secret, env.WEBHOOK_SECRETS_KEY),
      )
      .run();
    const hooks: WebhookRequest[] = [];
    await runInDurableObject(stub(account.companyId), (instance: CompanyClock) => {
      instance.webhookTransport = async (request) => (hooks.push(request), { status: 200 });
    });
    const requests = await platform(account.companyId, () => new Response("no_service", { status: 404 }));
    const first = await createItem(account.ownerToken);
    const second = await createItem(account.ownerToken);
    await dueReminder(account, first.item_id, { channel_id: channel.channel_id });
    await dueReminder(account, second.item_id, { channel_id: channel.channel_id });
    await runClock(account.companyId);
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    const shown = ok(await call("getChannel", `/v1/channels/${channel.channel_id}`, { token: account.ownerToken })).body
      .data;
    expect(shown).toMatchObject({
      disabled: true,
      disabled_reason: "the platform answered HTTP 404 to a reminder: the webhook no longer exists",
    });
    const [a, b] = await Promise.all(
      [first, second].map(async (i) => (await sentReminders(account.ownerToken, i.item_id))[0]!.deliveries[0]!),
    );
    expect(a).toMatchObject({ state: "failed", last_error: "the platform answered HTTP 404: no_service" });
    expect(b).toMatchObject({ state: "suppressed" });
    expect(b!.last_error).toMatch(/^channel_disabled: the platform answered HTTP 404/);
    // The event, once, with the channel as GET shows it (its URL masked).
    const events = hooks.map((h) => JSON.parse(h.body)).filter((p) => p.type === "channel.disabled");
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual({ channel: shown, status: 404 });
    // A later reminder to it is not sent.
    const third = await createItem(account.ownerToken);
    await dueReminder(account, third.item_id, { channel_id: channel.channel_id });
    await paceSpent(account.companyId);
    await runClock(account.companyId);
    expect(requests).toHaveLength(1);
    expect((await sentReminders(account.ownerToken, third.item_id))[0]!.deliveries[0]).toMatchObject({
      state: "suppressed",
    });
    // The problem list shows both, naming the channel.
    const problems = ok(await call("listProblemDeliveries", "/v1/deliveries", { token: account.ownerToken })).body.data;
    expect(problems.length).toBe(3);
    for (const p of problems) {
      expect(p.channel).toBe("slack");
      expect(p.contact).toBeNull();
      expect(p.channel_endpoint).toEqual({ channel_id: channel.channel_id, name: "#facilities" });
    }
  });

  it("a deleted channel's reminder has no recipient; a contact who declined chat has theirs suppressed", async () => {
    const account = await createAccount();
    const channel = await slackChannel(account.ownerToken);
    const requests = await platform(account.companyId);
    const contact = await createContact(account.ownerToken, { channels: ["email"] });
    const declined = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    await dueReminder(account, declined.item_id, { channel_id: channel.channel_id });
    await runClock(account.companyId);
    const [d] = (await sentReminders(account.ownerToken, declined.item_id))[0]!.deliveries;
    expect(d!.state).toBe("suppressed");
    expect(d!.last_error).toMatch(/^channel_declined: /);
    const gone = await slackChannel(account.ownerToken, { name: "#gone" });
    const item = await createItem(account.ownerToken);
    await dueReminder(account, item.item_id, { channel_id: gone.channel_id });
    expectStatus(await call("deleteChannel", `/v1/channels/${gone.channel_id}`, { token: account.ownerToken }), 200);
    await fastForward(account.companyId);
    await runClock(account.companyId);
    expect((await sentReminders(account.ownerToken, item.item_id))[0]!.deliveries[0]).toMatchObject({
      state: "no_recipient",
      last_error: `channel ${gone.channel_id} no longer exists`,
    });
    expect(requests).toHaveLength(0);
  });
});

describe("the rules, unit by unit", () => {
  it("paceAt: one at a time at Slack's rate, bursts for Discord and ntfy", () => {
    const now = 1_000_000;
    expect(paceAt(null, now, CHANNEL_RATES.slack, 5)).toEqual({ count: 1, tat: now + 1000, nextAt: now + 1000 });
    expect(paceAt(now + 1000, now, CHANNEL_RATES.slack, 5)).toEqual({ count: 0, tat: now + 1000, nextAt: now + 1000 });
    expect(paceAt(now - 60_000, now, CHANNEL_RATES.slack, 5).count).toBe(1);
    expect(paceAt(null, now, CHANNEL_RATES.discord, 9)).toMatchObject({ count: 5, nextAt: now + 2000 });
    expect(paceAt(null, now, CHANNEL_RATES.ntfy, 100).count).toBe(60);
    expect(paceAt(null, now, CHANNEL_RATES.ntfy, 3)).toMatchObject({ count: 3, nextAt: now });
  });

  it("outcomeOf: what each answer makes of a delivery", () => {
    const sent = (fields: Partial<Parameters<typeof outcomeOf>[0]>) =>
      outcomeOf(
        {
          delivered: false,
          status: null,
          body: "",
          truncated: false,
          error: null,
          duration_ms: 1,
          retry_after: null,
          ...fields,
        },
        "#x",
        0,
      );
    expect(sent({ delivered: true, status: 200 }).state).toBe("sent");
    expect(sent({ status: 429, retry_after: "12" })).toMatchObject({ state: "retry", throttleMs: 12_000 });
    expect(sent({ status: 429 })).toMatchObject({ state: "retry", throttleMs: 5_000 });
    expect(sent({ status: 410 })).toMatchObject({ state: "disable", status: 410 });
    expect(sent({ status: 404 })).toMatchObject({ state: "disable", status: 404 });
    expect(sent({ error: "not sent: url not allowed on this deployment: url must use https" })).toMatchObject({
      state: "disable",
      status: null,
    });
    expect(sent({ status: 500 }).state).toBe("retry");
    expect(sent({ error: "no complete answer within 5 s" }).state).toBe("retry");
    expect(sent({ status: 403 }).state).toBe("failed");
  });

  it("retryAfterDelay reads seconds and HTTP dates, and bounds them", () => {
    const now = Date.parse("2026-11-27T10:00:00Z");
    expect(retryAfterDelay("3", now, 60_000)).toBe(3000);
    expect(retryAfterDelay("999999", now, 60_000)).toBe(60_000);
    expect(retryAfterDelay("Fri, 27 Nov 2026 10:00:20 GMT", now, 60_000)).toBe(20_000);
    expect(retryAfterDelay("Fri, 27 Nov 2026 09:00:00 GMT", now, 60_000)).toBe(0);
    for (const bad of [null, "", "soon", "-1", "1.5", "next week"])
      expect(retryAfterDelay(bad, now, 60_000), String(bad)).toBeNull();
  });
});
