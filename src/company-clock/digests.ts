// Digests (docs/reminders.md, "Digests"): a contact whose `digest` is daily or weekly gets one email
// per period, at the company's `settings.digest_hour` in its time zone, listing every pending item
// they are the recipient of that is due within DIGEST_WINDOW_DAYS or overdue, and the items of the
// reminders folded into it. Their individual reminder emails are folded (reminder-delivery.ts:
// state `digested`), except steps marked `always`.
//
// Three steps, each bounded, run by the alarm:
// - schedule (refreshDigests): the next run's instant in meta, from D1's settings, or none when no
//   contact of the company wants a digest. The Worker asks for it after a write that changes a
//   contact's digest or the company's digest hour or zone; each run schedules the next.
// - plan (planDigests): at that instant, the contacts due that day are read from D1 a page at a time;
//   each page becomes one `digests` row per contact and period (`daily:YYYY-MM-DD`,
//   `weekly:YYYY-Www`) in one transaction with the plan's cursor. The row's key is what makes a
//   digest exactly once: a repeated plan (a crash, a second run the same day, an hour changed to a
//   later one) inserts nothing.
// - send (deliverDigests): pending rows are leased, their contacts and items read from D1 in one
//   batch, rendered and handed to the email binding, each outcome recorded as soon as it is known.
//   As for reminders, a crash after the binding took a message and before its outcome was recorded
//   repeats that one message after the lease (docs/reminders.md, "Delivery").

import type { Env } from "../env";
import type { EmailStatus } from "../lib/contact-preferences";
import { DEFAULT_DIGEST_HOUR } from "../records/companies";
import { eachInPool } from "../lib/pool";
import { recipientLinks } from "../lib/recipient-links";
import {
  addDays,
  DEFAULT_TIME_ZONE,
  instantToLocal,
  isClockTime,
  isoWeek,
  lastDailyRun,
  nextDailyRun,
  weekdayOf,
} from "../lib/time";
import { unsubscribeLinks } from "../lib/unsubscribe-links";
import { speechFor } from "../i18n/language";
import type { DigestCursor, DigestListQuery, DigestRow } from "./api";
import { DIGEST_REMINDER, normaliseAddress, suppressedAmong } from "./bounces";
import { COMPANY_SENDER_SQL, senderOf, type CompanySender } from "./company-facts";
import type { ClockContext } from "./context";
import { settle } from "./context";
import { DIGEST_MAX_ITEMS, digestMessage, type DigestEntry } from "./digest-email";
import { composeEmail } from "./outgoing-email";
import type { ReminderItemType } from "./reminder-email";
import { MAX_DELIVERY_ATTEMPTS, retryDelay, type Transports } from "./reminder-delivery";
import { sendGate } from "./send-gate";
import { DIGEST_NEXT_AT, DIGEST_PLAN, getMeta, setMeta } from "./store";

/** Items due within this many days of the digest's day (or overdue) are listed. */
export const DIGEST_WINDOW_DAYS = 30;
/** The company's digest hour when settings.digest_hour is not set. */

/** Contacts planned per D1 read (one transaction each). */
const PLAN_PAGE = 2_000;
/** Digests sent per alarm run; more ready re-arm the alarm at once. A run holds the object (and locally the
 * whole process) for its length: small runs let the company's other calls in between. */
export const DIGEST_BATCH = 100;
const CONCURRENCY = 20;
const LEASE_MS = 60_000;
/** A plan step that could not read D1 is tried again after this. */
const PLAN_RETRY_MS = 60_000;

/** meta keys: the hour and zone the next run was scheduled by (the instant and the plan: store.ts). */
const NEXT_AT = DIGEST_NEXT_AT;
const PLAN = DIGEST_PLAN;
const HOUR = "digest_hour";
const ZONE = "digest_zone";
/** Set once the object has read the digest settings (contacts may have chosen a digest before it knew of digests). */
const CHECKED = "digest_checked";

/** Whether the object has ever scheduled digests from D1's settings. */
export const digestsChecked = (sql: SqlStorage) => getMeta(sql, CHECKED) !== null;

interface Plan {
  /** The local day the run is for. */
  date: string;
  /** The last contact id planned. */
  cursor: number;
  /** When the next page may be read (D1 was away). */
  at: number;
}

