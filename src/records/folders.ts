import { and, asc, eq, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { isForeignKeyViolation, type Db } from "../db/client";
import { selectDepartment } from "../db/departments";
import { MAX_ATTEMPTS, lostRace, writeBatch } from "../db/guarded";
import { cappedListPage, countMatches } from "../db/pages";
import { MAX_EXACT_SEARCH_TOTAL } from "../lib/search";
import { departments, folders } from "../db/schema";
import { echo } from "../lib/echo";
import { badRequest, conflict, notFound } from "../lib/errors";
import { hasVisibleText } from "../lib/schemas";
import { nameKey } from "../lib/text-key";
import {
  MAX_FOLDER_NAME,
  type CreateFolderInput,
  type FolderOutput,
  type ListFoldersInput,
  type UpdateFolderInput,
} from "../schemas/folders";

type FolderRow = typeof folders.$inferSelect;

/** A new folder row as bound values in the table's column order, for `insert(folders).select(...)`. */
function folderValues(companyId: number, deptId: number, parentId: SQL, name: string, description: string) {
  return {
    id: sql`NULL`,
    companyId: sql`${companyId}`,
    deptId: sql`${deptId}`,
    parentId,
    name: sql`${name}`,
    nameKey: sql`${nameKey(name)}`,
    description: sql`${description}`,
    createdAt: sql`CURRENT_TIMESTAMP`,
    version: sql`1`,
  };
}

export function folderOutput(row: FolderRow): FolderOutput {
  return {
    folderid: row.id,
    parentid: row.parentId,
    folder_name: row.name,
    deptid: row.deptId,
    description: row.description,
    add_date: row.createdAt,
  };
}

const inCompany = (companyId: number, folderId: number) =>
  and(eq(folders.id, folderId), eq(folders.companyId, companyId));

/**
 * Selects the id of folder `folderId` when it is a folder of the company: for the items work, to
 * validate a `folder_id` (read it, or embed it in a guarded write as `EXISTS (...)`).
 */
export function folderInCompany(db: Db, companyId: number, folderId: number) {
  return db.select({ id: folders.id }).from(folders).where(inCompany(companyId, folderId));
}

// The SQL conditions below are aliased, since they run inside statements on folders itself.

/** Folder `folderId` is (still) a folder of the company. */
const folderExists = (companyId: number, folderId: number) =>
  sql`EXISTS (SELECT 1 FROM folders AS p WHERE p.id = ${folderId} AND p.company_id = ${companyId})`;

/**
 * Folder `folderId` is `targetId` or one of its ancestors, so moving `folderId` under `targetId`
 * would make a loop. Walks up from the target (one primary-key read per level, however large the
 * moved subtree); UNION stops the walk even on a tree that already had a loop.
 */
const isSelfOrAncestorOf = (companyId: number, folderId: number, targetId: number) =>
  sql`EXISTS (WITH RECURSIVE lineage(id) AS (
      SELECT ${targetId}
      UNION
      SELECT a.parent_id FROM folders AS a JOIN lineage ON a.id = lineage.id WHERE a.company_id = ${companyId} AND a.parent_id <> 0
    ) SELECT 1 FROM lineage WHERE lineage.id = ${folderId})`;

/** Sub-folders directly in folder `folderId` (folders_sibling_name_key_uq). */
const subfolderCount = (companyId: number, folderId: number) =>
  sql<number>`(SELECT count(*) FROM folders AS s WHERE s.company_id = ${companyId} AND s.parent_id = ${folderId})`;
/** Items in folder `folderId`, archived ones included (items_company_folder_date_idx). */
const itemCount = (companyId: number, folderId: number) =>
  sql<number>`(SELECT count(*) FROM items AS i WHERE i.company_id = ${companyId} AND i.folder_id = ${folderId})`;
/** The delete's guard: the folder holds no sub-folder and no item. */
const folderIsEmpty = (companyId: number, folderId: number) =>
  sql`NOT EXISTS (SELECT 1 FROM folders AS s WHERE s.company_id = ${companyId} AND s.parent_id = ${folderId})
    AND NOT EXISTS (SELECT 1 FROM items AS i WHERE i.company_id = ${companyId} AND i.folder_id = ${folderId})`;

const where = (parentId: number) => (parentId === 0 ? "at the top level" : `in folder ${parentId}`);
const duplicateName = (name: string, parentId: number) =>
  conflict(`A folder named "${echo(name)}" already exists ${where(parentId)}`);
const invalidParent = (parentId: number) => badRequest(`parent_id ${parentId} is not a folder of this company`);
const lostFolderRace = () => lostRace("folder");

/** One batch: a sibling with the same name key is 409; a foreign-key failure is a lost race. */
const writeFolder = (db: Db, name: string, parentId: number, statements: BatchItem<"sqlite">[]) =>
  writeBatch(db, statements, "folder", { marker: "folders.name_key", error: () => duplicateName(name, parentId) });

/** The page and total of a list request, unexecuted (tests read their query plans). */
export function folderListQueries(db: Db, companyId: number, query: ListFoldersInput) {
  const conditions: SQL[] = [eq(folders.companyId, companyId)];
  if (query.deptid !== undefined) conditions.push(eq(folders.deptId, query.deptid));
  if (query.parent_id !== undefined) conditions.push(eq(folders.parentId, query.parent_id));
  // instr() on the folded key: case-insensitive in every script, % and _ are plain characters.
  if (query.q) conditions.push(sql`instr(${folders.nameKey}, ${nameKey(query.q)}) > 0`);
  const filter = and(...conditions);
  // With `q` the total stops counting after the cap + 1 matches.
  const cap = query.q ? MAX_EXACT_SEARCH_TOTAL : Number.POSITIVE_INFINITY;
  return {
    page: db.select().from(folders).where(filter).orderBy(asc(folders.id)).limit(query.limit).offset(query.offset),
    total: countMatches(db, folders, filter, cap),
    cap,
  };
}

export async function listFolders(db: Db, companyId: number, query: ListFoldersInput) {
  return cappedListPage(db, query, folderListQueries(db, companyId, query));
}

export async function getFolder(db: Db, companyId: number, folderId: number): Promise<FolderRow> {
  const row = await db.select().from(folders).where(inCompany(companyId, folderId)).get();
  if (!row) throw notFound("Folder");
  return row;
}

async function departmentInCompany(db: Db, companyId: number, deptId: number | undefined): Promise<number> {
  const dept = await selectDepartment(db, companyId, deptId).get();
  if (!dept)
    throw badRequest(
      deptId !== undefined ? `deptid ${deptId} does not exist` : "The company has no default department; send deptid",
    );
  return dept.id;
}

/**
 * One guarded INSERT ... SELECT: it writes only while the department (and the parent folder, if
 * any) read a moment ago are still in the company, so a folder never lands under a parent deleted
 * in between (parent_id has no foreign key: 0 means the top level).
 */
export async function createFolder(db: Db, companyId: number, input: CreateFolderInput): Promise<FolderRow> {
  const parentId = input.parent_id ?? 0;
  const name = input.folder_name;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let parentDept: number | undefined;
    if (parentId !== 0) {
      const parent = await db
        .select({ deptId: folders.deptId })
        .from(folders)
        .where(inCompany(companyId, parentId))
        .get();
      if (!parent) throw invalidParent(parentId);
      parentDept = parent.deptId;
    }
    const deptId = await departmentInCompany(db, companyId, input.deptid ?? parentDept);
    const insert = db
      .insert(folders)
      .select(
        (qb) =>
          qb
            // Bound values in the table's column order.
            .select(folderValues(companyId, deptId, sql`${parentId}`, name, input.description ?? ""))
            .from(departments)
            .where(
              and(
                eq(departments.id, deptId),
                eq(departments.companyId, companyId),
                parentId !== 0 ? folderExists(companyId, parentId) : undefined,
              ),
            ) as never,
      )
      .returning();
    const [rows] = await writeFolder(db, name, parentId, [insert]);
    const [row] = rows as FolderRow[];
    if (row) return row;
    // The parent or the department went away after it was read: the next read says which (400).
  }
  throw lostFolderRace();
}

