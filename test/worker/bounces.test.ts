// Bounces and complaints (docs/bounces.md) through the email() handler's logic (handleInbound, the
// message as Email Routing hands it), with real reminders fired by the clock: a hard bounce marks
// the delivery and suppresses the address, a repeated report counts once, three soft bounces
// suppress, a complaint found by the returned original's header, the next reminder `suppressed`,
// the reminder.bounced event, GET /v1/deliveries; and forged, foreign, mismatched, oversized and
// malformed messages change nothing.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { PENDING_MARKS_KEY, problemDeliveries } from "../../src/company-clock/bounces";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { migrate } from "../../src/company-clock/store";
import { handleInbound, MAX_INBOUND_BYTES } from "../../src/inbound/email-handler";
import { mintBounceAddress } from "../../src/lib/bounce-address";
import { call, createAccount, createContact, createItem, env, expectShapeB, ok } from "./helpers";
import { fireReminder } from "./support/recipient";
import { aolComplaint, gmailHardBounce, outlookHardBounce, postfixBounce } from "./support/bounce-samples";

const SENDER = env.EMAIL_FROM ?? "reminders@expiry-reminder.example";

/** Delivers a raw message to the handler as Email Routing would, to `to`. */
function inbound(raw: string, to: string, rawSize?: number) {
  const bytes = new TextEncoder().encode(raw);
  return handleInbound({ to, raw: new Response(bytes).body!, rawSize: rawSize ?? bytes.byteLength }, env);
}

/** A company with a contact and an item, and a reminder to the contact fired: its delivery's bounce address. */
async function sentReminder() {
  const account = await createAccount();
  const contact = await createContact(account.ownerToken);
  const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
  return { account, contact, item, ...(await fireTo(account, item.item_id, contact.contact_id)) };
}

async function fireTo(account: { companyId: number; ownerToken: string }, itemId: number, contactId: number) {
  const emails = await fireReminder(account.companyId, account.ownerToken, itemId, { contact_id: contactId });
  const list = ok(await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token: account.ownerToken })).body
    .data;
  const reminder = list.sent.reduce((a, b) => (b.reminder_id > a.reminder_id ? b : a));
  const bounce = await mintBounceAddress(env.LINK_SIGNING_KEYS, SENDER, {
    companyId: account.companyId,
    reminderId: reminder.reminder_id,
    contactId,
  });
  return { emails, reminderId: reminder.reminder_id, bounce };
}

async function deliveryOf(token: string, itemId: number, reminderId: number) {
  const list = ok(await call("listItemReminders", `/v1/items/${itemId}/reminders`, { token })).body.data;
  return list.sent.find((r) => r.reminder_id === reminderId)!.deliveries.find((d) => d.channel === "email")!;
}

async function suppressedCount(companyId: number): Promise<number> {
  return runInDurableObject(clockFor(env, companyId), (_i, state) =>
    Number(state.storage.sql.exec("SELECT count(*) AS n FROM suppressed_addresses").one().n),
  );
}

/**
 * The contacts' email_status is written by the clock's next alarm, which the report's
 * reminder.bounced event arms for 5 s later (docs/bounces.md): that alarm, run now.
 */
async function contactsMarked(companyId: number): Promise<void> {
  expect(await runDurableObjectAlarm(clockFor(env, companyId))).toBe(true);
}