export type DigestKind = "daily" | "weekly";
export const periodOf = (kind: DigestKind, date: string) =>
  kind === "daily" ? `daily:${date}` : `weekly:${isoWeek(date)}`;

const SETTINGS_SQL = `SELECT json_extract(settings, '$.digest_hour') AS hour, json_extract(settings, '$.timezone') AS zone,
  EXISTS (SELECT 1 FROM contacts WHERE company_id = ?1 AND digest <> 'off') AS wanted FROM companies WHERE id = ?1`;

interface DigestSettings {
  hour: string;
  zone: string;
  wanted: boolean;
}

function settingsOf(row: { hour: unknown; zone: unknown; wanted: unknown } | null | undefined): DigestSettings {
  return {
    hour: typeof row?.hour === "string" && isClockTime(row.hour) ? row.hour : DEFAULT_DIGEST_HOUR,
    zone: typeof row?.zone === "string" && row.zone ? row.zone : DEFAULT_TIME_ZONE,
    wanted: row?.wanted === 1,
  };
}

/**
 * Schedules the next run from the settings: none when no contact wants a digest. A run that is due
 * and not yet made stays due (a refresh at 08:00:30 must not skip the 08:00 run); otherwise the next
 * run is the next time the hour comes round in the zone.
 */
function schedule(sql: SqlStorage, settings: DigestSettings, now: number): void {
  setMeta(sql, CHECKED, "1");
  if (!settings.wanted) {
    sql.exec("DELETE FROM meta WHERE key = ?", NEXT_AT);
    return;
  }
  setMeta(sql, HOUR, settings.hour);
  setMeta(sql, ZONE, settings.zone);
  const current = Number(getMeta(sql, NEXT_AT) ?? Number.NaN);
  if (current <= now) return;
  setMeta(sql, NEXT_AT, String(nextDailyRun(now, settings.hour, settings.zone).at));
}

/** A page of the contacts due on a day: daily, or weekly on its weekday (contacts_company_digest_idx). */
export const PLAN_PAGE_SQL = `SELECT id, digest FROM contacts INDEXED BY contacts_company_digest_idx WHERE company_id = ?1 AND digest <> 'off' AND id > ?2
  AND (digest = 'daily' OR digest_weekday = ?3) ORDER BY id LIMIT ?4`;

/** Re-reads the company's digest settings from D1 and schedules the next run (the Worker's call after a write that changes them). */
export async function refreshDigests(clock: ClockContext): Promise<void> {
  const d1 = (await clock.db()).d1;
  const row = await d1.prepare(SETTINGS_SQL).bind(clock.companyId).first();
  clock.storage.transactionSync(() =>
    schedule(clock.sql, settingsOf(row as Parameters<typeof settingsOf>[0]), Date.now()),
  );
  await settle(clock);
}

/**
 * The plan step: when the run is due, the contacts due that day (daily, or weekly on that weekday)
 * become pending digests, a page per call. A clock that was away for more than a day makes the run
 * of the latest day only. True when more pages are left.
 */
