// TEMPORARY (issue 33, Pages): a stand-in for Engine's records functions of the contract
// (src/records/items/actions.ts on branch engine-33: acknowledgeItem, unacknowledgeItem,
// snoozeItem). Same signatures and outcomes; state kept in the isolate's memory, not D1. Deleted
// when Engine's commit is merged: the pages then import the real ones.
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { items } from "../../db/schema";
import { notFound } from "../../lib/errors";

export type ActionBy = { type: "contact"; id: number } | { type: "client"; id: string };
export type Via = "link" | "api";
export interface ItemAction {
  by: ActionBy;
  via: Via;
  /** The schedule_epoch the actor saw. */
  occurrence?: number;
}
export interface Acknowledgement {
  at: string;
  by: ActionBy;
  via: Via;
  note: string | null;
}
export interface ItemActionState {
  item_id: number;
  title: string;
  expiry_date: string;
  item_type: string;
  status: string;
  archived: boolean;
  epoch: number;
  acknowledgement: Acknowledgement | null;
  snoozed_until: string | null;
}
export type ActionResult = { outcome: "applied" | "unchanged" | "moved_on"; item: ItemActionState };

const memory = new Map<string, { epoch: number; acknowledgement: Acknowledgement | null; snoozedUntil: string | null }>();

/** The stand-in's acknowledgement and snooze of the item's occurrence `epoch`. */
export function stubActionState(companyId: number, itemId: number, epoch: number): { acknowledgement: Acknowledgement | null; snoozedUntil: string | null } {
  const held = memory.get(`${companyId}:${itemId}`);
  return held && held.epoch === epoch ? { acknowledgement: held.acknowledgement, snoozedUntil: held.snoozedUntil } : { acknowledgement: null, snoozedUntil: null };
}

async function current(db: Db, companyId: number, itemId: number) {
  const row = await db
    .select({ title: items.title, expiryDate: items.expiryDate, itemType: items.itemType, status: items.status, archived: items.archived, epoch: items.scheduleEpoch })
    .from(items)
    .where(and(eq(items.id, itemId), eq(items.companyId, companyId), sql`1`))
    .get();
  if (!row) throw notFound("Item");
  return row;
}

function stateOf(itemId: number, row: Awaited<ReturnType<typeof current>>, companyId: number): ItemActionState {
  const { acknowledgement, snoozedUntil } = stubActionState(companyId, itemId, row.epoch);
  return {
    item_id: itemId,
    title: row.title,
    expiry_date: row.expiryDate,
    item_type: row.itemType,
    status: row.status,
    archived: row.archived === 1,
    epoch: row.epoch,
    acknowledgement,
    snoozed_until: snoozedUntil,
  };
}

export async function acknowledgeItem(db: Db, companyId: number, itemId: number, action: ItemAction & { note?: string | null }): Promise<ActionResult> {
  const row = await current(db, companyId, itemId);
  if (action.occurrence !== undefined && action.occurrence !== row.epoch) return { outcome: "moved_on", item: stateOf(itemId, row, companyId) };
  const key = `${companyId}:${itemId}`;
  const held = stubActionState(companyId, itemId, row.epoch);
  if (held.acknowledgement) return { outcome: "unchanged", item: stateOf(itemId, row, companyId) };
  memory.set(key, { epoch: row.epoch, snoozedUntil: held.snoozedUntil, acknowledgement: { at: new Date().toISOString(), by: action.by, via: action.via, note: action.note ?? null } });
  return { outcome: "applied", item: stateOf(itemId, row, companyId) };
}

export async function snoozeItem(db: Db, companyId: number, itemId: number, action: ItemAction & { until: string }): Promise<ActionResult> {
  const row = await current(db, companyId, itemId);
  if (action.occurrence !== undefined && action.occurrence !== row.epoch) return { outcome: "moved_on", item: stateOf(itemId, row, companyId) };
  const key = `${companyId}:${itemId}`;
  const held = stubActionState(companyId, itemId, row.epoch);
  if (held.snoozedUntil === action.until) return { outcome: "unchanged", item: stateOf(itemId, row, companyId) };
  memory.set(key, { epoch: row.epoch, acknowledgement: held.acknowledgement, snoozedUntil: action.until });
  return { outcome: "applied", item: stateOf(itemId, row, companyId) };
}
