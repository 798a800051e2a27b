import { and, asc, count, desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { listPage } from "../db/pages";
import { importErrors, imports } from "../db/schema";
import { badRequest, notFound } from "../lib/errors";
import type { DateFormat } from "../lib/time";
import type { ImportFormat } from "../imports/parse";
import { MAX_OPEN_IMPORTS, type ImportOutput } from "../schemas/imports";

type ImportRow = typeof imports.$inferSelect;
const OPEN = ["queued", "validating", "running"];

export function importOutput(row: ImportRow): ImportOutput {
  const done = row.created + row.updated + row.skipped + row.failed;
  const finished = row.finishedAt !== null;
  return {
    import_id: row.id,
    resource: row.resource as ImportOutput["resource"],
    format: row.format as ImportOutput["format"],
    status: row.status as ImportOutput["status"],
    dry_run: row.dryRun === 1,
    on_error: row.onError as ImportOutput["on_error"],
    date_format: row.dateFormat as DateFormat,
    counts: {
      rows: row.rows,
      valid: row.valid,
      created: row.created,
      updated: row.updated,
      skipped: row.skipped,
      failed: row.failed,
    },
    progress: finished ? 1 : row.rows === 0 ? 0 : Math.min(1, Math.round((done / row.rows) * 1000) / 1000),
    message: row.message,
    bytes: row.bodyBytes,
    created_at: new Date(row.createdAt).toISOString(),
    finished_at: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
  };
}

export interface NewImport {
  companyId: number;
  clientId: string;
  userId: number;
  resource: string;
  format: ImportFormat;
  dryRun: boolean;
  onError: string;
  dateFormat: DateFormat;
  bodyKey: string;
  bodyBytes: number;
  requestId: string | null;
}

/** Inserts the job, unless the company has MAX_OPEN_IMPORTS unfinished ones (checked by the INSERT itself). */
export async function createImport(db: Db, job: NewImport): Promise<ImportRow> {
  const now = Date.now();
  const [[row]] = await db.commit([
    db
      .insert(imports)
      .select(
        (qb) =>
          qb
            .select({
              id: sql`NULL`,
              companyId: sql`${job.companyId}`,
              clientId: sql`${job.clientId}`,
              userId: sql`${job.userId}`,
              resource: sql`${job.resource}`,
              format: sql`${job.format}`,
              status: sql`'queued'`,
              dryRun: sql`${job.dryRun ? 1 : 0}`,
              onError: sql`${job.onError}`,
              dateFormat: sql`${job.dateFormat}`,
              bodyKey: sql`${job.bodyKey}`,
              bodyBytes: sql`${job.bodyBytes}`,
              rows: sql`0`,
              valid: sql`0`,
              created: sql`0`,
              updated: sql`0`,
              skipped: sql`0`,
              failed: sql`0`,
              chunks: sql`0`,
              nextRow: sql`0`,
              message: sql`''`,
              createdAt: sql`${now}`,
              updatedAt: sql`${now}`,
              finishedAt: sql`NULL`,
              fence: sql`1`,
              requestId: sql`${job.requestId}`,
            })
            .from(sql`(SELECT 1)`)
            .where(
              sql`(SELECT count(*) FROM imports WHERE company_id = ${job.companyId} AND status IN ('queued', 'validating', 'running')) < ${MAX_OPEN_IMPORTS}`,
            ) as never,
      )
      .returning(),
  ]);
  if (!row) throw apiTooMany();
  return row;
}

const apiTooMany = () =>
  badRequest(
    `The company has ${MAX_OPEN_IMPORTS} imports running; wait for one to finish (GET /v1/imports) or cancel one`,
  );

export async function getImport(db: Db, companyId: number, importId: number): Promise<ImportRow> {
  const row = await db
    .select()
    .from(imports)
    .where(and(eq(imports.id, importId), eq(imports.companyId, companyId)))
    .get();
  if (!row) throw notFound("Import");
  return row;
}

export function listImports(db: Db, companyId: number, window: { limit: number; offset: number }) {
  return listPage(
    db,
    window,
    db
      .select()
      .from(imports)
      .where(eq(imports.companyId, companyId))
      .orderBy(desc(imports.id))
      .limit(window.limit)
      .offset(window.offset),
    db.select({ n: count() }).from(imports).where(eq(imports.companyId, companyId)),
  );
}

export async function listImportErrors(
  db: Db,
  companyId: number,
  importId: number,
  query: { limit: number; offset: number; row?: number },
) {
  await getImport(db, companyId, importId);
  const where = and(
    eq(importErrors.importId, importId),
    query.row === undefined ? undefined : eq(importErrors.rowNumber, query.row),
  );
  return listPage(
    db,
    query,
    db
      .select()
      .from(importErrors)
      .where(where)
      .orderBy(asc(importErrors.rowNumber), asc(importErrors.column))
      .limit(query.limit)
      .offset(query.offset),
    db.select({ n: count() }).from(importErrors).where(where),
  );
}

/** Cancels an unfinished job (400 for a finished one); the write steps' fence refuses anything after. */
export async function cancelImport(db: Db, companyId: number, importId: number): Promise<ImportRow> {
  const now = Date.now();
  const [[row]] = await db.commit([
    db
      .update(imports)
      .set({
        status: "canceled",
        message: "Canceled: rows written before the cancel stay",
        updatedAt: now,
        finishedAt: now,
      })
      .where(and(eq(imports.id, importId), eq(imports.companyId, companyId), inArray(imports.status, OPEN)))
      .returning(),
  ]);
  if (row) return row;
  const current = await getImport(db, companyId, importId);
  throw badRequest(
    `Import ${importId} has finished (${current.status}): only a queued or running import can be canceled`,
  );
}
