// Actions on an item's current occurrence, the same for every path (the API's routes, a
// recipient's page from an email or a channel's message): acknowledge it, take the acknowledgement back, snooze its
// reminders, end the snooze (docs/reminders.md, "Acknowledgement and snooze"). Each is one guarded
// UPDATE, with the item's reminder snapshot in the same commit: of concurrent identical actions one
// applies, the others find it applied ("unchanged"); an action bound to an occurrence the item has
// left changes nothing ("moved_on"). The commit carries the caller's actor (src/db/commit.ts), so
// the audit entry names the contact or client and `via`, and the D1 triggers record the webhook
// event (item.acknowledged, …) and tell the company clock (reminder_sync).
//
// Completion and renewal have their records already: setItemStatus (bound to an occurrence by its
// date) and renewItem in ./queries.ts.

import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { MAX_ATTEMPTS, lostRace } from "../../db/guarded";
import { ruleState } from "../../db/rule-state";
import { items } from "../../db/schema";
import type { ActionBy, Via } from "../../lib/actors";
import { badRequest, notFound } from "../../lib/errors";
import {
  addDays,
  DEFAULT_DATE_FORMAT,
  DEFAULT_TIME_ZONE,
  DATE_FORMATS,
  isCalendarDate,
  todayIn,
  type DateFormat,
} from "../../lib/time";
import {
  snapshotQueries,
  toSnapshots,
  type SnapshotResults,
  type Snapshots,
} from "../../company-clock/handoff/snapshots";
import { syncReminders } from "../../company-clock/handoff/worker";
import type { Env } from "../../env";
import {
  MAX_SNOOZE_DAYS,
  NOTE_MAX,
  type Acknowledgement,
  type ItemActionStateOutput,
} from "../../schemas/item-actions";
import type { ItemDetail } from "../../schemas/items";
import { recurrenceView } from "./recurrence";

export type { ActionBy, Via } from "../../lib/actors";

export interface ItemAction {
  by: ActionBy;
  via: Via;
  /** The occurrence (items.schedule_epoch) the actor saw: a recipient's link carries it. Absent: the current one. */
  occurrence?: number;
}

/** The item as an action sees it and answers it. */
export interface ItemActionState {
  item_id: number;
  title: string;
  expiry_date: string;
  item_type: ItemDetail["item_type"];
  status: ItemDetail["status"];
  archived: boolean;
  /** The current occurrence (items.schedule_epoch). */
  epoch: number;
  acknowledgement: Acknowledgement | null;
  /** The snooze of the current occurrence; null when none, or once its date has passed (company time zone). */
  snoozed_until: string | null;
  recurrence: ItemDetail["recurrence"];
  notes: string;
  document_type: string | null;
  contact_id: number | null;
  company: { name: string; timezone: string; date_format: DateFormat };
}

export type ActionOutcome = "applied" | "unchanged" | "moved_on";

export interface ActionResult {
  /** applied: this call changed the item; unchanged: it already was so; moved_on: the occurrence is over (renewed, completed, archived), nothing changed. */
  outcome: ActionOutcome;
  item: ItemActionState;
  /** Why an action is moved_on: the item was renewed since the occurrence the actor saw, or is completed or archived. */
  reason?: "renewed" | "completed" | "archived";
  /** The reminder snapshot the write's commit read (applied only): hand it to `syncAction`. */
  snapshot?: Snapshots | null;
}

// ---- the state ----

const stateColumns = {
  itemId: items.id,
  title: items.title,
  expiryDate: items.expiryDate,
  itemType: items.itemType,
  status: items.status,
  archived: items.archived,
  epoch: items.scheduleEpoch,
  notes: items.notes,
  contactId: items.contactId,
  ackEpoch: items.ackEpoch,
  acknowledgement: items.acknowledgement,
  snoozeEpoch: items.snoozeEpoch,
  snoozedUntil: items.snoozedUntil,
  ruleState: sql<string>`${ruleState}`.as("rule_state"),
  documentType: sql<string | null>`(SELECT d.name FROM document_types AS d WHERE d.id = ${items.documentTypeId})`.as(
    "document_type",
  ),
  company:
    sql<string>`(SELECT json_array(c.name, json_extract(c.settings, '$.timezone'), json_extract(c.settings, '$.date_format')) FROM companies AS c WHERE c.id = ${items.companyId})`.as(
      "company",
    ),
};
interface StateRow {
  itemId: number;
  title: string;
  expiryDate: string;
  itemType: string;
  status: string;
  archived: number;
  epoch: number;
  notes: string;
  contactId: number | null;
  ackEpoch: number | null;
  acknowledgement: string | null;
  snoozeEpoch: number | null;
  snoozedUntil: string | null;
  ruleState: string;
  documentType: string | null;
  company: string;
}

