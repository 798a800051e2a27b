// The company clock's own SQLite (src/company-clock/object.ts): the schema (versioned) and the
// synchronous statements its engines run inside `transactionSync`. No I/O beyond the object's storage.

import { parseRuleState, renewalDate } from "../lib/recurrence";
import { isCalendarDate, localToInstant, startOfDayAfter, type CalendarUnit } from "../lib/time";
import type { ChannelType } from "../channels/urls";
import { DEFAULT_HOUR, stepDate, type Step } from "./sequence-steps";

export const SCHEMA_VERSION = 11;

const MIGRATIONS: string[][] = [
  [], // version 0: nothing
  [
    `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
    // What the object knows of each item (a tombstone once deleted, so a late, older sync cannot revive it).
    `CREATE TABLE items (
      item_id INTEGER PRIMARY KEY, version INTEGER NOT NULL, title TEXT NOT NULL, anchor TEXT NOT NULL,
      epoch INTEGER NOT NULL, held INTEGER NOT NULL, gone INTEGER NOT NULL DEFAULT 0)`,
    `CREATE TABLE reminders (
      reminder_id INTEGER PRIMARY KEY AUTOINCREMENT, item_id INTEGER NOT NULL, origin TEXT NOT NULL,
      date TEXT NOT NULL, hour TEXT NOT NULL, due_at INTEGER NOT NULL,
      period INTEGER, unit TEXT, rtype INTEGER, contact_id INTEGER, channels TEXT NOT NULL,
      state TEXT NOT NULL, sent_at INTEGER, created_at INTEGER NOT NULL)`,
    `CREATE INDEX reminders_due ON reminders (state, due_at)`,
    `CREATE INDEX reminders_item ON reminders (item_id, state)`,
    // The feed of GET /v1/reminders/triggered (kept when the item is deleted).
    `CREATE TABLE triggered (
      reminder_id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL, title TEXT NOT NULL, date TEXT NOT NULL,
      hour TEXT NOT NULL, due_at INTEGER NOT NULL, sent_at INTEGER NOT NULL)`,
    `CREATE INDEX triggered_recent ON triggered (sent_at, reminder_id)`,
    // The delivery outbox: one row per reminder and channel.
    `CREATE TABLE deliveries (
      reminder_id INTEGER NOT NULL, channel TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
      next_at INTEGER, last_error TEXT, recipient TEXT, delivered_at INTEGER, message_id TEXT,
      PRIMARY KEY (reminder_id, channel))`,
    `CREATE INDEX deliveries_next ON deliveries (state, next_at)`,
  ],
  [
    // Version 2: webhooks (docs/webhooks.md). The item's own date, for its item.expired (hidden
    // reminder rows with origin 'expiry' fire at its 00:00 local).
    `ALTER TABLE items ADD COLUMN expiry TEXT`,
    // Events entering the object: born here (reminder.sent, item.expired, webhook.test) or pulled
    // from D1's webhook_events (source_id, unique: a repeated pull is ignored). state 'new' until
    // fanned out to the endpoints subscribed (next_at: when to try, pushed back while D1 is away);
    // data is the payload's JSON `data`, completed from D1 at fan-out when item_id needs it.
    `CREATE TABLE events (
      event_id INTEGER PRIMARY KEY AUTOINCREMENT, type TEXT NOT NULL, data TEXT, item_id INTEGER, source_id INTEGER UNIQUE,
      endpoint_id INTEGER, state TEXT NOT NULL, next_at INTEGER, created_at INTEGER NOT NULL)`,
    `CREATE INDEX events_new ON events (state, next_at)`,
    // One row per (event, endpoint): the message, its attempts and outcome.
    `CREATE TABLE webhook_deliveries (
      delivery_id INTEGER PRIMARY KEY AUTOINCREMENT, event_id INTEGER NOT NULL, endpoint_id INTEGER NOT NULL,
      message_id TEXT NOT NULL, type TEXT NOT NULL, state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
      next_at INTEGER, last_status INTEGER, last_error TEXT, delivered_at INTEGER, created_at INTEGER NOT NULL)`,
    `CREATE INDEX webhook_deliveries_next ON webhook_deliveries (state, next_at)`,
    `CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, delivery_id)`,
    `CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)`,
    `CREATE INDEX webhook_deliveries_age ON webhook_deliveries (created_at)`,
  ],
  [
    // Version 3: changes made for a request with an Idempotency-Key (docs/idempotency.md), recorded in
    // the change's own transaction with the answer it gave, so a repeat of the request (after the
    // Worker died before recording the response in D1) changes nothing and gets the same answer.
    `CREATE TABLE applied_requests (request_key TEXT PRIMARY KEY, result TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
    `CREATE INDEX applied_requests_age ON applied_requests (applied_at)`,
  ],
  [
    // Version 4: a revision of the queued reminders (what calendar feeds show as alarms), bumped by
    // every change to that set: a queued reminder added or removed, fired, held or resumed, or moved
    // to another instant. A feed's ETag carries it (src/records/calendar-feeds/feed.ts), so a 304
    // costs one read of it instead of reading the reminders. Triggers, so no code path can forget it.
    `INSERT OR IGNORE INTO meta (key, value) VALUES ('queued_revision', '0')`,
    `CREATE TRIGGER reminders_queued_insert AFTER INSERT ON reminders WHEN new.state = 'queued' AND new.origin <> 'expiry'
     BEGIN UPDATE meta SET value = value + 1 WHERE key = 'queued_revision'; END`,
    `CREATE TRIGGER reminders_queued_delete AFTER DELETE ON reminders WHEN old.state = 'queued' AND old.origin <> 'expiry'
     BEGIN UPDATE meta SET value = value + 1 WHERE key = 'queued_revision'; END`,
    `CREATE TRIGGER reminders_queued_update AFTER UPDATE OF state, due_at ON reminders
     WHEN new.origin <> 'expiry' AND 'queued' IN (old.state, new.state) AND (new.state IS NOT old.state OR new.due_at IS NOT old.due_at)
     BEGIN UPDATE meta SET value = value + 1 WHERE key = 'queued_revision'; END`,
  ],
  [
    // Version 5: renewals of recurring items at expiry (renewals.ts, docs/recurrence.md). One row per
    // item whose rule renews it at expiry: its date, its rule state as D1 last said it (the guard
    // of the D1 write), the instant (the start of the next day in the company's zone) and held
    // (the item is archived: the rule is paused).
    `CREATE TABLE renewals (item_id INTEGER PRIMARY KEY, date TEXT NOT NULL, state TEXT NOT NULL, due_at INTEGER NOT NULL, held INTEGER NOT NULL)`,
    `CREATE INDEX renewals_due ON renewals (held, due_at)`,
  ],
  [
    // Version 6: audit entries of the clock's own changes, waiting for D1 (audit-outbox.ts).
    `CREATE TABLE audit_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, source_key TEXT NOT NULL, entry TEXT NOT NULL)`,
  ],
  [
    // Version 7: recipients and acknowledgement (docs/reminders.md). A reminder names a contact or a
    // contact group (group_id), may be sent even when its occurrence is acknowledged (always) and
    // may mark an escalation (unless_ack). The item mirror says whether its current occurrence is
    // acknowledged and what it is snoozed to (the 'snooze' reminder row holds the instant).
    `ALTER TABLE reminders ADD COLUMN group_id INTEGER`,
    `ALTER TABLE reminders ADD COLUMN always INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE reminders ADD COLUMN unless_ack INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE items ADD COLUMN acked INTEGER NOT NULL DEFAULT 0`,
    `ALTER TABLE items ADD COLUMN snooze_until TEXT`,
    `ALTER TABLE items ADD COLUMN snooze_contact INTEGER`,
    // One delivery per recipient: (reminder, channel, contact). contact_id 0 on a pending row: its
    // recipients are not resolved yet (resolved when the reminder fires: reminder-delivery.ts); on a
    // finished row: nobody (no_recipient, skipped). Rows of earlier versions keep their state; a
    // pending one is resolved at its next attempt, a finished one names the reminder's contact if it had one.
    `CREATE TABLE recipient_deliveries (
      reminder_id INTEGER NOT NULL, channel TEXT NOT NULL, contact_id INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER, last_error TEXT, recipient TEXT, delivered_at INTEGER, message_id TEXT,
      PRIMARY KEY (reminder_id, channel, contact_id))`,
    `INSERT INTO recipient_deliveries (reminder_id, channel, contact_id, state, attempts, next_at, last_error, recipient, delivered_at, message_id)
     SELECT d.reminder_id, d.channel, CASE WHEN d.state = 'pending' THEN 0 ELSE coalesce(r.contact_id, 0) END, d.state, d.attempts, d.next_at,
       d.last_error, d.recipient, d.delivered_at, d.message_id
     FROM deliveries AS d LEFT JOIN reminders AS r ON r.reminder_id = d.reminder_id`,
    `DROP TABLE deliveries`,
    `ALTER TABLE recipient_deliveries RENAME TO deliveries`,
    `CREATE INDEX deliveries_next ON deliveries (state, next_at)`,
  ],
  [
    // Version 8: bounces and complaints (bounces.ts, docs/bounces.md). A delivery says when its
    // state last changed (changed_at: the problem list's order, GET /v1/deliveries) and the kind
    // and status of its bounce. One bounce per delivery and kind, whatever the reports repeat;
    // suppressed addresses (normalised) are not sent to again.
    `ALTER TABLE deliveries ADD COLUMN changed_at INTEGER`,
    `ALTER TABLE deliveries ADD COLUMN bounce_kind TEXT`,
    `ALTER TABLE deliveries ADD COLUMN bounce_status TEXT`,
    `UPDATE deliveries SET changed_at = coalesce(delivered_at, (SELECT r.sent_at FROM reminders AS r WHERE r.reminder_id = deliveries.reminder_id), 0)
     WHERE state <> 'pending'`,
    `CREATE INDEX deliveries_problems ON deliveries (state, changed_at, reminder_id, contact_id)`,
    `CREATE TABLE bounces (
      reminder_id INTEGER NOT NULL, contact_id INTEGER NOT NULL, kind TEXT NOT NULL, address TEXT NOT NULL,
      status TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (reminder_id, contact_id, kind))`,
    `CREATE INDEX bounces_address ON bounces (address, kind, at)`,
    `CREATE TABLE suppressed_addresses (address TEXT PRIMARY KEY, kind TEXT NOT NULL, reason TEXT NOT NULL, at INTEGER NOT NULL)`,
  ],
  [
    // Version 9: digests (digests.ts, docs/reminders.md "Digests"). One row per contact and period
    // (`daily:YYYY-MM-DD`, `weekly:YYYY-Www`), written when the run for that day is planned: the
    // key is what makes a digest exactly once. Its state, attempts and message as a delivery's.
    // A reminder's email delivery folded into its recipient's digest is `digested`; `digest` names
    // the digest that listed it (null until then).
    `CREATE TABLE digests (
      contact_id INTEGER NOT NULL, period TEXT NOT NULL, date TEXT NOT NULL, state TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER, items INTEGER, recipient TEXT, message_id TEXT,
      last_error TEXT, created_at INTEGER NOT NULL, changed_at INTEGER NOT NULL, PRIMARY KEY (contact_id, period))`,
    `CREATE INDEX digests_next ON digests (state, next_at)`,
    `CREATE INDEX digests_recent ON digests (date DESC, contact_id, period)`,
    `ALTER TABLE deliveries ADD COLUMN digest TEXT`,
    `CREATE INDEX deliveries_folded ON deliveries (contact_id, reminder_id) WHERE state = 'digested' AND digest IS NULL`,
  ],
  [
    // Version 10: channel endpoints (channel-deliveries.ts, docs/channels.md). A reminder may be posted
    // to a channel (channel_id; its channels list is then the channel's type, and contact_id names
    // who it is for). Its one delivery names the channel (endpoint_id; contact_id 0: no contact
    // receives it). channel_pace holds each channel's rate: the instant its next message is due by
    // the platform's rate (a GCRA "theoretical arrival time"), pushed on by a 429's Retry-After.
    `ALTER TABLE reminders ADD COLUMN channel_id INTEGER`,
    `ALTER TABLE deliveries ADD COLUMN endpoint_id INTEGER`,
    `CREATE INDEX deliveries_channel_next ON deliveries (state, endpoint_id, next_at) WHERE endpoint_id IS NOT NULL`,
    `CREATE TABLE channel_pace (endpoint_id INTEGER PRIMARY KEY, tat INTEGER NOT NULL)`,
  ],
  [
    // Version 11: a channel delivery's attempts the platform throttled (429), counted apart: a
    // throttle says "later", not "failed", so it does not spend the delivery's failed attempts.
    `ALTER TABLE deliveries ADD COLUMN throttled INTEGER NOT NULL DEFAULT 0`,
  ],
];

