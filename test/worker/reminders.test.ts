import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { DELIVERY_BATCH } from "../../src/company-clock/reminder-delivery";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { alarmInstant, LATEST_ALARM } from "../../src/company-clock/time";
import { localToInstant, todayIn, addDays } from "../../src/lib/time";
import { call, createAccount, createContact, createItem, env, expectShapeB, expectStatus, ok } from "./helpers";

const stubOf = (companyId: number) => clockFor(env, companyId);

/** Moves a reminder's instant into the past inside the Durable Object (as if its minute had come). */
async function backdate(companyId: number, reminderId: number, msAgo = 1000) {
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - msAgo, reminderId);
  });
}

function futureDate(days: number) {
  return addDays(todayIn("UTC"), days);
}

/**
 * Stops Date.now() until restored (the worker, its objects and the test share one isolate), as
 * production workerd does between I/O: the clock read at a setAlarm() call is then the `now` the
 * code computed the alarm from. The runtime still runs alarms by the real clock.
 */
function freezeClock() {
  return vi.spyOn(Date, "now").mockReturnValue(Date.now());
}

interface Arming {
  /** Date.now() at the setAlarm() call. */
  now: number;
  at: number;
  /** Deliveries still pending at that moment. */
  pending: number;
}

/** Records every setAlarm() of the company's object from now on (the call goes through unchanged). */
async function recordArmings(companyId: number): Promise<Arming[]> {
  const armings: Arming[] = [];
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    const setAlarm = state.storage.setAlarm.bind(state.storage);
    state.storage.setAlarm = (at, options) => {
      const pending = state.storage.sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending'")
        .one().n;
      armings.push({ now: Date.now(), at: Number(at), pending });
      return setAlarm(at, options);
    };
  });
  return armings;
}

describe("reminders of an item", () => {
  it("queues the company's default sequence for a new item (30, 14, 7, 1 days before and on the day, 09:00)", async () => {
    const { ownerToken } = await createAccount();
    const date = futureDate(100);
    const item = await createItem(ownerToken, { expiry_date: date });
    expect(item.reminders.sent).toEqual([]);
    expect(item.reminders.queued.map((r) => [r.date, r.hour, r.sent])).toEqual([
      [addDays(date, -30), "09:00", false],
      [addDays(date, -14), "09:00", false],
      [addDays(date, -7), "09:00", false],
      [addDays(date, -1), "09:00", false],
      [date, "09:00", false],
    ]);
    const list = await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken });
    expectStatus(list, 200);
    expect(list.body.data.queued).toEqual(item.reminders.queued);
  });

  it("skips steps whose time has passed, and queues nothing with seqid 0", async () => {
    const { ownerToken } = await createAccount();
    const soon = await createItem(ownerToken, { expiry_date: futureDate(3) });
    expect(soon.reminders.queued.map((r) => r.date)).toEqual([futureDate(2), futureDate(3)]);
    const none = await createItem(ownerToken, { expiry_date: futureDate(100), seqid: 0 });
    expect(none.reminders.queued).toEqual([]);
    expect(none.seqid).toBe(0);
    const bad = await call("createItem", "/v1/items", {
      token: ownerToken,
      body: { title: "x", expiry_date: futureDate(5), seqid: 999999 },
    });
    expectShapeB(bad, 400, /seqid 999999/);
  });

  it("fires a reminder at its minute exactly once, lists it as triggered and emails the item's contact", async () => {
    const { companyId, ownerToken } = await createAccount();
    const contact = await createContact(ownerToken);
    const item = await createItem(ownerToken, {
      expiry_date: futureDate(20),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    const at = new Date(Date.now() + 2 * 60_000);
    const hour = `${String(at.getUTCHours()).padStart(2, "0")}:${String(at.getUTCMinutes()).padStart(2, "0")}`;
    const created = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: ownerToken,
      body: { date: at.toISOString().slice(0, 10), hour },
    });
    expectStatus(created, 201);
    expect(created.body.msg).toBe("Reminder queued");
    const id = created.body.data.reminder_id;
    expect(created.body.data).toMatchObject({
      sent: false,
      state: "queued",
      origin: "manual",
      channels: ["email"],
      contact_id: 0,
    });
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 1 });

    await backdate(companyId, id);
    expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
    const after = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken }));
    expect(after.body.data.queued).toEqual([]);
    expect(after.body.data.sent).toHaveLength(1);
    const sent = after.body.data.sent[0];
    expect(sent).toMatchObject({ reminder_id: id, sent: true, state: "sent" });
    expect(sent!.deliveries).toEqual([expect.objectContaining({ channel: "email", state: "sent", attempts: 1 })]);
    expect(sent!.deliveries[0]!.recipient).toMatch(/@/);

    const triggered = await call("listTriggeredReminders", "/v1/reminders/triggered?limit=5", { token: ownerToken });
    expectStatus(triggered, 200);
    expect(triggered.body.data).toEqual([
      expect.objectContaining({ reminder_id: id, item_id: item.item_id, title: item.title }),
    ]);

    // A second alarm run finds nothing to send.
    await runDurableObjectAlarm(stubOf(companyId));
    const again = ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: ownerToken }));
    expect(again.body.data).toHaveLength(1);
    const detail = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken }));
    expect(detail.body.data.sent[0]!.deliveries[0]!.attempts).toBe(1);
  });
});

