import { startStrandedImports } from "./imports/start";
import { database, type Db } from "./db/client";
import { pruneKeys } from "./idempotency/store";
import type { Env } from "./env";
import { primarySession } from "./db/session";
import { shardBindings } from "./db/shards";
import { clockFor } from "./company-clock/handoff/worker";
import { releaseAbandonedUploads } from "./records/drive/queries";
import { pruneAuditLog } from "./records/audit-log/queries";
import { RETENTION_DAYS } from "./schemas/audit-log";

/** Changes the Durable Objects have not applied after this long are replayed (the normal path takes milliseconds). */
export const SYNC_GRACE_SECONDS = 30;
/** A company whose next reminder is this late has an alarm that did not run: wake it. */
export const WAKE_GRACE_MS = 60_000;
/** Companies woken per sweep (the next sweep takes the rest). */
export const SWEEP_LIMIT = 200;
const CONCURRENCY = 10;
/** Audit entries past their retention deleted per shard and run (every minute: 7.2 million a day). */
export const AUDIT_PRUNE_PER_RUN = 5_000;

/**
 * Cron trigger: the backstop, on every shard. Three indexed queries in one batch find the
 * companies that need it (changes not yet applied by their Durable Object, companies whose next
 * reminder is overdue, and webhook events waiting in D1 for more than 30 s); only those are woken,
 * so the cost grows with them, not with the number of companies. Then, even when the reminder
 * sweep failed, the drive space of uploads whose token has expired is released, expired
 * idempotency keys and audit entries past their retention are deleted and stranded imports restarted: about 8 statements in 5 round trips
 * per shard when idle (measured, docs/scale.md).
 */
export async function handleScheduled(
  controller: ScheduledController,
  env: Env,
  _ctx: ExecutionContext,
): Promise<void> {
  // Every shard, side by side; each on its primary (a replica could hide a change still to apply).
  const shards = shardBindings(env).map((_, shard) => shard);
  await Promise.allSettled(shards.map((shard) => sweepShard(controller, env, shard)));
}

async function sweepShard(controller: ScheduledController, env: Env, shard: number): Promise<void> {
  // The sweep's clean-ups are bookkeeping: its handle's commits carry nothing more.
  const db = database(primarySession(env, shard));
  try {
    await sweepReminders(controller, env, db.d1, shard);
  } finally {
    await releaseExpiredUploads(env, db);
    await pruneIdempotencyKeys(db, controller.scheduledTime);
    await pruneAudit(db, controller.scheduledTime);
    await restartImports(env, shard, controller.scheduledTime);
  }
}

/** Import jobs queued for a minute without a Workflow (the request died before starting it): started now. */
async function restartImports(env: Env, shard: number, now: number): Promise<void> {
  try {
    await startStrandedImports(env, shard, now);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "stranded import restart failed", error: String(error) }));
  }
}

/** Idempotency keys past their 24 h (docs/idempotency.md): a bounded delete per run. */
async function pruneIdempotencyKeys(db: Db, now: number): Promise<void> {
  try {
    await pruneKeys(db, now);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "idempotency key pruning failed", error: String(error) }));
  }
}

/** Audit entries older than the retention (docs/audit-log.md): a bounded delete per run, so a backlog drains over a few runs. */
async function pruneAudit(db: Db, now: number): Promise<void> {
  try {
    await pruneAuditLog(db, now - RETENTION_DAYS * 86_400_000, AUDIT_PRUNE_PER_RUN);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "audit log pruning failed", error: String(error) }));
  }
}

/** Uploads whose Worker stopped mid-stream: their reservations are released (releaseAbandonedUploads, all companies). */
async function releaseExpiredUploads(env: Env, db: Db): Promise<void> {
  try {
    await releaseAbandonedUploads(db, env.FILES);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "abandoned upload cleanup failed", error: String(error) }));
  }
}

async function sweepReminders(controller: ScheduledController, env: Env, d1: D1Database, shard: number): Promise<void> {
  const now = controller.scheduledTime;
  const [pending, overdue, events] = await d1.batch<{ company_id: number }>([
    d1
      .prepare(
        "SELECT DISTINCT company_id FROM reminder_sync WHERE version > synced_version " + "AND changed_at <= ? LIMIT ?",
      )
      .bind(Math.floor(now / 1000) - SYNC_GRACE_SECONDS, SWEEP_LIMIT),
    d1
      .prepare("SELECT company_id FROM reminder_wakeups WHERE due_at <= ? ORDER BY due_at LIMIT " + "?")
      .bind(now - WAKE_GRACE_MS, SWEEP_LIMIT),
    // Webhook events of D1 changes whose Durable Object was not nudged (webhook_events_created_idx).
    d1
      .prepare("SELECT DISTINCT company_id FROM webhook_events WHERE created_at <= ? LIMIT ?")
      .bind(now - SYNC_GRACE_SECONDS * 1000, SWEEP_LIMIT),
  ]);
  const companies = [
    ...new Set([...pending!.results, ...overdue!.results, ...events!.results].map((r) => r.company_id)),
  ];
  let failed = 0;
  for (let i = 0; i < companies.length; i += CONCURRENCY) {
    const results = await Promise.allSettled(
      companies.slice(i, i + CONCURRENCY).map((id) => clockFor(env, id).wake(id)),
    );
    for (const [j, result] of results.entries()) {
      if (result.status === "rejected") {
        failed++;
        console.error(
          JSON.stringify({
            level: "error",
            msg: "reminder sweep could not wake a company",
            companyId: companies[i + j],
            error: String(result.reason),
          }),
        );
      }
    }
  }
  console.log(
    JSON.stringify({
      level: "info",
      msg: "reminder sweep",
      cron: controller.cron,
      shard,
      at: new Date(now).toISOString(),
      pending: pending!.results.length,
      overdue: overdue!.results.length,
      webhookEvents: events!.results.length,
      woken: companies.length - failed,
      failed,
    }),
  );
}
