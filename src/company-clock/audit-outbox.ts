// The audit entries of changes made in the company clock (item reminders, webhook tests and
// retries; docs/audit-log.md). An entry is written in the same storage transaction as its change,
// into the `audit_outbox` table, and handed to D1's audit_log by the next settle (the end of every
// call that changes something, and of every alarm). Each entry carries a key of its own, so a
// handoff repeated after a failure adds it once (audit_log.source_key is unique).
import type { Db } from "../db/client";
import type { AuditActor } from "../db/commit";

export interface ClockAuditEntry {
  resourceType: "reminder" | "webhook";
  resourceId: number;
  action: "created" | "updated" | "deleted" | "tested" | "retried";
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
}

/** Entries one handoff carries at most (one D1 statement); more wait for the next settle. */
const ENTRIES_PER_HANDOFF = 100;

/**
 * Entries recorded in this isolate so far, and per company the count when its outbox was last seen
 * empty: a settle with nothing recorded since skips the read (most settles record nothing). Any
 * entry, of any company, makes every company read again, so a skip never leaves an entry behind.
 */
let recorded = 0;
const emptyAt = new Map<number, number>();

/** What a restart of the isolate does to the memo above (tests that put rows back by hand call it). */
export function forgetEmptyOutboxes(): void {
  emptyAt.clear();
}

/** Records an entry; call it inside the change's transactionSync. */
export function recordAudit(sql: SqlStorage, actor: AuditActor | undefined, entry: ClockAuditEntry, now: number): void {
  recorded++;
  sql.exec(
    "INSERT INTO audit_outbox (source_key, entry) VALUES (?, ?)",
    crypto.randomUUID(),
    JSON.stringify({ ...entry, actor: actor ?? null, at: now }),
  );
}

/** The fields that differ between two records: [before, after] with only those. */
export function changedFields(
  before: Record<string, unknown>,
  after: Record<string, unknown>,
): [Record<string, unknown>, Record<string, unknown>] {
  const [was, now]: [Record<string, unknown>, Record<string, unknown>] = [{}, {}];
  for (const key of Object.keys(after)) {
    if (JSON.stringify(before[key]) === JSON.stringify(after[key])) continue;
    was[key] = before[key] ?? null;
    now[key] = after[key] ?? null;
  }
  return [was, now];
}

/** Hands the waiting entries to D1, then forgets them. A failure leaves them for the next settle (logged, never thrown). */
export async function handOffAudit(clock: { sql: SqlStorage; companyId: number; db(): Promise<Db> }): Promise<void> {
  if (emptyAt.get(clock.companyId) === recorded) return;
  const seen = recorded;
  const rows = clock.sql
    .exec<{ seq: number; source_key: string; entry: string }>(
      "SELECT seq, source_key, entry FROM audit_outbox ORDER BY seq LIMIT ?",
      ENTRIES_PER_HANDOFF,
    )
    .toArray();
  if (rows.length === 0) {
    emptyAt.set(clock.companyId, seen);
    return;
  }
  try {
    const db = await clock.db();
    await db.commit([
      db.d1
        .prepare(
          `INSERT OR IGNORE INTO audit_log (account_id, company_id, at, client_id, user_id, actor_company_id, request_id, operation_id,
           contact_id, via, resource_type, resource_id, action, before, after, source_key)
         SELECT coalesce(e.value ->> '$.entry.actor.accountId', (SELECT account_id FROM companies WHERE id = ?1), 0), ?1,
           e.value ->> '$.entry.at', e.value ->> '$.entry.actor.clientId', e.value ->> '$.entry.actor.userId', e.value ->> '$.entry.actor.companyId',
           e.value ->> '$.entry.actor.requestId', e.value ->> '$.entry.actor.operationId', e.value ->> '$.entry.actor.contactId',
           e.value ->> '$.entry.actor.via', e.value ->> '$.entry.resourceType',
           CAST(e.value ->> '$.entry.resourceId' AS TEXT), e.value ->> '$.entry.action', nullif(e.value -> '$.entry.before', 'null'), nullif(e.value -> '$.entry.after', 'null'),
           e.value ->> '$.key'
         FROM json_each(?2) AS e`,
        )
        .bind(clock.companyId, JSON.stringify(rows.map((r) => ({ key: r.source_key, entry: JSON.parse(r.entry) })))),
    ]);
    clock.sql.exec("DELETE FROM audit_outbox WHERE seq <= ?", rows[rows.length - 1]!.seq);
    if (rows.length < ENTRIES_PER_HANDOFF) emptyAt.set(clock.companyId, seen);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "audit entries not handed to D1 (kept for the next settle)",
        companyId: clock.companyId,
        error: String(error),
      }),
    );
  }
}