/** An absolute reminder `minutes` from now (UTC company), as date and hour. */
function minutesAhead(minutes: number) {
  const at = new Date(Date.now() + minutes * 60_000);
  return { date: at.toISOString().slice(0, 10), hour: at.toISOString().slice(11, 16) };
}

async function remindersOf(token: string, itemId: number) {
  const res = await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token });
  expectStatus(res, 200);
  return res.body.data;
}

describe("reminder input rules", () => {
  it("refuses times in the past, mixed or incomplete forms, bad hours, unknown units and undeliverable channels", async () => {
    const { ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(40), seqid: 0 });
    const post = (body: unknown) =>
      call("createItemReminder", `/v1/items/${item.item_id}/reminders`, { token: ownerToken, body });
    expectShapeB(await post({ date: futureDate(-1), hour: "09:00" }), 400, /already passed/);
    expectShapeB(await post({ date: todayIn("UTC"), hour: "00:00" }), 400, /already passed/);
    expectShapeB(await post({ date: futureDate(5), period: 3, unit: "day", rtype: 1 }), 400, /either date/);
    expectShapeB(await post({}), 400, /either date/);
    expectShapeB(await post({ period: 3 }), 400, /period, unit and rtype/);
    expectShapeB(await post({ date: futureDate(5), hour: "24:00" }), 400, /hour/);
    expectShapeB(await post({ date: futureDate(5), hour: "9:00" }), 400, /hour/);
    expectShapeB(await post({ date: "2027-02-30" }), 400, /date/);
    expectShapeB(await post({ period: 2, unit: "fortnight", rtype: 1 }), 400, /unit/);
    expectShapeB(await post({ period: 2, unit: "day", rtype: 3 }), 400, /rtype/);
    expectShapeB(await post({ period: -1, unit: "day", rtype: 1 }), 400, /period/);
    expectShapeB(await post({ period: 50, unit: "day", rtype: 1 }), 400, /already passed/);
    expectShapeB(await post({ period: 1000, unit: "year", rtype: 2, hour: "24:00" }), 400, /hour/);
    expectShapeB(await post({ date: futureDate(5), channels: ["sms"] }), 400, /sms is not available/);
    expectShapeB(await post({ date: futureDate(5), channels: ["webhook"] }), 400, /webhook/);
    expectShapeB(await post({ date: futureDate(5), channels: ["pigeon"] }), 400, /channels/);
    expectShapeB(await post({ date: futureDate(5), contact_id: 99999999 }), 400, /contact_id 99999999/);
    expectShapeB(await post({ date: futureDate(5), extra: 1 }), 400);
    expect((await remindersOf(ownerToken, item.item_id)).queued).toEqual([]);
  });

  it("takes relative reminders (plural units, before and after) and defaults the hour to 09:00", async () => {
    const { ownerToken } = await createAccount();
    const date = futureDate(60);
    const item = await createItem(ownerToken, { expiry_date: date, seqid: 0 });
    const before = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: ownerToken,
      body: { period: 2, unit: "Weeks", rtype: 1 },
    });
    expectStatus(before, 201);
    expect(before.body.data).toMatchObject({
      date: addDays(date, -14),
      hour: "09:00",
      period: 2,
      unit: "week",
      rtype: 1,
    });
    const after = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: { period: 1, unit: "day", rtype: 2, hour: "17:45" },
      }),
    );
    expect(after.body.data).toMatchObject({ date: addDays(date, 1), hour: "17:45", rtype: 2 });
  });

  it("changes and deletes queued reminders; a sent one cannot be changed or deleted", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60), seqid: 0 });
    const base = `/v1/items/${item.item_id}/reminders`;
    const a = ok(
      await call("createItemReminder", base, { token: ownerToken, body: { period: 10, unit: "day", rtype: 1 } }),
    ).body.data;
    const moved = await call("updateItemReminder", `${base}/${a.reminder_id}`, {
      token: ownerToken,
      body: { hour: "14:15" },
    });
    expectStatus(moved, 200);
    expect(moved.body.data).toMatchObject({ date: a.date, hour: "14:15", period: 10 });
    const absolute = ok(
      await call("updateItemReminder", `${base}/${a.reminder_id}`, {
        token: ownerToken,
        body: { date: futureDate(7) },
      }),
    );
    expect(absolute.body.data).toMatchObject({
      date: futureDate(7),
      hour: "14:15",
      period: null,
      unit: null,
      rtype: null,
    });
    expectShapeB(
      await call("updateItemReminder", `${base}/${a.reminder_id}`, { token: ownerToken, body: {} }),
      400,
      /No updatable fields/,
    );
    expectShapeB(
      await call("updateItemReminder", `${base}/${a.reminder_id}`, {
        token: ownerToken,
        body: { date: futureDate(-2) },
      }),
      400,
      /already passed/,
    );
    expectShapeB(
      await call("updateItemReminder", `${base}/999999`, { token: ownerToken, body: { hour: "10:00" } }),
      404,
      /Reminder not found/,
    );

    await backdate(companyId, a.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    expectShapeB(
      await call("updateItemReminder", `${base}/${a.reminder_id}`, { token: ownerToken, body: { hour: "10:00" } }),
      400,
      /already sent/,
    );
    expectShapeB(
      await call("deleteItemReminder", `${base}/${a.reminder_id}`, { token: ownerToken }),
      400,
      /already sent/,
    );

    const b = ok(await call("createItemReminder", base, { token: ownerToken, body: { date: futureDate(9) } })).body
      .data;
    const deleted = await call("deleteItemReminder", `${base}/${b.reminder_id}`, { token: ownerToken });
    expectStatus(deleted, 200);
    expect(deleted.body.msg).toBe("Reminder deleted");
    expect((await remindersOf(ownerToken, item.item_id)).queued).toEqual([]);
    expectShapeB(await call("deleteItemReminder", `${base}/${b.reminder_id}`, { token: ownerToken }), 404);
  });

  it("keeps companies apart and follows the items scopes", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const item = await createItem(a.ownerToken, { expiry_date: futureDate(60) });
    const rid = item.reminders.queued[0]!.reminder_id;
    expectShapeB(
      await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: b.ownerToken }),
      404,
      /Item not found/,
    );
    expectShapeB(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: b.ownerToken,
        body: { date: futureDate(5) },
      }),
      404,
    );
    expectShapeB(
      await call("deleteItemReminder", `/v1/items/${item.item_id}/reminders/${rid}`, { token: b.ownerToken }),
      404,
    );
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: b.ownerToken })).body.data,
    ).toEqual([]);
    expect((await remindersOf(a.ownerToken, item.item_id)).queued).toHaveLength(5);
  });
});

