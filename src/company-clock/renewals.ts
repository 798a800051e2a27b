// The renewals engine of the company clock (docs/recurrence.md): items whose recurrence rule
// renews them at expiry (`renew_on: expired`) are renewed at the start of the day after their date,
// in the company's time zone.
//
// The store mirrors each such item as one row (store.ts mirrorRenewal: its date, its rule state as
// D1 last said it, the instant). When the instant has come, the renewal is written to D1 guarded
// by that rule state (src/records/items/recurrence.ts renewalWrites): a repeat of it (a retried
// alarm, a crash between the D1 write and the object learning of it, two runs at once) finds the
// item no longer in that state and writes nothing. The row changes only when D1's new state is
// synced in, like any item change.

import { parseRuleState, renewalDate } from "../lib/recurrence";
import { todayIn } from "../lib/time";
import { RENEWALS_PER_STATEMENT, renewalWrites, type Renewal } from "../records/items/recurrence";
import type { ClockContext } from "./context";
import { dueRenewals, forgetRenewals, postponeRenewals, zoneOf } from "./store";
import type { AuditActor } from "../db/commit";

/** Renewals at expiry are the service's own change in the audit log: no client or user. */
const RENEWAL_ACTOR: AuditActor = {
  accountId: null,
  companyId: null,
  clientId: null,
  userId: null,
  requestId: null,
  operationId: "automaticRenewal",
};

/** After a failed run (D1 away): every due renewal waits until `until`. */
export const postponeDueRenewals = (sql: SqlStorage, until: number): void => postponeRenewals(sql, "due", until);

/** Renewals one run writes at most; more re-arm the alarm at once. */
export const RENEWALS_PER_RUN = 2000;
/** A renewal D1 refused (the item changed meanwhile, the account is moving) is tried again this much later, after a sync. */
export const RENEWAL_RETRY_MS = 60_000;

/**
 * Writes the renewals due now (at most RENEWALS_PER_RUN) to D1 in one transaction, then applies the
 * items' new D1 state through `apply` (the reminders engine's sync: the new date's sequence is
 * queued, the row moves to the new date). A renewal D1 did not take is synced too and, if still
 * due, waits RENEWAL_RETRY_MS. Missed periods (an outage, a rule set on a long-past date) are
 * jumped over: the first occurrence not yet expired in the company's today. A rule with no
 * occurrence left (past until, past year 9999) leaves the item as it is. True when more are due.
 */
export async function renew(
  clock: ClockContext,
  apply: (itemIds: number[]) => Promise<void>,
  now = Date.now(),
): Promise<boolean> {
  const due = dueRenewals(clock.sql, now, RENEWALS_PER_RUN + 1);
  if (due.length === 0) return false;
  const batch = due.slice(0, RENEWALS_PER_RUN);
  const today = todayIn(zoneOf(clock.sql), new Date(now));
  const renewals: Renewal[] = [];
  const ended: number[] = [];
  for (const row of batch) {
    const { rule } = parseRuleState(row.state);
    const to = rule ? renewalDate(rule, row.date, today) : null;
    if (to) renewals.push({ itemId: row.item_id, from: row.date, to, state: row.state });
    else ended.push(row.item_id);
  }
  const renewed = new Set<number>();
  if (renewals.length > 0) {
    // Written as the service: the commit's audit context names no client or user.
    const db = await clock.db({ committed: 0, actor: RENEWAL_ACTOR });
    const statements = [];
    for (let i = 0; i < renewals.length; i += RENEWALS_PER_STATEMENT) {
      const { history, update } = renewalWrites(db, clock.companyId, renewals.slice(i, i + RENEWALS_PER_STATEMENT), {
        reason: "expired",
        userId: 0,
      });
      statements.push(history, update);
    }
    const results = (await db.commit(statements)) as unknown as Array<Array<{ id: number }>>;
    for (let i = 1; i < results.length; i += 2) for (const row of results[i]!) renewed.add(row.id);
  }
  await apply(batch.map((r) => r.item_id));
  // An ended rule's row goes (the item's next change brings one back if its rule allows). One D1
  // refused: the sync above brought the row up to D1's state; if it is still due, it waits.
  const endedSet = new Set(ended);
  forgetRenewals(clock.sql, ended);
  postponeRenewals(
    clock.sql,
    batch.map((r) => r.item_id).filter((id) => !renewed.has(id) && !endedSet.has(id)),
    now + RENEWAL_RETRY_MS,
  );
  return due.length > RENEWALS_PER_RUN;
}