describe("a hard bounce", () => {
  it("marks the delivery bounced once, suppresses the address, lists it, and the next reminder is suppressed", async () => {
    const { account, contact, item, emails, reminderId, bounce } = await sentReminder();
    expect(emails).toHaveLength(1);
    const dsn = gmailHardBounce({ rcpt: contact.email!, bounce });
    expect(await inbound(dsn, bounce)).toMatchObject({
      action: "recorded",
      result: { state: "bounced", suppressed: true },
    });
    const delivery = await deliveryOf(account.ownerToken, item.item_id, reminderId);
    expect(delivery).toMatchObject({ state: "bounced", recipient: contact.email });
    await contactsMarked(account.companyId);
    const marked = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: account.ownerToken }))
      .body.data;
    expect(marked).toMatchObject({ email_status: "bounced" });
    expect(Date.parse(marked.email_status_changed_at!)).toBeGreaterThan(Date.now() - 60_000);
    expect(delivery.last_error).toMatch(/^smtp; 550-5\.1\.1/);
    // The same DSN again (and another system's report for the same delivery): recorded once.
    expect(await inbound(dsn, bounce)).toMatchObject({ action: "duplicate" });
    expect(await inbound(outlookHardBounce({ rcpt: contact.email!, bounce }), bounce)).toMatchObject({
      action: "duplicate",
    });
    const events = await runInDurableObject(clockFor(env, account.companyId), (_i, state) =>
      state.storage.sql.exec<{ data: string }>("SELECT data FROM events WHERE type = 'reminder.bounced'").toArray(),
    );
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0]!.data)).toMatchObject({
      delivery: { reminder_id: reminderId, channel: "email", contact_id: contact.contact_id, state: "bounced" },
      contact: { contact_id: contact.contact_id, email: contact.email },
      kind: "hard",
      status: "5.1.1",
      suppressed: true,
    });

    const listed = ok(
      await call("listProblemDeliveries", "/v1/deliveries?state=bounced", { token: account.ownerToken }),
    ).body;
    expect(listed.data).toEqual([
      expect.objectContaining({
        reminder_id: reminderId,
        state: "bounced",
        item: { item_id: item.item_id, title: item.title },
        contact: expect.objectContaining({ contact_id: contact.contact_id, address: contact.email }),
        bounce: { kind: "hard", status: "5.1.1" },
      }),
    ]);

    // The next reminder to that address is not sent.
    const next = await fireTo(account, item.item_id, contact.contact_id);
    expect(next.emails).toHaveLength(0);
    const suppressed = await deliveryOf(account.ownerToken, item.item_id, next.reminderId);
    expect(suppressed).toMatchObject({ state: "suppressed", recipient: contact.email });
    expect(suppressed.last_error).toMatch(/^address_suppressed: .*\(hard bounce 5\.1\.1\)$/);
    const all = ok(await call("listProblemDeliveries", "/v1/deliveries", { token: account.ownerToken })).body.data;
    expect(all.map((d) => [d.reminder_id, d.state])).toEqual([
      [next.reminderId, "suppressed"],
      [reminderId, "bounced"],
    ]);
    // Keyset pages: one at a time, newest first, then the end.
    const first = ok(await call("listProblemDeliveries", "/v1/deliveries?limit=1", { token: account.ownerToken })).body;
    expect(first.data.map((d) => d.reminder_id)).toEqual([next.reminderId]);
    const second = ok(
      await call("listProblemDeliveries", `/v1/deliveries?limit=1&cursor=${first.meta.next_cursor}`, {
        token: account.ownerToken,
      }),
    ).body;
    expect(second.data.map((d) => d.reminder_id)).toEqual([reminderId]);
    expect(second.meta.next_cursor).toBeNull();
  });
});

describe("contacts' email_status in D1", () => {
  it("is queued in the clock with the bounce and written for every address of the window by one alarm", async () => {
    const account = await createAccount();
    const contacts = [await createContact(account.ownerToken), await createContact(account.ownerToken)];
    const item = await createItem(account.ownerToken, { contact_id: contacts[0]!.contact_id });
    // Both sent first: firing a reminder runs the alarm.
    const bounces = [];
    for (const contact of contacts) bounces.push((await fireTo(account, item.item_id, contact.contact_id)).bounce);
    for (const [i, contact] of contacts.entries())
      expect(await inbound(gmailHardBounce({ rcpt: contact.email!, bounce: bounces[i]! }), bounces[i]!)).toMatchObject({
        action: "recorded",
      });
    const queue = () =>
      runInDurableObject(clockFor(env, account.companyId), (_i, state) => {
        const row = state.storage.sql
          .exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", PENDING_MARKS_KEY)
          .toArray()[0];
        return row ? (JSON.parse(row.value) as string[]) : [];
      });
    // The clock's store is the record: both addresses wait there for D1.
    expect((await queue()).sort()).toEqual(contacts.map((c) => c.email!.toLowerCase()).sort());
    await contactsMarked(account.companyId);
    for (const contact of contacts) {
      const marked = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: account.ownerToken }));
      expect(marked.body.data.email_status).toBe("bounced");
    }
    expect(await queue()).toEqual([]);
  });
});