describe("item changes drive the schedule", () => {
  it("holds queued reminders while completed or archived and resumes those still ahead; ones that fell due meanwhile are dropped", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60) });
    const [first, second] = item.reminders.queued;
    const done = ok(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
        token: ownerToken,
        body: { status: "completed" },
      }),
    );
    expect(done.body.data.reminders.queued.every((r) => r.state === "held")).toBe(true);
    await backdate(companyId, first!.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    expect((await remindersOf(ownerToken, item.item_id)).sent).toEqual([]);

    const reopened = ok(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
        token: ownerToken,
        body: { status: "pending" },
      }),
    );
    const queued = reopened.body.data.reminders.queued;
    expect(queued.map((r) => r.reminder_id)).not.toContain(first!.reminder_id);
    expect(queued[0]).toMatchObject({ reminder_id: second!.reminder_id, state: "queued" });

    await call("archiveItem", `/v1/items/${item.item_id}/archive`, { token: ownerToken, body: { archived: true } });
    await backdate(companyId, second!.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    expect((await remindersOf(ownerToken, item.item_id)).sent).toEqual([]);
    const restored = ok(
      await call("archiveItem", `/v1/items/${item.item_id}/archive`, { token: ownerToken, body: { archived: false } }),
    );
    expect(restored.body.data.reminders.queued).toHaveLength(3);
  });

  it("moves relative reminders with reschedule_reminders, keeps them without, and re-queues the sequence on renew keeping the sent history", async () => {
    const { companyId, ownerToken } = await createAccount();
    const date = futureDate(60);
    const item = await createItem(ownerToken, { expiry_date: date });
    const later = futureDate(90);
    const kept = ok(
      await call("updateItem", `/v1/items/${item.item_id}`, { token: ownerToken, body: { expiry_date: later } }),
    );
    expect(kept.body.data.reminders.queued.map((r) => r.date)).toEqual(item.reminders.queued.map((r) => r.date));
    const moved = ok(
      await call("updateItem", `/v1/items/${item.item_id}`, {
        token: ownerToken,
        body: { expiry_date: later, reschedule_reminders: true },
      }),
    );
    expect(moved.body.data.reminders.queued.map((r) => r.date)).toEqual(
      [-30, -14, -7, -1, 0].map((d) => addDays(later, d)),
    );

    const first = moved.body.data.reminders.queued[0];
    await backdate(companyId, first!.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    const renewed = await call("renewItem", `/v1/items/${item.item_id}/renew`, {
      token: ownerToken,
      body: { expiry_date: futureDate(400) },
    });
    expectStatus(renewed, 200);
    const reminders = renewed.body.data.reminders;
    expect(reminders.sent.map((r) => r.reminder_id)).toEqual([first!.reminder_id]);
    expect(reminders.queued.map((r) => r.date)).toEqual([-30, -14, -7, -1, 0].map((d) => addDays(futureDate(400), d)));
  });

  it("removes the reminders of a deleted item; its triggered entries stay", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60) });
    await backdate(companyId, item.reminders.queued[0]!.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    expectStatus(await call("deleteItem", `/v1/items/${item.item_id}`, { token: ownerToken }), 200);
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0, alarm: null });
    expectShapeB(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: ownerToken }), 404);
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: ownerToken })).body.data,
    ).toHaveLength(1);
  });

  it("keeps local date and hour when the company's time zone changes", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60) });
    const before = item.reminders.queued[0];
    const res = await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
      token: ownerToken,
      body: { timezone: "Asia/Tokyo" },
    });
    expectStatus(res, 200);
    const after = (await remindersOf(ownerToken, item.item_id)).queued[0];
    expect(after).toMatchObject({ reminder_id: before!.reminder_id, date: before!.date, hour: "09:00" });
    expect(after!.due_at).toBe(new Date(localToInstant(before!.date, "09:00", "Asia/Tokyo")).toISOString());
    expect(Date.parse(before!.due_at) - Date.parse(after!.due_at)).toBe(9 * 3_600_000);
  });
});

