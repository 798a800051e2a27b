// Bounces and complaints of reminder emails, in the company clock (docs/bounces.md): the clock
// keeps the deliveries, so it is the one that marks them. A report the Worker's email() handler
// verified (its bounce token names this company's delivery) is recorded once per delivery and
// kind, in one transaction with the delivery's new state, the address's suppression when due and
// the reminder.bounced event. Also the suppression check of the send path and the problem list
// of GET /v1/deliveries.

import type { BounceReport, BounceResult, ProblemDeliveryRow, ProblemQuery } from "./api";
import type { ClockContext } from "./context";
import { settle } from "./context";
import type { AuditActor } from "../db/commit";
import { nameKey } from "../lib/text-key";
import { MARKS_PER_BATCH, markSuppressedContacts, type SuppressedMark } from "../records/email-status";
import { getMeta, PROBLEM_STATES, setMeta } from "./store";
import { recordEvent } from "./webhooks";

/** Soft bounces of one address within SOFT_WINDOW_MS that suppress it. */
export const SOFT_BOUNCES_TO_SUPPRESS = 3;
export const SOFT_WINDOW_MS = 30 * 86_400_000;
/** How long a reminder.bounced event waits to be fanned out with the others of its window. */
export const BOUNCE_EVENT_BATCH_MS = 5_000;

/**
 * The addresses whose contacts' email_status D1 has still to get (a JSON list in the clock's meta),
 * queued in the transaction that recorded the report and written by the next alarm, which that
 * report's reminder.bounced event arms for BOUNCE_EVENT_BATCH_MS later (flushContactMarks).
 */
export const PENDING_MARKS_KEY = "bounce_contact_marks";
/** Beyond this many queued addresses (D1 failing for long), a report writes its own at once. */
export const MAX_PENDING_MARKS = 1_000;

/** An address's soft bounces since an instant (bounces_address). */
export const SOFT_COUNT_SQL = "SELECT count(*) AS n FROM bounces WHERE address = ? AND kind = 'soft' AND at >= ?";
/** Which of a JSON list of addresses are suppressed (the table's primary key). */
export const SUPPRESSED_AMONG_SQL =
  "SELECT address, reason FROM suppressed_addresses WHERE address IN (SELECT value FROM json_each(?))";

/** How addresses are compared and keyed: trimmed, case-folded as contacts' email_key is. */
export const normaliseAddress = (address: string) => nameKey(address.trim());

/** The contacts' email_status is written as the service, under this operation (audit log). */
const BOUNCE_ACTOR: AuditActor = {
  accountId: null,
  companyId: null,
  clientId: null,
  userId: null,
  requestId: null,
  operationId: "bounceReport",
};

/**
 * Records one verified report for the delivery (reminderId, email, contactId). Refused (nothing
 * changes): no such email delivery here, a delivery never handed to the binding, or a report
 * naming other recipients than the delivery's. A report already recorded for that delivery and
 * kind changes nothing and says so.
 */
