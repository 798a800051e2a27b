// Digests (issue 34, part 7): a contact on a daily or weekly digest gets one email per period at the
// company's digest hour, listing its pending items due within 30 days or overdue; its individual
// reminder emails are folded into it (except `always` steps); exactly one per contact and period;
// an empty digest is not sent. Runs are real alarms of the company clock; the run's instant is
// brought forward in its storage, as fireReminder brings a reminder's.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import type { OutgoingEmail } from "../../src/company-clock/reminder-delivery";
import { addDays, isoWeek, localToInstant, nextDailyRun, todayIn, weekdayOf } from "../../src/lib/time";
import { call, createAccount, createContact, createItem, env, expectStatus, ok } from "./helpers";
import { fireReminder, minutesAhead } from "./support/recipient";
import { gmailHardBounce } from "./support/bounce-samples";
import { handleInbound } from "../../src/inbound/email-handler";
import { mintBounceAddress } from "../../src/lib/bounce-address";

const today = () => todayIn("UTC");
const futureDate = (days: number) => addDays(today(), days);

/** The clock's digest meta and the run made now: the emails it handed to the binding. */
async function runDigests(companyId: number): Promise<OutgoingEmail[]> {
  const stub = clockFor(env, companyId);
  const sent: OutgoingEmail[] = [];
  let original: CompanyClock["transports"] | undefined;
  await runInDurableObject(stub, (instance: CompanyClock, state) => {
    original = instance.transports;
    instance.transports = {
      ...original,
      email: async (message, delivery) => (sent.push(message), original!.email(message, delivery)),
    };
    // The run's hour has come.
    if (state.storage.sql.exec("SELECT 1 FROM meta WHERE key = 'digest_next_at'").toArray().length > 0)
      state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'digest_next_at'", String(Date.now() - 1000));
  });
  try {
    // A run plans, then sends; a second alarm finishes what the first left.
    await runDurableObjectAlarm(stub);
    await runDurableObjectAlarm(stub);
  } finally {
    await runInDurableObject(stub, (instance: CompanyClock) => {
      instance.transports = original!;
    });
  }
  return sent;
}

const metaOf = (companyId: number, key: string) =>
  runInDurableObject(clockFor(env, companyId), (_: CompanyClock, state) => {
    const row = state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    return row?.value ?? null;
  });

async function digestsOf(token: string, query = "") {
  return ok(await call("listDigests", `/v1/digests${query}`, { token })).body;
}

async function company(digest: "daily" | "weekly" = "daily") {
  const { companyId, ownerToken: token } = await createAccount();
  const contact = await createContact(token, {
    first_name: "Ada",
    last_name: "Lovelace",
    digest,
    ...(digest === "weekly" ? { digest_weekday: weekdayOf(today()) } : {}),
  });
  return { companyId, token, contact };
}

describe("when digests run", () => {
  it("a contact on a digest schedules the company's run at its digest hour in its time zone; none when nobody wants one", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
      token,
      body: { timezone: "Europe/Berlin", digest_hour: "07:30" },
    });
    const plain = await createContact(token);
    expect(await metaOf(companyId, "digest_next_at")).toBeNull();
    const contact = await createContact(token, { digest: "daily" });
    const at = Number(await metaOf(companyId, "digest_next_at"));
    expect(at).toBe(nextDailyRun(Date.now(), "07:30", "Europe/Berlin").at);
    // Another hour moves it.
    await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
      token,
      body: { digest_hour: "18:05" },
    });
    expect(Number(await metaOf(companyId, "digest_next_at"))).toBe(
      nextDailyRun(Date.now(), "18:05", "Europe/Berlin").at,
    );
    // The last contact on a digest turns it off: no run.
    await call("updateContact", `/v1/contacts/${contact.contact_id}`, { token, body: { digest: "off" } });
    expect(await metaOf(companyId, "digest_next_at")).toBeNull();
    expect(plain.digest).toBe("off");
  });

  it("a clock that never read the digest settings reads them at its first call: preferences stored before digests were sent are honoured", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    const contact = await createContact(token);
    // As issue 34 stored it before digests were sent: no call told the clock.
    await env.DB.prepare("UPDATE contacts SET digest = 'daily' WHERE id = ?").bind(contact.contact_id).run();
    await createItem(token, { expiry_date: futureDate(3), seqid: 0, contact_id: contact.contact_id });
    expect(Number(await metaOf(companyId, "digest_next_at"))).toBe(nextDailyRun(Date.now(), "08:00", "UTC").at);
  });

  it("a run is due at the next time the hour comes round; a clock away for days makes the latest day's only", () => {
    const zone = "America/New_York";
    // 2026-03-08: the clocks go from 02:00 to 03:00.
    const before = localToInstant("2026-03-07", "12:00", zone);
    expect(nextDailyRun(before, "02:30", zone)).toEqual({
      date: "2026-03-08",
      at: localToInstant("2026-03-08", "02:30", zone),
    });
    expect(new Date(localToInstant("2026-03-08", "02:30", zone)).toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(isoWeek("2026-12-31")).toBe("2026-W53");
    expect(isoWeek("2027-01-01")).toBe("2026-W53");
    expect(isoWeek("2024-02-29")).toBe("2024-W09");
    expect(weekdayOf("2024-02-29")).toBe("thursday");
  });
});

