// An import job's Workflow parameters (src/imports/start.ts starts the instance, src/imports/workflow.ts
// runs it). Apart from both so that src/env.ts (the IMPORTS binding) names them without importing
// a module that imports env.ts.

/** A job's Workflow parameters: the job and the shard that holds it (absent: 0, for instances started before shards). */
export interface ImportParams {
  importId: number;
  shard?: number;
}
