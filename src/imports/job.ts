// The steps of an import job (docs/imports.md), each safe to run again: the Workflow
// (src/imports/workflow.ts) retries a step that failed and resumes after the last one that
// completed, so a step must leave the same state however often it runs.
import { database, type Db } from "../db/client";
import { primarySession } from "../db/session";
import type { Env } from "../env";
import { DATE_FORMATS, type DateFormat } from "../lib/time";
import { contactImport } from "./contacts";
import { roomLeft, type ImportJob, type ImportResource, type RowError } from "./context";
import { itemImport } from "./items";
import { UnreadableFile, parseRows, type ImportFormat } from "./parse";

/** Valid rows per write step (one D1 batch each). */
export const CHUNK_ROWS = 1_000;
/** Row errors kept per job (all are counted in `failed`). */
export const MAX_STORED_ERRORS = 10_000;
export const FINISHED = ["completed", "failed", "canceled"] as const;

const resources: Record<ImportJob["resource"], ImportResource<{ row: number }>> = {
  items: itemImport as ImportResource<{ row: number }>,
  contacts: contactImport as ImportResource<{ row: number }>,
};

interface JobRow {
  id: number;
  company_id: number;
  client_id: string;
  user_id: number;
  request_id: string | null;
  resource: ImportJob["resource"];
  format: ImportFormat;
  status: string;
  dry_run: number;
  on_error: "abort" | "skip";
  date_format: string;
  body_key: string;
  chunks: number;
}

async function loadJob(env: Env, shard: number, importId: number): Promise<{ row: JobRow; job: ImportJob } | null> {
  const d1 = primarySession(env, shard);
  const row = await d1.prepare("SELECT * FROM imports WHERE id = ?").bind(importId).first<JobRow>();
  if (!row) return null;
  const dateFormat = (DATE_FORMATS as readonly string[]).includes(row.date_format)
    ? (row.date_format as DateFormat)
    : "YYYY-MM-DD";
  // The rows the job writes are logged as the work of the client that created it (docs/audit-log.md):
  // its commits carry that actor, and nothing else (no request of its own).
  const db = database(d1, {
    committed: 0,
    actor: {
      accountId: null,
      companyId: row.company_id,
      clientId: row.client_id,
      userId: row.user_id,
      requestId: row.request_id,
      operationId: "createImport",
    },
  });
  return {
    row,
    job: {
      id: row.id,
      db,
      companyId: row.company_id,
      userId: row.user_id,
      resource: row.resource,
      dateFormat,
      format: row.format,
    },
  };
}

export const chunkKey = (row: { company_id: number; id: number }, index: number) =>
  `imports/${row.company_id}/${row.id}/chunk-${index}.json`;

async function fail(
  db: Db,
  importId: number,
  message: string,
  counts: { rows?: number; valid?: number; failed?: number } = {},
): Promise<{ chunks: number }> {
  await db.commit([
    db.d1
      .prepare(
        `UPDATE imports SET status = 'failed', message = ?2, rows = ?3, valid = ?4, failed = ?5, updated_at = ?6, finished_at = ?6
         WHERE id = ?1 AND status IN ('queued', 'validating')`,
      )
      .bind(importId, message, counts.rows ?? 0, counts.valid ?? 0, counts.failed ?? 0, Date.now()),
  ]);
  return { chunks: 0 };
}

async function storeErrors(db: Db, importId: number, errors: RowError[]): Promise<void> {
  const kept = errors.slice(0, MAX_STORED_ERRORS);
  const statements = [];
  for (let i = 0; i < kept.length; i += 500) {
    statements.push(
      db.d1
        .prepare(
          `INSERT OR IGNORE INTO import_errors (import_id, row_number, "column", value, message)
           SELECT ?1, json_extract(value, '$.row'), json_extract(value, '$.column'), json_extract(value, '$.value'), json_extract(value, '$.message') FROM json_each(?2)`,
        )
        .bind(importId, JSON.stringify(kept.slice(i, i + 500))),
    );
  }
  await db.commit(statements);
}

/**
 * Step 1: reads the body, checks every row (nothing is written but the job's row errors), and puts
 * the valid rows in R2 as chunks. Ends the job when it is a dry run, when `on_error=abort` meets an
 * invalid row, or when the new records would pass the company's limit; otherwise starts the writing.
 */
