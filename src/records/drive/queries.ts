import { and, asc, count, eq, inArray, isNull, lt, or, sql, type SQL } from "drizzle-orm";
import { isForeignKeyViolation, type Db } from "../../db/client";
import { selectDepartment } from "../../db/departments";
import { MAX_ATTEMPTS, lostRace } from "../../db/guarded";
import { listPage } from "../../db/pages";
import { companies, departments, files, folders, itemFiles, items, uploadSessions } from "../../db/schema";
import { badRequest, conflict, notFound } from "../../lib/errors";
import { contentTypeFor, humanSize, newUploadToken, objectKey, sha256Hex } from "./format";
import {
  MAX_ATTACHMENTS_PER_ITEM,
  UPLOAD_TOKEN_TTL_SECONDS,
  type AttachmentOutput,
  type CreateUploadInput,
  type DriveFileOutput,
  type ListFilesInput,
} from "../../schemas/drive";

export type FileRow = typeof files.$inferSelect;
export type UploadSessionRow = typeof uploadSessions.$inferSelect;

/**
 * Upload sessions are deleted this long after their token expired. An upload still streaming then
 * can no longer be stored (409), and the bytes of released uploads that never finished are deleted.
 */
export const SESSION_RETENTION_SECONDS = 24 * 3600;

const fileInCompany = (companyId: number, publicId: string) =>
  and(eq(files.publicId, publicId), eq(files.companyId, companyId));
const itemInCompany = (companyId: number, itemId: number) => and(eq(items.id, itemId), eq(items.companyId, companyId));
/** How many items file row `files.id` is attached to (item_files_file_idx). */
const attachmentCount = sql<number>`(SELECT count(*) FROM item_files AS a WHERE a.file_id = ${files.id})`;

export function fileOutput(row: FileRow & { attachments: number }): DriveFileOutput {
  return {
    file_id: row.publicId,
    file_name: row.fileName,
    size: humanSize(row.sizeBytes),
    size_bytes: row.sizeBytes,
    content_type: row.contentType,
    sha256: row.sha256,
    deptid: row.deptId,
    folder_id: row.folderId ?? 0,
    attachments: row.attachments,
    add_date: row.createdAt,
  };
}

// ---------------------------------------------------------------------------------------------
// Upload sessions
// ---------------------------------------------------------------------------------------------

/** The department and folder a new upload goes to, checked against the company (400 naming the field). */
async function placeUpload(db: Db, companyId: number, input: CreateUploadInput) {
  const deptQuery = selectDepartment(db, companyId, input.deptid);
  const folderQuery = db
    .select({ id: folders.id })
    .from(folders)
    .where(and(eq(folders.id, input.folder_id ?? 0), eq(folders.companyId, companyId)));
  const [[dept], [folder]] = await db.batch([deptQuery, folderQuery]);
  if (!dept)
    throw badRequest(
      input.deptid !== undefined
        ? `deptid ${input.deptid} is not a department of this company`
        : "The company has no default department; send deptid",
    );
  if (input.folder_id !== undefined && !folder)
    throw badRequest(`folder_id ${input.folder_id} is not a folder of this company`);
  return { deptId: dept.id, folderId: input.folder_id ?? null };
}

/**
 * Opens an upload session: a random token (returned once, stored only as its SHA-256), bound to
 * the company, the user and the file's name, type, department and folder, valid for 900 s. One
 * guarded INSERT ... SELECT: it writes only while the department and folder read a moment ago are
 * still in the company.
 */
export async function createUploadSession(
  db: Db,
  shard: number,
  companyId: number,
  actor: { userId: number; clientId: string },
  input: CreateUploadInput,
) {
  const { userId } = actor;
  const token = newUploadToken(shard);
  const tokenHash = await sha256Hex(token);
  const contentType = input.content_type ?? contentTypeFor(input.filename);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const place = await placeUpload(db, companyId, input);
    const folderHolds =
      place.folderId === null
        ? undefined
        : sql`EXISTS (SELECT 1 FROM folders AS f WHERE f.id = ${place.folderId} AND f.company_id = ${companyId})`;
    try {
      const [[row]] = await db.commit([
        db
          .insert(uploadSessions)
          .select(
            (qb) =>
              qb
                // Bound values in the table's column order (src/db/schema.ts).
                .select({
                  id: sql`NULL`,
                  tokenHash: sql`${tokenHash}`,
                  companyId: sql`${companyId}`,
                  userId: sql`${userId}`,
                  deptId: sql`${place.deptId}`,
                  folderId: sql`${place.folderId}`,
                  fileName: sql`${input.filename}`,
                  contentType: sql`${contentType}`,
                  expiresAt: sql`unixepoch() + ${UPLOAD_TOKEN_TTL_SECONDS}`,
                  usedAt: sql`NULL`,
                  reservedKb: sql`0`,
                  createdAt: sql`CURRENT_TIMESTAMP`,
                  clientId: sql`${actor.clientId}`,
                })
                .from(departments)
                .where(
                  and(eq(departments.id, place.deptId), eq(departments.companyId, companyId), folderHolds),
                ) as never,
          )
          .returning({ id: uploadSessions.id }),
      ]);
      if (row) return { token, sessionId: row.id };
    } catch (err) {
      if (!isForeignKeyViolation(err)) throw err;
    }
    // The department or folder went away after it was read: the next read says which (400).
  }
  throw lostRace("upload session");
}