/**
 * Renames, describes and (extension) moves a folder in one guarded UPDATE. A move carries its
 * checks in the statement itself: the new parent is still a folder of the company, and the moved
 * folder is not the new parent or one of its ancestors (a recursive walk up from the new parent),
 * so two concurrent moves can never close a loop. A statement that changed nothing is read again:
 * 404 when the folder is gone, 400 when the move is no longer allowed, else retried.
 */
export async function updateFolder(
  db: Db,
  companyId: number,
  folderId: number,
  input: UpdateFolderInput,
): Promise<FolderRow> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const target = input.parent_id;
    const check = target !== undefined && target !== 0 && target !== folderId;
    const current = await db
      .select({
        row: folders,
        targetExists: check ? sql<number>`${folderExists(companyId, target)}` : sql<number>`1`,
        loop: check ? sql<number>`${isSelfOrAncestorOf(companyId, folderId, target)}` : sql<number>`0`,
      })
      .from(folders)
      .where(inCompany(companyId, folderId))
      .get();
    if (!current) throw notFound("Folder");
    const moving = target !== undefined && target !== current.row.parentId;
    if (moving) {
      if (target === folderId) throw badRequest(`Folder ${folderId} cannot be moved into itself`);
      if (current.targetExists !== 1) throw invalidParent(target);
      if (current.loop === 1)
        throw badRequest(`Folder ${folderId} cannot be moved into folder ${target}, which is inside it`);
    }

    const changes: Partial<typeof folders.$inferInsert> = {};
    if (input.folder_name !== undefined) {
      changes.name = input.folder_name;
      changes.nameKey = nameKey(input.folder_name);
    }
    if (input.description !== undefined) changes.description = input.description;
    if (moving) changes.parentId = target;
    if (Object.keys(changes).length === 0) return current.row;

    const guard =
      moving && target !== 0
        ? and(folderExists(companyId, target), sql`NOT ${isSelfOrAncestorOf(companyId, folderId, target)}`)
        : undefined;
    const update = db
      .update(folders)
      .set(changes)
      .where(and(inCompany(companyId, folderId), guard))
      .returning();
    const [rows] = await writeFolder(
      db,
      input.folder_name ?? current.row.name,
      moving ? target : current.row.parentId,
      [update],
    );
    const [row] = rows as FolderRow[];
    if (row) return row;
  }
  throw lostFolderRace();
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * Deletes an empty folder. The DELETE itself requires that the folder holds no sub-folder and no
 * item when it runs, so a sub-folder or item created concurrently makes it delete nothing (never
 * an orphan): the operation reads again and answers 409 naming what the folder holds.
 */
