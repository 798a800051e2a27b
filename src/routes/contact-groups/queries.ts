import { and, asc, count, eq, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { isUniqueViolation, type Db } from "../../db/client";
import { selectDepartment } from "../../db/departments";
import { contactGroups, contacts, departments } from "../../db/schema";
import { badRequest, conflict, notFound } from "../../lib/errors";
import { containsPattern } from "../../lib/sql";
import { nameKey } from "../../lib/text-key";
import type { CreateGroupInput, ListGroupsInput, UpdateGroupInput } from "./schemas";

const groupColumns = {
  id: contactGroups.id,
  name: contactGroups.name,
  deptId: contactGroups.deptId,
  isDefault: contactGroups.isDefault,
  createdAt: contactGroups.createdAt,
  // One indexed count per group inside the same statement (contacts_company_group_idx).
  // Columns are written out qualified: drizzle renders column references inside a select
  // field unqualified, and inside this sub-select those would bind to `contacts`.
  contactsCount: sql<number>`(SELECT count(*) FROM "contacts" WHERE "contacts"."company_id" = "contact_groups"."company_id" AND "contacts"."group_id" = "contact_groups"."id")`,
};

type GroupRow = { id: number; name: string; deptId: number; isDefault: number; createdAt: string; contactsCount: number };

export function groupOutput(row: GroupRow) {
  return {
    groupid: row.id,
    group_name: row.name,
    deptid: row.deptId,
    isdefault: row.isDefault,
    add_date: row.createdAt,
    contacts_count: row.contactsCount,
  };
}

const inCompany = (companyId: number, groupId: number) => and(eq(contactGroups.id, groupId), eq(contactGroups.companyId, companyId));

async function runBatch(db: Db, statements: BatchItem<"sqlite">[]) {
  return db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}

function duplicateName(name: string) {
  return conflict(`A contact group named "${name}" already exists in this department`);
}

async function writeGroup(db: Db, name: string | undefined, statements: BatchItem<"sqlite">[]) {
  try {
    return await runBatch(db, statements);
  } catch (err) {
    if (isUniqueViolation(err, "contact_groups.name_key")) throw duplicateName(name ?? "");
    throw err;
  }
}

export async function listGroups(db: Db, companyId: number, query: ListGroupsInput) {
  const conditions: SQL[] = [eq(contactGroups.companyId, companyId)];
  if (query.deptid !== undefined) conditions.push(eq(contactGroups.deptId, query.deptid));
  if (query.q) conditions.push(sql`${contactGroups.name} LIKE ${containsPattern(query.q)} ESCAPE '\\'`);
  const where = and(...conditions);
  const [rows, totals] = await db.batch([
    db.select(groupColumns).from(contactGroups).where(where).orderBy(asc(contactGroups.id)).limit(query.limit).offset(query.offset),
    db.select({ n: count() }).from(contactGroups).where(where),
  ]);
  return { rows, total: totals[0]?.n ?? 0 };
}

export async function getGroup(db: Db, companyId: number, groupId: number): Promise<GroupRow> {
  const row = await db.select(groupColumns).from(contactGroups).where(inCompany(companyId, groupId)).get();
  if (!row) throw notFound("Contact group");
  return row;
}

async function departmentInCompany(db: Db, companyId: number, deptId: number | undefined): Promise<number> {
  const dept = await selectDepartment(db, companyId, deptId).get();
  if (!dept) throw badRequest(deptId !== undefined ? `deptid ${deptId} does not exist` : "The company has no default department; send deptid");
  return dept.id;
}

/** 400 unless `deptId` (a group's current department) is a department of the company. */
async function requireValidGroupDepartment(db: Db, companyId: number, deptId: number): Promise<void> {
  if (!(await selectDepartment(db, companyId, deptId).get())) throw invalidGroupDepartment(deptId);
}

const invalidGroupDepartment = (deptId: number) =>
  badRequest(`The group's department ${deptId} is not a valid department of this company`);

/** Unsets the current default group of a department (all but `keepId`). */
function clearDefault(db: Db, companyId: number, deptId: number, keepId = 0) {
  return db
    .update(contactGroups)
    .set({ isDefault: 0 })
    .where(and(eq(contactGroups.companyId, companyId), eq(contactGroups.deptId, deptId), eq(contactGroups.isDefault, 1), ne(contactGroups.id, keepId)));
}

export async function createGroup(db: Db, companyId: number, input: CreateGroupInput): Promise<GroupRow> {
  const deptId = await departmentInCompany(db, companyId, input.deptid);
  const insert = db
    .insert(contactGroups)
    .values({ companyId, deptId, name: input.group_name, nameKey: nameKey(input.group_name), isDefault: input.isdefault ?? 0 })
    .returning({ id: contactGroups.id });
  const results = await writeGroup(db, input.group_name, input.isdefault === 1 ? [clearDefault(db, companyId, deptId), insert] : [insert]);
  const [created] = results[results.length - 1] as Array<{ id: number }>;
  return getGroup(db, companyId, created!.id);
}

export async function updateGroup(db: Db, companyId: number, groupId: number, input: UpdateGroupInput): Promise<GroupRow> {
  const current = await getGroup(db, companyId, groupId);
  const targetDept = input.deptid !== undefined ? await departmentInCompany(db, companyId, input.deptid) : current.deptId;
  const moving = targetDept !== current.deptId;
  if (current.isDefault === 1 && input.isdefault === 0) {
    throw badRequest("A department keeps exactly one default group: make another group the default instead");
  }
  if (current.isDefault === 1 && moving) {
    throw badRequest("The default group cannot move to another department: make another group the default first");
  }
  if (input.isdefault === 1 && input.deptid === undefined) {
    // Like PATCH .../default: only a group of a valid department can become its default.
    await requireValidGroupDepartment(db, companyId, current.deptId);
  }
  const changes: Partial<typeof contactGroups.$inferInsert> = {};
  if (input.group_name !== undefined) {
    changes.name = input.group_name;
    changes.nameKey = nameKey(input.group_name);
  }
  if (moving) changes.deptId = targetDept;
  if (input.isdefault === 1) changes.isDefault = 1;

  const statements: BatchItem<"sqlite">[] = [];
  if (input.isdefault === 1 && current.isDefault !== 1) statements.push(clearDefault(db, companyId, targetDept, groupId));
  if (Object.keys(changes).length > 0) {
    statements.push(db.update(contactGroups).set(changes).where(inCompany(companyId, groupId)));
  }
  if (moving) {
    // A group's contacts live in the group's department, so they move with it.
    statements.push(
      db
        .update(contacts)
        .set({ deptId: targetDept, updatedAt: sql`CURRENT_TIMESTAMP` })
        .where(and(eq(contacts.companyId, companyId), eq(contacts.groupId, groupId))),
    );
  }
  if (statements.length > 0) await writeGroup(db, input.group_name, statements);
  return getGroup(db, companyId, groupId);
}

export async function deleteGroup(db: Db, companyId: number, groupId: number): Promise<void> {
  const group = await getGroup(db, companyId, groupId);
  if (group.isDefault === 1) {
    throw badRequest("The default contact group cannot be deleted: make another group the default first");
  }
  const defaultGroup = db
    .select({ id: contactGroups.id })
    .from(contactGroups)
    .where(and(eq(contactGroups.companyId, companyId), eq(contactGroups.deptId, group.deptId), eq(contactGroups.isDefault, 1)));
  await runBatch(db, [
    // Its contacts are kept: they move to the department's default group, or to no group.
    db
      .update(contacts)
      .set({ groupId: sql`(${defaultGroup})`, updatedAt: sql`CURRENT_TIMESTAMP` })
      .where(and(eq(contacts.companyId, companyId), eq(contacts.groupId, groupId))),
    db.delete(contactGroups).where(inCompany(companyId, groupId)),
  ]);
}

export async function makeDefaultGroup(db: Db, companyId: number, groupId: number): Promise<GroupRow> {
  const row = await db
    .select({ id: contactGroups.id, deptId: contactGroups.deptId, validDept: departments.id })
    .from(contactGroups)
    .leftJoin(departments, and(eq(departments.id, contactGroups.deptId), eq(departments.companyId, companyId)))
    .where(inCompany(companyId, groupId))
    .get();
  if (!row) throw notFound("Contact group");
  if (row.validDept === null) {
    throw invalidGroupDepartment(row.deptId);
  }
  await runBatch(db, [
    clearDefault(db, companyId, row.deptId, groupId),
    db.update(contactGroups).set({ isDefault: 1 }).where(inCompany(companyId, groupId)),
  ]);
  return getGroup(db, companyId, groupId);
}
