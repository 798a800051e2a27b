// An import job as a Cloudflare Workflow (docs/imports.md): each step's result is persisted and a
// failed step is retried, so a job outlives the request that queued it and resumes after a crash at
// the step it was in. Every step is idempotent (src/imports/job.ts).
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Env } from "../env";
import { checkRows, finishJob, writeChunk } from "./job";

const RETRY = { retries: { limit: 5, delay: "2 seconds" as const, backoff: "exponential" as const }, timeout: "10 minutes" as const };

export class ImportWorkflow extends WorkflowEntrypoint<Env, { importId: number }> {
  override async run(event: WorkflowEvent<{ importId: number }>, step: WorkflowStep): Promise<void> {
    const { importId } = event.payload;
    const { chunks } = await step.do("check rows", RETRY, () => checkRows(this.env, importId));
    for (let k = 0; k < chunks; k++) await step.do(`write chunk ${k}`, RETRY, () => writeChunk(this.env, importId, k));
    await step.do("finish", RETRY, () => finishJob(this.env, importId));
  }
}

/** Starts the job's Workflow instance; an instance that exists already (a retry, the sweep) is left as it is. */
export async function startImport(env: Env, importId: number): Promise<void> {
  try {
    await env.IMPORTS.create({ id: `import-${importId}`, params: { importId } });
  } catch (err) {
    if (!/already exists|already_exists|duplicate/i.test(String(err))) throw err;
  }
}

/** Jobs still `queued` a minute after they were accepted (their request died before starting them): started again. Bounded per run. */
export async function startStrandedImports(env: Env, now: number): Promise<void> {
  const { results } = await env.DB.prepare("SELECT id FROM imports WHERE status = 'queued' AND updated_at < ? ORDER BY updated_at LIMIT 20")
    .bind(now - 60_000)
    .all<{ id: number }>();
  for (const { id } of results) {
    await startImport(env, id);
    await env.DB.prepare("UPDATE imports SET updated_at = ? WHERE id = ? AND status = 'queued'").bind(now, id).run();
  }
}