describe("soft bounces and complaints", () => {
  it("three soft bounces in 30 days suppress the address; two do not", async () => {
    const account = await createAccount();
    const contact = await createContact(account.ownerToken);
    const item = await createItem(account.ownerToken, { contact_id: contact.contact_id });
    const outcomes = [];
    for (let i = 0; i < 3; i++) {
      const { bounce } = await fireTo(account, item.item_id, contact.contact_id);
      outcomes.push(await inbound(postfixBounce({ rcpt: contact.email!, bounce }, "4.2.2"), bounce));
      if (i < 2) {
        expect(await suppressedCount(account.companyId)).toBe(0);
        const still = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: account.ownerToken }));
        expect(still.body.data.email_status).toBe("active");
      }
    }
    expect(
      outcomes.map((o) => o.action === "recorded" && o.result.outcome === "recorded" && o.result.suppressed),
    ).toEqual([false, false, true]);
    expect(await suppressedCount(account.companyId)).toBe(1);
  });

  it("an ARF complaint, addressed elsewhere, is found by the original's X-Bounce-Address: complained and suppressed", async () => {
    const { account, contact, item, reminderId, bounce } = await sentReminder();
    const outcome = await inbound(aolComplaint({ rcpt: contact.email!, bounce }), "fbl@expiry-reminder.example");
    expect(outcome).toMatchObject({ action: "recorded", result: { state: "complained", suppressed: true } });
    expect(await deliveryOf(account.ownerToken, item.item_id, reminderId)).toMatchObject({ state: "complained" });
    await contactsMarked(account.companyId);
    const marked = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: account.ownerToken }))
      .body.data;
    expect(marked).toMatchObject({ email_status: "complained" });
    const listed = ok(
      await call("listProblemDeliveries", "/v1/deliveries?state=complained", { token: account.ownerToken }),
    ).body.data;
    expect(listed[0]).toMatchObject({ reminder_id: reminderId, bounce: { kind: "complaint", status: "abuse" } });
  });
});

describe("refused messages change nothing", () => {
  it("forged, unsigned, foreign, mismatched, oversized, malformed", async () => {
    const mine = await sentReminder();
    const other = await sentReminder();
    const rcpt = mine.contact.email!;
    const forged = mine.bounce.replace(/bounces\+([a-z2-7])/, (_m, c: string) => `bounces+${c === "a" ? "b" : "a"}`);
    // The other company's valid token naming one of this company's reminder ids.
    const foreign = await mintBounceAddress(env.LINK_SIGNING_KEYS, SENDER, {
      companyId: other.account.companyId,
      reminderId: mine.reminderId,
      contactId: mine.contact.contact_id,
    });
    const cases: Array<[string, string, number?]> = [
      [gmailHardBounce({ rcpt, bounce: forged }), forged],
      [gmailHardBounce({ rcpt, bounce: "bounces+aaaa@expiry-reminder.example" }), "reminders@expiry-reminder.example"],
      [gmailHardBounce({ rcpt, bounce: foreign }), foreign],
      [gmailHardBounce({ rcpt: "someone-else@example.com", bounce: mine.bounce }), mine.bounce],
      [gmailHardBounce({ rcpt, bounce: mine.bounce }), mine.bounce, MAX_INBOUND_BYTES + 1],
      ["From: a@b\r\nSubject: hi\r\n\r\nnot a report", mine.bounce],
      ["\u0000\u0001\u0002 garbage \r\n\r\n\r\n--", mine.bounce],
      [`${"x".repeat(MAX_INBOUND_BYTES + 10)}`, mine.bounce],
    ];
    for (const [raw, to, size] of cases) {
      const outcome = await inbound(raw, to, size);
      expect(outcome.action, `${to} ${raw.slice(0, 60)}`).toBe("rejected");
    }
    expect(await suppressedCount(mine.account.companyId)).toBe(0);
    expect(await suppressedCount(other.account.companyId)).toBe(0);
    expect(await deliveryOf(mine.account.ownerToken, mine.item.item_id, mine.reminderId)).toMatchObject({
      state: "sent",
    });
  });
});

