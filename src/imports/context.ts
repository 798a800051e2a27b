// What an import job works with: the job's row, its company, row errors and the helpers both
// resources (items, contacts) share (docs/imports.md).
import type { z } from "@hono/zod-openapi";
import type { Db } from "../db/client";
import type { Env } from "../env";
import { ApiError } from "../lib/errors";
import { echo } from "../lib/echo";
import type { DateFormat } from "../lib/time";
import type { RawRow } from "./parse";

export interface ImportJob {
  id: number;
  /** The job's shard, on its primary (the rows it checks decide what it writes); its commits name the client that created the job. */
  db: Db;
  companyId: number;
  userId: number;
  resource: "items" | "contacts";
  dateFormat: DateFormat;
  format: "csv" | "json" | "ndjson";
}

export interface RowError {
  row: number;
  column: string;
  value: string;
  message: string;
}

/** A resource's part of a job: rows checked (no writes), then written chunk by chunk. */
export interface ImportResource<T extends { row: number }> {
  /** Checks every row; `creates` counts the valid rows that would create a record (for the quota check). */
  validate(env: Env, job: ImportJob, rows: RawRow[]): Promise<{ valid: T[]; errors: RowError[]; creates: number }>;
  /** Writes one chunk inside one D1 batch led by `fence`; returns the ids to hand to the reminder engine, or null when the fence refused. */
  write(env: Env, job: ImportJob, chunk: T[], fence: ChunkFence): Promise<number[] | null>;
}

/** The guarded first statement of a chunk's batch and the counts it adds. */
export interface ChunkFence {
  index: number;
  now: number;
}

/** Rows numbered from 1 map into items.import_ref as import_id * REF_BASE + row. */
export const REF_BASE = 1_000_000;

/** A value as an error entry repeats it: text, bounded. */
export function errorValue(value: unknown): string {
  if (value === undefined || value === null) return "";
  return echo(typeof value === "string" ? value : (JSON.stringify(value) ?? ""), 200);
}

/** Collects the errors of one row. */
export class RowErrors {
  readonly list: RowError[] = [];
  constructor(readonly row: number) {}
  add(column: string, value: unknown, message: string): void {
    this.list.push({ row: this.row, column, value: errorValue(value), message });
  }
  get ok(): boolean {
    return this.list.length === 0;
  }
}

/** A cell as text: strings as given, numbers and booleans spelled out; anything else is an error. */
export function cellText(errors: RowErrors, column: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  errors.add(column, value, `${column} must be text`);
  return undefined;
}

/** Runs a zod schema on a cell; on failure records its first message under the column. */
export function checkCell<S extends z.ZodType>(
  errors: RowErrors,
  column: string,
  schema: S,
  value: unknown,
): z.infer<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  errors.add(column, value, result.error.issues[0]?.message ?? `${column} is invalid`);
  return undefined;
}

/** Runs a check that throws ApiError (the API's own validation helpers); records the message. */
export function checkWith<T>(errors: RowErrors, column: string, value: unknown, check: () => T): T | undefined {
  try {
    return check();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    errors.add(column, value, err.message);
    return undefined;
  }
}

/** A whole number cell (JSON number or digits), or undefined with an error. */
export function integerCell(errors: RowErrors, column: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n =
    typeof value === "number"
      ? value
      : typeof value === "string" && /^\s*\d{1,15}\s*$/.test(value)
        ? Number(value)
        : NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    errors.add(column, value, `${column} must be ${min === 0 ? "0 or " : ""}a positive integer`);
    return undefined;
  }
  return n;
}

/** true/false, 1/0, yes/no (any case), or a JSON boolean. */
export function booleanCell(errors: RowErrors, column: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value === "boolean") return value;
  const text = String(value).trim().toLowerCase();
  if (["true", "1", "yes"].includes(text)) return true;
  if (["false", "0", "no"].includes(text)) return false;
  errors.add(column, value, `${column} must be true or false`);
  return undefined;
}

/** Runs `query` over `values` in slices (one bound JSON parameter each) and gathers the rows. */
export async function lookup<R>(
  db: D1Database,
  values: readonly unknown[],
  query: string,
  ...binds: unknown[]
): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < values.length; i += 2_000) {
    const { results } = await db
      .prepare(query)
      .bind(JSON.stringify(values.slice(i, i + 2_000)), ...binds)
      .all<R>();
    out.push(...results);
  }
  return out;
}

/** SQL: how many more records of the job's resource its company may hold now (never negative). */
export function roomLeft(job: ImportJob): string {
  const [used, limit] =
    job.resource === "items" ? ["documents_used", "documents_limit"] : ["contacts_used", "contacts_limit"];
  return `(SELECT max(0, ${limit} - ${used}) FROM companies WHERE id = ${Number(job.companyId)})`;
}

/**
 * The statements that lead every chunk's batch: the fence (moves the job on from chunk `index` to
 * the next, and fails the whole batch through the CHECK on imports.fence when the job is elsewhere:
 * the chunk was written already, or the job was canceled), the counts, and a row error for each new
 * record past the company's limit. Those rows carry `nth`, their place among the chunk's creations.
 */
export function chunkLead(
  db: D1Database,
  job: ImportJob,
  index: number,
  counts: { creates: unknown[]; updates: number; skips: number },
  now: number,
) {
  const room = roomLeft(job);
  const what = job.resource === "items" ? "documents_limit" : "contacts_limit";
  return [
    db
      .prepare(
        `UPDATE imports SET next_row = next_row + 1, fence = (next_row = ?2 AND status = 'running'),
           created = created + min(?3, ${room}), failed = failed + max(0, ?3 - ${room}),
           updated = updated + ?4, skipped = skipped + ?5, updated_at = ?6 WHERE id = ?1`,
      )
      .bind(job.id, index, counts.creates.length, counts.updates, counts.skips, now),
    db
      .prepare(
        `INSERT OR IGNORE INTO import_errors (import_id, row_number, "column", value, message)
         SELECT ?1, json_extract(j.value, '$.row'), '', '', 'The company holds as many ${job.resource} as its ${what} allows: the row was not written'
         FROM json_each(?2) AS j WHERE json_extract(j.value, '$.nth') > ${room}`,
      )
      .bind(job.id, JSON.stringify(counts.creates)),
  ];
}

/** Whether a batch failed on the chunk fence (already written, or the job canceled). */
export function fenceRefused(err: unknown): boolean {
  return String(err instanceof Error ? err.message : err).includes("import_step_replayed");
}
