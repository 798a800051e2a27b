import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { addDays, todayIn } from "../../src/lib/time";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { RETRY_DELAYS_MS, type WebhookRequest } from "../../src/webhooks/delivery";
import { encryptSecret, generateSecret } from "../../src/webhooks/secrets";
import {
  BASE,
  call,
  createAccount,
  createItem,
  env,
  expectShapeB,
  uniqueWord,
  expectStatus,
  ok,
  readResult,
  type CallResult,
  type Schemas,
} from "./helpers";

const stubOf = (companyId: number) => clockFor(env, companyId);
const futureDate = (days: number) => addDays(todayIn("UTC"), days);

interface Hook {
  id: number;
  secret: string;
}

/** An endpoint written straight to D1 (the CRUD routes are tested elsewhere). */
async function addEndpoint(
  companyId: number,
  events: string[] = ["*"],
  url = "http://127.0.0.1:9/hook",
): Promise<Hook> {
  const secret = generateSecret();
  const ciphertext = await encryptSecret(secret, env.WEBHOOK_SECRETS_KEY);
  const row = await env.DB.prepare(
    "INSERT INTO webhook_endpoints (company_id, url, events, secret_ciphertext, created_by) VALUES (?, ?, ?, ?, 1) RETURNING id",
  )
    .bind(companyId, url, JSON.stringify(events), ciphertext)
    .first<{ id: number }>();
  return { id: row!.id, secret };
}

type WebhookPayload = Schemas["WebhookPayload"];
/** The payload of an event of type T (an item event's type is one of several). */
type EventOf<T extends WebhookPayload["type"]> = WebhookPayload extends infer P
  ? P extends { type: infer U }
    ? T extends U
      ? P
      : never
    : never
  : never;
type Received = WebhookRequest & { payload: WebhookPayload };

/** Replaces the object's sender: requests are captured; `status(n)` answers the n-th (default 200). */
async function receiver(
  companyId: number,
  status: (n: number, request: WebhookRequest) => number = () => 200,
): Promise<Received[]> {
  const received: Received[] = [];
  await runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
    instance.webhookTransport = async (request) => {
      received.push({ ...request, payload: JSON.parse(request.body) });
      return { status: status(received.length, request) };
    };
  });
  return received;
}

/** Runs the company's alarm until `done()` holds (the runtime may also run it by itself). */
async function drain(companyId: number, done: () => boolean, rounds = 10) {
  for (let i = 0; i < rounds && !done(); i++) {
    await runDurableObjectAlarm(stubOf(companyId));
    if (!done()) await new Promise((r) => setTimeout(r, 20));
  }
}

/** Makes every pending delivery due now (as if its retry delay had passed). */
async function fastForward(companyId: number) {
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    state.storage.sql.exec("UPDATE webhook_deliveries SET next_at = ? WHERE state = 'pending'", Date.now() - 1);
  });
}

function verify(hook: Hook, request: WebhookRequest): WebhookPayload {
  return new Webhook(hook.secret).verify(request.body, request.headers) as WebhookPayload;
}

const ITEM_EVENTS = [
  "item.expired",
  "item.created",
  "item.updated",
  "item.renewed",
  "item.status_changed",
  "item.archived",
  "item.restored",
  "item.deleted",
] as const;

/** Expects the payload's type to be one of `types` and narrows it to that event. */
function expectEvent<T extends WebhookPayload["type"]>(payload: WebhookPayload, ...types: T[]): EventOf<T> {
  expect(types).toContain(payload.type);
  return payload as EventOf<T>;
}

const deliveriesOf = async (token: string, hook: Hook, query = "") => {
  const res = await call("listWebhookDeliveries", `/v1/webhooks/${hook.id}/deliveries${query}`, { token });
  expectStatus(res, 200);
  return res.body;
};

function minutesAhead(minutes: number) {
  const at = new Date(Date.now() + minutes * 60_000);
  return { date: at.toISOString().slice(0, 10), hour: at.toISOString().slice(11, 16) };
}