export async function planDigests(clock: ClockContext): Promise<boolean> {
  const { sql } = clock;
  const now = Date.now();
  const stored = getMeta(sql, PLAN);
  let plan: Plan | null = stored ? (JSON.parse(stored) as Plan) : null;
  if (plan && plan.at > now) return false;
  if (!plan) {
    const due = Number(getMeta(sql, NEXT_AT) ?? Number.NaN);
    if (!(due <= now)) return false;
    const hour = getMeta(sql, HOUR) ?? DEFAULT_DIGEST_HOUR;
    const zone = getMeta(sql, ZONE) ?? DEFAULT_TIME_ZONE;
    // The day of the run that came due; a clock away for more than a day makes the latest day's only.
    const latest = lastDailyRun(now, hour, zone);
    const date = latest.at > due ? latest.date : instantToLocal(due, zone).date;
    const started: Plan = { date, cursor: 0, at: 0 };
    clock.storage.transactionSync(() => {
      setMeta(sql, PLAN, JSON.stringify(started));
      setMeta(sql, NEXT_AT, String(nextDailyRun(now, hour, zone).at));
    });
    plan = started;
  }
  const current = plan;
  let page: Array<{ id: number; digest: DigestKind }>;
  let settings: DigestSettings;
  try {
    const d1 = (await clock.db()).d1;
    const [contacts, settingsResult] = await d1.batch([
      d1.prepare(PLAN_PAGE_SQL).bind(clock.companyId, current.cursor, weekdayOf(current.date), PLAN_PAGE),
      d1.prepare(SETTINGS_SQL).bind(clock.companyId),
    ]);
    page = contacts!.results as typeof page;
    settings = settingsOf(settingsResult!.results[0] as Parameters<typeof settingsOf>[0]);
  } catch (error) {
    setMeta(sql, PLAN, JSON.stringify({ ...current, at: now + PLAN_RETRY_MS }));
    throw error;
  }
  const done = page.length < PLAN_PAGE;
  clock.storage.transactionSync(() => {
    for (const contact of page) {
      sql.exec(
        `INSERT OR IGNORE INTO digests (contact_id, period, date, state, attempts, next_at, created_at, changed_at)
         VALUES (?, ?, ?, 'pending', 0, ?, ?, ?)`,
        contact.id,
        periodOf(contact.digest, current.date),
        current.date,
        now,
        now,
        now,
      );
    }
    if (done) {
      sql.exec("DELETE FROM meta WHERE key = ?", PLAN);
      // The settings as they are now decide the run after this one (a changed hour or zone too).
      sql.exec("DELETE FROM meta WHERE key = ?", NEXT_AT);
      schedule(sql, settings, now);
    } else setMeta(sql, PLAN, JSON.stringify({ ...current, cursor: page[page.length - 1]!.id }));
  });
  return !done;
}

// ---- sending ----

/** Ready digests, oldest first (digests_next). */
export const LEASE_SQL =
  "SELECT contact_id, period, date, attempts FROM digests WHERE state = 'pending' AND next_at <= ? ORDER BY next_at LIMIT ?";
/** The reminders folded into the digests of a JSON list of contacts and not yet listed by one (deliveries_folded). */
export const FOLDED_SQL = `SELECT d.contact_id, d.reminder_id, r.item_id FROM json_each(?) AS j
  JOIN deliveries AS d INDEXED BY deliveries_folded ON d.contact_id = j.value AND d.state = 'digested' AND d.digest IS NULL
  JOIN reminders AS r ON r.reminder_id = d.reminder_id`;

type LeasedDigest = { contact_id: number; period: string; date: string; attempts: number };

type DigestOutcome =
  | { state: "sent"; recipient: string; messageId: string; items: number }
  | { state: "empty" | "skipped" | "no_recipient"; error: string | null }
  | { state: "suppressed"; recipient: string | null; error: string }
  | { state: "retry"; recipient: string | null; error: string };

/** One run of the digests' outbox: up to DIGEST_BATCH ready digests leased and sent. `more`: ready work is left. */
export async function deliverDigests(
  storage: DurableObjectStorage,
  env: Env,
  d1: D1Database,
  companyId: number,
  transports: Transports,
): Promise<{ more: boolean }> {
  const sql = storage.sql;
  const now = Date.now();
  let leased: LeasedDigest[] = [];
  storage.transactionSync(() => {
    leased = sql.exec<LeasedDigest>(LEASE_SQL, now, DIGEST_BATCH).toArray();
    for (const d of leased)
      sql.exec(
        "UPDATE digests SET attempts = attempts + 1, next_at = ? WHERE contact_id = ? AND period = ?",
        now + LEASE_MS,
        d.contact_id,
        d.period,
      );
  });
  if (leased.length === 0) return { more: false };
  // The reminders folded into each contact's digest, not yet listed by one.
  const folded = new Map<number, Array<{ reminderId: number; itemId: number }>>();
  for (const row of sql
    .exec<{ contact_id: number; reminder_id: number; item_id: number }>(
      FOLDED_SQL,
      JSON.stringify(leased.map((d) => d.contact_id)),
    )
    .toArray()) {
    const list = folded.get(row.contact_id) ?? [];
    list.push({ reminderId: row.reminder_id, itemId: row.item_id });
    folded.set(row.contact_id, list);
  }
  let facts: DigestFacts;
  try {
    facts = await digestFacts(d1, companyId, leased, folded);
  } catch (error) {
    for (const d of leased)
      record(storage, d, folded, {
        state: "retry",
        recipient: null,
        error: `digest details unavailable: ${String(error)}`,
      });
    return { more: true };
  }
  const suppressed = suppressedAmong(
    sql,
    [...facts.contacts.values()].flatMap((c) => (c.email ? [c.email] : [])),
  );
  const one = async (d: LeasedDigest) => {
    let outcome: DigestOutcome;
    try {
      outcome = await sendOne(env, companyId, d, facts, suppressed, transports);
    } catch (error) {
      outcome = { state: "retry", recipient: null, error: error instanceof Error ? error.message : String(error) };
    }
    record(storage, d, folded, outcome);
  };
  await eachInPool(leased, CONCURRENCY, one);
  const ready = sql
    .exec<{ n: number }>("SELECT count(*) AS n FROM digests WHERE state = 'pending' AND next_at <= ?", Date.now())
    .one().n;
  return { more: ready > 0 };
}

