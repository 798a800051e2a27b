// How the company clock's reminders look to the Worker (ReminderView), and the items' reminder
// views it mirrors to D1 (item_reminder_views, src/company-clock/handoff/views.ts) so that
// GET /v1/items/{id} can answer without calling it: written with the sync bookkeeping, after a
// reminder change made here, after a fallback read; invalidated before such a change and when
// reminders fire.

import type { DeliveryView, ItemReminders, ReminderView } from "./api";
import { settle, type ClockContext } from "./context";
import { INVALIDATE_BATCH, invalidRows, writeViewsStatement, type ViewRow } from "./handoff/views";
import { getMeta, itemMirror, setMeta, type DeliveryState, type ReminderRow } from "./store";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function reminderView(r: ReminderRow, deliveries: DeliveryView[]): ReminderView {
  return {
    reminder_id: r.reminder_id,
    date: r.date,
    hour: r.hour,
    sent: r.state === "sent",
    state: r.state,
    origin: r.origin as ReminderView["origin"],
    due_at: new Date(r.due_at).toISOString(),
    period: r.period,
    unit: r.unit,
    rtype: r.rtype,
    contact_id: r.contact_id ?? 0,
    group_id: r.group_id ?? null,
    channel_id: r.channel_id ?? null,
    always: r.always === 1,
    unless_acknowledged: r.unless_ack === 1,
    channels: JSON.parse(r.channels) as string[],
    sent_at: iso(r.sent_at),
    deliveries,
  };
}

function deliveriesOf(sql: SqlStorage, reminderIds: number[]): Map<number, DeliveryView[]> {
  const byReminder = new Map<number, DeliveryView[]>();
  if (reminderIds.length === 0) return byReminder;
  const rows = sql
    .exec<{
      reminder_id: number;
      channel: string;
      contact_id: number;
      endpoint_id: number | null;
      state: DeliveryState;
      attempts: number;
      recipient: string | null;
      last_error: string | null;
      delivered_at: number | null;
      next_at: number | null;
    }>(
      "SELECT * FROM deliveries WHERE reminder_id IN (SELECT value FROM json_each(?)) " +
        "ORDER BY channel, contact_id",
      JSON.stringify(reminderIds),
    )
    .toArray();
  for (const d of rows) {
    const list = byReminder.get(d.reminder_id) ?? [];
    list.push({
      channel: d.channel,
      contact_id: d.contact_id || null,
      channel_id: d.endpoint_id ?? null,
      state: d.state,
      attempts: d.attempts,
      recipient: d.recipient,
      last_error: d.last_error,
      delivered_at: iso(d.delivered_at),
      next_attempt_at: d.state === "pending" ? iso(d.next_at) : null,
    });
    byReminder.set(d.reminder_id, list);
  }
  return byReminder;
}

export interface CurrentReminders {
  reminders: ItemReminders;
  /** The earliest instant they can change without a call (null: never). */
  staleAt: number | null;
}

/** The item's reminders as GET shows them, and the earliest instant they can change without a call. */
export function remindersOf(sql: SqlStorage, itemId: number): CurrentReminders {
  const rows = sql
    .exec<ReminderRow>(
      `SELECT * FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND origin <> 'expiry'
       UNION ALL SELECT * FROM (SELECT * FROM reminders WHERE item_id = ? AND state = 'sent' AND origin <> 'expiry' ORDER BY sent_at DESC, reminder_id DESC LIMIT 100)`,
      itemId,
      itemId,
    )
    .toArray();
  const deliveries = deliveriesOf(
    sql,
    rows.filter((r) => r.state === "sent").map((r) => r.reminder_id),
  );
  return currentOf(rows, deliveries);
}