export async function deleteFolder(db: Db, companyId: number, folderId: number): Promise<void> {
  let blockedByReference = false;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const folder = await db
      .select({ subfolders: subfolderCount(companyId, folderId), items: itemCount(companyId, folderId) })
      .from(folders)
      .where(inCompany(companyId, folderId))
      .get();
    if (!folder) throw notFound("Folder");
    const held = [
      folder.subfolders > 0 ? plural(folder.subfolders, "sub-folder", "sub-folders") : "",
      folder.items > 0 ? plural(folder.items, "item", "items") : "",
    ].filter(Boolean);
    if (held.length > 0)
      throw conflict(`Folder ${folderId} is not empty: it holds ${held.join(" and ")}; move or delete them first`);
    try {
      const [deleted] = await db.commit([
        db
          .delete(folders)
          .where(and(inCompany(companyId, folderId), folderIsEmpty(companyId, folderId)))
          .returning({ id: folders.id }),
      ]);
      if (deleted.length > 0) return;
    } catch (err) {
      // A row that refers to the folder but is not counted above: nothing was deleted.
      if (!isForeignKeyViolation(err)) throw err;
      blockedByReference = true;
    }
  }
  if (blockedByReference)
    throw conflict(`Folder ${folderId} is not empty: records still refer to it; move or delete them first`);
  throw lostFolderRace();
}

// ---------------------------------------------------------------------------------------------
// folder_path: "Permits/City" for the items work.
// ---------------------------------------------------------------------------------------------

/** At most this many folders in one folder_path. */
export const MAX_PATH_SEGMENTS = 10;

// Control characters (C0, DEL, C1), as the text fields refuse them.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

/**
 * The folder names of a folder_path, top-down: split at "/", each trimmed and NFC-normalised;
 * empty (or only invisible) segments are ignored. 400 naming folder_path for text that is not
 * well-formed or holds control characters, no folder name at all ("", "/"), a name over 100
 * characters, or more than 10 names.
 */