export async function checkRows(env: Env, shard: number, importId: number): Promise<{ chunks: number }> {
  const loaded = await loadJob(env, shard, importId);
  if (!loaded) return { chunks: 0 };
  const { row, job } = loaded;
  if (row.status === "running") return { chunks: row.chunks };
  if (row.status !== "queued" && row.status !== "validating") return { chunks: 0 };
  await job.db.commit([
    job.db.d1
      .prepare("UPDATE imports SET status = 'validating', updated_at = ? WHERE id = ? AND " + "status = 'queued'")
      .bind(Date.now(), importId),
  ]);

  const body = await env.FILES.get(row.body_key);
  if (!body) return fail(job.db, importId, "The uploaded file is gone");
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(await body.arrayBuffer());
  } catch {
    return fail(job.db, importId, "The file is not UTF-8 text");
  }
  let rows: ReturnType<typeof parseRows>;
  try {
    rows = parseRows(text, job.format);
  } catch (err) {
    if (err instanceof UnreadableFile) return fail(job.db, importId, err.message);
    throw err;
  }
  const resource = resources[job.resource];
  const { valid, errors, creates } = await resource.validate(env, job, rows);
  await storeErrors(job.db, importId, errors);
  const failedRows = new Set(errors.map((e) => e.row)).size;
  const counts = { rows: rows.length, valid: valid.length, failed: failedRows };
  if (row.on_error === "abort" && failedRows > 0 && row.dry_run === 0) {
    return fail(
      job.db,
      importId,
      `${failedRows} of ${rows.length} rows are invalid, so nothing was written (on_error=abort); see the errors`,
      counts,
    );
  }
  const room = (await job.db.d1.prepare(`SELECT ${roomLeft(job)} AS room`).first<number>("room")) ?? 0;
  const limitName = job.resource === "items" ? "documents_limit" : "contacts_limit";
  if (row.on_error === "abort" && row.dry_run === 0 && creates > room) {
    return fail(
      job.db,
      importId,
      `The file would create ${creates} ${job.resource}; the company has room for ${room} more (${limitName}), so nothing was written`,
      counts,
    );
  }
  if (row.dry_run === 1) {
    const over = creates > room ? `; the company has room for only ${room} more (${limitName})` : "";
    await job.db.commit([
      job.db.d1
        .prepare(
          `UPDATE imports SET status = 'completed', rows = ?2, valid = ?3, failed = ?4, message = ?5, updated_at = ?6, finished_at = ?6
           WHERE id = ?1 AND status = 'validating'`,
        )
        .bind(
          importId,
          rows.length,
          valid.length,
          failedRows,
          `Dry run: nothing was written. ${creates} rows would create ${job.resource}, ${valid.length - creates} would update or leave existing ones${over}`,
          Date.now(),
        ),
    ]);
    return { chunks: 0 };
  }
  const chunks = Math.ceil(valid.length / CHUNK_ROWS);
  for (let k = 0; k < chunks; k++)
    await env.FILES.put(chunkKey(row, k), JSON.stringify(valid.slice(k * CHUNK_ROWS, (k + 1) * CHUNK_ROWS)));
  await job.db.commit([
    job.db.d1
      .prepare(
        `UPDATE imports SET status = 'running', rows = ?2, valid = ?3, failed = ?4, chunks = ?5, next_row = 0, updated_at = ?6
         WHERE id = ?1 AND status = 'validating'`,
      )
      .bind(importId, rows.length, valid.length, failedRows, chunks, Date.now()),
  ]);
  return { chunks };
}

/** Step 2, once per chunk: writes it in one batch, unless the fence finds it written (or the job canceled). */
export async function writeChunk(env: Env, shard: number, importId: number, index: number): Promise<void> {
  const loaded = await loadJob(env, shard, importId);
  if (loaded?.row.status !== "running") return;
  const object = await env.FILES.get(chunkKey(loaded.row, index));
  if (!object) return;
  const chunk = (await object.json()) as Array<{ row: number }>;
  if (chunk.length > 0) await resources[loaded.job.resource].write(env, loaded.job, chunk, { index, now: Date.now() });
}

/** Last step: the job's outcome, and its files in R2 go. */
export async function finishJob(env: Env, shard: number, importId: number): Promise<void> {
  const loaded = await loadJob(env, shard, importId);
  if (!loaded) return;
  const { db } = loaded.job;
  await db.commit([
    db.d1
      .prepare(
        `UPDATE imports SET status = CASE WHEN on_error = 'abort' AND failed > 0 THEN 'failed' ELSE 'completed' END,
           message = CASE WHEN on_error = 'abort' AND failed > 0 THEN 'The company reached its limit while the import ran: the rows past it were not written' ELSE message END,
           updated_at = ?2, finished_at = ?2 WHERE id = ?1 AND status = 'running'`,
      )
      .bind(importId, Date.now()),
  ]);
  await removeFiles(env, loaded.row);
}

/** The job's body and chunks in R2. */
export async function removeFiles(env: Env, row: { company_id: number; id: number; body_key: string }): Promise<void> {
  const prefix = `imports/${row.company_id}/${row.id}/`;
  const keys = [row.body_key];
  let cursor: string | undefined;
  do {
    const page = await env.FILES.list({ prefix, cursor });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  for (let i = 0; i < keys.length; i += 1000) await env.FILES.delete(keys.slice(i, i + 1000));
}
