// The Worker's side of the D1 -> Durable Object handoff, and how the Worker reaches a company's
// clock (`clockFor`). Routes write D1 first (triggers record the change in reminder_sync in the
// same statement), then ask the company's clock to apply it. If that call fails, the change is
// still in the outbox: the next call for the item, the clock's alarm, or the cron sweep
// (src/scheduled.ts) applies it. So a failure between the two writes leaves neither a lost nor an
// orphan reminder, only a late one. Kept apart from the object (which imports "cloudflare:workers")
// so that route modules load anywhere, e.g. in the Node-side OpenAPI checks.

import type { Env } from "../../env";
import type { CompanyClock } from "../object";
import type { Snapshots } from "./snapshots";

/** Item id standing for the company's settings (its time zone) in the outbox. */
export const COMPANY_SETTINGS = 0;

/** Object ids by company, per namespace binding, kept for the isolate's life (idFromName hashes the name each time). */
const ids = new WeakMap<object, Map<number, DurableObjectId>>();
const MAX_CACHED_IDS = 10_000;

/** The company's clock (one Durable Object per company, named `company:<id>`). */
export function clockFor(env: Env, companyId: number): DurableObjectStub<CompanyClock> {
  let known = ids.get(env.COMPANY_CLOCK);
  if (!known) ids.set(env.COMPANY_CLOCK, (known = new Map()));
  let id = known.get(companyId);
  if (!id) {
    if (known.size >= MAX_CACHED_IDS) known.clear();
    id = env.COMPANY_CLOCK.idFromName(`company:${companyId}`);
    known.set(companyId, id);
  }
  // A stub is made per call: one that saw an exception fails every later call (and stubs are
  // not meant to outlive the request that made them); making one is cheap. The binding is typed by
  // the RPC methods (src/env.ts cannot name the class without an import circle); its objects are
  // CompanyClocks.
  return env.COMPANY_CLOCK.get(id) as DurableObjectStub<CompanyClock>;
}

/**
 * Applies the D1 state of `itemIds` to the company's reminders; never throws (the outbox keeps the
 * change). `snapshot`: that state as the write's own batch read it (src/company-clock/handoff/snapshots.ts
 * `snapshotQueries`), which spares the object reading it again.
 */
export async function syncReminders(
  env: Env,
  companyId: number,
  itemIds: number[],
  snapshot?: Snapshots | null,
): Promise<void> {
  try {
    await clockFor(env, companyId).sync(companyId, itemIds, snapshot ?? undefined);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "reminder sync deferred to the sweep",
        companyId,
        itemIds: itemIds.slice(0, 20),
        error: String(error),
      }),
    );
  }
}

/**
 * After a task or file write: the company's clock takes the webhook events D1 triggers recorded
 * with it (only while the company has an enabled endpoint) and delivers them. Never throws: the
 * events stay in D1 and the next alarm, sync or the cron sweep takes them.
 */
export async function nudgeWebhooks(env: Env, companyId: number): Promise<void> {
  try {
    await clockFor(env, companyId).pullEvents(companyId);
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "webhook events left to the sweep", companyId, error: String(error) }),
    );
  }
}

/**
 * After a write that changes a contact's digest or the company's digest hour or time zone: the
 * clock reschedules its next digest run from D1. Never throws: each run also reschedules the next
 * from the settings of the day, so a lost call delays a newly wanted digest by at most a day.
 */
export async function refreshDigests(env: Env, companyId: number): Promise<void> {
  try {
    await clockFor(env, companyId).refreshDigests(companyId);
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "digest schedule not refreshed", companyId, error: String(error) }),
    );
  }
}

/** A deleted company: its clock's storage, alarm, wakeup and outbox rows go. Never throws. */
export async function forgetReminders(env: Env, companyId: number): Promise<void> {
  try {
    await clockFor(env, companyId).forgetCompany(companyId);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "could not clear a deleted company's reminders",
        companyId,
        error: String(error),
      }),
    );
  }
}