describe("webhook events", () => {
  it("delivers item.created signed (verified by standardwebhooks) with the item list entry", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId);
    const received = await receiver(companyId);
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    expect(received).toHaveLength(1);
    const request = received[0]!;
    expect(request.url).toBe("http://127.0.0.1:9/hook");
    expect(request.headers["webhook-id"]).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(request.headers["content-type"]).toBe("application/json");
    const payload = verify(hook, request);
    expect(payload.type).toBe("item.created");
    expect(Date.parse(payload.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    const list = ok(await call("listItems", `/v1/items?limit=100`, { token: ownerToken }));
    const entry = list.body.data.find((e) => e.item_id === item.item_id);
    expect(payload.data).toEqual(entry);
    // A wrong secret does not verify.
    expect(() => new Webhook(generateSecret()).verify(request.body, request.headers)).toThrow();

    const listed = await deliveriesOf(ownerToken, hook);
    expect(listed.meta).toEqual({ total: 1, limit: 20, offset: 0 });
    expect(listed.data[0]).toMatchObject({
      message_id: request.headers["webhook-id"],
      event_type: "item.created",
      attempts: 1,
      last_status: 200,
      last_error: null,
      next_attempt_at: null,
      state: "delivered",
    });
    expect(listed.data[0]!.delivered_at).toMatch(/Z$/);
  });

  it("records item.updated, item.status_changed, item.archived, item.restored, item.renewed and item.deleted", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, [
      "item.updated",
      "item.status_changed",
      "item.archived",
      "item.restored",
      "item.renewed",
      "item.deleted",
    ]);
    const received = await receiver(companyId);
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    const id = item.item_id;
    const steps: Array<[string, () => Promise<CallResult>]> = [
      ["item.updated", () => call("updateItem", `/v1/items/${id}`, { token: ownerToken, body: { title: "Renamed" } })],
      [
        "item.status_changed",
        () => call("setItemStatus", `/v1/items/${id}/status`, { token: ownerToken, body: { status: "completed" } }),
      ],
      [
        "item.archived",
        () => call("archiveItem", `/v1/items/${id}/archive`, { token: ownerToken, body: { archived: true } }),
      ],
      [
        "item.restored",
        () => call("archiveItem", `/v1/items/${id}/archive`, { token: ownerToken, body: { archived: false } }),
      ],
      ["item.renewed", () => call("renewItem", `/v1/items/${id}/renew`, { token: ownerToken, body: {} })],
      ["item.deleted", () => call("deleteItem", `/v1/items/${id}`, { token: ownerToken })],
    ];
    const expected: string[] = [];
    for (const [type, act] of steps) {
      const res = await act();
      if (res.status >= 300) {
        // Routes differ in shape across versions; a refused step is skipped rather than guessed.
        console.warn(`${type}: ${res.status} ${JSON.stringify(res.body)}`);
        continue;
      }
      expected.push(type);
      await drain(companyId, () => received.length >= expected.length);
    }
    expect(received.map((r) => r.payload.type)).toEqual(expected);
    expect(expected).toContain("item.updated");
    expect(expected).toContain("item.deleted");
    for (const r of received) expect(expectEvent(verify(hook, r), ...ITEM_EVENTS).data.item_id).toBe(id);
    expect(
      expectEvent(received.find((r) => r.payload.type === "item.updated")!.payload, "item.updated").data.title,
    ).toBe("Renamed");
    // item.created was not subscribed: never sent.
    expect(received.some((r) => r.payload.type === "item.created")).toBe(false);
  });

  it("delivers task.created/updated/deleted with the task output and file.uploaded", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["task.created", "task.updated", "task.deleted", "file.uploaded"]);
    const received = await receiver(companyId);
    const created = await call("createTask", "/v1/tasks", {
      token: ownerToken,
      body: { title: uniqueWord("Task "), due_at: "2030-01-15 09:00:00" },
    });
    expectStatus(created, 201);
    await drain(companyId, () => received.length >= 1);
    expect(verify(hook, received[0]!)).toMatchObject({ type: "task.created", data: created.body.data });
    const patched = await call("updateTask", `/v1/tasks/${created.body.data.task_id}`, {
      token: ownerToken,
      body: { priority: "high" },
    });
    expectStatus(patched, 200);
    await drain(companyId, () => received.length >= 2);
    expect(verify(hook, received[1]!)).toMatchObject({ type: "task.updated", data: patched.body.data });
    expectStatus(await call("deleteTask", `/v1/tasks/${created.body.data.task_id}`, { token: ownerToken }), 200);
    await drain(companyId, () => received.length >= 3);
    expect(verify(hook, received[2]!)).toMatchObject({
      type: "task.deleted",
      data: { task_id: created.body.data.task_id },
    });

    const session = await call("createUploadSession", "/v1/uploads", {
      token: ownerToken,
      body: { filename: "scan.pdf" },
    });
    expectStatus(session, 201);
    const bytes = new TextEncoder().encode("%PDF-1.4 hello");
    const put = await exports.default.fetch(
      new Request(`${BASE}/v1/uploads`, {
        method: "PUT",
        headers: { "X-Upload-Token": session.body.data.upload_token, "Content-Length": String(bytes.length) },
        body: bytes,
      }),
    );
    const uploadedRes = await readResult(put, "uploadFileBytes");
    expectStatus(uploadedRes, 200);
    const uploaded = uploadedRes.body.data;
    await drain(companyId, () => received.length >= 4);
    expect(verify(hook, received[3]!)).toMatchObject({
      type: "file.uploaded",
      data: {
        file_id: uploaded.file_id,
        file_name: "scan.pdf",
        size_bytes: bytes.length,
        content_type: uploaded.content_type,
      },
    });
  });

  it("records nothing when the company has no enabled endpoint", async () => {
    const { companyId, ownerToken } = await createAccount();
    const count = async () =>
      (await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE company_id = ?")
        .bind(companyId)
        .first<{ n: number }>())!.n;
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    expect(await count()).toBe(0);
    const off = await addEndpoint(companyId);
    await env.DB.prepare("UPDATE webhook_endpoints SET enabled = 0 WHERE id = ?").bind(off.id).run();
    await call("createTask", "/v1/tasks", { token: ownerToken, body: { title: "t", due_at: "2030-01-15 09:00:00" } });
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    expect(await count()).toBe(0);
    // Subscribed to other types only: nothing either.
    await addEndpoint(companyId, ["task.created"]);
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    expect(await count()).toBe(0);
  });

  it("leaves events in D1 when the object is not reached, and the alarm or the sweep takes them", async () => {
    const { companyId } = await createAccount();
    const hook = await addEndpoint(companyId, ["task.created"]);
    const received = await receiver(companyId);
    // Written as a trigger would, without the nudge.
    await env.DB.prepare(
      "INSERT INTO webhook_events (company_id, type, data, created_at) VALUES (?, 'task.created', '{\"task_id\":1}', ?)",
    )
      .bind(companyId, Date.now() - 60_000)
      .run();
    const { handleScheduled } = await import("../../src/scheduled");
    await handleScheduled(
      { scheduledTime: Date.now(), cron: "* * * * *", noRetry() {} } as ScheduledController,
      env,
      {} as ExecutionContext,
    );
    await drain(companyId, () => received.length >= 1);
    expect(verify(hook, received[0]!)).toMatchObject({ type: "task.created", data: { task_id: 1 } });
    const left = await env.DB.prepare("SELECT count(*) AS n FROM webhook_events WHERE company_id = ?")
      .bind(companyId)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });
});