/** How long an applied request is remembered: longer than an Idempotency-Key lives (24 h). */
export const APPLIED_REQUEST_TTL_MS = 25 * 3600 * 1000;

/** The answer recorded for a request key, if its change was applied here. */
export function appliedResult<T>(sql: SqlStorage, requestKey: string | undefined): T | undefined {
  if (!requestKey) return undefined;
  const row = sql
    .exec<{ result: string }>("SELECT result FROM applied_requests WHERE request_key = ?", requestKey)
    .toArray()[0];
  return row ? (JSON.parse(row.result) as T) : undefined;
}

/** Records a request's answer, inside the transaction of its change; forgets those past the TTL. */
export function recordApplied(sql: SqlStorage, requestKey: string | undefined, result: unknown, now: number): void {
  if (!requestKey) return;
  sql.exec(
    "INSERT INTO applied_requests (request_key, result, applied_at) VALUES (?, ?, ?)",
    requestKey,
    JSON.stringify(result),
    now,
  );
  sql.exec("DELETE FROM applied_requests WHERE applied_at < ?", now - APPLIED_REQUEST_TTL_MS);
}

/** Brings the object's schema to SCHEMA_VERSION (each step in one transaction); `target`: an earlier version, for tests of a migration. */
export function migrate(storage: DurableObjectStorage, target = SCHEMA_VERSION): void {
  const sql = storage.sql;
  sql.exec(`CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`);
  let version = Number(getMeta(sql, "schema_version") ?? 0);
  while (version < target) {
    const next = version + 1;
    storage.transactionSync(() => {
      for (const statement of MIGRATIONS[next]!) sql.exec(statement);
      setMeta(sql, "schema_version", String(next));
    });
    version = next;
  }
}