describe("GET /v1/deliveries", () => {
  it("refuses an unknown state, a bad since and a bad cursor, naming the field", async () => {
    const account = await createAccount();
    for (const [query, field] of [
      ["state=sent", "state"],
      ["since=yesterday", "since"],
      ["cursor=bm9wZQ", "cursor"],
      ["limit=0", "limit"],
    ] as const) {
      const res = await call("listProblemDeliveries", `/v1/deliveries?${query}`, { token: account.ownerToken });
      expectShapeB(res, 400, new RegExp(field));
    }
    const empty = ok(
      await call("listProblemDeliveries", "/v1/deliveries?since=2026-01-01", { token: account.ownerToken }),
    ).body;
    expect(empty).toMatchObject({ data: [], meta: { next_cursor: null } });
  });
});

describe("the clock's store, version 8", () => {
  it("gives finished deliveries of earlier versions the time of their state (failed ones are listed), pending ones none", async () => {
    const stub = env.COMPANY_CLOCK.get(env.COMPANY_CLOCK.newUniqueId());
    await runInDurableObject(stub, (_i, state) => {
      const sql = state.storage.sql;
      for (const table of ["meta", "items", "reminders", "triggered", "deliveries", "events", "webhook_deliveries"])
        sql.exec(`DROP TABLE IF EXISTS ${table}`);
      for (const table of [
        "applied_requests",
        "renewals",
        "audit_outbox",
        "bounces",
        "suppressed_addresses",
        "digests",
        "channel_pace",
      ])
        sql.exec(`DROP TABLE IF EXISTS ${table}`);
      migrate(state.storage, 7);
      sql.exec(
        "INSERT INTO reminders (reminder_id, item_id, origin, date, hour, due_at, contact_id, channels, state, sent_at, created_at) VALUES (1, 5, 'manual', '2027-01-01', '09:00', 0, 42, '[\"email\"]', 'sent', 1000, 0)",
      );
      sql.exec(
        "INSERT INTO deliveries (reminder_id, channel, contact_id, state, attempts, last_error) VALUES (1, 'email', 42, 'failed', 6, 'mail server said 554')",
      );
      sql.exec(
        "INSERT INTO deliveries (reminder_id, channel, contact_id, state, attempts, recipient, delivered_at) VALUES (1, 'email', 43, 'sent', 1, 'b@example.test', 2000)",
      );
      sql.exec(
        "INSERT INTO deliveries (reminder_id, channel, contact_id, state, attempts) VALUES (1, 'sms', 0, 'pending', 0)",
      );
      migrate(state.storage);
      expect(
        sql.exec("SELECT contact_id, channel, changed_at FROM deliveries ORDER BY contact_id, channel").toArray(),
      ).toEqual([
        { contact_id: 0, channel: "sms", changed_at: null },
        { contact_id: 42, channel: "email", changed_at: 1000 },
        { contact_id: 43, channel: "email", changed_at: 2000 },
      ]);
      expect(problemDeliveries(sql, { limit: 10 }).map((d) => [d.contact_id, d.state, d.reason])).toEqual([
        [42, "failed", "mail server said 554"],
      ]);
    });
  });
});