describe("fan-out under concurrency", () => {
  it("concurrent pulls create one delivery per event and endpoint", async () => {
    const { companyId } = await createAccount();
    await addEndpoint(companyId, ["task.created"]);
    await receiver(companyId);
    for (let i = 0; i < 3; i++) {
      await env.DB.prepare(
        "INSERT INTO webhook_events (company_id, type, data, created_at) VALUES (?, 'task.created', ?, ?)",
      )
        .bind(companyId, `{"task_id":${i}}`, Date.now())
        .run();
    }
    await Promise.all(Array.from({ length: 6 }, () => stubOf(companyId).pullEvents(companyId)));
    const counts = await runInDurableObject(stubOf(companyId), (_i, state) => ({
      events: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events").one().n,
      deliveries: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries").one().n,
    }));
    expect(counts).toEqual({ events: 3, deliveries: 3 });
  });
});

describe("reminder.sent and item.expired", () => {
  it("sends reminder.sent with the reminder and its item when a reminder fires", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["reminder.sent"]);
    const received = await receiver(companyId);
    const item = await createItem(ownerToken, { expiry_date: futureDate(20), seqid: 0 });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    await runInDurableObject(stubOf(companyId), (_i, state) => {
      state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - 1000, r.reminder_id);
    });
    await drain(companyId, () => received.length >= 1);
    expect(received).toHaveLength(1);
    const payload = expectEvent(verify(hook, received[0]!), "reminder.sent");
    const sent = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken })).body
      .data.sent[0]!;
    const { deliveries: _d, ...reminderEntry } = sent;
    expect(payload.data.reminder).toEqual(reminderEntry);
    expect(payload.data.item).toMatchObject({
      item_id: item.item_id,
      title: item.title,
      expiry_date: futureDate(20),
      status: "pending",
      active: true,
    });
    // The email went out as before.
    expect(sent.deliveries).toEqual([expect.objectContaining({ channel: "email" })]);
  });

  it("channels ['webhook']: refused without a subscribed endpoint; with one, only the webhook goes out", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(20), seqid: 0 });
    const post = (body: unknown) =>
      call("createItemReminder", `/v1/items/${item.item_id}/reminders`, { token: ownerToken, body });
    expectShapeB(
      await post({ ...minutesAhead(3), channels: ["webhook"] }),
      400,
      /webhook endpoint subscribed to reminder.sent/,
    );
    await addEndpoint(companyId, ["item.created"]);
    expectShapeB(await post({ ...minutesAhead(3), channels: ["webhook"] }), 400, /reminder.sent/);
    const hook = await addEndpoint(companyId, ["reminder.sent"]);
    const received = await receiver(companyId);
    const created = await post({ ...minutesAhead(3), channels: ["webhook"] });
    expectStatus(created, 201);
    expect(created.body.data.channels).toEqual(["webhook"]);
    await runInDurableObject(stubOf(companyId), (_i, state) => {
      state.storage.sql.exec(
        "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
        Date.now() - 1000,
        created.body.data.reminder_id,
      );
    });
    await drain(companyId, () => received.length >= 1);
    expect(verify(hook, received[0]!)).toMatchObject({
      type: "reminder.sent",
      data: { reminder: { reminder_id: created.body.data.reminder_id, channels: ["webhook"] } },
    });
    const sent = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken })).body
      .data.sent[0]!;
    expect(sent.deliveries).toEqual([]);
  });

  it("queues item.expired at 00:00 of the item's date (hidden from reminder views), held while completed, sent with the item", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.expired"]);
    const received = await receiver(companyId);
    const item = await createItem(ownerToken, { expiry_date: futureDate(2), seqid: 0 });
    expect(item.reminders.queued).toEqual([]);
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0 });
    const expiryRows = () =>
      runInDurableObject(stubOf(companyId), (_i, state) =>
        state.storage.sql
          .exec<{ date: string; hour: string; state: string; due_at: number }>(
            "SELECT date, hour, state, due_at FROM reminders WHERE origin = 'expiry'",
          )
          .toArray(),
      );
    expect(await expiryRows()).toEqual([
      { date: futureDate(2), hour: "00:00", state: "queued", due_at: Date.parse(`${futureDate(2)}T00:00:00Z`) },
    ]);
    // A new date moves it; completing holds it; reopening resumes it.
    expectStatus(
      await call("updateItem", `/v1/items/${item.item_id}`, {
        token: ownerToken,
        body: { expiry_date: futureDate(3) },
      }),
      200,
    );
    expect((await expiryRows()).map((r) => [r.date, r.state])).toEqual([[futureDate(3), "queued"]]);
    expectStatus(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
        token: ownerToken,
        body: { status: "completed" },
      }),
      200,
    );
    expect((await expiryRows()).map((r) => r.state)).toEqual(["held"]);
    expectStatus(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
        token: ownerToken,
        body: { status: "pending" },
      }),
      200,
    );
    expect((await expiryRows()).map((r) => r.state)).toEqual(["queued"]);

    await runInDurableObject(stubOf(companyId), (_i, state) => {
      state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE origin = 'expiry'", Date.now() - 1000);
    });
    await drain(companyId, () => received.length >= 1);
    const payload = verify(hook, received[0]!);
    expect(payload).toMatchObject({
      type: "item.expired",
      data: { item_id: item.item_id, expiry_date: futureDate(3), status: "pending" },
    });
    expect(await expiryRows()).toEqual([]);
    // Not in the triggered feed, nor in the item's reminders.
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: ownerToken })).body.data,
    ).toEqual([]);
    expect(
      ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken })).body.data,
    ).toEqual({ queued: [], sent: [] });

    // A deleted item takes its item.expired with it.
    const other = await createItem(ownerToken, { expiry_date: futureDate(5), seqid: 0 });
    expect(await expiryRows()).toHaveLength(1);
    expectStatus(await call("deleteItem", `/v1/items/${other.item_id}`, { token: ownerToken }), 200);
    expect(await expiryRows()).toEqual([]);
  });
});