/** The columns of an occurrence's acknowledgement and snooze, as a row holds them. */
export interface OccurrenceColumns {
  epoch: number;
  ackEpoch: number | null;
  acknowledgement: string | null;
  snoozeEpoch: number | null;
  snoozedUntil: string | null;
}

/**
 * What the API shows of them (the detail, an action's answer): the acknowledgement and snooze of the
 * current occurrence only, and a snooze only until its date has passed in the company's time zone
 * (`zone`: read only when the row is snoozed).
 */
export function occurrenceState(
  row: OccurrenceColumns,
  zone: () => string,
): Pick<ItemActionState, "acknowledgement" | "snoozed_until"> {
  const current = (epoch: number | null) => epoch !== null && epoch === row.epoch;
  const snoozed =
    current(row.snoozeEpoch) && row.snoozedUntil !== null && row.snoozedUntil >= todayIn(zone())
      ? row.snoozedUntil
      : null;
  return {
    acknowledgement:
      current(row.ackEpoch) && row.acknowledgement ? (JSON.parse(row.acknowledgement) as Acknowledgement) : null,
    snoozed_until: snoozed,
  };
}

function stateOf(row: StateRow): ItemActionState {
  const [name, zone, format] = JSON.parse(row.company) as [string, string | null, string | null];
  const timezone = zone || DEFAULT_TIME_ZONE;
  return {
    item_id: row.itemId,
    title: row.title,
    expiry_date: row.expiryDate,
    item_type: row.itemType as ItemActionState["item_type"],
    status: row.status as ItemActionState["status"],
    archived: row.archived === 1,
    epoch: row.epoch,
    ...occurrenceState(row, () => timezone),
    recurrence: recurrenceView(row.ruleState).recurrence,
    notes: row.notes,
    document_type: row.documentType,
    contact_id: row.contactId,
    company: {
      name,
      timezone,
      date_format: (DATE_FORMATS as readonly string[]).includes(format ?? "")
        ? (format as DateFormat)
        : DEFAULT_DATE_FORMAT,
    },
  };
}

/** What the API answers of an action (ItemActionState in the OpenAPI document). */
export function actionStateOutput(item: ItemActionState): ItemActionStateOutput {
  return {
    item_id: item.item_id,
    title: item.title,
    expiry_date: item.expiry_date,
    item_type: item.item_type,
    status: item.status,
    active: !item.archived,
    acknowledgement: item.acknowledgement,
    snoozed_until: item.snoozed_until,
  };
}

const inCompany = (companyId: number, itemId: number) => and(eq(items.id, itemId), eq(items.companyId, companyId));

/** The item's action state (a recipient's page shows it); 404 when the item is not the company's. */
export async function itemActionState(db: Db, companyId: number, itemId: number): Promise<ItemActionState> {
  const row = await db.select(stateColumns).from(items).where(inCompany(companyId, itemId)).get();
  if (!row) throw notFound("Item");
  return stateOf(row as StateRow);
}

// ---- the writes ----

/** Why an action on `item` cannot apply to the occurrence it names, or null. `open`: the action needs a pending, live item. */
function movedOn(item: ItemActionState, action: ItemAction, open: boolean): ActionResult["reason"] | null {
  if (action.occurrence !== undefined && action.occurrence !== item.epoch) return "renewed";
  if (open && item.status === "completed") return "completed";
  if (open && item.archived) return "archived";
  return null;
}

/**
 * One action: `changes` written while `applies` holds (besides the company, the occurrence named
 * and `open`: pending and not archived), with the reminder snapshot in the same commit. Nothing
 * written: the item is read again and the answer says why (moved_on, unchanged), or the write is
 * tried again when it lost a race to a change that leaves it still to do.
 */
async function act(
  db: Db,
  companyId: number,
  itemId: number,
  action: ItemAction,
  how: {
    open: boolean;
    changes: Partial<typeof items.$inferInsert>;
    applies: SQL;
    done: (item: ItemActionState) => boolean;
  },
): Promise<ActionResult> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const guards = [inCompany(companyId, itemId), how.applies];
    if (action.occurrence !== undefined) guards.push(eq(items.scheduleEpoch, action.occurrence));
    if (how.open) guards.push(eq(items.status, "pending"), eq(items.archived, 0));
    const [written, ...snapshot] = await db.commit([
      db
        .update(items)
        .set({ ...how.changes, updatedAt: sql`CURRENT_TIMESTAMP` })
        .where(and(...guards))
        .returning(stateColumns),
      ...snapshotQueries(db.d1, companyId, [itemId]),
    ]);
    const row = (written as StateRow[])[0];
    if (row)
      return { outcome: "applied", item: stateOf(row), snapshot: toSnapshots(snapshot as unknown as SnapshotResults) };
    const item = await itemActionState(db, companyId, itemId);
    const reason = movedOn(item, action, how.open);
    if (reason) return { outcome: "moved_on", item, reason };
    if (how.done(item)) return { outcome: "unchanged", item };
    // Changed between the write and the read (taken back, snoozed otherwise): try again.
  }
  throw lostRace("item");
}

