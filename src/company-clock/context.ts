// What the company clock's engines are given for one call: the object's storage, the Worker's
// bindings, the company it serves and that company's D1; and `settle`, which every change ends with
// (time: arm the alarm; the handoff: tell D1). The object (object.ts) builds one per call.

import { database, type Db } from "../db/client";
import type { WriteContext } from "../db/commit";
import { shardOfCompany } from "../db/directory";
import { primarySession } from "../db/session";
import type { Env } from "../env";
import type { Applied, Bookkeeping } from "./handoff/bookkeeping";
import type { ViewRow } from "./handoff/views";
import { armAlarm } from "./time";
import { handOffAudit } from "./audit-outbox";

export interface ClockContext {
  readonly storage: DurableObjectStorage;
  readonly sql: SqlStorage;
  readonly env: Env;
  readonly companyId: number;
  /**
   * The company's shard, on its primary (companyDb): a handle whose commits carry `context` (the
   * renewals' actor), or nothing (the clock's bookkeeping).
   */
  db(context?: WriteContext): Promise<Db>;
  /** Items whose reminders a call is changing (their D1 view invalidated, the change not yet made): no view of them is written. */
  readonly changing: Map<number, number>;
  /** The object's bookkeeping writes to D1 (one batch in flight at a time). */
  readonly bookkeeping: Bookkeeping;
}

/**
 * The company's shard, on its primary: the clock decides from these reads what to queue and fire,
 * so a replica's past state must never be one of them (docs/scale.md "Which reads use the
 * primary"). The shard comes from the directory (cached for a minute) and follows a moved account.
 */
export async function companyDb(env: Env, companyId: number, context?: WriteContext): Promise<Db> {
  return database(primarySession(env, await shardOfCompany(env, companyId)), context);
}

/**
 * After a change: arms the alarm for the earliest work and tells D1 what was applied (`applied`,
 * `views`) and when to wake the company. `inAlarm`: from the alarm handler.
 */
export async function settle(
  clock: ClockContext,
  change: { applied?: Applied[]; views?: ViewRow[]; inAlarm?: boolean } = {},
): Promise<void> {
  const wake = await armAlarm(clock.storage, change.inAlarm);
  await clock.bookkeeping.note(clock.companyId, wake, change.applied, change.views);
  await handOffAudit(clock);
}
