// Time, for the company clock: when its single alarm runs. Every change ends by arming the alarm at
// the earliest work any engine has (nextWake); an alarm run with more work than it does re-arms at
// once (armSoonest). No D1 here: the wakeup D1 keeps for the cron sweep is the handoff's
// (src/company-clock/handoff/bookkeeping.ts).

import { DIGEST_NEXT_AT, DIGEST_PLAN } from "./store";

/** The latest instant an alarm may be set to (the runtime refuses dates after 2189). */
export const LATEST_ALARM = Date.UTC(2180, 0, 1);

/**
 * The instant the alarm is armed at for work due at `due`: strictly after `now`, never after
 * LATEST_ALARM (a later reminder is reached by an alarm at the limit that finds nothing due and
 * arms again). An alarm set at or before now from inside alarm() is reported to be dropped when the
 * handler returns (local workerd) or run tens of seconds late (production); one 1 ms ahead chains
 * at once (workerd #6866). `alarmInstant(Date.now())` is the soonest re-arm.
 */
export function alarmInstant(due: number, now = Date.now()): number {
  return Math.min(Math.max(due, now + 1), LATEST_ALARM);
}

/**
 * The earliest instant the alarm must run at: the next due reminder, the next delivery attempt,
 * an event to fan out, the next webhook delivery attempt, the next renewal of a recurring item, or
 * digest work (the next run, a plan in progress, a digest to send). An engine with work of its own at a
 * later instant adds its table's earliest instant here.
 */
export function nextWake(sql: SqlStorage): number | null {
  // Nested: the object's SQLite allows at most 5 terms in one compound SELECT.
  const row = sql
    .exec<{ at: number | null }>(
      `SELECT min(at) AS at FROM (
         SELECT min(due_at) AS at FROM reminders WHERE state = 'queued'
         UNION ALL SELECT min(next_at) FROM deliveries WHERE state = 'pending'
         UNION ALL SELECT min(next_at) FROM events WHERE state = 'new'
         UNION ALL SELECT min(next_at) FROM webhook_deliveries WHERE state = 'pending'
         UNION ALL SELECT min(at) FROM (
           SELECT min(due_at) AS at FROM renewals WHERE held = 0
           UNION ALL SELECT CAST(value AS INTEGER) FROM meta WHERE key = '${DIGEST_NEXT_AT}'
           UNION ALL SELECT json_extract(value, '$.at') FROM meta WHERE key = '${DIGEST_PLAN}'
           UNION ALL SELECT min(next_at) FROM digests WHERE state = 'pending'))`,
    )
    .one();
  return row.at ?? null;
}

/** Some work is due now or overdue. */
export function overdue(sql: SqlStorage, now = Date.now()): boolean {
  const wake = nextWake(sql);
  return wake !== null && wake <= now;
}

/**
 * Arms the alarm for the earliest work (or deletes it when there is none) and returns that work's
 * instant. `inAlarm`: called from the alarm handler, where the alarm that fired may still be reported.
 */
export async function armAlarm(storage: DurableObjectStorage, inAlarm = false): Promise<number | null> {
  const wake = nextWake(storage.sql);
  // Inside the alarm handler the alarm that fired may still be reported: always set it there.
  const current = inAlarm ? null : await storage.getAlarm();
  const now = Date.now();
  const alarmAt = wake === null ? null : alarmInstant(wake, now);
  // Overdue work and an alarm already due: that alarm runs it. Setting it again would only move
  // it later (a stream of calls could keep pushing it back); a lost alarm is the sweep's job.
  const alreadyDue = alarmAt !== null && wake! <= now && current !== null && current <= alarmAt;
  if (alarmAt === null) {
    if (current !== null) await storage.deleteAlarm();
  } else if (current !== alarmAt && !alreadyDue) {
    await storage.setAlarm(alarmAt);
  }
  return wake;
}

/** The alarm runs again at once: a run left work it had no time for, or the sweep found the alarm may be lost. */
export async function armSoonest(storage: DurableObjectStorage): Promise<void> {
  await storage.setAlarm(alarmInstant(Date.now()));
}
