// An import job as a Cloudflare Workflow (docs/imports.md): each step's result is persisted and a
// failed step is retried, so a job outlives the request that queued it and resumes after a crash at
// the step it was in. Every step is idempotent (src/imports/job.ts).
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import type { Env } from "../env";
import { checkRows, finishJob, writeChunk } from "./job";
import type { ImportParams } from "./params";

const RETRY = {
  retries: { limit: 5, delay: "2 seconds" as const, backoff: "exponential" as const },
  timeout: "10 minutes" as const,
};

export class ImportWorkflow extends WorkflowEntrypoint<Env, ImportParams> {
  override async run(event: WorkflowEvent<ImportParams>, step: WorkflowStep): Promise<void> {
    // Instances started before shards existed carry no shard: 0.
    const { importId, shard = 0 } = event.payload;
    const { chunks } = await step.do("check rows", RETRY, () => checkRows(this.env, shard, importId));
    for (let k = 0; k < chunks; k++)
      await step.do(`write chunk ${k}`, RETRY, () => writeChunk(this.env, shard, importId, k));
    await step.do("finish", RETRY, () => finishJob(this.env, shard, importId));
  }
}