async function sendOne(
  env: Env,
  companyId: number,
  d: LeasedDigest,
  facts: DigestFacts,
  suppressed: Map<string, string>,
  transports: Transports,
): Promise<DigestOutcome> {
  const contact = facts.contacts.get(d.contact_id);
  if (!contact) return { state: "no_recipient", error: `contact ${d.contact_id} no longer exists` };
  if (contact.digest === "off") return { state: "skipped", error: "the contact turned its digest off" };
  const addressSuppressed = contact.email ? (suppressed.get(normaliseAddress(contact.email)) ?? null) : null;
  const stopped = sendGate({
    channel: "email",
    emailStatus: contact.emailStatus,
    channels: contact.channels,
    addressSuppressed,
  });
  if (stopped)
    return { state: "suppressed", recipient: addressSuppressed ? contact.email : null, error: stopped.slice(0, 300) };
  if (!contact.email) return { state: "no_recipient", error: "the contact has no email address" };
  const items = facts.items.get(d.contact_id) ?? [];
  if (items.length === 0) return { state: "empty", error: null };
  const entries: DigestEntry[] = await Promise.all(
    items.slice(0, DIGEST_MAX_ITEMS).map(async (item) => ({
      itemId: item.id,
      title: item.title,
      itemType: item.itemType,
      documentType: item.documentType,
      expiryDate: item.expiryDate,
      links: await recipientLinks(env, {
        companyId,
        itemId: item.id,
        contactId: d.contact_id,
        epoch: item.epoch,
        itemDate: item.expiryDate,
        today: d.date,
      }),
    })),
  );
  const links = await unsubscribeLinks(env, { companyId, contactId: d.contact_id, emailKey: contact.emailKey });
  const company = facts.company;
  const message = digestMessage({
    speech: speechFor(contact.language, company.language),
    kind: d.period.startsWith("weekly:") ? "weekly" : "daily",
    today: d.date,
    dateFormat: company.dateFormat,
    companyName: company.name,
    recipientFirstName: contact.firstName,
    recipientLastName: contact.lastName,
    entries,
    total: contact.total ?? items.length,
    overdue: contact.overdue,
    preferencesUrl: links?.preferences ?? null,
  });
  const messageId = await transports.email(
    composeEmail(message, {
      to: contact.email,
      sender: env.EMAIL_FROM ?? "",
      companyName: company.name,
      replyTo: company.replyTo,
      unsubscribeUrl: links?.unsubscribe ?? null,
      calendar: null,
    }),
    // A digest is no reminder's delivery: reminder 0 in its bounce address (docs/bounces.md).
    { companyId, reminderId: DIGEST_REMINDER, contactId: d.contact_id },
  );
  return { state: "sent", recipient: contact.email, messageId, items: contact.total ?? items.length };
}

