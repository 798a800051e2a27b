// The item's reminders mirrored in D1 (item_reminder_views), so GET /v1/items/{id} can answer
// without a call to the company's Durable Object. The object writes the rows (with its sync
// bookkeeping, after a reminder change, after a fallback read); the Worker only reads them and
// trusts one only under `trustedReminders`' rule (docs/reminders.md, "The item's reminders in D1").

/** Views written with one sync batch; the other items of the batch are simply not mirrored. */
export const VIEWS_PER_BATCH = 20;
/** A view is trusted only while its stale_at is at least this far ahead (clocks of Worker and object). */
export const TRUST_MARGIN_MS = 1000;
/** Item ids per invalidation statement (one bound JSON parameter). */
export const INVALIDATE_BATCH = 1000;

/** One row as the object writes it; `reminders` null: invalidated (never trusted). */
export interface ViewRow {
  itemId: number;
  reminders: string | null;
  version: number;
  zoneVersion: number;
  gen: number;
  staleAt: number | null;
}

/**
 * Writes the rows, each only over an older generation: a write that was computed earlier but
 * lands later (the object does not wait for D1 between two turns) never replaces a newer one.
 * `WHERE true`: SQLite's upsert after INSERT ... SELECT needs it to parse the ON CONFLICT.
 */
export const WRITE_VIEWS_SQL = `INSERT INTO item_reminder_views (company_id, item_id, reminders, version, zone_version, gen, stale_at)
  SELECT ?1, value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 FROM json_each(?2) WHERE true
  ON CONFLICT (company_id, item_id) DO UPDATE SET reminders = excluded.reminders, version = excluded.version,
    zone_version = excluded.zone_version, gen = excluded.gen, stale_at = excluded.stale_at
  WHERE excluded.gen > item_reminder_views.gen`;
export const DELETE_VIEWS_SQL =
  "DELETE FROM item_reminder_views WHERE company_id = ?1 AND item_id IN (SELECT " + "value FROM json_each(?2))";
export const DELETE_COMPANY_VIEWS_SQL = "DELETE FROM item_reminder_views WHERE company_id = ?";

export function writeViewsStatement(db: D1Database, companyId: number, rows: ViewRow[]): D1PreparedStatement {
  return db
    .prepare(WRITE_VIEWS_SQL)
    .bind(
      companyId,
      JSON.stringify(rows.map((r) => [r.itemId, r.reminders, r.version, r.zoneVersion, r.gen, r.staleAt])),
    );
}

/** Invalidation: a row no reader trusts, at generation `gen` (so an older write cannot land over it). */
export const invalidRows = (itemIds: number[], gen: number): ViewRow[] =>
  itemIds.map((itemId) => ({ itemId, reminders: null, version: -1, zoneVersion: -1, gen, staleAt: 0 }));

export function deleteViewsStatement(
  db: D1Database,
  companyId: number,
  itemIds: number[] | "all",
): D1PreparedStatement {
  return itemIds === "all"
    ? db.prepare(DELETE_COMPANY_VIEWS_SQL).bind(companyId)
    : db.prepare(DELETE_VIEWS_SQL).bind(companyId, JSON.stringify(itemIds));
}

/** What the item read brings back with the item row (one statement: src/records/items/queries.ts). */
export interface ViewCheck {
  syncVersion: number | null;
  syncedVersion: number | null;
  zoneVersion: number | null;
  zoneSyncedVersion: number | null;
  viewReminders: string | null;
  viewVersion: number | null;
  viewZoneVersion: number | null;
  viewStaleAt: number | null;
}

/**
 * The view's `{queued, sent}` when it can be trusted, else null (ask the object). Trusted only if
 * nothing is pending for the item nor for the company's settings (the object has applied D1's
 * state), the view reflects exactly those versions, and it cannot have changed by itself yet.
 */
export function trustedReminders<T>(check: ViewCheck, now: number): T | null {
  if (check.viewReminders === null || check.syncVersion === null) return null;
  if (check.syncVersion !== check.syncedVersion || check.viewVersion !== check.syncVersion) return null;
  if (check.zoneVersion !== null && check.zoneVersion !== check.zoneSyncedVersion) return null;
  if (check.viewZoneVersion !== (check.zoneVersion ?? 0)) return null;
  if (check.viewStaleAt !== null && check.viewStaleAt <= now + TRUST_MARGIN_MS) return null;
  return JSON.parse(check.viewReminders) as T;
}
