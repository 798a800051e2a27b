// What the item code tells the reminder engine. The items routes call `itemScheduler(env)` after
// each change has been written to D1; the reminder engine replaces the no-op implementation
// (queue the item's sequence, hold or resume its reminders, move them, drop them).

export type ItemChange =
  | { kind: "created"; itemId: number; expiryDate: string; seqId: number | null; contactId: number | null }
  | { kind: "updated"; itemId: number; expiryDate: string; previousDate: string; reschedule: boolean }
  | { kind: "status"; itemId: number; status: "pending" | "completed" }
  | { kind: "archived"; itemId: number; archived: boolean }
  | { kind: "renewed"; itemId: number; expiryDate: string; previousDate: string }
  | { kind: "deleted"; itemId: number };

export interface ItemScheduler {
  /** Called once per change, after the change is in D1. Must be idempotent (it may be repeated). */
  itemChanged(companyId: number, change: ItemChange): Promise<void>;
}

/** Until the reminder engine lands: item changes schedule nothing. */
const noop: ItemScheduler = { itemChanged: async () => {} };

export function itemScheduler(_env: unknown): ItemScheduler {
  return noop;
}