/** The revision of the queued reminders (migration 4's triggers bump it). */
export const queuedRevision = (sql: SqlStorage): number => Number(getMeta(sql, "queued_revision") ?? 0);

export function getMeta(sql: SqlStorage, key: string): string | null {
  const row = sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
  return row?.value ?? null;
}
export function setMeta(sql: SqlStorage, key: string, value: string): void {
  sql.exec(
    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET " + "value = excluded.value",
    key,
    value,
  );
}

/** The object serves one company: it records which on first use and refuses any other. */
export function claimCompany(sql: SqlStorage, companyId: number): void {
  const known = getMeta(sql, "company_id");
  if (known === null) setMeta(sql, "company_id", String(companyId));
  else if (Number(known) !== companyId)
    throw new Error(`company clock of company ${known} called for company ${companyId}`);
}

/** The company the object serves; null before its first call. */
export function knownCompany(sql: SqlStorage): number | null {
  const known = getMeta(sql, "company_id");
  return known === null ? null : Number(known);
}

/** meta keys of digests (digests.ts): the next run's instant (absent: no digests) and the plan in progress. */
export const DIGEST_NEXT_AT = "digest_next_at";
export const DIGEST_PLAN = "digest_plan";

/** The company's time zone, as the object last applied it. */
export const zoneOf = (sql: SqlStorage): string => getMeta(sql, "timezone") ?? "UTC";

