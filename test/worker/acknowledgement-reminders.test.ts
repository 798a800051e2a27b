// What an acknowledgement, a snooze and a sequence's recipients do to the company clock's reminders
// (docs/reminders.md, "Acknowledgement and snooze", "Recipients and escalation"), with real alarms:
// held steps, `always` steps, escalation to a group, one delivery per recipient, the snooze's one
// reminder, an acknowledgement that reached D1 but never the clock, the store's migration to
// per-recipient deliveries.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { recipientDb } from "./support/recipient";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { migrate, SCHEMA_VERSION } from "../../src/company-clock/store";
import { acknowledgeItem } from "../../src/records/items/actions";
import { addDays, todayIn } from "../../src/lib/time";
import {
  call,
  createAccount,
  createContact,
  createGroup,
  createItem,
  env,
  expectShapeB,
  expectStatus,
  ok,
  type Fields,
  type TestAccount,
} from "./helpers";

const stubOf = (companyId: number) => clockFor(env, companyId);
const futureDate = (days: number) => addDays(todayIn("UTC"), days);

/** The emails the company's clock hands to the binding from now on (sent on as usual). */
async function captureEmails(companyId: number): Promise<Array<{ to: string; subject: string; text: string }>> {
  const emails: Array<{ to: string; subject: string; text: string }> = [];
  await runInDurableObject(stubOf(companyId), (instance: CompanyClock) => {
    const send = instance.transports.email;
    instance.transports = {
      ...instance.transports,
      email: (m, d) => (emails.push({ to: m.to, subject: m.subject, text: m.text }), send(m, d)),
    };
  });
  return emails;
}

/** Moves reminders' instants into the past (as if their minute had come). */
async function backdate(companyId: number, reminderIds: number[]) {
  await runInDurableObject(stubOf(companyId), (_i, state) => {
    for (const id of reminderIds)
      state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - 1000 - id, id);
  });
}

const reminders = async (token: string, itemId: number) =>
  ok(await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token })).body.data;
const states = (list: Array<{ date: string; state: string }>) => list.map((r) => [r.date, r.state]);