export async function recordBounce(clock: ClockContext, report: BounceReport): Promise<BounceResult> {
  if (report.reminderId === DIGEST_REMINDER) return recordDigestBounce(clock, report);
  const { sql } = clock;
  const now = Date.now();
  let result: BounceResult = { outcome: "refused", reason: "no such delivery" };
  /** The report's address is suppressed and its contacts' status was queued for the next alarm. */
  let queued = false;
  clock.storage.transactionSync(() => {
    const delivery = sql
      .exec<{ state: string; recipient: string | null; item_id: number }>(
        `SELECT d.state, d.recipient, r.item_id FROM deliveries d JOIN reminders r ON r.reminder_id = d.reminder_id
         WHERE d.reminder_id = ? AND d.channel = 'email' AND d.contact_id = ?`,
        report.reminderId,
        report.contactId,
      )
      .toArray()[0];
    if (!delivery) return;
    const applied = applyReport(sql, report, report.reminderId, delivery, now);
    if ("outcome" in applied) {
      result = applied;
      return;
    }
    const { state, suppress, address } = applied;
    sql.exec(
      "UPDATE deliveries SET state = ?, bounce_kind = ?, bounce_status = ?, last_error = ?, changed_at = ? " +
        "WHERE reminder_id = ? AND channel = 'email' AND contact_id = ?",
      state,
      report.kind,
      report.status,
      report.reason,
      now,
      report.reminderId,
      report.contactId,
    );
    const at = new Date(now).toISOString();
    const eventId = recordEvent(sql, {
      type: "reminder.bounced",
      itemId: delivery.item_id,
      now,
      data: JSON.stringify({
        delivery: { reminder_id: report.reminderId, channel: "email", contact_id: report.contactId, state },
        contact: { contact_id: report.contactId, email: delivery.recipient },
        kind: report.kind,
        status: report.status,
        reason: report.reason,
        suppressed: suppress,
        at,
      }),
    });
    // Fanned out with the other bounces of the next BOUNCE_EVENT_BATCH_MS: a flood of reports wakes the
    // alarm (and its D1 reads) once per window, not once per report, and leaves the wakeup D1 knows unchanged.
    sql.exec("UPDATE events SET next_at = ? WHERE event_id = ?", now + BOUNCE_EVENT_BATCH_MS, eventId);
    result = { outcome: "recorded", state, suppressed: suppress, itemId: delivery.item_id, address, at };
    // Suppressed now or before (a contact added since with that address is marked too).
    if (suppress || isSuppressed(sql, address)) queued = queueContactMark(sql, address);
  });
  const done = result as BounceResult;
  if (done.outcome === "recorded") await settle(clock);
  // A duplicate (no event, so no alarm of its own) or a full queue: written at once, as a repair.
  if (done.outcome !== "refused" && !queued) await markContacts(clock, deliveryRecipient(clock.sql, report));
  return done;
}

/** The reminder id a digest's bounce address carries (digests.ts: a digest is no reminder's delivery). */
export const DIGEST_REMINDER = 0;

/**
 * A report on a digest (its bounce address names reminder 0 and the contact): it applies to the
 * contact's latest digest that went out, its key in `bounces` being minus the digest's rowid (one
 * report per digest and kind). The digest becomes bounced or complained, the address is suppressed
 * as for a reminder, and the contacts' email_status is written at once; no reminder.bounced event
 * (that event names a reminder's delivery).
 */
async function recordDigestBounce(clock: ClockContext, report: BounceReport): Promise<BounceResult> {
  const { sql } = clock;
  const now = Date.now();
  let result: BounceResult = { outcome: "refused", reason: "no digest was sent to this contact" };
  let recipient: string | undefined;
  clock.storage.transactionSync(() => {
    const digest = sql
      .exec<{ id: number; state: string; recipient: string | null }>(
        `SELECT rowid AS id, state, recipient FROM digests WHERE contact_id = ? AND state IN ('sent', 'bounced', 'complained')
         ORDER BY date DESC, period DESC LIMIT 1`,
        report.contactId,
      )
      .toArray()[0];
    if (!digest) return;
    const applied = applyReport(sql, report, -digest.id, digest, now);
    if ("outcome" in applied) {
      result = applied;
      return;
    }
    sql.exec(
      "UPDATE digests SET state = ?, last_error = ?, changed_at = ? WHERE rowid = ?",
      applied.state,
      `${report.kind} ${report.status}: ${report.reason}`.slice(0, 300),
      now,
      digest.id,
    );
    recipient = digest.recipient ?? undefined;
    result = {
      outcome: "recorded",
      state: applied.state,
      suppressed: applied.suppress,
      itemId: null,
      address: applied.address,
      at: new Date(now).toISOString(),
    };
  });
  const done = result as BounceResult;
  if (done.outcome !== "refused") await markContacts(clock, recipient);
  return done;
}

/**
 * What a report does to its delivery's (or digest's) address, inside the caller's transaction:
 * refused (never sent, or the report names another recipient), a duplicate of one recorded under
 * `key`, or recorded, with the state it gives and whether the address is suppressed now.
 */