export type ReminderState = "queued" | "held" | "sent";
export const DELIVERY_STATES = [
  "pending",
  "sent",
  "failed",
  "no_recipient",
  "skipped",
  "bounced",
  "complained",
  "suppressed",
  "digested",
] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];
/** The states GET /v1/deliveries lists (docs/bounces.md). */
export const PROBLEM_STATES = ["bounced", "complained", "suppressed", "failed"] as const;
export type Channel = "email" | "sms" | "webhook" | ChannelType;

export type Origin = "sequence" | "manual" | "expiry" | "snooze";

export type ReminderRow = {
  reminder_id: number;
  item_id: number;
  origin: Origin;
  date: string;
  hour: string;
  due_at: number;
  period: number | null;
  unit: CalendarUnit | null;
  rtype: number | null;
  contact_id: number | null;
  group_id: number | null;
  always: number;
  unless_ack: number;
  channels: string;
  /** A channel endpoint the reminder is posted to (then no contact receives it); null: contacts. */
  channel_id: number | null;
  state: ReminderState;
  sent_at: number | null;
  created_at: number;
};

export type ItemMirror = {
  item_id: number;
  version: number;
  title: string;
  anchor: string;
  epoch: number;
  held: number;
  gone: number;
  expiry: string | null;
  acked: number;
  snooze_until: string | null;
  snooze_contact: number | null;
};