/**
 * SQL: `sizeKb` more fits the drive allocation of the upload session row's company (a statement on
 * `upload_sessions`): its stored files plus the reservations of its uploads in progress (reserved_kb
 * > 0; a released one holds nothing) plus `sizeKb`.
 */
function fitsDriveSpace(sizeKb: number): SQL {
  const company = sql`upload_sessions.company_id`;
  return sql`(SELECT c.drive_space_used_kb FROM companies AS c WHERE c.id = ${company})
    + (SELECT coalesce(sum(s.reserved_kb), 0) FROM upload_sessions AS s WHERE s.company_id = ${company} AND s.reserved_kb > 0)
    + ${sizeKb} <= (SELECT c.drive_space_mb * 1024 FROM companies AS c WHERE c.id = ${company})`;
}

/** The company's drive figures in KB, for a query joined to `companies`. */
const driveSpaceOfCompany = {
  allocationKb: sql<number>`${companies.driveSpaceMb} * 1024`,
  usedKb: companies.driveSpaceUsedKb,
  reservedKb: sql<number>`(SELECT coalesce(sum(s.reserved_kb), 0) FROM upload_sessions AS s WHERE s.company_id = ${companies.id} AND s.reserved_kb > 0)`,
};
const freeKb = (row: { allocationKb: number; usedKb: number; reservedKb: number }) =>
  Math.max(0, row.allocationKb - row.usedKb - row.reservedKb);

export type ClaimedUpload = Pick<
  UploadSessionRow,
  "id" | "companyId" | "userId" | "clientId" | "deptId" | "fileName" | "contentType" | "usedAt" | "reservedKb"
>;

/**
 * Claims an upload token and reserves the file's space, in one UPDATE: it succeeds only for a
 * token that exists, is unused and unexpired, and only while the company's files plus the
 * reservations of its uploads in progress plus this file fit its drive allocation. So two PUTs
 * with one token never both get it, and concurrent uploads never overshoot the quota.
 * Undefined when it did not take (see `explainRefusedClaim`).
 */
export async function claimUpload(db: Db, tokenHash: string, sizeKb: number): Promise<ClaimedUpload | undefined> {
  const [[claimed]] = await db.commit([
    db
      .update(uploadSessions)
      .set({ usedAt: sql`unixepoch()`, reservedKb: sizeKb })
      .where(
        and(
          eq(uploadSessions.tokenHash, tokenHash),
          isNull(uploadSessions.usedAt),
          sql`${uploadSessions.expiresAt} > unixepoch()`,
          fitsDriveSpace(sizeKb),
        ),
      )
      .returning({
        id: uploadSessions.id,
        companyId: uploadSessions.companyId,
        userId: uploadSessions.userId,
        clientId: uploadSessions.clientId,
        deptId: uploadSessions.deptId,
        fileName: uploadSessions.fileName,
        contentType: uploadSessions.contentType,
        usedAt: uploadSessions.usedAt,
        reservedKb: uploadSessions.reservedKb,
      }),
  ]);
  return claimed;
}

/** Why a claim did not take: `token` (unknown, used or expired: 401) or the space left (quota: 400). */
export async function explainRefusedClaim(db: Db, tokenHash: string) {
  const row = await db
    .select({
      usedAt: uploadSessions.usedAt,
      live: sql<number>`${uploadSessions.expiresAt} > unixepoch()`,
      ...driveSpaceOfCompany,
    })
    .from(uploadSessions)
    .innerJoin(companies, eq(companies.id, uploadSessions.companyId))
    .where(eq(uploadSessions.tokenHash, tokenHash))
    .get();
  if (!row) return { reason: "unknown" as const };
  if (row.usedAt !== null) return { reason: "used" as const };
  if (!row.live) return { reason: "expired" as const };
  return { reason: "quota" as const, allocationKb: row.allocationKb, freeKb: freeKb(row) };
}