describe("firing and delivery", () => {
  it("takes reminders centuries ahead: the alarm waits at the runtime's latest instant and arms again", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: "9998-06-30", seqid: 0 });
    const res = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: ownerToken,
      body: { period: 1, unit: "day", rtype: 2 },
    });
    expectStatus(res, 201);
    expect(res.body.data).toMatchObject({ date: "9998-07-01", hour: "09:00" });
    expect((await stubOf(companyId).status(companyId)).alarm).toBe(LATEST_ALARM);
    expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
    expect((await stubOf(companyId).status(companyId)).alarm).toBe(LATEST_ALARM);
    expect((await remindersOf(ownerToken, item.item_id)).queued).toHaveLength(1);
  });

  it("fires a reminder without a recipient: it is sent and triggered, and its delivery says no_recipient", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    await backdate(companyId, r.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    const sent = (await remindersOf(ownerToken, item.item_id)).sent[0];
    expect(sent!.deliveries).toEqual([
      expect.objectContaining({ channel: "email", state: "no_recipient", recipient: null }),
    ]);
    expect(sent!.deliveries[0]!.last_error).toMatch(/no recipient/);
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: ownerToken })).body.data[0]!
        .reminder_id,
    ).toBe(r.reminder_id);
  });

  it("retries a failed delivery with backoff and marks it failed after the last attempt", async () => {
    const { companyId, ownerToken } = await createAccount();
    const contact = await createContact(ownerToken);
    const item = await createItem(ownerToken, {
      expiry_date: futureDate(30),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    let calls = 0;
    await runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
      const real = instance.transports.email;
      instance.transports = {
        ...instance.transports,
        email: async (m, d) => (++calls <= 2 ? Promise.reject(new Error("mail server said 451")) : real(m, d)),
      };
    });
    await backdate(companyId, r.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    let delivery = (await remindersOf(ownerToken, item.item_id)).sent[0]!.deliveries[0];
    expect(delivery).toMatchObject({ state: "pending", attempts: 1, last_error: "mail server said 451" });
    const wait = Date.parse(delivery!.next_attempt_at!) - Date.now();
    expect(wait).toBeGreaterThan(20_000);
    expect(wait).toBeLessThanOrEqual(30_000);
    const retry = async () => {
      await runInDurableObject(stubOf(companyId), (_i, state) => {
        state.storage.sql.exec(
          "UPDATE deliveries SET next_at = ? WHERE reminder_id = ?",
          Date.now() - 1,
          r.reminder_id,
        );
      });
      await runDurableObjectAlarm(stubOf(companyId));
    };
    await retry();
    delivery = (await remindersOf(ownerToken, item.item_id)).sent[0]!.deliveries[0];
    expect(delivery).toMatchObject({ state: "pending", attempts: 2 });
    await retry();
    delivery = (await remindersOf(ownerToken, item.item_id)).sent[0]!.deliveries[0];
    expect(delivery).toMatchObject({ state: "sent", attempts: 3, last_error: null });
    expect(calls).toBe(3);

    // A transport that always fails ends in `failed` after the sixth attempt.
    const r2 = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(4),
      }),
    ).body.data;
    await runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
      instance.transports = { ...instance.transports, email: async () => Promise.reject(new Error("down")) };
    });
    await backdate(companyId, r2.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    for (let i = 0; i < 5; i++) {
      await runInDurableObject(stubOf(companyId), (_i, state) => {
        state.storage.sql.exec(
          "UPDATE deliveries SET next_at = ? WHERE reminder_id = ? AND state = 'pending'",
          Date.now() - 1,
          r2.reminder_id,
        );
      });
      await runDurableObjectAlarm(stubOf(companyId));
    }
    const failed = (await remindersOf(ownerToken, item.item_id)).sent.find((s) => s.reminder_id === r2.reminder_id)!
      .deliveries[0];
    expect(failed).toMatchObject({ state: "failed", attempts: 6, last_error: "down", next_attempt_at: null });
  });

  it("fires more reminders than one transaction holds in bounded batches, all in one alarm run", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: ownerToken,
      body: minutesAhead(5),
    });
    const past = Date.now() - 5_000;
    await runInDurableObject(stubOf(companyId), (_i, state) => {
      for (let i = 0; i < 1_050; i++) {
        state.storage.sql.exec(
          "INSERT INTO reminders (item_id, origin, date, hour, due_at, channels, state, created_at) VALUES (?, 'manual', '2026-01-01', '09:00', ?, '[]', 'queued', ?)",
          item.item_id,
          past,
          past,
        );
      }
    });
    await runDurableObjectAlarm(stubOf(companyId));
    // One run claims them all, in transactions of CLAIM_BATCH, before delivering any.
    const fired = await runInDurableObject(stubOf(companyId), (_i, state) => ({
      sent: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE state = 'sent'").one().n,
      triggered: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM triggered").one().n,
    }));
    expect(fired).toEqual({ sent: 1_050, triggered: 1_050 });
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered?limit=100", { token: ownerToken })).body.data,
    ).toHaveLength(100);
    expectShapeB(
      await call("listTriggeredReminders", "/v1/reminders/triggered?limit=101", { token: ownerToken }),
      400,
      /limit/,
    );
    expectShapeB(
      await call("listTriggeredReminders", "/v1/reminders/triggered?limit=0", { token: ownerToken }),
      400,
      /limit/,
    );
  });

  it("arms the alarm strictly after now: at the due instant, at once for overdue work, at most at LATEST_ALARM", () => {
    const now = Date.now();
    expect(alarmInstant(now + 60_000, now)).toBe(now + 60_000);
    expect(alarmInstant(now, now)).toBe(now + 1);
    expect(alarmInstant(now - 60_000, now)).toBe(now + 1);
    expect(alarmInstant(Date.UTC(9998, 6, 1), now)).toBe(LATEST_ALARM);
  });

  it("never arms the alarm at or before now for work already overdue", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    await backdate(companyId, r.reminder_id, 60_000);
    await runInDurableObject(stubOf(companyId), (_i, state) => state.storage.deleteAlarm());
    const armings = await recordArmings(companyId);
    const clock = freezeClock();
    try {
      // Any change arms the alarm for the earliest work: here the overdue reminder.
      const later = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(5),
      });
      expectStatus(later, 201);
    } finally {
      clock.mockRestore();
    }
    expect(armings.length).toBeGreaterThanOrEqual(1);
    for (const arming of armings) expect(arming.at, JSON.stringify(arming)).toBeGreaterThan(arming.now);
    expect(armings[0]!.at - armings[0]!.now).toBeLessThan(1_000);
    await runDurableObjectAlarm(stubOf(companyId));
    expect((await remindersOf(ownerToken, item.item_id)).sent.map((s) => s.reminder_id)).toEqual([r.reminder_id]);
  });

  it("drains more deliveries than one run takes over chained alarm runs, each re-armed strictly after the moment it ends", async () => {
    const { companyId, ownerToken } = await createAccount();
    const contact = await createContact(ownerToken);
    const date = futureDate(30);
    const item = await createItem(ownerToken, { expiry_date: date, seqid: 0, contact_id: contact.contact_id });
    // What is left once the backlog is out: the item's item.expired event at 00:00 of its date.
    const expiredAt = Date.parse(`${date}T00:00:00Z`);
    const backlog = 2 * DELIVERY_BATCH + 50;
    const stub = stubOf(companyId);
    let emails = 0;
    await runInDurableObject(stub, (instance: CompanyClock, state) => {
      const past = Date.now() - 5_000;
      for (let i = 0; i < backlog; i++) {
        state.storage.sql.exec(
          "INSERT INTO reminders (item_id, origin, date, hour, due_at, channels, state, created_at) VALUES (?, 'manual', '2026-01-01', '09:00', ?, '[\"email\"]', 'queued', ?)",
          item.item_id,
          past,
          past,
        );
      }
      const email = instance.transports.email;
      instance.transports = {
        ...instance.transports,
        email: (message, delivery) => (emails++, email(message, delivery)),
      };
    });
    const armings = await recordArmings(companyId);
    const clock = freezeClock();
    const progress = () =>
      runInDurableObject(stub, async (_i, state) => ({
        unfinished: state.storage.sql
          .exec<{ n: number }>(
            "SELECT (SELECT count(*) FROM reminders WHERE state = 'queued' AND origin <> 'expiry') + (SELECT count(*) FROM deliveries WHERE state <> 'sent') AS n",
          )
          .one().n,
        alarm: await state.storage.getAlarm(),
      }));
    // The runtime also runs a re-armed alarm by itself (it is due at once); a manual run then finds
    // no alarm (null while one runs) and waits. Done: nothing unfinished, the alarm at the next work.
    try {
      for (let round = 0; ; round++) {
        const state = await progress();
        if (state.unfinished === 0 && state.alarm === expiredAt) break;
        if (round === 500) throw new Error(`backlog not drained: ${JSON.stringify(state)}`);
        if (!(await runDurableObjectAlarm(stub))) await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      clock.mockRestore();
    }

    // Each run that left deliveries behind re-armed at once, strictly after the moment it ended;
    // it takes at least three runs.
    const rearms = armings.filter((a) => a.pending > 0);
    expect(rearms.length).toBeGreaterThanOrEqual(2);
    for (const arming of armings) expect(arming.at, JSON.stringify(arming)).toBeGreaterThan(arming.now);
    for (const arming of rearms) expect(arming.at - arming.now).toBeLessThan(1_000);
    // Every reminder sent once, every delivery done once.
    expect(emails).toBe(backlog);
    const done = await runInDurableObject(stub, (_i, state) => ({
      sent: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE state = 'sent'").one().n,
      triggered: state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM triggered").one().n,
      deliveries: state.storage.sql
        .exec<{ state: string; attempts: number; n: number }>(
          "SELECT state, attempts, count(*) AS n FROM deliveries GROUP BY state, attempts",
        )
        .toArray(),
    }));
    expect(done).toEqual({
      sent: backlog,
      triggered: backlog,
      deliveries: [{ state: "sent", attempts: 1, n: backlog }],
    });
    const listed = await remindersOf(ownerToken, item.item_id);
    expect(listed.queued).toEqual([]);
    expect(listed.sent).toHaveLength(100);
    for (const sent of listed.sent)
      expect(sent.deliveries).toEqual([
        expect.objectContaining({ channel: "email", state: "sent", attempts: 1, recipient: contact.email }),
      ]);
  });

  it("loses nothing when the object is evicted: state and alarm survive", async () => {
    const { evictDurableObject } = await import("cloudflare:test");
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(30) });
    const before = await stubOf(companyId).status(companyId);
    await evictDurableObject(stubOf(companyId));
    expect(await stubOf(companyId).status(companyId)).toEqual(before);
    const r = item.reminders.queued[0];
    await backdate(companyId, r!.reminder_id);
    await evictDurableObject(stubOf(companyId));
    expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
    expect((await remindersOf(ownerToken, item.item_id)).sent.map((s) => s.reminder_id)).toEqual([r!.reminder_id]);
  });
});