export function itemMirror(sql: SqlStorage, itemId: number): ItemMirror | undefined {
  return sql.exec<ItemMirror>("SELECT * FROM items WHERE item_id = ?", itemId).toArray()[0];
}

export function reminder(sql: SqlStorage, itemId: number, reminderId: number): ReminderRow | undefined {
  return sql
    .exec<ReminderRow>(
      "SELECT * FROM reminders WHERE reminder_id = ? AND item_id = ? AND origin <> " + "'expiry'",
      reminderId,
      itemId,
    )
    .toArray()[0];
}

/** Whom a reminder goes to (default: the item's contact when it fires) and what an acknowledgement does to it. */
export interface Recipients {
  contactId: number | null;
  groupId: number | null;
  /** A channel endpoint instead of contacts (contactId: who it is for). */
  channelId?: number | null;
  /** Sent even when the occurrence is acknowledged. */
  always: boolean;
  /** An escalation: fires only if nobody acknowledged by then (as every reminder but `always` ones). */
  unlessAck: boolean;
}
export const ITEM_CONTACT: Recipients = { contactId: null, groupId: null, always: false, unlessAck: false };

export interface NewReminder {
  itemId: number;
  origin: Origin;
  date: string;
  hour: string;
  dueAt: number;
  relative: { period: number; unit: CalendarUnit; rtype: number } | null;
  to: Recipients;
  channels: Channel[];
  now: number;
}

const REMINDER_COLUMNS =
  "item_id, origin, date, hour, due_at, period, unit, rtype, contact_id, group_id, channel_id, always, unless_ack, channels, state, created_at";
const REMINDER_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?)";
/** Rows per INSERT: 15 parameters each, under SQLite's usual limit of 100 bound parameters. */
const REMINDERS_PER_INSERT = 6;

function reminderParams(r: NewReminder): SqlStorageValue[] {
  return [
    r.itemId,
    r.origin,
    r.date,
    r.hour,
    r.dueAt,
    r.relative?.period ?? null,
    r.relative?.unit ?? null,
    r.relative?.rtype ?? null,
    r.to.contactId,
    r.to.groupId,
    r.to.channelId ?? null,
    r.to.always ? 1 : 0,
    r.to.unlessAck ? 1 : 0,
    JSON.stringify(r.channels),
    r.now,
  ];
}

/** Inserts a reminder, queued; `reconcile` then holds it if its item says so. */
export function insertReminder(sql: SqlStorage, r: NewReminder): number {
  const row = sql
    .exec<{ reminder_id: number }>(
      `INSERT INTO reminders (${REMINDER_COLUMNS}) VALUES ${REMINDER_VALUES} RETURNING reminder_id`,
      ...reminderParams(r),
    )
    .one();
  return row.reminder_id;
}