/**
 * Turns a claimed upload into its file row, in one batch: insert the file (its trigger adds its KB
 * to the company's and department's counters) only while the upload still holds its reservation —
 * or, when the reservation was released because the token expired while the bytes streamed
 * (reserved_kb = -KB, see `releaseAbandonedUploads`), only while the file fits the drive space
 * again, which takes the space back in the same statement —, and clear the reservation only once
 * the file exists. Undefined when nothing was written: the session is gone (its department
 * deleted, or pruned) or its released space is taken (see `explainRefusedCompletion`).
 */
export async function completeUpload(
  db: Db,
  upload: ClaimedUpload,
  file: { publicId: string; sizeBytes: number; sha256: string; r2Key: string },
): Promise<FileRow | undefined> {
  const kb = upload.reservedKb;
  const claimed = and(eq(uploadSessions.id, upload.id), eq(uploadSessions.usedAt, upload.usedAt ?? -1));
  const holdsSpace = or(eq(uploadSessions.reservedKb, kb), and(eq(uploadSessions.reservedKb, -kb), fitsDriveSpace(kb)));
  try {
    const [inserted] = await db.commit([
      db
        .insert(files)
        .select(
          (qb) =>
            qb
              // Bound values in the table's column order (src/db/schema.ts); the folder as it is now (set to NULL if it was deleted).
              .select({
                id: sql`NULL`,
                publicId: sql`${file.publicId}`,
                companyId: uploadSessions.companyId,
                deptId: uploadSessions.deptId,
                folderId: uploadSessions.folderId,
                fileName: uploadSessions.fileName,
                contentType: uploadSessions.contentType,
                sizeBytes: sql`${file.sizeBytes}`,
                sha256: sql`${file.sha256}`,
                r2Key: sql`${file.r2Key}`,
                createdBy: uploadSessions.userId,
                createdAt: sql`CURRENT_TIMESTAMP`,
              })
              .from(uploadSessions)
              .where(and(claimed, holdsSpace)) as never,
        )
        .returning(),
      db
        .update(uploadSessions)
        .set({ reservedKb: 0 })
        .where(
          and(
            claimed,
            inArray(uploadSessions.reservedKb, [kb, -kb]),
            sql`EXISTS (SELECT 1 FROM files AS f WHERE f.public_id = ${file.publicId})`,
          ),
        ),
    ]);
    return (inserted as FileRow[])[0];
  } catch (err) {
    if (isForeignKeyViolation(err)) return undefined;
    throw err;
  }
}

/** Why `completeUpload` wrote nothing: the session is `gone`, or the space its released reservation held is no longer free (`space`). */
export async function explainRefusedCompletion(db: Db, upload: ClaimedUpload) {
  const row = await db
    .select(driveSpaceOfCompany)
    .from(uploadSessions)
    .innerJoin(companies, eq(companies.id, uploadSessions.companyId))
    .where(eq(uploadSessions.id, upload.id))
    .get();
  if (!row) return { reason: "gone" as const };
  return { reason: "space" as const, allocationKb: row.allocationKb, freeKb: freeKb(row) };
}

/**
 * Gives back a failed upload's reservation (the token stays spent). Marked released (-KB) rather
 * than cleared, so that the prune in `releaseAbandonedUploads` also deletes the object should the
 * caller's own delete fail.
 */
export async function releaseUpload(db: Db, upload: ClaimedUpload): Promise<void> {
  await db.commit([
    db
      .update(uploadSessions)
      .set({ reservedKb: -upload.reservedKb })
      .where(and(eq(uploadSessions.id, upload.id), eq(uploadSessions.reservedKb, upload.reservedKb))),
  ]);
}

/**
 * The safety net for uploads whose Worker stopped mid-stream (a client that disconnects can end the
 * request before its own clean-up runs). One batch:
 * - releases the reservation of every upload whose token has expired (reserved_kb KB -> -KB): the
 *   space is free again at once. Its object is not deleted yet: an upload claimed just before its
 *   token expired may still be streaming, and its finish takes the space back if it still fits
 *   (`completeUpload`);
 * - deletes the sessions whose token expired more than SESSION_RETENTION_SECONDS ago, which ends
 *   any late finish; the R2 objects of those that were released and never stored as a file
 *   (reserved_kb < 0) are deleted after that. A session that became a file has reserved_kb 0: its
 *   object is the file's and stays.
 * For one company (run when it opens an upload session) or for all (the cron sweep, every minute).
 * Bounded per call; returns the number of reservations released.
 */
