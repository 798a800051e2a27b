// The renewals engine of the company clock (docs/recurrence.md): items whose recurrence rule
// renews them at expiry (`renew_on: expired`) are renewed at the start of the day after their date,
// in the company's time zone.
//
// The object mirrors each such item as one row (its date, its rule state as D1 last said, the
// instant). When the instant has come, the renewal is written to D1 guarded by that rule state
// (src/routes/items/recurrence.ts renewalWrites): a repeat of it (a retried alarm, a crash between
// the D1 write and the object learning of it) finds the item no longer in that state and writes
// nothing. The object's row changes only when D1's new state is synced in, like any item change.

import { getDb } from "../db/client";
import { renewalDate } from "../lib/recurrence";
import { startOfDayAfter, todayIn } from "../lib/time";
import { RENEWALS_PER_STATEMENT, parseRuleState, renewalWrites, type Renewal } from "../routes/items/recurrence";

/** The object's schema step for renewals (its SQLite migrations, store.ts). */
export const RENEWALS_SCHEMA = [
  // One row per item whose rule renews it at expiry. held: the item is archived (the rule is paused).
  `CREATE TABLE renewals (item_id INTEGER PRIMARY KEY, date TEXT NOT NULL, state TEXT NOT NULL, due_at INTEGER NOT NULL, held INTEGER NOT NULL)`,
  `CREATE INDEX renewals_due ON renewals (held, due_at)`,
];

/** Renewals one alarm run writes at most; more re-arm the alarm at once. */
export const RENEWALS_PER_RUN = 2000;

/**
 * Mirrors the item's rule (`state`: its ruleState from D1; null: the item is gone): a row while the
 * rule renews at expiry and has renewals left, none otherwise.
 */
export function mirrorRenewal(sql: SqlStorage, itemId: number, state: string | null, zone: string): void {
  const parsed = state === null ? null : parseRuleState(state);
  const rule = parsed?.rule;
  if (!parsed || !rule || rule.renewOn !== "expired" || rule.count === 0) {
    sql.exec("DELETE FROM renewals WHERE item_id = ?", itemId);
    return;
  }
  sql.exec(
    `INSERT INTO renewals (item_id, date, state, due_at, held) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (item_id) DO UPDATE SET date = excluded.date, state = excluded.state, due_at = excluded.due_at, held = excluded.held`,
    itemId,
    parsed.date,
    state,
    startOfDayAfter(parsed.date, zone),
    parsed.archived ? 1 : 0,
  );
}

/** A new company time zone: each renewal moves to the start of the day after its date there. */
export function rezoneRenewals(sql: SqlStorage, zone: string): void {
  const rows = sql.exec<{ item_id: number; date: string }>("SELECT item_id, date FROM renewals").toArray();
  for (const row of rows) sql.exec("UPDATE renewals SET due_at = ? WHERE item_id = ?", startOfDayAfter(row.date, zone), row.item_id);
}

/** The earliest renewal instant (held rows wait for their item's restore). */
export const nextRenewalSql = "SELECT min(due_at) FROM renewals WHERE held = 0";

type DueRenewal = { item_id: number; date: string; state: string };

/**
 * The renewals due at `now` (at most RENEWALS_PER_RUN), written to D1 in batches of
 * RENEWALS_PER_STATEMENT. Returns the items to sync (renewed, or found changed in D1, or whose rule
 * turned out to have ended: each is synced so its row follows D1) and whether more are due. A rule
 * with no occurrence left (past until, past year 9999) leaves the item as it is: a plain item.
 */
export async function renewDue(sql: SqlStorage, d1: D1Database, companyId: number, zone: string, now: number): Promise<{ itemIds: number[]; more: boolean }> {
  const due = sql
    .exec<DueRenewal>("SELECT item_id, date, state FROM renewals WHERE held = 0 AND due_at <= ? ORDER BY due_at, item_id LIMIT ?", now, RENEWALS_PER_RUN + 1)
    .toArray();
  const more = due.length > RENEWALS_PER_RUN;
  const batch = due.slice(0, RENEWALS_PER_RUN);
  if (batch.length === 0) return { itemIds: [], more: false };
  // Missed periods (an outage, a rule set on a long-past date) are jumped over: the first
  // occurrence not yet expired in the company's today.
  const today = todayIn(zone, new Date(now));
  const renewals: Renewal[] = [];
  for (const row of batch) {
    const { rule } = parseRuleState(row.state);
    const to = rule ? renewalDate(rule, row.date, today) : null;
    if (to) renewals.push({ itemId: row.item_id, from: row.date, to, state: row.state });
    else sql.exec("DELETE FROM renewals WHERE item_id = ? AND state = ?", row.item_id, row.state);
  }
  const db = getDb(d1);
  const statements = [];
  for (let i = 0; i < renewals.length; i += RENEWALS_PER_STATEMENT) {
    const { history, update } = renewalWrites(db, companyId, renewals.slice(i, i + RENEWALS_PER_STATEMENT), { reason: "expired", userId: 0 });
    statements.push(history, update);
  }
  // One transaction: every renewal of the run, or none (a failure is retried by the alarm).
  if (statements.length > 0) await db.batch(statements as unknown as Parameters<typeof db.batch>[0]);
  return { itemIds: batch.map((r) => r.item_id), more };
}