/** Inserts reminders, queued, a few rows per statement: a sequence's steps cost one statement, not one each. The rows as stored. */
export function insertReminders(sql: SqlStorage, rows: NewReminder[]): ReminderRow[] {
  const stored: ReminderRow[] = [];
  for (let i = 0; i < rows.length; i += REMINDERS_PER_INSERT) {
    const chunk = rows.slice(i, i + REMINDERS_PER_INSERT);
    const cursor = sql.exec<ReminderRow>(
      `INSERT INTO reminders (${REMINDER_COLUMNS}) VALUES ${chunk.map(() => REMINDER_VALUES).join(", ")} RETURNING *`,
      ...chunk.flatMap(reminderParams),
    );
    for (const row of cursor) stored.push(row);
  }
  return stored;
}

/** The reminders of the sequence's steps for an item dated `anchor`; steps whose instant has passed are left out. */
export function sequenceReminders(
  itemId: number,
  anchor: string,
  steps: Step[],
  zone: string,
  channels: Channel[],
  now: number,
): NewReminder[] {
  const rows: NewReminder[] = [];
  for (const step of steps) {
    const date = stepDate(anchor, step);
    if (!isCalendarDate(date)) continue;
    const dueAt = localToInstant(date, step.hour, zone);
    if (dueAt <= now) continue;
    rows.push({
      itemId,
      origin: "sequence",
      date,
      hour: step.hour,
      dueAt,
      relative: { period: step.period, unit: step.unit, rtype: step.type },
      to: {
        contactId: step.contact_id ?? null,
        groupId: step.group_id ?? null,
        channelId: step.channel_id && step.channel_type ? step.channel_id : null,
        always: step.always === true,
        unlessAck: step.unless_acknowledged === true,
      },
      // A step to a channel endpoint is posted there only.
      channels: step.channel_id && step.channel_type ? [step.channel_type] : channels,
      now,
    });
  }
  return rows;
}

/** Queues the sequence's steps for an item dated `anchor`; steps whose instant has passed are skipped. Call `reconcile` after. */
export function queueSequence(
  sql: SqlStorage,
  itemId: number,
  anchor: string,
  steps: Step[],
  zone: string,
  channels: Channel[],
  now: number,
): number {
  const rows = sequenceReminders(itemId, anchor, steps, zone, channels, now);
  insertReminders(sql, rows);
  return rows.length;
}

/** Recomputes the item's waiting relative reminders for a new anchor; those now in the past are dropped. */
export function reanchor(sql: SqlStorage, itemId: number, anchor: string, zone: string, now: number): void {
  const rows = sql
    .exec<ReminderRow>(
      "SELECT * FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND " + "period IS NOT NULL",
      itemId,
    )
    .toArray();
  for (const row of rows) {
    const date = stepDate(anchor, { period: row.period!, unit: row.unit!, type: row.rtype! });
    const dueAt = isCalendarDate(date) ? localToInstant(date, row.hour, zone) : 0;
    if (dueAt <= now) sql.exec("DELETE FROM reminders WHERE reminder_id = ?", row.reminder_id);
    else sql.exec("UPDATE reminders SET date = ?, due_at = ? WHERE reminder_id = ?", date, dueAt, row.reminder_id);
  }
}

/**
 * Whether a waiting reminder of the item is held (SQL over `reminders`, parameters ?1 the item's
 * held flag, ?2 its acknowledged flag, ?3 the snooze's instant or NULL):
 * - completed or archived (held): all of them, item.expired included;
 * - acknowledged: all but `always` ones;
 * - snoozed: all before the snooze's reminder (its own row, origin 'snooze', is the instant).
 */
const WANT_HELD = `CASE WHEN origin = 'expiry' THEN ?1 ELSE (?1 OR (?2 AND always = 0) OR (origin <> 'snooze' AND ?3 IS NOT NULL AND due_at < ?3)) END`;

