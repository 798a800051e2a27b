// The D1 handoff, reading side: the item snapshots the company clock mirrors (the truth is D1's),
// read by the object itself or appended to a Worker's write batch, and the changes it has not
// applied yet (the reminder_sync outbox). Each function is one round trip.

import { asc, eq, sql } from "drizzle-orm";
import { getDb, type Db } from "../../db/client";
import { companies, webhookEvents } from "../../db/schema";
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
  /** The item's rule state (src/routes/items/recurrence.ts ruleState): what renewals mirror; null when absent. */
  rule: string | null;
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
 * Each statement's column names must stay distinct: a drizzle batch maps rows by name.
 */
export function snapshotQueries(db: Db, companyId: number, itemIds: number[] | "inserted") {
  const source =
    itemIds === "inserted" ? sql`(SELECT last_insert_rowid() AS value WHERE changes() = 1)` : sql`json_each(${JSON.stringify(itemIds)})`;
  return [
    db
      .select({
        timezone: sql<string | null>`json_extract(${companies.settings}, '$.timezone')`,
        version: sql<number>`coalesce((SELECT version FROM reminder_sync WHERE company_id = ${companyId} AND item_id = 0), 0)`,
      })
      .from(companies)
      .where(eq(companies.id, companyId)),
    db
      .select({
        id: sql<number>`j.value`,
        present: sql<number>`i.id IS NOT NULL`,
        title: sql<string | null>`i.title`,
        anchor: sql<string | null>`coalesce(i.reminder_anchor, i.expiry_date)`,
        epoch: sql<number | null>`i.schedule_epoch`,
        held: sql<number | null>`(i.status = 'completed' OR i.archived = 1)`,
        steps: sql<string | null>`s.steps`,
        version: sql<number>`coalesce(rs.version, 0)`,
        expiry: sql<string | null>`i.expiry_date`,
        rule: sql<string | null>`CASE WHEN i.id IS NULL THEN NULL ELSE ${ruleStateOf("i")} END`,
      })
      .from(
        sql`${source} AS j
          LEFT JOIN items i ON i.id = j.value AND i.company_id = ${companyId}
          LEFT JOIN reminder_sequences s ON s.id = i.seq_id AND s.company_id = ${companyId}
          LEFT JOIN reminder_sync rs ON rs.company_id = ${companyId} AND rs.item_id = j.value`,
      ),
    db
      .select({ id: webhookEvents.id, type: webhookEvents.type, data: webhookEvents.data, created_at: webhookEvents.createdAt })
      .from(webhookEvents)
      .where(eq(webhookEvents.companyId, companyId))
      .orderBy(asc(webhookEvents.id))
      .limit(PULL_BATCH),
  ] as const;
}

type Queries = ReturnType<typeof snapshotQueries>;
/** The results of `snapshotQueries`, in order (a batch's tail). */
export type SnapshotResults = [Awaited<Queries[0]>, Awaited<Queries[1]>, Awaited<Queries[2]>];

export function toSnapshots([companyRows, itemRows, events]: SnapshotResults): Snapshots {
  const company = companyRows[0];
  return {
    company: { exists: !!company, timezone: company?.timezone || DEFAULT_TIME_ZONE, version: company?.version ?? 0 },
    items: itemRows.map((r) => ({
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
    })),
    events,
  };
}

/** The company's time zone, the D1 state of `itemIds` (absent ones as not present), and webhook events waiting in D1. */
export async function readSnapshots(d1: D1Database, companyId: number, itemIds: number[]): Promise<Snapshots> {
  const db = getDb(d1);
  const [companyRows, itemRows, events] = await db.batch(snapshotQueries(db, companyId, itemIds));
  return toSnapshots([companyRows, itemRows, events]);
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
