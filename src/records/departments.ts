import { and, asc, count, eq, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { isForeignKeyViolation, type Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace, writeBatch } from "../db/guarded";
import { echo } from "../lib/echo";
import { listPage } from "../db/pages";
import { contactGroups, departments } from "../db/schema";
import { DEFAULT_GROUP_NAME } from "../db/departments";
import { badRequest, conflict, notFound } from "../lib/errors";
import { toFlag } from "../lib/schemas";
import { nameKey } from "../lib/text-key";
import type {
  CreateDepartmentInput,
  DepartmentOutput,
  ListDepartmentsInput,
  UpdateDepartmentInput,
} from "../schemas/departments";

type DepartmentRow = typeof departments.$inferSelect;

export function departmentOutput(row: DepartmentRow): DepartmentOutput {
  return {
    deptid: row.id,
    name: row.name,
    isdefault: toFlag(row.isDefault),
    add_date: row.createdAt,
    // The maintained counters, never a count at read time.
    docs_used: row.docsUsed,
    contacts_used: row.contactsUsed,
    storage_used_kb: row.storageUsedKb,
  };
}

const inCompany = (companyId: number, deptId: number) =>
  and(eq(departments.id, deptId), eq(departments.companyId, companyId));

/** Department `deptId` is (still) a department of the company. Aliased: it runs inside statements on departments. */
const departmentExists = (companyId: number, deptId: number) =>
  sql`EXISTS (SELECT 1 FROM departments AS d WHERE d.id = ${deptId} AND d.company_id = ${companyId})`;

// ---------------------------------------------------------------------------------------------
// What a department holds. A department can be deleted only while it holds none of these; the
// delete's statements carry `departmentHolds()` in their WHERE, and a refused delete names what
// is there from the same list. Later resources that live in a department (items, files, folders)
// add an entry here; nothing else needs to change.
// ---------------------------------------------------------------------------------------------

export interface DepartmentHolding {
  /** Key of the count in `DepartmentHoldings`. */
  key: string;
  /** How much of it department `deptId` holds: an SQL expression that runs inside any statement. */
  count: (companyId: number, deptId: number) => SQL<number>;
  /** "3 contacts", for the refusal message. */
  describe: (n: number) => string;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** A department counter column, read through an alias so the expression works inside statements on departments. */
const counter = (column: "contacts_used" | "docs_used" | "storage_used_kb") => (companyId: number, deptId: number) =>
  sql<number>`(SELECT d.${sql.raw(column)} FROM departments AS d WHERE d.id = ${deptId} AND d.company_id = ${companyId})`;

export const DEPARTMENT_HOLDINGS: readonly DepartmentHolding[] = [
  // Trigger-maintained, exact on every contact insert, delete and move.
  { key: "contacts", count: counter("contacts_used"), describe: (n) => plural(n, "contact", "contacts") },
  {
    // Every group but an empty default group (which a delete removes with the department).
    key: "contactGroups",
    count: (companyId, deptId) => sql<number>`(SELECT count(*) FROM contact_groups AS g
      WHERE g.company_id = ${companyId} AND g.dept_id = ${deptId}
        AND (g.is_default = 0 OR EXISTS (SELECT 1 FROM contacts AS c WHERE c.company_id = g.company_id AND c.group_id = g.id)))`,
    describe: (n) => plural(n, "contact group", "contact groups"),
  },
  {
    key: "documentTypes",
    count: (companyId, deptId) =>
      sql<number>`(SELECT count(*) FROM document_types AS t WHERE t.company_id = ${companyId} AND t.dept_id = ${deptId})`,
    describe: (n) => plural(n, "document type", "document types"),
  },
  {
    // Every folder in the department, at any depth (folders_dept_idx).
    key: "folders",
    count: (companyId, deptId) =>
      sql<number>`(SELECT count(*) FROM folders AS f WHERE f.company_id = ${companyId} AND f.dept_id = ${deptId})`,
    describe: (n) => plural(n, "folder", "folders"),
  },
  // Items and files: counters kept by the items and drive work.
  { key: "items", count: counter("docs_used"), describe: (n) => plural(n, "item", "items") },
  { key: "files", count: counter("storage_used_kb"), describe: (n) => `${n} KB of files` },
];

/**
 * The one "department still holds records" condition: true while department `deptId` holds
 * anything of `DEPARTMENT_HOLDINGS`. Guards the delete statements.
 */
export function departmentHolds(companyId: number, deptId: number): SQL {
  return sql`(${sql.join(
    DEPARTMENT_HOLDINGS.map((h) => sql`coalesce(${h.count(companyId, deptId)}, 0) > 0`),
    sql` OR `,
  )})`;
}

/** "3 contacts, 2 contact groups and 1 document type", or "" when it holds nothing. */
export function describeHoldings(counts: Record<string, number>): string {
  const parts = DEPARTMENT_HOLDINGS.filter((h) => (counts[h.key] ?? 0) > 0).map((h) => h.describe(counts[h.key]!));
  if (parts.length <= 1) return parts.join("");
  return `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}`;
}

// ---------------------------------------------------------------------------------------------

const duplicateName = (name: string) => conflict(`A department named "${echo(name)}" already exists in this company`);

/** One batch: a duplicate name is 409; a second default (another request won) is a lost race. */
const writeDepartment = (db: Db, name: string | undefined, statements: BatchItem<"sqlite">[]) =>
  writeBatch(db, statements, "department", { marker: "departments.name_key", error: () => duplicateName(name ?? "") });
const lostDepartmentRace = () => lostRace("department");

export async function listDepartments(db: Db, companyId: number, query: ListDepartmentsInput) {
  const conditions: SQL[] = [eq(departments.companyId, companyId)];
  // instr() on the folded key: case-insensitive in every script, % and _ are plain characters.
  if (query.q) conditions.push(sql`instr(${departments.nameKey}, ${nameKey(query.q)}) > 0`);
  const where = and(...conditions);
  return listPage(
    db,
    query,
    db.select().from(departments).where(where).orderBy(asc(departments.id)).limit(query.limit).offset(query.offset),
    db.select({ n: count() }).from(departments).where(where),
  );
}

const selectOne = (db: Db, companyId: number, deptId: number) =>
  db.select().from(departments).where(inCompany(companyId, deptId));

export async function getDepartment(db: Db, companyId: number, deptId: number): Promise<DepartmentRow> {
  const row = await selectOne(db, companyId, deptId).get();
  if (!row) throw notFound("Department");
  return row;
}

/**
 * Makes department `deptId` the company's only default: unset the others, set it. Both statements
 * require the department to exist at the moment they run, so one deleted meanwhile changes nothing
 * (the company keeps its default). The second returns the id when it took effect.
 */
function makeDefaultStatements(db: Db, companyId: number, deptId: number) {
  return [
    db
      .update(departments)
      .set({ isDefault: 0 })
      .where(
        and(
          eq(departments.companyId, companyId),
          eq(departments.isDefault, 1),
          ne(departments.id, deptId),
          departmentExists(companyId, deptId),
        ),
      ),
    db.update(departments).set({ isDefault: 1 }).where(inCompany(companyId, deptId)).returning({ id: departments.id }),
  ] as const;
}

/**
 * One batch: (unset the current default,) insert the department, and give it an empty default
 * contact group "General", so contacts placed in the department without a group land in a group.
 */
export async function createDepartment(
  db: Db,
  companyId: number,
  input: CreateDepartmentInput,
): Promise<DepartmentRow> {
  const key = nameKey(input.dept_name);
  const isDefault = input.isdefault ?? 0;
  const statements: BatchItem<"sqlite">[] = [];
  if (isDefault === 1) {
    statements.push(
      db
        .update(departments)
        .set({ isDefault: 0 })
        .where(and(eq(departments.companyId, companyId), eq(departments.isDefault, 1))),
    );
  }
  const insertAt = statements.length;
  statements.push(
    db.insert(departments).values({ companyId, name: input.dept_name, nameKey: key, isDefault }).returning(),
  );
  statements.push(
    db.insert(contactGroups).values({
      companyId,
      // The department inserted just before, in the same transaction (its name key is unique in the company).
      deptId: sql`(SELECT d.id FROM departments AS d WHERE d.company_id = ${companyId} AND d.name_key = ${key})`,
      name: DEFAULT_GROUP_NAME,
      nameKey: nameKey(DEFAULT_GROUP_NAME),
      isDefault: 1,
    }),
  );
  const results = await writeDepartment(db, input.dept_name, statements);
  const [row] = results[insertAt] as DepartmentRow[];
  return row!;
}

export async function updateDepartment(
  db: Db,
  companyId: number,
  deptId: number,
  input: UpdateDepartmentInput,
): Promise<DepartmentRow> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getDepartment(db, companyId, deptId);
    if (current.isDefault === 1 && input.isdefault === 0) {
      throw badRequest("A company keeps exactly one default department: make another department the default instead");
    }
    // Every statement re-checks what was read: the department is still there (and, for
    // isdefault 0, still not the default); later statements see the state earlier ones left.
    const statements: BatchItem<"sqlite">[] = [];
    let check: number | undefined;
    if (input.dept_name !== undefined) {
      check = statements.length;
      statements.push(
        db
          .update(departments)
          .set({ name: input.dept_name, nameKey: nameKey(input.dept_name) })
          .where(and(inCompany(companyId, deptId), input.isdefault === 0 ? eq(departments.isDefault, 0) : undefined))
          .returning({ id: departments.id }),
      );
    }
    if (input.isdefault === 1) {
      check ??= statements.length + 1;
      statements.push(...makeDefaultStatements(db, companyId, deptId));
    }
    // Only isdefault 0 on a department that is not the default: nothing to change.
    if (check === undefined) return current;
    statements.push(selectOne(db, companyId, deptId));
    const results = await writeDepartment(db, input.dept_name, statements);
    const after = (results[results.length - 1] as DepartmentRow[])[0];
    if ((results[check] as unknown[]).length > 0 && after) return after;
  }
  throw lostDepartmentRace();
}