/**
 * The instant of the item's waiting snooze reminder. INDEXED BY: for min(due_at) SQLite would
 * otherwise walk reminders_due, every waiting reminder of the company, instead of the item's few
 * rows (each new item's sync grew with the company's reminders).
 */
export const SNOOZE_AT_SQL =
  "SELECT min(due_at) AS at FROM reminders INDEXED BY reminders_item WHERE item_id = ? " +
  "AND origin = 'snooze' AND state IN ('queued', 'held')";

/**
 * Holds or queues the item's waiting reminders as its mirror says (completed or archived,
 * acknowledged, snoozed): every change to those, and every reminder added, ends with it. A held
 * reminder released after its time has passed is dropped, not sent late: a reminder about
 * something already done, acknowledged or snoozed past is noise.
 */
export function reconcile(sql: SqlStorage, itemId: number, now: number): void {
  const mirror = itemMirror(sql, itemId);
  if (!mirror || mirror.gone) return;
  const snoozeAt = sql.exec<{ at: number | null }>(SNOOZE_AT_SQL, itemId).one().at;
  const facts = [mirror.held ? 1 : 0, mirror.acked ? 1 : 0, snoozeAt] as const;
  sql.exec(
    `UPDATE reminders SET state = 'held' WHERE item_id = ?4 AND state = 'queued' AND ${WANT_HELD}`,
    ...facts,
    itemId,
  );
  sql.exec(
    `DELETE FROM reminders WHERE item_id = ?4 AND state = 'held' AND NOT ${WANT_HELD} AND due_at <= ?5`,
    ...facts,
    itemId,
    now,
  );
  sql.exec(
    `UPDATE reminders SET state = 'queued' WHERE item_id = ?4 AND state = 'held' AND NOT ${WANT_HELD}`,
    ...facts,
    itemId,
  );
}

/**
 * The item's snooze (`until`, a date, and who gets its reminder), as D1 says it: the waiting
 * snooze reminder is replaced when it changed (none when the snooze ended, or its instant has
 * passed); one already sent stays in the history. Call `reconcile` after.
 */
export function setSnooze(
  sql: SqlStorage,
  itemId: number,
  snooze: Snooze,
  zone: string,
  channels: Channel[],
  now: number,
): void {
  sql.exec("DELETE FROM reminders WHERE item_id = ? AND origin = 'snooze' AND state IN ('queued', 'held')", itemId);
  const row = snoozeReminder(itemId, snooze, zone, channels, now);
  if (row) insertReminders(sql, [row]);
}
export interface Snooze {
  until: string | null;
  contactId: number | null;
}
/** The snooze's one reminder at the default hour of `until`; null when there is none or its instant has passed. */
export function snoozeReminder(
  itemId: number,
  snooze: Snooze,
  zone: string,
  channels: Channel[],
  now: number,
): NewReminder | null {
  if (snooze.until === null || !isCalendarDate(snooze.until)) return null;
  const dueAt = localToInstant(snooze.until, DEFAULT_HOUR, zone);
  if (dueAt <= now) return null;
  return {
    itemId,
    origin: "snooze",
    date: snooze.until,
    hour: DEFAULT_HOUR,
    dueAt,
    relative: null,
    to: { ...ITEM_CONTACT, contactId: snooze.contactId },
    channels,
    now,
  };
}

/** A deleted item: its reminders and their pending deliveries go; the triggered feed keeps what was sent. */
export function forgetItem(sql: SqlStorage, itemId: number): void {
  sql.exec("DELETE FROM deliveries WHERE reminder_id IN (SELECT reminder_id FROM reminders WHERE item_id = ?)", itemId);
  sql.exec("DELETE FROM reminders WHERE item_id = ?", itemId);
  sql.exec("DELETE FROM renewals WHERE item_id = ?", itemId);
}

// ---- renewals (renewals.ts) ----

/**
 * Mirrors the item's rule (`state`: its rule state from D1, src/records/items/recurrence.ts): a
 * renewal row while the rule renews at expiry and has an occurrence left, none otherwise.
 */