export function folderPathSegments(path: string): string[] {
  if (!path.isWellFormed()) throw badRequest("folder_path must be well-formed Unicode text (no lone surrogates)");
  if (CONTROL.test(path)) throw badRequest("folder_path must not contain control characters");
  const segments = path
    .normalize("NFC")
    .split("/")
    .map((s) => s.trim())
    .filter(hasVisibleText);
  if (segments.length === 0) throw badRequest('folder_path must name at least one folder, e.g. "Permits/City"');
  if (segments.length > MAX_PATH_SEGMENTS) {
    throw badRequest(
      `folder_path may name at most ${MAX_PATH_SEGMENTS} folders, one inside the other; it names ${segments.length}`,
    );
  }
  for (const segment of segments) {
    if (segment.length > MAX_FOLDER_NAME) {
      throw badRequest(
        `folder_path: each folder name must be at most ${MAX_FOLDER_NAME} characters; "${echo(segment)}" is longer`,
      );
    }
  }
  return segments;
}

/**
 * The id of the folder `depth` levels down the path whose name keys are the JSON array `keys`
 * (0 for depth 0, the top level; NULL when a folder on the way is missing). A recursive walk down
 * the unique (company_id, parent_id, name_key) index: its expression depth does not grow with the
 * path, which nested sub-selects would (D1 refuses expression trees deeper than 100).
 */
const folderAtDepth = (companyId: number, keys: string, depth: number): SQL =>
  depth === 0
    ? sql`0`
    : sql`(WITH RECURSIVE walk(depth, id) AS (
        SELECT 0, 0
        UNION ALL
        SELECT walk.depth + 1, f.id FROM walk JOIN folders AS f
          ON f.company_id = ${companyId} AND f.parent_id = walk.id AND f.name_key = json_extract(${keys}, '$[' || walk.depth || ']')
        WHERE walk.depth < ${depth}
      ) SELECT walk.id FROM walk WHERE walk.depth = ${depth})`;

/**
 * Finds or creates the folders of `path` ("Permits/City"), like `mkdir -p`, and returns the id of
 * the last one. Top-down from the top level, each name is matched case-insensitively (Unicode
 * case folding) among the folders of the same parent, whatever their department; a missing one is
 * created in department `deptId` (400 when that is not a department of the company). 400 naming
 * folder_path for an invalid path, including one with no folder name (`folderPathSegments`).
 *
 * One batch, so one transaction: per segment an `INSERT ... ON CONFLICT DO NOTHING` on the unique
 * (company_id, parent_id, name_key) index, under the previous segment's folder (looked up by the
 * keys so far), then one SELECT of the last folder. Concurrent calls for the same path end with
 * one folder per segment, and no folder of the path can be deleted half-way through. The caller
 * still has to guard its own later write (e.g. an item insert) on the folder existing: an empty
 * folder can be deleted between this batch and that write.
 */
export async function ensureFolderPath(db: Db, companyId: number, deptId: number, path: string): Promise<number> {
  const { statements, lastFolder } = folderPathWrites(db, companyId, deptId, path);
  statements.push(
    db
      .select({ id: folders.id })
      .from(folders)
      .where(and(eq(folders.companyId, companyId), sql`${folders.id} = ${lastFolder}`)),
  );
  const results = await writeBatch(db, statements, "folder");
  const [found] = results[results.length - 1] as Array<{ id: number }>;
  if (found) return found.id;
  // A folder was missing and could not be created: the department is not (or no longer) in the company.
  if (!(await selectDepartment(db, companyId, deptId).get())) throw badRequest(`deptid ${deptId} does not exist`);
  throw lostFolderRace();
}

/**
 * The statements of `ensureFolderPath` without its final read, for a caller that puts them at the
 * head of its own batch (an item created with `folder_path`: folders and item in one transaction),
 * and `lastFolder`, the last folder's id as a scalar subquery (NULL when it could not be created).
 */
export function folderPathWrites(
  db: Db,
  companyId: number,
  deptId: number,
  path: string,
): { statements: BatchItem<"sqlite">[]; lastFolder: SQL } {
  const segments = folderPathSegments(path);
  const keys = JSON.stringify(segments.map(nameKey));
  const statements: BatchItem<"sqlite">[] = segments.map((name, depth) => {
    const parent = folderAtDepth(companyId, keys, depth);
    return db
      .insert(folders)
      .select(
        (qb) =>
          qb
            .select(folderValues(companyId, deptId, parent, name, ""))
            .from(departments)
            // The parent is NULL only when an earlier insert was refused (department not in the company).
            .where(
              and(eq(departments.id, deptId), eq(departments.companyId, companyId), sql`${parent} IS NOT NULL`),
            ) as never,
      )
      .onConflictDoNothing();
  });
  return { statements, lastFolder: folderAtDepth(companyId, keys, segments.length) };
}