/** A digest's outcome, in one transaction with the folded deliveries it settles (all but a retry settle them). */
function record(
  storage: DurableObjectStorage,
  d: LeasedDigest,
  folded: Map<number, Array<{ reminderId: number }>>,
  outcome: DigestOutcome,
): void {
  const sql = storage.sql;
  const done = Date.now();
  const where = [d.contact_id, d.period] as const;
  storage.transactionSync(() => {
    if (outcome.state === "retry") {
      const failed = d.attempts + 1 >= MAX_DELIVERY_ATTEMPTS;
      sql.exec(
        "UPDATE digests SET state = ?, recipient = ?, last_error = ?, next_at = ?, changed_at = ? WHERE contact_id = ? AND period = ?",
        failed ? "failed" : "pending",
        outcome.recipient,
        outcome.error.slice(0, 300),
        failed ? null : done + retryDelay(d.attempts + 1),
        done,
        ...where,
      );
      if (!failed) return;
    } else if (outcome.state === "sent") {
      sql.exec(
        "UPDATE digests SET state = 'sent', recipient = ?, message_id = ?, items = ?, last_error = NULL, next_at = NULL, changed_at = ? " +
          "WHERE contact_id = ? AND period = ?",
        outcome.recipient,
        outcome.messageId,
        outcome.items,
        done,
        ...where,
      );
    } else {
      sql.exec(
        "UPDATE digests SET state = ?, recipient = ?, last_error = ?, items = ?, next_at = NULL, changed_at = ? WHERE contact_id = ? AND period = ?",
        outcome.state,
        outcome.state === "suppressed" ? outcome.recipient : null,
        outcome.error,
        outcome.state === "empty" ? 0 : null,
        done,
        ...where,
      );
    }
    const reminders = folded.get(d.contact_id) ?? [];
    if (reminders.length > 0)
      sql.exec(
        "UPDATE deliveries SET digest = ? WHERE channel = 'email' AND contact_id = ? AND state = 'digested' AND digest IS NULL " +
          "AND reminder_id IN (SELECT value FROM json_each(?))",
        d.period,
        d.contact_id,
        JSON.stringify(reminders.map((r) => r.reminderId)),
      );
  });
}

// ---- what a digest needs from D1 ----

interface DigestContact {
  email: string | null;
  emailKey: string;
  emailStatus: EmailStatus;
  channels: string | null;
  digest: "off" | DigestKind;
  language: string | null;
  firstName: string | null;
  lastName: string | null;
  /** Items listed in all (more than DIGEST_MAX_ITEMS are counted, not listed). */
  total?: number;
  /** Of which overdue (before the digest's day). */
  overdue?: number;
}

interface DigestItem {
  id: number;
  title: string;
  itemType: ReminderItemType;
  documentType: string | null;
  expiryDate: string;
  epoch: number;
}

interface DigestFacts {
  company: CompanySender;
  contacts: Map<number, DigestContact>;
  items: Map<number, DigestItem[]>;
}

/**
 * The items each contact's digest lists: pending (not completed, not archived), the contact's own
 * (items.contact_id), due by the digest's day + DIGEST_WINDOW_DAYS (overdue ones too), and any
 * pending item whose reminder was folded into it; soonest first, the first DIGEST_MAX_ITEMS
 * with the count of all (items_contact_date_idx).
 */
export const DIGEST_ITEMS = `WITH t AS (SELECT value ->> 0 AS contact_id, value ->> 1 AS until, value ->> 2 AS today FROM json_each(?2)),
  f AS (SELECT value ->> 0 AS contact_id, value ->> 1 AS item_id FROM json_each(?3)),
  chosen AS (
    SELECT t.contact_id, t.today, i.id FROM t JOIN items AS i INDEXED BY items_contact_date_idx
      ON i.contact_id = t.contact_id AND i.archived = 0 AND i.company_id = ?1 AND i.expiry_date <= t.until
    UNION SELECT f.contact_id, t.today, f.item_id FROM f JOIN t ON t.contact_id = f.contact_id),
  listed AS (
    SELECT c.contact_id, i.id, i.title, i.item_type, i.expiry_date, i.schedule_epoch, d.name AS document_type,
      row_number() OVER (PARTITION BY c.contact_id ORDER BY i.expiry_date, i.id) AS n,
      count(*) OVER (PARTITION BY c.contact_id) AS total,
      sum(i.expiry_date < c.today) OVER (PARTITION BY c.contact_id) AS overdue
    FROM chosen c JOIN items i ON i.id = c.id AND i.company_id = ?1 AND i.status = 'pending' AND i.archived = 0
    LEFT JOIN document_types d ON d.id = i.document_type_id)
  SELECT * FROM listed WHERE n <= ?4 ORDER BY contact_id, n`;