export function mirrorRenewal(sql: SqlStorage, itemId: number, state: string | null, zone: string): void {
  const parsed = state === null ? null : parseRuleState(state);
  const rule = parsed?.rule;
  if (!parsed || !rule || rule.renewOn !== "expired" || renewalDate(rule, parsed.date) === null) {
    sql.exec("DELETE FROM renewals WHERE item_id = ?", itemId);
    return;
  }
  sql.exec(
    `INSERT INTO renewals (item_id, date, state, due_at, held) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (item_id) DO UPDATE SET date = excluded.date, state = excluded.state, due_at = excluded.due_at, held = excluded.held`,
    itemId,
    parsed.date,
    state,
    startOfDayAfter(parsed.date, zone),
    parsed.archived ? 1 : 0,
  );
}

export type DueRenewal = { item_id: number; date: string; state: string };

/** The renewals due at `now` (archived items' wait), oldest instant first. */
export const dueRenewals = (sql: SqlStorage, now: number, limit: number): DueRenewal[] =>
  sql
    .exec<DueRenewal>(
      "SELECT item_id, date, state FROM renewals WHERE held = 0 AND due_at <= ? ORDER " + "BY due_at, item_id LIMIT ?",
      now,
      limit,
    )
    .toArray();

/** Renewals D1 did not take (`"due"`: every one due now) wait until `until`; if still due then, they are tried again. */
export function postponeRenewals(sql: SqlStorage, itemIds: number[] | "due", until: number): void {
  if (itemIds === "due") sql.exec("UPDATE renewals SET due_at = ? WHERE held = 0 AND due_at <= ?", until, Date.now());
  else if (itemIds.length > 0)
    sql.exec(
      "UPDATE renewals SET due_at = ? WHERE item_id IN (SELECT value FROM " + "json_each(?)) AND due_at < ?",
      until,
      JSON.stringify(itemIds),
      until,
    );
}

export function forgetRenewals(sql: SqlStorage, itemIds: number[]): void {
  if (itemIds.length > 0)
    sql.exec("DELETE FROM renewals WHERE item_id IN (SELECT value FROM json_each(?))", JSON.stringify(itemIds));
}

/** A new company time zone: waiting reminders keep their local date and hour, so their instants move. */
export function rezone(sql: SqlStorage, zone: string): void {
  const rows = sql
    .exec<{ reminder_id: number; date: string; hour: string }>(
      "SELECT reminder_id, date, hour FROM reminders WHERE state IN ('queued', 'held')",
    )
    .toArray();
  for (const row of rows)
    sql.exec(
      "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
      localToInstant(row.date, row.hour, zone),
      row.reminder_id,
    );
  // Renewals keep their date: the start of the day after it, in the new zone.
  const renewals = sql.exec<{ item_id: number; date: string }>("SELECT item_id, date FROM renewals").toArray();
  for (const row of renewals)
    sql.exec("UPDATE renewals SET due_at = ? WHERE item_id = ?", startOfDayAfter(row.date, zone), row.item_id);
}

/**
 * The item's item.expired: one hidden reminder row (origin 'expiry', no channels) at 00:00 local of
 * its date, queued only while that instant is ahead. Replaces the waiting one (a new date, a renewal).
 */
export function setExpiry(sql: SqlStorage, itemId: number, date: string, zone: string, now: number): void {
  sql.exec("DELETE FROM reminders WHERE item_id = ? AND origin = 'expiry' AND state IN ('queued', 'held')", itemId);
  const row = expiryReminder(itemId, date, zone, now);
  if (row) insertReminders(sql, [row]);
}
/** The item.expired reminder at 00:00 local of the item's date; null when that instant has passed. */
export function expiryReminder(itemId: number, date: string, zone: string, now: number): NewReminder | null {
  if (!isCalendarDate(date)) return null;
  const dueAt = localToInstant(date, EXPIRY_HOUR, zone);
  if (dueAt <= now) return null;
  return {
    itemId,
    origin: "expiry",
    date,
    hour: EXPIRY_HOUR,
    dueAt,
    relative: null,
    to: ITEM_CONTACT,
    channels: [],
    now,
  };
}
export const EXPIRY_HOUR = "00:00";