function applyReport(
  sql: SqlStorage,
  report: BounceReport,
  key: number,
  sent: { state: string; recipient: string | null },
  now: number,
): BounceResult | { state: "bounced" | "complained"; suppress: boolean; address: string } {
  if (!["sent", "bounced", "complained"].includes(sent.state) || !sent.recipient)
    return { outcome: "refused", reason: `the delivery is ${sent.state}, not sent` };
  const address = normaliseAddress(sent.recipient);
  if (report.recipients.length > 0 && !report.recipients.map(normaliseAddress).includes(address))
    return { outcome: "refused", reason: "the report names another recipient" };
  const inserted = sql.exec(
    "INSERT OR IGNORE INTO bounces (reminder_id, contact_id, kind, address, status, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
    key,
    report.contactId,
    report.kind,
    address,
    report.status,
    report.reason,
    now,
  ).rowsWritten;
  if (inserted === 0) return { outcome: "duplicate" };
  // A complaint is the stronger fact: a later bounce does not turn a complained delivery back.
  const state = report.kind === "complaint" || sent.state === "complained" ? "complained" : "bounced";
  const softs =
    report.kind === "soft" ? sql.exec<{ n: number }>(SOFT_COUNT_SQL, address, now - SOFT_WINDOW_MS).one().n : 0;
  const suppress = report.kind !== "soft" || softs >= SOFT_BOUNCES_TO_SUPPRESS;
  if (suppress) {
    const why =
      report.kind === "soft"
        ? `${softs} soft bounces in 30 days (last ${report.status})`
        : report.kind === "hard"
          ? `hard bounce ${report.status}`
          : `complaint (${report.status})`;
    sql.exec(
      "INSERT OR IGNORE INTO suppressed_addresses (address, kind, reason, at) VALUES (?, ?, ?, ?)",
      address,
      report.kind === "complaint" ? "complaint" : "bounce",
      why,
      now,
    );
  }
  return { state, suppress, address };
}

const deliveryRecipient = (sql: SqlStorage, report: BounceReport) =>
  sql
    .exec<{ recipient: string | null }>(
      "SELECT recipient FROM deliveries WHERE reminder_id = ? AND channel = 'email' AND contact_id = ?",
      report.reminderId,
      report.contactId,
    )
    .toArray()[0]?.recipient ?? undefined;

const isSuppressed = (sql: SqlStorage, address: string) =>
  sql.exec("SELECT 1 FROM suppressed_addresses WHERE address = ?", address).toArray().length > 0;

function pendingMarks(sql: SqlStorage): string[] {
  const text = getMeta(sql, PENDING_MARKS_KEY);
  return text ? (JSON.parse(text) as string[]) : [];
}

/** Queues `address` for flushContactMarks (inside the caller's transaction); false when the queue is full. */
function queueContactMark(sql: SqlStorage, address: string): boolean {
  const pending = pendingMarks(sql);
  if (pending.includes(address)) return true;
  if (pending.length >= MAX_PENDING_MARKS) return false;
  pending.push(address);
  setMeta(sql, PENDING_MARKS_KEY, JSON.stringify(pending));
  return true;
}

/** What the contacts of suppressed `addresses` become in D1 (an address no longer suppressed: nothing). */
function marksOf(sql: SqlStorage, addresses: string[]): SuppressedMark[] {
  return sql
    .exec<{ address: string; kind: string; at: number }>(
      "SELECT address, kind, at FROM suppressed_addresses WHERE address IN (SELECT value FROM json_each(?))",
      JSON.stringify(addresses),
    )
    .toArray()
    .map((row) => ({
      address: row.address,
      status: row.kind === "complaint" ? "complained" : "bounced",
      at: new Date(row.at).toISOString(),
    }));
}

/**
 * From the alarm: writes the contacts' email_status of the queued addresses (up to MARKS_PER_BATCH)
 * to D1 in one commit, then takes them off the queue (addresses queued meanwhile stay). A failed
 * write throws and leaves the queue as it was, for the next alarm. So one D1 batch per company and
 * BOUNCE_EVENT_BATCH_MS window under a flood, not one write per bounce, and nothing queued is lost
 * across a restart. True when more are queued (the alarm runs again at once).
 */
