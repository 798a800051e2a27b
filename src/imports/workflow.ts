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