/** The department with what it holds, in one read; 404 when it is not in the company. */
async function readForDelete(db: Db, companyId: number, deptId: number) {
  const holdings = Object.fromEntries(
    DEPARTMENT_HOLDINGS.map((h) => [h.key, sql<number>`coalesce(${h.count(companyId, deptId)}, 0)`]),
  );
  const row = await db
    .select({ isDefault: departments.isDefault, holdings })
    .from(departments)
    .where(inCompany(companyId, deptId))
    .get();
  if (!row) throw notFound("Department");
  return row as { isDefault: number; holdings: Record<string, number> };
}

/**
 * Deletes an empty department and its empty default contact group in one batch. Both statements
 * require, when they run, that the department is not the default and holds nothing
 * (`departmentHolds`), so a record added to it concurrently makes the delete do nothing: the
 * operation reads again and answers 400 naming what is there. No half-deleted state.
 */
export async function deleteDepartment(db: Db, companyId: number, deptId: number): Promise<void> {
  let blockedByReference = false;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const dept = await readForDelete(db, companyId, deptId);
    if (dept.isDefault === 1) {
      throw badRequest("The default department cannot be deleted: make another department the default first");
    }
    const held = describeHoldings(dept.holdings);
    if (held) throw badRequest(`Department ${deptId} still holds ${held}: move or delete them first`);

    const deletable = and(
      sql`EXISTS (SELECT 1 FROM departments AS d WHERE d.id = ${deptId} AND d.company_id = ${companyId} AND d.is_default = 0)`,
      sql`NOT ${departmentHolds(companyId, deptId)}`,
    );
    try {
      const [, deleted] = await db.commit([
        db
          .delete(contactGroups)
          .where(
            and(
              eq(contactGroups.companyId, companyId),
              eq(contactGroups.deptId, deptId),
              eq(contactGroups.isDefault, 1),
              deletable,
            ),
          ),
        db
          .delete(departments)
          .where(and(inCompany(companyId, deptId), deletable))
          .returning({ id: departments.id }),
      ]);
      if ((deleted as unknown[]).length > 0) return;
    } catch (err) {
      // A row that refers to the department but is not in DEPARTMENT_HOLDINGS: nothing was deleted.
      if (!isForeignKeyViolation(err)) throw err;
      blockedByReference = true;
    }
  }
  if (blockedByReference)
    throw badRequest(`Department ${deptId} still holds records that refer to it: move or delete them first`);
  throw lostDepartmentRace();
}