/** ISO instant of now, for what an action records. */
const nowIso = () => new Date().toISOString();

/**
 * Acknowledges the item's current occurrence ("I'm on it"): its remaining reminders are held, except
 * steps marked `always` (docs/reminders.md). Idempotent: an occurrence already acknowledged keeps
 * its acknowledgement (unchanged). Only a pending, live item: completed or archived is moved_on.
 */
export async function acknowledgeItem(
  db: Db,
  companyId: number,
  itemId: number,
  action: ItemAction & { note?: string | null },
): Promise<ActionResult> {
  const note = action.note ? action.note : null;
  if (note !== null && Array.from(note).length > NOTE_MAX)
    throw badRequest(`note must be at most ${NOTE_MAX} characters`);
  const acknowledgement: Acknowledgement = { at: nowIso(), by: action.by, via: action.via, note };
  return act(db, companyId, itemId, action, {
    open: true,
    changes: {
      ackEpoch: sql`${items.scheduleEpoch}` as unknown as number,
      acknowledgement: JSON.stringify(acknowledgement),
    },
    applies: sql`${items.ackEpoch} IS NOT ${items.scheduleEpoch}`,
    done: (item) => item.acknowledgement !== null,
  });
}

/** Takes the acknowledgement of the current occurrence back: its held reminders still ahead are queued again. */
export async function unacknowledgeItem(
  db: Db,
  companyId: number,
  itemId: number,
  action: ItemAction,
): Promise<ActionResult> {
  return act(db, companyId, itemId, action, {
    open: false,
    changes: { ackEpoch: null, acknowledgement: null },
    applies: sql`${items.ackEpoch} = ${items.scheduleEpoch}`,
    done: (item) => item.acknowledgement === null,
  });
}

/**
 * Snoozes the current occurrence's reminders until `until` (a date after the company's today, at
 * most MAX_SNOOZE_DAYS ahead; it may pass the item's date): nothing is sent before it, then one
 * reminder at the default hour that day (to the contact who snoozed from their email's page, else to
 * the item's contact: a snooze through the API or from a channel's link), then the steps still ahead. The same date again is unchanged; another replaces it.
 */
export async function snoozeItem(
  db: Db,
  companyId: number,
  itemId: number,
  action: ItemAction & { until: string },
): Promise<ActionResult> {
  const { until } = action;
  if (!isCalendarDate(until)) throw badRequest("until must be a real calendar date YYYY-MM-DD");
  const current = await itemActionState(db, companyId, itemId);
  const today = todayIn(current.company.timezone);
  if (until <= today)
    throw badRequest(
      `until must be a date after today (${today} in the company's time zone ${current.company.timezone})`,
    );
  const latest = addDays(today, MAX_SNOOZE_DAYS);
  if (until > latest) throw badRequest(`until must be at most ${MAX_SNOOZE_DAYS} days ahead (${latest})`);
  return act(db, companyId, itemId, action, {
    open: true,
    changes: {
      snoozeEpoch: sql`${items.scheduleEpoch}` as unknown as number,
      snoozedUntil: until,
      snoozeContactId: action.by.type === "contact" ? action.by.id : null,
    },
    applies: sql`NOT (${items.snoozeEpoch} IS ${items.scheduleEpoch} AND ${items.snoozedUntil} IS ${until})`,
    done: (item) => item.snoozed_until === until,
  });
}

/** Ends the current occurrence's snooze: its held reminders still ahead are queued again. */
export async function unsnoozeItem(
  db: Db,
  companyId: number,
  itemId: number,
  action: ItemAction,
): Promise<ActionResult> {
  return act(db, companyId, itemId, action, {
    open: false,
    changes: { snoozeEpoch: null, snoozedUntil: null, snoozeContactId: null },
    applies: sql`${items.snoozeEpoch} = ${items.scheduleEpoch}`,
    done: (item) => item.snoozed_until === null,
  });
}

/**
 * After an applied action: the company clock holds or queues the item's reminders from the
 * snapshot the write read. Never throws; if the clock is not reached the change waits in the
 * outbox (reminder_sync) and the clock's next alarm, or the cron sweep, applies it before anything fires.
 */
export async function syncAction(env: Env, companyId: number, itemId: number, result: ActionResult): Promise<void> {
  if (result.outcome === "applied") await syncReminders(env, companyId, [itemId], result.snapshot);
}