describe("a digest", () => {
  it("lists the contact's pending items due within 30 days or overdue, soonest first, once per period", async () => {
    const { companyId, token, contact } = await company();
    const soon = await createItem(token, {
      title: "Soon",
      expiry_date: futureDate(5),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    const overdue = await createItem(token, {
      title: "Overdue",
      expiry_date: futureDate(-3),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    await createItem(token, { title: "Far", expiry_date: futureDate(45), seqid: 0, contact_id: contact.contact_id });
    const done = await createItem(token, {
      title: "Done",
      expiry_date: futureDate(2),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    ok(await call("setItemStatus", `/v1/items/${done.item_id}/status`, { token, body: { status: "completed" } }));
    const other = await createContact(token);
    await createItem(token, {
      title: "Not theirs",
      expiry_date: futureDate(1),
      seqid: 0,
      contact_id: other.contact_id,
    });

    const sent = await runDigests(companyId);
    expect(sent).toHaveLength(1);
    const [email] = sent;
    expect(email!.to).toBe(contact.email);
    expect(email!.headers["List-Unsubscribe"]).toMatch(/^<https:\/\/api\.test\/u\/[A-Za-z0-9_-]+>$/);
    expect(email!.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(email!.text.indexOf("Overdue")).toBeGreaterThanOrEqual(0);
    expect(email!.text.indexOf("Overdue")).toBeLessThan(email!.text.indexOf("Soon"));
    for (const absent of ["Far", "Done", "Not theirs"]) expect(email!.text).not.toContain(absent);
    expect(email!.text).toContain("/r/");

    const listed = await digestsOf(token);
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({
      contact: { contact_id: contact.contact_id, name: "Ada Lovelace" },
      kind: "daily",
      period: today(),
      date: today(),
      state: "sent",
      items: 2,
      recipient: contact.email,
      attempts: 1,
    });
    expect(soon.item_id).not.toBe(overdue.item_id);

    // The same day again (a repeated run, an hour moved later): nothing more.
    expect(await runDigests(companyId)).toHaveLength(0);
    expect((await digestsOf(token)).data).toHaveLength(1);
  });

  it("more than 200 items: the first 200 listed, all counted, the overdue ones too (the subject)", async () => {
    const { companyId, ownerToken: token, deptId } = await createAccount();
    const contact = await createContact(token, { digest: "daily" });
    await env.DB.prepare(
      `INSERT INTO items (company_id, dept_id, title, expiry_date, created_by, contact_id)
       SELECT ?, ?, 'Bulk ' || value, date(?, '-' || (1 + value % 20) || ' days'), 1, ? FROM json_each(?)`,
    )
      .bind(companyId, deptId, today(), contact.contact_id, JSON.stringify(Array.from({ length: 230 }, (_, i) => i)))
      .run();
    await createItem(token, { title: "Soon", expiry_date: futureDate(2), seqid: 0, contact_id: contact.contact_id });
    const [email] = await runDigests(companyId);
    expect(email!.subject).toContain("231 items, 230 overdue");
    expect(email!.text).toContain("31 more");
    const [digest] = (await digestsOf(token)).data;
    expect(digest).toMatchObject({ state: "sent", items: 231 });
  });

  it("a weekly digest goes on its weekday, keyed by the ISO week; not on another day", async () => {
    const { companyId, token, contact } = await company("weekly");
    await createItem(token, { title: "Weekly", expiry_date: futureDate(3), seqid: 0, contact_id: contact.contact_id });
    const other = await createContact(token, { digest: "weekly", digest_weekday: weekdayOf(futureDate(1)) });
    await createItem(token, {
      title: "Tomorrow's",
      expiry_date: futureDate(3),
      seqid: 0,
      contact_id: other.contact_id,
    });
    const sent = await runDigests(companyId);
    expect(sent.map((e) => e.to)).toEqual([contact.email]);
    const [digest] = (await digestsOf(token)).data;
    expect(digest).toMatchObject({ kind: "weekly", period: isoWeek(today()), state: "sent", items: 1 });
  });

  it("an empty digest is not sent; an unsubscribed contact's is suppressed", async () => {
    const { companyId, token, contact } = await company();
    const unsubscribed = await createContact(token, { digest: "daily" });
    await createItem(token, { expiry_date: futureDate(3), seqid: 0, contact_id: unsubscribed.contact_id });
    await env.DB.prepare("UPDATE contacts SET email_status = 'unsubscribed' WHERE id = ?")
      .bind(unsubscribed.contact_id)
      .run();
    expect(await runDigests(companyId)).toHaveLength(0);
    const byContact = new Map((await digestsOf(token)).data.map((d) => [d.contact.contact_id, d]));
    expect(byContact.get(contact.contact_id)).toMatchObject({ state: "empty", items: 0 });
    expect(byContact.get(unsubscribed.contact_id)).toMatchObject({ state: "suppressed" });
    expect(byContact.get(unsubscribed.contact_id)!.reason).toMatch(/^unsubscribed:/);
  });
});

describe("a digest's bounce", () => {
  it("marks the latest digest bounced once and suppresses the address and the contact", async () => {
    const { companyId, token, contact } = await company();
    await createItem(token, { expiry_date: futureDate(3), seqid: 0, contact_id: contact.contact_id });
    const [email] = await runDigests(companyId);
    expect(email!.to).toBe(contact.email);
    // The address a digest bounces to (the transport adds it as X-Bounce-Address) names reminder 0 and the contact.
    const bounce = await mintBounceAddress(env.LINK_SIGNING_KEYS, env.EMAIL_FROM!, {
      companyId,
      reminderId: 0,
      contactId: contact.contact_id,
    });
    const deliver = (raw: string) => {
      const bytes = new TextEncoder().encode(raw);
      return handleInbound({ to: bounce!, raw: new Response(bytes).body!, rawSize: bytes.byteLength }, env);
    };
    const dsn = gmailHardBounce({ rcpt: contact.email!, bounce: bounce! });
    expect(await deliver(dsn)).toMatchObject({ action: "recorded", result: { state: "bounced", suppressed: true } });
    expect(await deliver(dsn)).toMatchObject({ action: "duplicate" });
    const [digest] = (await digestsOf(token)).data;
    expect(digest).toMatchObject({ state: "bounced", recipient: contact.email });
    expect(digest!.reason).toMatch(/^hard 5\.1\.1/);
    expect((await digestsOf(token, "?state=bounced")).data).toHaveLength(1);
    const marked = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token })).body.data;
    expect(marked.email_status).toBe("bounced");
    // Another report naming someone else changes nothing.
    expect(await deliver(gmailHardBounce({ rcpt: "someone.else@example.test", bounce: bounce! }))).toMatchObject({
      action: "rejected",
    });
  });

  it("a digest report for a contact that got no digest is refused", async () => {
    const { companyId, contact } = await company();
    const bounce = await mintBounceAddress(env.LINK_SIGNING_KEYS, env.EMAIL_FROM!, {
      companyId,
      reminderId: 0,
      contactId: contact.contact_id,
    });
    const bytes = new TextEncoder().encode(gmailHardBounce({ rcpt: contact.email!, bounce }));
    expect(
      await handleInbound({ to: bounce, raw: new Response(bytes).body!, rawSize: bytes.byteLength }, env),
    ).toMatchObject({ action: "rejected" });
  });
});

describe("folding", () => {
  it("a reminder to a contact on a digest is folded into the next one (listed even beyond 30 days); an `always` step still goes", async () => {
    const { companyId, token, contact } = await company();
    const far = await createItem(token, {
      title: "Far but reminded",
      expiry_date: futureDate(60),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    expect(await fireReminder(companyId, token, far.item_id)).toHaveLength(0);
    const reminders = ok(await call("listItemReminders", `/v1/items/${far.item_id}/reminders`, { token })).body.data;
    const delivery = reminders.sent.flatMap((r) => r.deliveries).find((d) => d.channel === "email");
    expect(delivery).toMatchObject({ state: "digested", contact_id: contact.contact_id });

    const loud = await createItem(token, {
      title: "Always",
      expiry_date: futureDate(60),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    expect(await fireReminder(companyId, token, loud.item_id, { always: true })).toHaveLength(1);

    const [digest] = await runDigests(companyId);
    expect(digest!.text).toContain("Far but reminded");
    expect(digest!.text).not.toContain("Always");
    // Listed once: the next digest does not carry it again.
    await runInDurableObject(clockFor(env, companyId), (_: CompanyClock, state) => {
      expect(
        state.storage.sql
          .exec("SELECT digest FROM deliveries WHERE state = 'digested'")
          .toArray()
          .map((r) => r.digest),
      ).toEqual([`daily:${today()}`]);
    });
  });

  it("a contact off digests gets its reminders as before", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    const contact = await createContact(token);
    const item = await createItem(token, { expiry_date: futureDate(10), seqid: 0, contact_id: contact.contact_id });
    expect(await fireReminder(companyId, token, item.item_id)).toHaveLength(1);
    expect(minutesAhead(1).date).toMatch(/^\d{4}-/);
  });
});

describe("GET /v1/digests", () => {
  it("pages by cursor and filters by contact, state and day; bad parameters are 400 naming them", async () => {
    const { companyId, token, contact } = await company();
    const second = await createContact(token, { digest: "daily" });
    const third = await createContact(token, { digest: "daily" });
    for (const c of [contact, second, third])
      await createItem(token, { expiry_date: futureDate(2), seqid: 0, contact_id: c.contact_id });
    expect(await runDigests(companyId)).toHaveLength(3);
    const first = await digestsOf(token, "?limit=2");
    expect(first.data).toHaveLength(2);
    expect(first.meta.next_cursor).toEqual(expect.any(String));
    const rest = await digestsOf(token, `?limit=2&cursor=${first.meta.next_cursor}`);
    expect([...first.data, ...rest.data].map((d) => d.contact.contact_id)).toEqual(
      [contact, second, third].map((c) => c.contact_id).sort((a, b) => a - b),
    );
    expect(rest.meta.next_cursor).toBeNull();
    expect((await digestsOf(token, `?contact_id=${second.contact_id}`)).data).toHaveLength(1);
    expect((await digestsOf(token, "?state=empty")).data).toHaveLength(0);
    expect((await digestsOf(token, `?since=${futureDate(1)}`)).data).toHaveLength(0);
    for (const [query, field] of [
      ["?state=lost", "state"],
      ["?since=2026-02-30", "since"],
      ["?contact_id=abc", "contact_id"],
      ["?cursor=nope", "cursor"],
      ["?limit=201", "limit"],
    ] as const) {
      const bad = await call("listDigests", `/v1/digests${query}`, { token });
      expectStatus(bad, 400);
      expect(JSON.stringify(bad.body)).toContain(field);
    }
  });

  it("another company sees none of them", async () => {
    const { companyId, token, contact } = await company();
    await createItem(token, { expiry_date: futureDate(2), seqid: 0, contact_id: contact.contact_id });
    await runDigests(companyId);
    const { ownerToken: stranger } = await createAccount();
    expect((await digestsOf(stranger)).data).toHaveLength(0);
  });
});
