// What the reminder Durable Object reads from and writes to D1: item snapshots (the truth it
// mirrors), the outbox bookkeeping (reminder_sync), its company's wakeup instant, and the details a
// delivery needs. Each function is one round trip.

import { asc, eq, sql } from "drizzle-orm";
import { getDb, type Db } from "../db/client";
import { companies, webhookEvents } from "../db/schema";
import { DEFAULT_DATE_FORMAT, DEFAULT_TIME_ZONE, DATE_FORMATS, type DateFormat } from "../lib/time";
import { parseSteps, type Step } from "./steps";
import { deleteViewsStatement, writeViewsStatement, type ViewRow } from "./views";

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

// ---- the webhook event outbox (written by D1 triggers, migration 0011) ----

/** Events taken from D1's webhook_events per round trip. */
export const PULL_BATCH = 200;

export interface PulledEvent {
  id: number;
  type: string;
  data: string;
  created_at: number;
}

/** Item ids (0: the company's settings) whose changes the Durable Object has not applied yet. */
export async function pendingItems(db: D1Database, companyId: number, limit = SYNC_BATCH): Promise<number[]> {
  const { results } = await db
    .prepare("SELECT item_id FROM reminder_sync WHERE company_id = ? AND version > synced_version LIMIT ?")
    .bind(companyId, limit)
    .all<{ item_id: number }>();
  return results.map((r) => r.item_id);
}

export interface Applied {
  itemId: number;
  version: number;
  gone: boolean;
}

/**
 * Records what the object applied (a later change keeps its row pending: synced_version only
 * grows, and only to the version that was read), the items' reminder views (in the same batch, so
 * a view and the synced_version it matches commit together) and, when it changed, the company's
 * next wakeup.
 */
export async function recordSync(
  db: D1Database,
  companyId: number,
  applied: Applied[],
  wakeup: number | null | undefined,
  views: ViewRow[] = [],
): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  if (views.length > 0) statements.push(writeViewsStatement(db, companyId, views));
  if (applied.length > 0) {
    const marks = JSON.stringify(applied.map((a) => [a.itemId, a.version]));
    statements.push(
      db
        .prepare(
          // The marks are materialised first: otherwise SQLite walks the company's whole outbox
          // with a JSON scan inside (seconds at 20,000 items); this way each mark is a key lookup.
          `WITH m AS MATERIALIZED (SELECT value ->> 0 AS item_id, value ->> 1 AS version FROM json_each(?2))
           UPDATE reminder_sync SET synced_version = max(synced_version, m.version)
           FROM m WHERE reminder_sync.company_id = ?1 AND reminder_sync.item_id = m.item_id`,
        )
        .bind(companyId, marks),
    );
    const gone = applied.filter((a) => a.gone).map((a) => a.itemId);
    if (gone.length > 0) {
      statements.push(
        db
          .prepare("DELETE FROM reminder_sync WHERE company_id = ?1 AND item_id IN (SELECT value FROM json_each(?2)) AND version <= synced_version")
          .bind(companyId, JSON.stringify(gone)),
        deleteViewsStatement(db, companyId, gone),
      );
    }
  }
  if (wakeup !== undefined) statements.push(wakeupStatement(db, companyId, wakeup));
  if (statements.length > 0) await db.batch(statements);
}

function wakeupStatement(db: D1Database, companyId: number, wakeup: number | null): D1PreparedStatement {
  return wakeup === null
    ? db.prepare("DELETE FROM reminder_wakeups WHERE company_id = ?").bind(companyId)
    : db
        .prepare("INSERT INTO reminder_wakeups (company_id, due_at) VALUES (?, ?) ON CONFLICT (company_id) DO UPDATE SET due_at = excluded.due_at")
        .bind(companyId, wakeup);
}

export async function recordWakeup(db: D1Database, companyId: number, wakeup: number | null): Promise<void> {
  await wakeupStatement(db, companyId, wakeup).run();
}

// ---- deliveries ----

export interface DeliveryTarget {
  reminderId: number;
  itemId: number;
  contactId: number | null;
}

export interface DeliveryDetails {
  reminderId: number;
  present: boolean;
  title: string;
  itemType: "exp" | "due" | "apt" | "evt";
  documentType: string | null;
  expiryDate: string;
  notes: string | null;
  email: string | null;
  phone: string | null;
  recipientName: string | null;
}

export interface CompanyDetails {
  name: string;
  timezone: string;
  dateFormat: DateFormat;
}

/** The current D1 facts for a batch of deliveries: item, recipient (the reminder's contact or the item's), company. */
export async function deliveryDetails(db: D1Database, companyId: number, targets: DeliveryTarget[]): Promise<{ company: CompanyDetails; details: Map<number, DeliveryDetails> }> {
  const [companyResult, rows] = await db.batch([
    db
      .prepare("SELECT name, json_extract(settings, '$.timezone') AS timezone, json_extract(settings, '$.date_format') AS date_format FROM companies WHERE id = ?")
      .bind(companyId),
    db
      .prepare(
        `SELECT t.value ->> 0 AS reminder_id, i.id IS NOT NULL AS present, i.title, i.item_type, i.expiry_date, i.notes, d.name AS document_type,
           c.email, trim(c.mobile_code || ' ' || c.phone_number) AS phone, trim(c.first_name || ' ' || c.last_name) AS recipient_name
         FROM json_each(?2) AS t
         LEFT JOIN items i ON i.id = t.value ->> 1 AND i.company_id = ?1
         LEFT JOIN document_types d ON d.id = i.document_type_id
         LEFT JOIN contacts c ON c.id = coalesce(t.value ->> 2, i.contact_id) AND c.company_id = ?1`,
      )
      .bind(companyId, JSON.stringify(targets.map((t) => [t.reminderId, t.itemId, t.contactId]))),
  ]);
  const company = (companyResult!.results as Array<{ name: string; timezone: string | null; date_format: string | null }>)[0];
  const dateFormat = (DATE_FORMATS as readonly string[]).includes(company?.date_format ?? "") ? (company!.date_format as DateFormat) : DEFAULT_DATE_FORMAT;
  const details = new Map<number, DeliveryDetails>();
  for (const r of rows!.results as Array<Record<string, unknown>>) {
    details.set(Number(r.reminder_id), {
      reminderId: Number(r.reminder_id),
      present: r.present === 1,
      title: String(r.title ?? ""),
      itemType: (r.item_type as DeliveryDetails["itemType"]) ?? "exp",
      documentType: (r.document_type as string | null) ?? null,
      expiryDate: String(r.expiry_date ?? ""),
      notes: (r.notes as string | null) ?? null,
      email: (r.email as string | null) || null,
      phone: (r.phone as string | null) || null,
      recipientName: (r.recipient_name as string | null) || null,
    });
  }
  return { company: { name: company?.name ?? "", timezone: company?.timezone || DEFAULT_TIME_ZONE, dateFormat }, details };
}