export async function releaseAbandonedUploads(
  db: Db,
  bucket: R2Bucket,
  companyId?: number,
  limit = 100,
): Promise<number> {
  const scope = companyId === undefined ? undefined : eq(uploadSessions.companyId, companyId);
  const expiredReservations = db
    .select({ id: uploadSessions.id })
    .from(uploadSessions)
    // The unary + keeps SQLite on the partial index of reservations (uploads in progress only), not on every expired session.
    .where(and(scope, sql`${uploadSessions.reservedKb} > 0`, sql`+${uploadSessions.expiresAt} <= unixepoch()`))
    .limit(limit);
  const pastRetention = db
    .select({ id: uploadSessions.id })
    .from(uploadSessions)
    .where(
      and(
        scope,
        lt(uploadSessions.expiresAt, sql`unixepoch() - ${SESSION_RETENTION_SECONDS}`),
        sql`${uploadSessions.reservedKb} <= 0`,
      ),
    )
    .limit(limit * 10);
  const [released, pruned] = await db.commit([
    db
      .update(uploadSessions)
      .set({ reservedKb: sql`-${uploadSessions.reservedKb}` })
      .where(and(inArray(uploadSessions.id, expiredReservations), sql`${uploadSessions.reservedKb} > 0`))
      .returning({ id: uploadSessions.id }),
    db
      .delete(uploadSessions)
      .where(inArray(uploadSessions.id, pastRetention))
      .returning({ id: uploadSessions.id, companyId: uploadSessions.companyId, reservedKb: uploadSessions.reservedKb }),
  ]);
  const keys = pruned.filter((r) => r.reservedKb < 0).map((r) => objectKey(r.companyId, r.id));
  if (keys.length > 0) {
    try {
      await bucket.delete(keys);
    } catch (err) {
      // The sessions are gone; the objects are orphaned but count against nothing.
      console.error(
        JSON.stringify({
          level: "error",
          msg: "R2 delete of abandoned uploads failed",
          keys: keys.length,
          error: String(err),
        }),
      );
    }
  }
  return released.length;
}

// ---------------------------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------------------------

export async function getFile(db: Db, companyId: number, publicId: string): Promise<FileRow & { attachments: number }> {
  const row = await db
    .select({ file: files, attachments: attachmentCount })
    .from(files)
    .where(fileInCompany(companyId, publicId))
    .get();
  if (!row) throw notFound("File");
  return { ...row.file, attachments: row.attachments };
}

export async function listFiles(db: Db, companyId: number, query: ListFilesInput) {
  const conditions: SQL[] = [eq(files.companyId, companyId)];
  if (query.deptid !== undefined) conditions.push(eq(files.deptId, query.deptid));
  if (query.folder_id !== undefined)
    conditions.push(query.folder_id === 0 ? isNull(files.folderId) : eq(files.folderId, query.folder_id));
  const where = and(...conditions);
  const result = await listPage(
    db,
    query,
    db
      .select({ file: files, attachments: attachmentCount })
      .from(files)
      .where(where)
      .orderBy(asc(files.id))
      .limit(query.limit)
      .offset(query.offset),
    db.select({ n: count() }).from(files).where(where),
  );
  return { rows: result.rows.map((r) => fileOutput({ ...r.file, attachments: r.attachments })), meta: result.meta };
}

/**
 * Deletes a file that no item holds: one DELETE guarded by "not attached" (its trigger takes its
 * KB off the counters), so a concurrent attach either lands first (409 here) or finds no file.
 * Returns the R2 key, whose object the caller deletes once the row is gone.
 */
export async function deleteFile(db: Db, companyId: number, publicId: string): Promise<string> {
  const [[deleted]] = await db.commit([
    db
      .delete(files)
      .where(
        and(
          fileInCompany(companyId, publicId),
          sql`NOT EXISTS (SELECT 1 FROM item_files AS a WHERE a.file_id = ${files.id})`,
        ),
      )
      .returning({ r2Key: files.r2Key }),
  ]);
  if (deleted) return deleted.r2Key;
  const file = await getFile(db, companyId, publicId); // 404 when it is not there
  const n = file.attachments;
  throw conflict(
    `File ${publicId} is attached to ${n} item${n === 1 ? "" : "s"}: detach it first (DELETE /v1/items/{item_id}/attachments/${publicId})`,
  );
}

// ---------------------------------------------------------------------------------------------
// Attachments
// ---------------------------------------------------------------------------------------------