/** The view of an item's waiting and sent reminders (`rows`, without item.expired) and their deliveries. */
export function currentOf(rows: ReminderRow[], deliveries: Map<number, DeliveryView[]>): CurrentReminders {
  const views = rows.map((r) => reminderView(r, deliveries.get(r.reminder_id) ?? []));
  // What changes by itself: a queued reminder fires at its due_at, a pending delivery is attempted
  // at its next attempt. Held reminders change only with their item (a D1 change: its version).
  let staleAt: number | null = null;
  const earliest = (at: number) => (staleAt = staleAt === null ? at : Math.min(staleAt, at));
  for (const r of rows) if (r.state === "queued") earliest(r.due_at);
  for (const list of deliveries.values())
    for (const d of list) if (d.state === "pending") earliest(d.next_attempt_at ? Date.parse(d.next_attempt_at) : 0);
  return {
    reminders: {
      queued: views
        .filter((v) => !v.sent)
        .sort((a, b) => a.due_at.localeCompare(b.due_at) || a.reminder_id - b.reminder_id),
      sent: views.filter((v) => v.sent),
    },
    staleAt,
  };
}

// ---- the items' reminder views in D1 ----

/** The next generation of the views this object writes: later computed, higher. */
function nextGen(sql: SqlStorage): number {
  const gen = Number(getMeta(sql, "view_gen") ?? 0) + 1;
  setMeta(sql, "view_gen", String(gen));
  return gen;
}

/** Views of the items as they are now (`current`: already computed for a single item), except items being changed. */
export function viewRows(
  clock: ClockContext,
  itemIds: number[],
  current?: CurrentReminders | Map<number, CurrentReminders>,
): ViewRow[] {
  const zone = getMeta(clock.sql, "zone_version");
  const rows: ViewRow[] = [];
  let gen = 0;
  for (const itemId of itemIds) {
    const mirror = itemMirror(clock.sql, itemId);
    if (!mirror || mirror.gone || clock.changing.has(itemId)) continue;
    const known = current instanceof Map ? current.get(itemId) : current;
    const { reminders, staleAt } = known ?? remindersOf(clock.sql, itemId);
    gen ||= nextGen(clock.sql);
    rows.push({
      itemId,
      reminders: JSON.stringify(reminders),
      version: mirror.version,
      zoneVersion: zone === null ? -1 : Number(zone),
      gen,
      staleAt,
    });
  }
  return rows;
}

/** Best effort: a view not written only sends the next read to the object. */
export async function writeViews(clock: ClockContext, views: ViewRow[]): Promise<void> {
  try {
    const db = await clock.db();
    await db.commit([writeViewsStatement(db.d1, clock.companyId, views)]);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "reminder view not written",
        companyId: clock.companyId,
        error: String(error),
      }),
    );
  }
}

/**
 * A change to an item's reminders made here (no D1 change announces it): its D1 view is
 * invalidated first, so once the change is visible no reader trusts the old view (a failure to
 * invalidate refuses the change: it throws), then `change` runs (synchronously), then the new
 * view is written with the bookkeeping.
 */
export async function changeReminders<T>(clock: ClockContext, itemId: number, change: () => T): Promise<T> {
  const { changing } = clock;
  changing.set(itemId, (changing.get(itemId) ?? 0) + 1);
  let result: T;
  try {
    const db = await clock.db();
    await db.commit([writeViewsStatement(db.d1, clock.companyId, invalidRows([itemId], nextGen(clock.sql)))]);
    result = change();
  } finally {
    const left = changing.get(itemId)! - 1;
    if (left > 0) changing.set(itemId, left);
    else changing.delete(itemId);
  }
  await settle(clock, { views: viewRows(clock, [itemId]) });
  return result;
}

/**
 * The views of items whose reminders just fired. Their stale_at (at most the fired reminder's
 * due_at) already kept readers away; this is the second fence. Never throws: firing does not depend on D1.
 */
export async function invalidateFired(clock: ClockContext, itemIds: number[]): Promise<void> {
  const rows = invalidRows(itemIds, nextGen(clock.sql));
  try {
    const statements: D1PreparedStatement[] = [];
    const db = await clock.db();
    for (let i = 0; i < rows.length; i += INVALIDATE_BATCH)
      statements.push(writeViewsStatement(db.d1, clock.companyId, rows.slice(i, i + INVALIDATE_BATCH)));
    await db.commit(statements);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "views of fired items not invalidated (their stale_at has passed)",
        companyId: clock.companyId,
        error: String(error),
      }),
    );
  }
}