async function sequence(token: string, steps: Fields[]): Promise<number> {
  const res = await call("createReminderSequence", "/v1/reminder-sequences", {
    token,
    body: { name: `Seq ${crypto.randomUUID().slice(0, 8)}`, reminders: steps },
  });
  if (res.status !== 201) throw new Error(`sequence: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.seqid;
}

/** A contact group of the company with `n` contacts (through the API). */
async function groupOf(account: TestAccount, n: number): Promise<{ groupId: number; emails: string[] }> {
  const group = await createGroup(account.ownerToken);
  const emails: string[] = [];
  for (let i = 0; i < n; i++) emails.push((await createContact(account.ownerToken, { groupid: group.groupid })).email);
  return { groupId: group.groupid, emails };
}

describe("an acknowledged occurrence", () => {
  it("holds its waiting reminders except `always` ones; taking it back queues those still ahead and drops those whose time passed", async () => {
    const account = await createAccount();
    const { groupId } = await groupOf(account, 1);
    const seqid = await sequence(account.ownerToken, [
      { period: 7, unit: "day", type: 1 },
      { period: 3, unit: "day", type: 1, group_id: groupId, unless_acknowledged: true },
      { period: 0, unit: "day", type: 1, always: true },
    ]);
    const date = futureDate(20);
    const item = await createItem(account.ownerToken, { expiry_date: date, seqid });
    expect(states(item.reminders.queued)).toEqual([
      [addDays(date, -7), "queued"],
      [addDays(date, -3), "queued"],
      [date, "queued"],
    ]);
    expect(item.reminders.queued[1]).toMatchObject({ group_id: groupId, unless_acknowledged: true, always: false });
    expect(item.reminders.queued[2]).toMatchObject({ group_id: null, always: true });

    expectStatus(
      await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, { token: account.ownerToken }),
      200,
    );
    let list = await reminders(account.ownerToken, item.item_id);
    expect(states(list.queued)).toEqual([
      [addDays(date, -7), "held"],
      [addDays(date, -3), "held"],
      [date, "queued"],
    ]);
    // The detail's view agrees (it is written by the clock with the sync).
    expect(
      states(
        ok(await call("getItem", `/v1/items/${item.item_id}`, { token: account.ownerToken })).body.data.reminders
          .queued,
      ),
    ).toEqual(states(list.queued));

    // While held, the first one's minute comes: nothing is sent; taken back, it is dropped, not sent late.
    await backdate(account.companyId, [list.queued[0]!.reminder_id]);
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    expect(emails).toEqual([]);
    expectStatus(
      await call("unacknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, { token: account.ownerToken }),
      200,
    );
    list = await reminders(account.ownerToken, item.item_id);
    expect(states(list.queued)).toEqual([
      [addDays(date, -3), "queued"],
      [date, "queued"],
    ]);
    expect(list.sent).toEqual([]);
  });

  it("sends only its `always` steps when their minute comes, and no escalation", async () => {
    const account = await createAccount();
    const contact = await createContact(account.ownerToken);
    const { groupId } = await groupOf(account, 2);
    const seqid = await sequence(account.ownerToken, [
      { period: 3, unit: "day", type: 1, group_id: groupId, unless_acknowledged: true },
      { period: 0, unit: "day", type: 1, always: true },
    ]);
    const item = await createItem(account.ownerToken, {
      expiry_date: futureDate(10),
      seqid,
      contact_id: contact.contact_id,
    });
    await call("acknowledgeItem", `/v1/items/${item.item_id}/acknowledge`, { token: account.ownerToken });
    await backdate(
      account.companyId,
      item.reminders.queued.map((r) => r.reminder_id),
    );
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    expect(emails.map((e) => e.to)).toEqual([contact.email]);
    const list = await reminders(account.ownerToken, item.item_id);
    expect(list.sent.map((r) => r.always)).toEqual([true]);
    expect(list.sent[0]!.deliveries).toEqual([
      expect.objectContaining({
        channel: "email",
        contact_id: contact.contact_id,
        state: "sent",
        recipient: contact.email,
      }),
    ]);
  });

  it("escalates to the group when nobody acknowledged: one delivery per contact, each with its own state", async () => {
    const account = await createAccount();
    const { groupId, emails: addresses } = await groupOf(account, 3);
    const seqid = await sequence(account.ownerToken, [
      { period: 3, unit: "day", type: 1, group_id: groupId, unless_acknowledged: true },
    ]);
    const item = await createItem(account.ownerToken, { expiry_date: futureDate(10), seqid });
    await backdate(
      account.companyId,
      item.reminders.queued.map((r) => r.reminder_id),
    );
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    expect(emails.map((e) => e.to).sort()).toEqual([...addresses].sort());
    const [sent] = (await reminders(account.ownerToken, item.item_id)).sent;
    expect(sent!.deliveries).toHaveLength(3);
    expect(sent!.deliveries.map((d) => [d.state, d.attempts])).toEqual([
      ["sent", 1],
      ["sent", 1],
      ["sent", 1],
    ]);
    expect(new Set(sent!.deliveries.map((d) => d.contact_id)).size).toBe(3);
  });

  it("is applied before anything fires even when the clock never heard of it (the alarm replays D1's outbox)", async () => {
    const account = await createAccount();
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { expiry_date: futureDate(10), contact_id: contact.contact_id });
    // The records' action alone: the write committed, the Worker died before telling the clock.
    const db = recipientDb(contact.contact_id);
    const result = await acknowledgeItem(db, account.companyId, item.item_id, {
      by: { type: "contact", id: contact.contact_id },
      via: "link",
      occurrence: 1,
    });
    expect(result.outcome).toBe("applied");
    await backdate(
      account.companyId,
      item.reminders.queued.map((r) => r.reminder_id),
    );
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    // Only the default sequence's "on the day" step would be `always`: the Standard sequence has none.
    expect(emails).toEqual([]);
    expect((await reminders(account.ownerToken, item.item_id)).sent).toEqual([]);
  });
});

describe("a snoozed occurrence", () => {
  it("sends nothing before its date, then one reminder at 09:00 that day to whoever snoozed, then the steps still ahead", async () => {
    const account = await createAccount();
    const contact = await createContact(account.ownerToken);
    const date = futureDate(40);
    const item = await createItem(account.ownerToken, { expiry_date: date, contact_id: contact.contact_id });
    const until = futureDate(28);
    const snoozed = await call("snoozeItem", `/v1/items/${item.item_id}/snooze`, {
      token: account.ownerToken,
      body: { until },
    });
    expectStatus(snoozed, 200, JSON.stringify(snoozed.body));
    let list = await reminders(account.ownerToken, item.item_id);
    expect(list.queued.map((r) => [r.date, r.hour, r.state, r.origin])).toEqual([
      [addDays(date, -30), "09:00", "held", "sequence"],
      [addDays(date, -14), "09:00", "held", "sequence"],
      [until, "09:00", "queued", "snooze"],
      [addDays(date, -7), "09:00", "queued", "sequence"],
      [addDays(date, -1), "09:00", "queued", "sequence"],
      [date, "09:00", "queued", "sequence"],
    ]);

    // Ended: back as it was. Snoozed again, its day comes: the one reminder goes to the item's contact.
    await call("unsnoozeItem", `/v1/items/${item.item_id}/snooze`, { token: account.ownerToken });
    list = await reminders(account.ownerToken, item.item_id);
    expect(list.queued.map((r) => r.state)).toEqual(["queued", "queued", "queued", "queued", "queued"]);
    await call("snoozeItem", `/v1/items/${item.item_id}/snooze`, { token: account.ownerToken, body: { until } });
    list = await reminders(account.ownerToken, item.item_id);
    const [first, second, snooze] = list.queued;
    await backdate(account.companyId, [first!.reminder_id, snooze!.reminder_id]);
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    expect(emails.map((e) => e.to)).toEqual([contact.email]);
    list = await reminders(account.ownerToken, item.item_id);
    expect(list.sent.map((r) => r.origin)).toEqual(["snooze"]);
    // The step that fell due while snoozed is dropped; the one after it goes on (its instant is still ahead here).
    expect(list.queued.map((r) => r.reminder_id)).not.toContain(first!.reminder_id);
    expect(list.queued.find((r) => r.reminder_id === second!.reminder_id)).toMatchObject({ state: "queued" });
  });

  it("sends its reminder to the contact who snoozed from their page", async () => {
    const account = await createAccount();
    const owner = await createContact(account.ownerToken);
    const other = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { expiry_date: futureDate(40), contact_id: owner.contact_id });
    const { snoozeItem, syncAction } = await import("../../src/records/items/actions");
    const db = recipientDb(other.contact_id);
    const result = await snoozeItem(db, account.companyId, item.item_id, {
      by: { type: "contact", id: other.contact_id },
      via: "link",
      until: futureDate(5),
    });
    await syncAction(env, account.companyId, item.item_id, result);
    const snooze = (await reminders(account.ownerToken, item.item_id)).queued.find((r) => r.origin === "snooze")!;
    expect(snooze.contact_id).toBe(other.contact_id);
  });
});

describe("recipients of sequence steps and reminders", () => {
  it("refuses a contact or group not of the company, naming the step, and contradictory fields", async () => {
    const account = await createAccount();
    const other = await createAccount();
    const foreign = await createGroup(other.ownerToken);
    const base = { period: 7, unit: "day", type: 1 };
    const post = (reminders: Fields[]) =>
      call("createReminderSequence", "/v1/reminder-sequences", {
        token: account.ownerToken,
        body: { name: crypto.randomUUID().slice(0, 8), reminders },
      });
    expectShapeB(
      await post([base, { ...base, period: 3, group_id: foreign.groupid }]),
      400,
      /^reminders\.1\.group_id: contact group \d+ is not a contact group of the company$/,
    );
    expectShapeB(
      await post([{ ...base, contact_id: 999_999_999 }]),
      400,
      /^reminders\.0\.contact_id: contact 999999999 is not a contact/,
    );
    expectShapeB(
      await post([{ ...base, contact_id: 1, group_id: 2 }]),
      400,
      /reminders\.0\.group_id: give contact_id or group_id, not both/,
    );
    expectShapeB(await post([{ ...base, always: true, unless_acknowledged: true }]), 400, /reminders\.0\.always/);
    expectShapeB(await post([{ ...base, group_id: "x" }]), 400, /reminders\.0\.group_id/);
    const item = await createItem(account.ownerToken);
    expectShapeB(
      await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
        token: account.ownerToken,
        body: { period: 1, unit: "day", rtype: 1, group_id: foreign.groupid },
      }),
      400,
      /group_id \d+ is not a contact group of the company/,
    );
  });

  it("a group reminder goes to at most 200 contacts, the first by contact id", async () => {
    const account = await createAccount({}, { contacts: 1000 });
    const group = await createGroup(account.ownerToken);
    const rows = Array.from({ length: 205 }, (_, i) => [
      account.companyId,
      account.deptId,
      group.groupid,
      "Member",
      String(i),
      `m${i}-${group.groupid}@example.test`,
    ]);
    await env.DB.prepare(
      `INSERT INTO contacts (company_id, dept_id, group_id, first_name, last_name, email, email_key)
       SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 5 FROM json_each(?)`,
    )
      .bind(JSON.stringify(rows))
      .run();
    const item = await createItem(account.ownerToken, { expiry_date: futureDate(30), seqid: 0 });
    const added = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: account.ownerToken,
      body: { period: 1, unit: "day", rtype: 1, group_id: group.groupid },
    });
    expectStatus(added, 201, JSON.stringify(added.body));
    await backdate(account.companyId, [added.body.data.reminder_id]);
    const emails = await captureEmails(account.companyId);
    await runDurableObjectAlarm(stubOf(account.companyId));
    expect(emails).toHaveLength(200);
    const [sent] = (await reminders(account.ownerToken, item.item_id)).sent;
    const ids = sent!.deliveries.map((d) => d.contact_id);
    expect(ids).toHaveLength(200);
    expect(Math.max(...ids.map(Number))).toBeLessThan(
      Math.max(
        ...(
          await env.DB.prepare("SELECT id FROM contacts WHERE group_id = ?").bind(group.groupid).all<{ id: number }>()
        ).results.map((r) => r.id),
      ),
    );
  });
});

describe("the clock's store", () => {
  it("migrates version 6's deliveries to one per recipient: pending ones are resolved when next attempted, finished ones keep their state", async () => {
    const stub = env.COMPANY_CLOCK.get(env.COMPANY_CLOCK.newUniqueId());
    await runInDurableObject(stub, (_i, state) => {
      const sql = state.storage.sql;
      for (const table of [
        "meta",
        "items",
        "reminders",
        "triggered",
        "deliveries",
        "events",
        "webhook_deliveries",
        "applied_requests",
        "renewals",
        "audit_outbox",
        "bounces",
        "suppressed_addresses",
        "digests",
        "channel_pace",
      ])
        sql.exec(`DROP TABLE IF EXISTS ${table}`);
      migrate(state.storage, 6);
      sql.exec(
        "INSERT INTO reminders (reminder_id, item_id, origin, date, hour, due_at, contact_id, channels, state, created_at) VALUES (1, 5, 'manual', '2027-01-01', '09:00', 0, 42, '[\"email\"]', 'sent', 0)",
      );
      sql.exec(
        "INSERT INTO reminders (reminder_id, item_id, origin, date, hour, due_at, contact_id, channels, state, created_at) VALUES (2, 5, 'sequence', '2027-01-02', '09:00', 0, NULL, '[\"email\"]', 'sent', 0)",
      );
      sql.exec(
        "INSERT INTO deliveries (reminder_id, channel, state, attempts, recipient, delivered_at) VALUES (1, 'email', 'sent', 1, 'a@example.test', 5)",
      );
      sql.exec(
        "INSERT INTO deliveries (reminder_id, channel, state, attempts, next_at, last_error) VALUES (2, 'email', 'pending', 2, 7, 'mail server said 451')",
      );
      migrate(state.storage);
      expect(sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one().value).toBe(String(SCHEMA_VERSION));
      expect(
        sql
          .exec(
            "SELECT reminder_id, channel, contact_id, state, attempts, next_at, recipient FROM deliveries ORDER BY reminder_id",
          )
          .toArray(),
      ).toEqual([
        {
          reminder_id: 1,
          channel: "email",
          contact_id: 42,
          state: "sent",
          attempts: 1,
          next_at: null,
          recipient: "a@example.test",
        },
        { reminder_id: 2, channel: "email", contact_id: 0, state: "pending", attempts: 2, next_at: 7, recipient: null },
      ]);
      expect(sql.exec("SELECT always, unless_ack, group_id FROM reminders WHERE reminder_id = 1").one()).toEqual({
        always: 0,
        unless_ack: 0,
        group_id: null,
      });
    });
  });
});