async function requireItem(db: Db, companyId: number, itemId: number): Promise<void> {
  const item = await db.select({ id: items.id }).from(items).where(itemInCompany(companyId, itemId)).get();
  if (!item) throw notFound("Item");
}

export async function listAttachments(db: Db, companyId: number, itemId: number): Promise<AttachmentOutput[]> {
  const [[item], rows] = await db.batch([
    db.select({ id: items.id }).from(items).where(itemInCompany(companyId, itemId)),
    db
      .select({
        publicId: files.publicId,
        fileName: files.fileName,
        sizeBytes: files.sizeBytes,
        contentType: files.contentType,
        createdAt: files.createdAt,
        // Aliased: both tables call it created_at.
        attachedAt: sql<string>`${itemFiles.createdAt}`.as("attached_at"),
      })
      .from(itemFiles)
      .innerJoin(files, eq(files.id, itemFiles.fileId))
      // The unary + keeps SQLite on the primary key (item_id, file_id) rather than the company's index.
      .where(and(eq(itemFiles.itemId, itemId), sql`+${itemFiles.companyId} = ${companyId}`))
      // Attach order: rowids grow with each insert (created_at has whole seconds only).
      .orderBy(sql`item_files.rowid`),
  ]);
  if (!item) throw notFound("Item");
  return rows.map((r) => ({
    file_id: r.publicId,
    file_name: r.fileName,
    size: humanSize(r.sizeBytes),
    size_bytes: r.sizeBytes,
    content_type: r.contentType,
    add_date: r.createdAt,
    attached_at: r.attachedAt,
  }));
}

/**
 * Attaches a file of the company to an item of the company, in one INSERT ... SELECT that checks
 * both and the item's attachment count when it runs. Idempotent: an existing attachment is left
 * as it is (`created: false`). Errors: item not in the company 404; file not in the company 400;
 * MAX_ATTACHMENTS_PER_ITEM reached 400.
 */
export async function attachFile(
  db: Db,
  companyId: number,
  itemId: number,
  publicId: string,
): Promise<{ created: boolean; attachment: AttachmentOutput }> {
  let created = false;
  try {
    const [rows] = await db.commit([
      db
        .insert(itemFiles)
        .select(
          (qb) =>
            qb
              // Bound values in the table's column order (src/db/schema.ts).
              .select({
                itemId: items.id,
                fileId: files.id,
                companyId: sql`${companyId}`,
                createdAt: sql`CURRENT_TIMESTAMP`,
              })
              .from(items)
              .innerJoin(files, fileInCompany(companyId, publicId))
              .where(
                and(
                  itemInCompany(companyId, itemId),
                  sql`(SELECT count(*) FROM item_files AS a WHERE a.item_id = ${itemId}) < ${MAX_ATTACHMENTS_PER_ITEM}`,
                ),
              ) as never,
        )
        .onConflictDoNothing()
        .returning({ fileId: itemFiles.fileId }),
    ]);
    created = rows.length > 0;
  } catch (err) {
    // The item or file was deleted between the SELECT and the write's checks: answered below.
    if (!isForeignKeyViolation(err)) throw err;
  }
  const attachment = (await listAttachments(db, companyId, itemId)).find((a) => a.file_id === publicId);
  if (attachment) return { created, attachment };
  const file = await db.select({ id: files.id }).from(files).where(fileInCompany(companyId, publicId)).get();
  if (!file) throw badRequest(`file_id ${publicId} is not a file of this company`);
  const [{ n } = { n: 0 }] = await db.select({ n: count() }).from(itemFiles).where(eq(itemFiles.itemId, itemId));
  if (n >= MAX_ATTACHMENTS_PER_ITEM)
    throw badRequest(`The item already has ${MAX_ATTACHMENTS_PER_ITEM} attachments, the most an item may have`);
  throw lostRace("attachment");
}

/** Detaches a file from an item; the file stays in the drive. */
export async function detachFile(db: Db, companyId: number, itemId: number, publicId: string): Promise<void> {
  const [deleted] = await db.commit([
    db
      .delete(itemFiles)
      .where(
        and(
          eq(itemFiles.itemId, itemId),
          sql`+${itemFiles.companyId} = ${companyId}`,
          sql`${itemFiles.fileId} = (SELECT f.id FROM files AS f WHERE f.public_id = ${publicId} AND f.company_id = ${companyId})`,
        ),
      )
      .returning({ fileId: itemFiles.fileId }),
  ]);
  if (deleted.length > 0) return;
  await requireItem(db, companyId, itemId);
  throw notFound("Attachment");
}