describe("delivery, retries and the endpoint's health", () => {
  it("a receiver failing twice then succeeding gets the same webhook-id each time; the delivery ends delivered after 3 attempts", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const received = await receiver(companyId, (n) => (n <= 2 ? 500 : 204));
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    let delivery = (await deliveriesOf(ownerToken, hook)).data[0]!;
    expect(delivery).toMatchObject({
      state: "pending",
      attempts: 1,
      last_status: 500,
      last_error: "the endpoint answered HTTP 500",
    });
    const wait = Date.parse(delivery.next_attempt_at ?? "") - Date.now();
    expect(wait).toBeGreaterThan(RETRY_DELAYS_MS[0]! * 0.9 - 1000);
    expect(wait).toBeLessThanOrEqual(RETRY_DELAYS_MS[0]! * 1.1);
    for (const n of [2, 3]) {
      await fastForward(companyId);
      await drain(companyId, () => received.length >= n);
    }
    expect(received).toHaveLength(3);
    const ids = new Set(received.map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    for (const r of received) verify(hook, r);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    delivery = (await deliveriesOf(ownerToken, hook)).data[0]!;
    expect(delivery).toMatchObject({
      state: "delivered",
      attempts: 3,
      last_status: 204,
      last_error: null,
      message_id: [...ids][0],
    });
  });

  it("fails a delivery after the 8th attempt, then the retry route attempts it again with the same id", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    let healthy = false;
    const received = await receiver(companyId, () => (healthy ? 200 : 503));
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    for (let n = 2; n <= 8; n++) {
      await fastForward(companyId);
      await drain(companyId, () => received.length >= n);
    }
    expect(received).toHaveLength(8);
    let delivery = (await deliveriesOf(ownerToken, hook)).data[0]!;
    expect(delivery).toMatchObject({ state: "failed", attempts: 8, last_status: 503, next_attempt_at: null });
    // Nothing more by itself.
    await runDurableObjectAlarm(stubOf(companyId));
    expect(received).toHaveLength(8);
    // The endpoint is marked failing (not yet disabled).
    const mark = await env.DB.prepare("SELECT enabled, failing_since FROM webhook_endpoints WHERE id = ?")
      .bind(hook.id)
      .first<{ enabled: number; failing_since: number }>();
    expect(mark).toMatchObject({ enabled: 1 });
    expect(mark!.failing_since).toBeGreaterThan(Date.now() - 60_000);

    healthy = true;
    const retried = await call(
      "retryWebhookDelivery",
      `/v1/webhooks/${hook.id}/deliveries/${delivery.delivery_id}/retry`,
      { token: ownerToken },
    );
    expectStatus(retried, 202);
    expect(retried.body.data).toMatchObject({ delivery_id: delivery.delivery_id, state: "pending" });
    await drain(companyId, () => received.length >= 9);
    expect(received[8]!.headers["webhook-id"]).toBe(received[0]!.headers["webhook-id"]);
    delivery = (await deliveriesOf(ownerToken, hook)).data[0]!;
    expect(delivery).toMatchObject({ state: "delivered", attempts: 9, last_status: 200 });
    const cleared = await env.DB.prepare("SELECT failing_since FROM webhook_endpoints WHERE id = ?")
      .bind(hook.id)
      .first<{ failing_since: number | null }>();
    expect(cleared!.failing_since).toBeNull();
    // A delivered delivery is not retried; unknown ones and other companies' endpoints are 404.
    expectShapeB(
      await call("retryWebhookDelivery", `/v1/webhooks/${hook.id}/deliveries/${delivery.delivery_id}/retry`, {
        token: ownerToken,
      }),
      400,
      /already delivered/,
    );
    expectShapeB(
      await call("retryWebhookDelivery", `/v1/webhooks/${hook.id}/deliveries/99999999/retry`, { token: ownerToken }),
      404,
    );
    const stranger = await createAccount();
    expectShapeB(
      await call("listWebhookDeliveries", `/v1/webhooks/${hook.id}/deliveries`, { token: stranger.ownerToken }),
      404,
    );
    expectShapeB(
      await call("retryWebhookDelivery", `/v1/webhooks/${hook.id}/deliveries/${delivery.delivery_id}/retry`, {
        token: stranger.ownerToken,
      }),
      404,
    );
  });

  it("lists deliveries newest first with limit and offset; members are refused", async () => {
    const { companyId, ownerToken, memberToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const received = await receiver(companyId);
    for (let i = 0; i < 3; i++) await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 3);
    const all = await deliveriesOf(ownerToken, hook);
    expect(all.meta.total).toBe(3);
    const ids = all.data.map((d) => d.delivery_id);
    expect(ids).toEqual([...ids].sort((a: number, b: number) => b - a));
    const second = await deliveriesOf(ownerToken, hook, "?limit=1&offset=1");
    expect(second.data.map((d) => d.delivery_id)).toEqual([ids[1]]);
    expect(second.meta).toEqual({ total: 3, limit: 1, offset: 1 });
    expectShapeB(
      await call("listWebhookDeliveries", `/v1/webhooks/${hook.id}/deliveries?limit=101`, { token: ownerToken }),
      400,
      /limit/,
    );
    expectShapeB(
      await call("listWebhookDeliveries", `/v1/webhooks/${hook.id}/deliveries`, { token: memberToken }),
      403,
    );
  });

  it("a deleted endpoint gets nothing more, not even its pending retries", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const received = await receiver(companyId, (n) => (n === 1 ? 500 : 200));
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    await env.DB.prepare("DELETE FROM webhook_endpoints WHERE id = ?").bind(hook.id).run();
    await fastForward(companyId);
    await runDurableObjectAlarm(stubOf(companyId));
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await runDurableObjectAlarm(stubOf(companyId));
    expect(received).toHaveLength(1);
    const left = await runInDurableObject(
      stubOf(companyId),
      (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries").one().n,
    );
    expect(left).toBe(0);
  });

  it("disables an endpoint whose deliveries have all failed for 5 days, visibly", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const received = await receiver(companyId, () => 500);
    await env.DB.prepare("UPDATE webhook_endpoints SET failing_since = ? WHERE id = ?")
      .bind(Date.now() - 5 * 86_400_000 - 60_000, hook.id)
      .run();
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    const row = await env.DB.prepare("SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = ?")
      .bind(hook.id)
      .first();
    expect(row).toEqual({ enabled: 0, disabled_reason: "failing for 5 days" });
    const delivery = (await deliveriesOf(ownerToken, hook)).data[0]!;
    expect(delivery).toMatchObject({ state: "failed", attempts: 1, next_attempt_at: null });
    // Disabled: no more events, and a retry is refused until it is enabled again.
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await runDurableObjectAlarm(stubOf(companyId));
    expect(received).toHaveLength(1);
    expectShapeB(
      await call("retryWebhookDelivery", `/v1/webhooks/${hook.id}/deliveries/${delivery.delivery_id}/retry`, {
        token: ownerToken,
      }),
      400,
      /disabled/,
    );
  });

  it("checks the URL again at send time: a loopback endpoint saved with WEBHOOKS_ALLOW_PRIVATE_URLS on gets nothing once it is off", async () => {
    const { companyId, ownerToken } = await createAccount();
    // Saved while the switch was on (the tests' default), as POST /v1/webhooks allowed it then.
    const hook = await addEndpoint(companyId, ["item.created"]);
    const received = await receiver(companyId);
    const deployed = async (on: boolean) =>
      runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
        const object = instance as unknown as { env: typeof env };
        object.env = { ...object.env, WEBHOOKS_ALLOW_PRIVATE_URLS: on ? "true" : "false" };
      });
    // The service restarted with the switch off (an explicit "false" in .dev.vars, or unset in a deployment).
    await deployed(false);
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    let deliveries: Schemas["WebhookDelivery"][] = [];
    for (let i = 0; i < 10 && deliveries[0]?.state !== "failed"; i++) {
      await runDurableObjectAlarm(stubOf(companyId));
      deliveries = (await deliveriesOf(ownerToken, hook)).data;
    }
    expect(received).toHaveLength(0);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({
      state: "failed",
      attempts: 0,
      last_status: null,
      last_error: "not sent: url not allowed on this deployment: url must use https",
      next_attempt_at: null,
    });
    const endpoint = await call("getWebhook", `/v1/webhooks/${hook.id}`, { token: ownerToken });
    expectStatus(endpoint, 200);
    expect(endpoint.body.data).toMatchObject({
      enabled: false,
      status: "disabled",
      disabled_reason: "url not allowed on this deployment: url must use https",
    });
    // A test event is refused the same way; switched back on and re-enabled, the endpoint receives again.
    await stubOf(companyId).testWebhook(companyId, hook.id);
    await runDurableObjectAlarm(stubOf(companyId));
    expect(received).toHaveLength(0);
    await deployed(true);
    expectStatus(
      await call("updateWebhook", `/v1/webhooks/${hook.id}`, { token: ownerToken, body: { enabled: true } }),
      200,
    );
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    expect(received.map((r) => r.payload.type)).toEqual(["item.created"]);
  });

  it("a receiver that hangs holds up no alarm run: a reminder due meanwhile fires, the answer is recorded when it comes", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["webhook.test"]);
    let answer: (status: number) => void = () => undefined;
    const answered = new Promise<number>((resolve) => (answer = resolve));
    await runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
      instance.webhookTransport = async () => ({ status: await answered });
    });
    await stubOf(companyId).testWebhook(companyId, hook.id);
    // The run that sends it returns while the receiver keeps it waiting.
    await runDurableObjectAlarm(stubOf(companyId));
    const item = await createItem(ownerToken, { expiry_date: futureDate(20), seqid: 0 });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    await runInDurableObject(stubOf(companyId), (_i, state) => {
      state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - 1000, r.reminder_id);
    });
    await runDurableObjectAlarm(stubOf(companyId));
    const sent = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken })).body
      .data.sent;
    expect(sent.map((s) => s.reminder_id)).toEqual([r.reminder_id]);
    expect((await deliveriesOf(ownerToken, hook)).data[0]).toMatchObject({ state: "pending", attempts: 1 });
    answer(200);
    await runInDurableObject(stubOf(companyId), async (instance: CompanyClock) => {
      await instance.webhookSending;
    });
    const deliveries = await deliveriesOf(ownerToken, hook);
    expect(deliveries.data[0]).toMatchObject({ state: "delivered", attempts: 1, last_status: 200 });
  });

  it("testWebhook sends webhook.test to one endpoint, subscribed or not", async () => {
    const { companyId } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const other = await addEndpoint(companyId, ["*"]);
    const received = await receiver(companyId);
    const result = await stubOf(companyId).testWebhook(companyId, hook.id);
    expect(result).toMatchObject({ delivery_id: expect.any(Number), message_id: expect.stringMatching(/^msg_/) });
    await drain(companyId, () => received.length >= 1);
    expect(received).toHaveLength(1);
    expect(received[0]!.headers["webhook-id"]).toBe((result as { message_id: string }).message_id);
    expect(verify(hook, received[0]!)).toMatchObject({ type: "webhook.test", data: { webhook_id: hook.id } });
    expect(() => verify(other, received[0]!)).toThrow();
    expect(await stubOf(companyId).testWebhook(companyId, 99999999)).toEqual({
      error: { status: 404, msg: "Webhook endpoint not found" },
    });
  });

  it("signs with both secrets while the previous one is still valid", async () => {
    const { companyId, ownerToken } = await createAccount();
    const hook = await addEndpoint(companyId, ["item.created"]);
    const next = generateSecret();
    await env.DB.prepare(
      "UPDATE webhook_endpoints SET previous_secret_ciphertext = secret_ciphertext, previous_secret_expires_at = ?, secret_ciphertext = ? WHERE id = ?",
    )
      .bind(Date.now() + 86_400_000, await encryptSecret(next, env.WEBHOOK_SECRETS_KEY), hook.id)
      .run();
    const received = await receiver(companyId);
    await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await drain(companyId, () => received.length >= 1);
    expect(received[0]!.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    verify(hook, received[0]!);
    verify({ id: hook.id, secret: next }, received[0]!);
  });
});