async function digestFacts(
  d1: D1Database,
  companyId: number,
  leased: LeasedDigest[],
  folded: Map<number, Array<{ itemId: number }>>,
): Promise<DigestFacts> {
  const ids = JSON.stringify(leased.map((d) => d.contact_id));
  const [companyResult, contactRows, itemRows] = await d1.batch([
    d1.prepare(COMPANY_SENDER_SQL).bind(companyId),
    d1
      .prepare(
        `SELECT c.id, c.email, c.email_key, c.email_status, c.channels, c.digest, c.language, c.first_name, c.last_name
         FROM json_each(?2) AS t JOIN contacts c ON c.id = t.value AND c.company_id = ?1`,
      )
      .bind(companyId, ids),
    d1
      .prepare(DIGEST_ITEMS)
      .bind(
        companyId,
        JSON.stringify(leased.map((d) => [d.contact_id, addDays(d.date, DIGEST_WINDOW_DAYS), d.date])),
        JSON.stringify([...folded].flatMap(([contactId, list]) => list.map((f) => [contactId, f.itemId]))),
        DIGEST_MAX_ITEMS,
      ),
  ]);
  const contacts = new Map<number, DigestContact>();
  for (const r of contactRows!.results as Array<Record<string, unknown>>)
    contacts.set(Number(r.id), {
      email: (r.email as string | null) || null,
      emailKey: String(r.email_key ?? ""),
      emailStatus: (r.email_status as EmailStatus | null) ?? "active",
      channels: (r.channels as string | null) ?? null,
      digest: (r.digest as DigestContact["digest"]) ?? "off",
      language: (r.language as string | null) || null,
      firstName: (r.first_name as string | null) || null,
      lastName: (r.last_name as string | null) || null,
    });
  const items = new Map<number, DigestItem[]>();
  for (const r of itemRows!.results as Array<Record<string, unknown>>) {
    const contactId = Number(r.contact_id);
    const list = items.get(contactId) ?? [];
    list.push({
      id: Number(r.id),
      title: String(r.title ?? ""),
      itemType: (r.item_type as ReminderItemType) ?? "exp",
      documentType: (r.document_type as string | null) ?? null,
      expiryDate: String(r.expiry_date ?? ""),
      epoch: Number(r.schedule_epoch ?? 0),
    });
    items.set(contactId, list);
    const contact = contacts.get(contactId);
    if (contact) {
      contact.total = Number(r.total);
      contact.overdue = Number(r.overdue);
    }
  }
  return {
    company: senderOf(companyResult!.results[0] as Record<string, unknown> | undefined),
    contacts,
    items,
  };
}

// ---- GET /v1/digests ----

/** The statement of a page of the company's digests, newest day first (digests_recent), a keyset range. */
export function digestPageQuery(query: DigestListQuery): { sql: string; params: SqlStorageValue[] } {
  const conditions: string[] = [];
  const params: SqlStorageValue[] = [];
  if (query.contactId !== undefined) {
    conditions.push("contact_id = ?");
    params.push(query.contactId);
  }
  if (query.since !== undefined) {
    conditions.push("date >= ?");
    params.push(query.since);
  }
  if (query.state !== undefined) {
    conditions.push("state = ?");
    params.push(query.state);
  }
  if (query.after) {
    const [date, contactId, period] = query.after;
    // `date <= ?` first: the page starts as a range of the index rather than a scan from its start.
    conditions.push("date <= ? AND (date < ? OR (date = ? AND (contact_id > ? OR (contact_id = ? AND period > ?))))");
    params.push(date, date, date, contactId, contactId, period);
  }
  return {
    sql: `SELECT contact_id, period, date, state, attempts, items, recipient, message_id, last_error, created_at, changed_at
      FROM digests ${conditions.length ? `WHERE ${conditions.join(" AND ")}` : ""} ORDER BY date DESC, contact_id, period LIMIT ?`,
    params: [...params, query.limit + 1],
  };
}

/** A page of the company's digests and the cursor of the next. */
export function listDigests(sql: SqlStorage, query: DigestListQuery): { rows: DigestRow[]; next: DigestCursor | null } {
  const statement = digestPageQuery(query);
  const rows = sql.exec<DigestRow>(statement.sql, ...statement.params).toArray();
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return { rows: page, next: more && last ? [last.date, last.contact_id, last.period] : null };
}
