// The D1 handoff, reading side: the item snapshots the company clock mirrors (the truth is D1's),
// read by the object itself or appended to a Worker's write batch, and the changes it has not
// applied yet (the reminder_sync outbox). Each function is one round trip.

import { sqlText } from "../../db/client";
import { DEFAULT_TIME_ZONE } from "../../lib/time";
import { parseSteps, type Step } from "../sequence-steps";
import { ruleStateOf } from "../../db/rule-state";

/** Items synced per round trip (json_each keeps it to one bound parameter). */
export const SYNC_BATCH = 500;

export interface CompanySnapshot {
  exists: boolean;
  timezone: string;
  version: number;
}

export interface ItemSnapshot {
  itemId: number;
  present: boolean;
  title: string;
  anchor: string;
  epoch: number;
  held: boolean;
  steps: Step[];
  version: number;
  /** The item's own date (item.expired is at its 00:00 local). */
  expiry: string;
  /** The item's rule state (src/records/items/recurrence.ts ruleState): what renewals mirror; null when absent. */
  rule: string | null;
  /** The current occurrence is acknowledged: its reminders are held, except `always` steps. */
  acknowledged: boolean;
  /** The current occurrence is snoozed until this date (nothing before it), or null. */
  snoozedUntil: string | null;
  /** Who gets the snooze's reminder: the contact who snoozed from their page; null: the item's contact. */
  snoozeContactId: number | null;
}

/** What `sync` applies: the company's time zone, the items' D1 state, and webhook events waiting in D1. */
export interface Snapshots {
  company: CompanySnapshot;
  items: ItemSnapshot[];
  events: PulledEvent[];
}

/**
 * The statements of a snapshot, for one D1 batch: the object's own read (`itemIds`), or appended
 * to a Worker's write batch so the snapshot comes back with the write (`"inserted"`: the item the
 * batch's previous statement inserted, nothing if it inserted no row). Absent ids read as not present.
 * Fixed texts (every item write sends them): `?1` the company, `?2` the ids.
 */
export function snapshotSql(
  companyId: number,
  itemIds: number[] | "inserted",
): Array<{ sql: string; params: unknown[] }> {
  const items =
    itemIds === "inserted"
      ? { sql: SNAPSHOT_INSERTED, params: [companyId] }
      : { sql: SNAPSHOT_ITEMS, params: [companyId, JSON.stringify(itemIds)] };
  return [
    { sql: SNAPSHOT_COMPANY, params: [companyId] },
    items,
    { sql: SNAPSHOT_EVENTS, params: [companyId, PULL_BATCH] },
  ];
}

/** `snapshotSql` as statements of `d1`. */
export const snapshotQueries = (
  d1: D1Database,
  companyId: number,
  itemIds: number[] | "inserted",
): D1PreparedStatement[] => snapshotSql(companyId, itemIds).map((q) => d1.prepare(q.sql).bind(...q.params));

const SNAPSHOT_COMPANY = `SELECT json_extract(settings, '$.timezone') AS timezone,
  coalesce((SELECT version FROM reminder_sync WHERE company_id = ?1 AND item_id = 0), 0) AS version
  FROM companies WHERE id = ?1`;
const snapshotItems = (source: string) => `SELECT j.value AS id, i.id IS NOT NULL AS present, i.title AS title,
  coalesce(i.reminder_anchor, i.expiry_date) AS anchor, i.schedule_epoch AS epoch, (i.status = 'completed' OR i.archived = 1) AS held,
  s.steps AS steps, coalesce(rs.version, 0) AS version, i.expiry_date AS expiry,
  CASE WHEN i.id IS NULL THEN NULL ELSE ${sqlText(ruleStateOf("i"))} END AS rule,
  i.ack_epoch IS i.schedule_epoch AS acknowledged,
  CASE WHEN i.snooze_epoch IS i.schedule_epoch THEN i.snoozed_until END AS snoozed_until,
  CASE WHEN i.snooze_epoch IS i.schedule_epoch THEN i.snooze_contact_id END AS snooze_contact_id
  FROM ${source} AS j
  LEFT JOIN items i ON i.id = j.value AND i.company_id = ?1
  LEFT JOIN reminder_sequences s ON s.id = i.seq_id AND s.company_id = ?1
  LEFT JOIN reminder_sync rs ON rs.company_id = ?1 AND rs.item_id = j.value`;
const SNAPSHOT_ITEMS = snapshotItems("json_each(?2)");
const SNAPSHOT_INSERTED = snapshotItems("(SELECT last_insert_rowid() AS value WHERE changes() = 1)");
const SNAPSHOT_EVENTS =
  "SELECT id, type, data, created_at FROM webhook_events WHERE company_id = ?1 " + "ORDER BY id LIMIT ?2";

interface CompanyRow {
  timezone: string | null;
  version: number;
}
interface ItemSnapshotRow {
  id: number;
  present: number;
  title: string | null;
  anchor: string | null;
  epoch: number | null;
  held: number | null;
  steps: string | null;
  version: number;
  expiry: string | null;
  rule: string | null;
  acknowledged: number | null;
  snoozed_until: string | null;
  snooze_contact_id: number | null;
}

/** The results of `snapshotQueries`, in order (a batch's tail). */
export type SnapshotResults = [D1Result, D1Result, D1Result];

export function toSnapshots([companyResult, itemResult, eventResult]: SnapshotResults): Snapshots {
  const company = companyResult.results[0] as CompanyRow | undefined;
  return {
    company: { exists: !!company, timezone: company?.timezone || DEFAULT_TIME_ZONE, version: company?.version ?? 0 },
    items: (itemResult.results as ItemSnapshotRow[]).map((r) => ({
      itemId: Number(r.id),
      present: r.present === 1,
      title: r.title ?? "",
      anchor: r.anchor ?? "",
      epoch: r.epoch ?? 0,
      held: r.held === 1,
      steps: parseSteps(r.steps),
      version: r.version,
      expiry: r.expiry ?? "",
      rule: r.rule ?? null,
      acknowledged: r.acknowledged === 1,
      snoozedUntil: r.snoozed_until ?? null,
      snoozeContactId: r.snooze_contact_id ?? null,
    })),
    events: eventResult.results as PulledEvent[],
  };
}

/** The company's time zone, the D1 state of `itemIds` (absent ones as not present), and webhook events waiting in D1. */
export async function readSnapshots(d1: D1Database, companyId: number, itemIds: number[]): Promise<Snapshots> {
  const [companyRows, itemRows, events] = await d1.batch(snapshotQueries(d1, companyId, itemIds));
  return toSnapshots([companyRows!, itemRows!, events!]);
}

// ---- the webhook event outbox (written by D1 triggers: docs/triggers.md) ----

/** Events taken from D1's webhook_events per round trip. */
export const PULL_BATCH = 200;

export interface PulledEvent {
  id: number;
  type: string;
  data: string;
  created_at: number;
}

// ---- changes the object has not applied yet (reminder_sync, written by D1 triggers) ----

/** Item ids (0: the company's settings) whose changes the Durable Object has not applied yet. */
export async function pendingItems(db: D1Database, companyId: number, limit = SYNC_BATCH): Promise<number[]> {
  const { results } = await db
    .prepare("SELECT item_id FROM reminder_sync WHERE company_id = ? AND version > synced_version LIMIT ?")
    .bind(companyId, limit)
    .all<{ item_id: number }>();
  return results.map((r) => r.item_id);
}
