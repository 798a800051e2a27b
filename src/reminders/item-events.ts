// The Worker's side of the D1 -> Durable Object handoff. Routes write D1 first (triggers record the
// change in reminder_sync in the same statement), then ask the company's Durable Object to apply
// it. If that call fails, the change is still in the outbox: the next call for the item, the
// object's alarm, or the cron sweep (src/scheduled.ts) applies it. So a failure between the two
// writes leaves neither a lost nor an orphan reminder, only a late one.

import type { Env } from "../env";
import type { Snapshots } from "./d1";
import { schedulerFor } from "./rpc";

/** Item id standing for the company's settings (its time zone) in the outbox. */
export const COMPANY_SETTINGS = 0;

/**
 * Applies the D1 state of `itemIds` to the company's reminders; never throws (the outbox keeps the
 * change). `snapshot`: that state as the write's own batch read it (src/reminders/d1.ts
 * `snapshotQueries`), which spares the object reading it again.
 */
export async function syncReminders(env: Env, companyId: number, itemIds: number[], snapshot?: Snapshots | null): Promise<void> {
  try {
    await schedulerFor(env, companyId).sync(companyId, itemIds, snapshot ?? undefined);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "reminder sync deferred to the sweep", companyId, itemIds: itemIds.slice(0, 20), error: String(error) }));
  }
}

/**
 * After a task or file write: the company's Durable Object takes the webhook events D1 triggers
 * recorded with it (only while the company has an enabled endpoint) and delivers them. Never
 * throws: the events stay in D1 and the next alarm, sync or the cron sweep takes them.
 */
export async function nudgeWebhooks(env: Env, companyId: number): Promise<void> {
  try {
    await schedulerFor(env, companyId).pullEvents(companyId);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "webhook events left to the sweep", companyId, error: String(error) }));
  }
}

/** A deleted company: its Durable Object's storage, alarm, wakeup and outbox rows go. Never throws. */
export async function forgetReminders(env: Env, companyId: number): Promise<void> {
  try {
    await schedulerFor(env, companyId).forgetCompany(companyId);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "could not clear a deleted company's reminders", companyId, error: String(error) }));
  }
}