export async function flushContactMarks(clock: ClockContext): Promise<boolean> {
  const pending = pendingMarks(clock.sql);
  if (pending.length === 0) return false;
  const taken = pending.slice(0, MARKS_PER_BATCH);
  const db = await clock.db({ committed: 0, actor: BOUNCE_ACTOR });
  await markSuppressedContacts(db, clock.companyId, marksOf(clock.sql, taken));
  clock.storage.transactionSync(() => {
    const done = new Set(taken);
    setMeta(clock.sql, PENDING_MARKS_KEY, JSON.stringify(pendingMarks(clock.sql).filter((a) => !done.has(a))));
  });
  return pending.length > taken.length;
}

/**
 * At once, for one report (a duplicate, or the queue full): the contacts with its suppressed address
 * get email_status bounced / complained in D1. Idempotent (guarded by the status), so a report
 * delivered again repairs a write D1 missed; the clock's suppression is what stops sending either way.
 */
async function markContacts(clock: ClockContext, recipient: string | null | undefined): Promise<void> {
  if (!recipient) return;
  const marks = marksOf(clock.sql, [normaliseAddress(recipient)]);
  if (marks.length === 0) return;
  try {
    const db = await clock.db({ committed: 0, actor: BOUNCE_ACTOR });
    await markSuppressedContacts(db, clock.companyId, marks);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "contact email_status not written (the address is suppressed; a repeated report writes it)",
        companyId: clock.companyId,
        error: String(error),
      }),
    );
  }
}

/** Which of `addresses` are suppressed here (one query for a batch). */
export function suppressedAmong(sql: SqlStorage, addresses: string[]): Map<string, string> {
  const unique = [...new Set(addresses.map(normaliseAddress))];
  if (unique.length === 0) return new Map();
  const rows = sql.exec<{ address: string; reason: string }>(SUPPRESSED_AMONG_SQL, JSON.stringify(unique)).toArray();
  return new Map(rows.map((r) => [r.address, r.reason]));
}

const MAX_TIME = 8.64e15;

/** One state's problem deliveries below a keyset position: an ordered range of deliveries_problems. */
export const PROBLEM_PAGE_SQL = `SELECT d.reminder_id, r.item_id, d.contact_id, d.endpoint_id, d.channel, d.state, d.recipient, d.last_error AS reason,
    d.bounce_kind, d.bounce_status, d.attempts, d.changed_at
  FROM deliveries d JOIN reminders r ON r.reminder_id = d.reminder_id
  WHERE d.state = ? AND d.changed_at >= ? AND (d.changed_at, d.reminder_id, d.contact_id) < (?, ?, ?)
  ORDER BY d.changed_at DESC, d.reminder_id DESC, d.contact_id DESC LIMIT ?`;

/**
 * Problem deliveries, newest change first, keyset by (changed_at, reminder_id, contact_id): one
 * ordered, limited index range per state asked for, merged here (no sort of every matching row).
 */
export function problemDeliveries(sql: SqlStorage, query: ProblemQuery): ProblemDeliveryRow[] {
  const states = query.state ? [query.state] : [...PROBLEM_STATES];
  const after = query.after ?? {
    at: MAX_TIME,
    reminderId: Number.MAX_SAFE_INTEGER,
    contactId: Number.MAX_SAFE_INTEGER,
  };
  const rows = states.flatMap((state) =>
    sql
      .exec<ProblemDeliveryRow>(
        PROBLEM_PAGE_SQL,
        state,
        query.since ?? 0,
        after.at,
        after.reminderId,
        after.contactId,
        query.limit,
      )
      .toArray(),
  );
  rows.sort((a, b) => b.changed_at - a.changed_at || b.reminder_id - a.reminder_id || b.contact_id - a.contact_id);
  return rows.slice(0, query.limit);
}
