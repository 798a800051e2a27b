// Starting an import job's Workflow instance (src/imports/workflow.ts), from the request that
// queued it and from the cron sweep. Kept apart from the Workflow class, which only the runtime loads.
import { database } from "../db/client";
import { primarySession } from "../db/session";
import type { Env } from "../env";

/** Starts the job's Workflow instance; an instance that exists already (a retry, the sweep) is left as it is. */
export async function startImport(env: Env, shard: number, importId: number): Promise<void> {
  try {
    await env.IMPORTS.create({ id: `import-${importId}`, params: { importId, shard } });
  } catch (err) {
    if (!/already exists|already_exists|duplicate/i.test(String(err))) throw err;
  }
}

/** Jobs still `queued` a minute after they were accepted (their request died before starting them): started again. Bounded per run. */
export async function startStrandedImports(env: Env, shard: number, now: number): Promise<void> {
  const db = database(primarySession(env, shard));
  const { results } = await db.d1
    .prepare("SELECT id FROM imports WHERE status = 'queued' AND updated_at < ? ORDER BY " + "updated_at LIMIT 20")
    .bind(now - 60_000)
    .all<{ id: number }>();
  for (const { id } of results) {
    await startImport(env, shard, id);
    await db.commit([
      db.d1.prepare("UPDATE imports SET updated_at = ? WHERE id = ? AND status = 'queued'").bind(now, id),
    ]);
  }
}