describe("D1 and the Durable Object stay consistent", () => {
  it("an item written to D1 whose sync never reached the object is queued by the sweep (no lost reminder)", async () => {
    const { companyId, deptId, ownerToken } = await createAccount();
    // The request wrote D1 and failed before calling the object: the trigger left the change in the outbox.
    const row = await env.DB.prepare(
      `INSERT INTO items (company_id, dept_id, title, expiry_date, reminder_anchor, seq_id, created_by)
       VALUES (?, ?, 'Crashed write', ?, ?, (SELECT id FROM reminder_sequences WHERE company_id = ? AND is_default = 1), 1) RETURNING id`,
    )
      .bind(companyId, deptId, futureDate(60), futureDate(60), companyId)
      .first<{ id: number }>();
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0 });
    const pending = await env.DB.prepare(
      "SELECT version, synced_version FROM reminder_sync WHERE company_id = ? AND item_id = ?",
    )
      .bind(companyId, row!.id)
      .first();
    expect(pending).toEqual({ version: 1, synced_version: 0 });
    // Too recent for the sweep (the normal path may still be running)...
    await runSweep(Date.now());
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0 });
    // ...a minute later it is replayed.
    await runSweep(Date.now() + 60_000);
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 5 });
    const synced = await env.DB.prepare(
      "SELECT version, synced_version FROM reminder_sync WHERE company_id = ? AND item_id = ?",
    )
      .bind(companyId, row!.id)
      .first();
    expect(synced).toEqual({ version: 1, synced_version: 1 });
    expect((await remindersOf(ownerToken, row!.id)).queued).toHaveLength(5);
  });

  it("an item deleted in D1 whose sync never reached the object does not fire (no orphan reminder)", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60) });
    await env.DB.prepare("DELETE FROM items WHERE id = ?").bind(item.item_id).run();
    await backdate(companyId, item.reminders.queued[0]!.reminder_id);
    await runDurableObjectAlarm(stubOf(companyId));
    expect(
      ok(await call("listTriggeredReminders", "/v1/reminders/triggered", { token: ownerToken })).body.data,
    ).toEqual([]);
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0 });
    const outbox = await env.DB.prepare("SELECT count(*) AS n FROM reminder_sync WHERE company_id = ? AND item_id = ?")
      .bind(companyId, item.item_id)
      .first();
    expect(outbox).toEqual({ n: 0 });
  });

  it("an unknown or another company's item id leaves nothing in the object", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const foreign = await createItem(b.ownerToken, { expiry_date: futureDate(60) });
    expectShapeB(await call("getItem", `/v1/items/99999999`, { token: a.ownerToken }), 404);
    expectShapeB(
      await call("listItemReminders", `/v1/items/${foreign.item_id}/reminders`, { token: a.ownerToken }),
      404,
    );
    expectShapeB(await call("getItem", `/v1/items/${foreign.item_id}`, { token: a.ownerToken }), 404);
    const rows = await runInDurableObject(
      stubOf(a.companyId),
      (_i, state) => state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM items").one().n,
    );
    expect(rows).toBe(0);
  });

  it("reading an item applies a change the object missed", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(60) });
    await env.DB.prepare("UPDATE items SET status = 'completed' WHERE id = ?").bind(item.item_id).run();
    const detail = ok(await call("getItem", `/v1/items/${item.item_id}`, { token: ownerToken }));
    expect(detail.body.data.reminders.queued.every((r) => r.state === "held")).toBe(true);
    expect(await stubOf(companyId).status(companyId)).toMatchObject({ queued: 0 });
  });

  it("the sweep wakes a company whose alarm did not run, and only such companies", async () => {
    const { companyId, ownerToken } = await createAccount();
    const item = await createItem(ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    const r = ok(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: ownerToken,
        body: minutesAhead(3),
      }),
    ).body.data;
    const wake = await env.DB.prepare("SELECT due_at FROM reminder_wakeups WHERE company_id = ?")
      .bind(companyId)
      .first<{ due_at: number }>();
    expect(wake!.due_at).toBe(Date.parse(r.due_at));
    // The alarm is lost (as in a failover) while the reminder falls due.
    await backdate(companyId, r.reminder_id, 120_000);
    await runInDurableObject(stubOf(companyId), (_i, state) => state.storage.deleteAlarm());
    await env.DB.prepare("UPDATE reminder_wakeups SET due_at = ? WHERE company_id = ?")
      .bind(Date.now() - 120_000, companyId)
      .run();
    const log = await runSweep(Date.now());
    expect(log.overdue).toBeGreaterThanOrEqual(1);
    expect((await stubOf(companyId).status(companyId)).alarm).not.toBeNull();
    expect(await runDurableObjectAlarm(stubOf(companyId))).toBe(true);
    expect((await remindersOf(ownerToken, item.item_id)).sent).toHaveLength(1);
    // What is left is the item's item.expired webhook event, at 00:00 of its date (docs/webhooks.md).
    expect(
      await env.DB.prepare("SELECT due_at FROM reminder_wakeups WHERE company_id = ?").bind(companyId).first(),
    ).toEqual({
      due_at: Date.parse(`${futureDate(30)}T00:00:00Z`),
    });
  });
});

async function runSweep(at: number): Promise<Record<string, number>> {
  const { createExecutionContext, createScheduledController, waitOnExecutionContext } = await import("cloudflare:test");
  const { default: worker } = await import("../../src/index");
  const { vi } = await import("vitest");
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ scheduledTime: at, cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
    // One line per shard: the test accounts are on shard 0.
    const entry = log.mock.calls
      .map((args) => JSON.parse(String(args[0])))
      .find((e) => e.msg === "reminder sweep" && e.shard === 0);
    return entry;
  } finally {
    log.mockRestore();
  }
}
