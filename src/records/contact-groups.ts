import { and, asc, eq, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace, writeBatch } from "../db/guarded";
import { echo } from "../lib/echo";
import { selectDepartment } from "../db/departments";
import { contactGroups, contacts, departments } from "../db/schema";
import { badRequest, conflict, notFound } from "../lib/errors";
import { toFlag } from "../lib/schemas";
import { cappedListPage, countMatches } from "../db/pages";
import { MAX_EXACT_SEARCH_TOTAL } from "../lib/search";
import { nameKey } from "../lib/text-key";
import type {
  ContactGroupOutput,
  CreateGroupInput,
  ListGroupsInput,
  UpdateGroupInput,
} from "../schemas/contact-groups";

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

type GroupRow = {
  id: number;
  name: string;
  deptId: number;
  isDefault: number;
  createdAt: string;
  contactsCount: number;
};

export function groupOutput(row: GroupRow): ContactGroupOutput {
  return {
    groupid: row.id,
    group_name: row.name,
    deptid: row.deptId,
    isdefault: toFlag(row.isDefault),
    add_date: row.createdAt,
    contacts_count: row.contactsCount,
  };
}

const inCompany = (companyId: number, groupId: number) =>
  and(eq(contactGroups.id, groupId), eq(contactGroups.companyId, companyId));

/**
 * The guard of every write below: group `groupId` is (still) in department `deptId` of the company.
 * Aliased, because it runs inside statements on contact_groups itself.
 */
const groupIsIn = (companyId: number, groupId: number, deptId: number) =>
  sql`EXISTS (SELECT 1 FROM contact_groups AS g WHERE g.id = ${groupId} AND g.company_id = ${companyId} AND g.dept_id = ${deptId})`;

function duplicateName(name: string) {
  return conflict(`A contact group named "${echo(name)}" already exists in this department`);
}

/** One batch: a duplicate name is 409; a second default or a department gone meanwhile is a lost race. */
const writeGroup = (db: Db, name: string | undefined, statements: BatchItem<"sqlite">[]) =>
  writeBatch(db, statements, "contact group", {
    marker: "contact_groups.name_key",
    error: () => duplicateName(name ?? ""),
  });
const lostGroupRace = () => lostRace("contact group");

/** The page and total of a list request, unexecuted (tests read their query plans). */
export function groupListQueries(db: Db, companyId: number, query: ListGroupsInput) {
  const conditions: SQL[] = [eq(contactGroups.companyId, companyId)];
  if (query.deptid !== undefined) conditions.push(eq(contactGroups.deptId, query.deptid));
  // instr() on the folded key: case-insensitive for every script, and no LIKE pattern limit.
  if (query.q) conditions.push(sql`instr(${contactGroups.nameKey}, ${nameKey(query.q)}) > 0`);
  const where = and(...conditions);
  // With `q` the total stops counting after the cap + 1 matches.
  const cap = query.q ? MAX_EXACT_SEARCH_TOTAL : Number.POSITIVE_INFINITY;
  return {
    page: db
      .select(groupColumns)
      .from(contactGroups)
      .where(where)
      .orderBy(asc(contactGroups.id))
      .limit(query.limit)
      .offset(query.offset),
    total: countMatches(db, contactGroups, where, cap),
    cap,
  };
}

export async function listGroups(db: Db, companyId: number, query: ListGroupsInput) {
  return cappedListPage(db, query, groupListQueries(db, companyId, query));
}

export async function getGroup(db: Db, companyId: number, groupId: number): Promise<GroupRow> {
  const row = await db.select(groupColumns).from(contactGroups).where(inCompany(companyId, groupId)).get();
  if (!row) throw notFound("Contact group");
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

const invalidGroupDepartment = (deptId: number) =>
  badRequest(`The group's department ${deptId} is not a valid department of this company`);

/**
 * Makes group `groupId` the only default of department `deptId`: unset the others, set it. Both
 * statements require the group to be in that department at the moment they run, so a group that
 * was deleted or moved meanwhile changes nothing (the department keeps its default). The second
 * returns the group's id when it took effect.
 */
function makeDefaultStatements(db: Db, companyId: number, groupId: number, deptId: number) {
  return [
    db
      .update(contactGroups)
      .set({ isDefault: 0 })
      .where(
        and(
          eq(contactGroups.companyId, companyId),
          eq(contactGroups.deptId, deptId),
          eq(contactGroups.isDefault, 1),
          ne(contactGroups.id, groupId),
          groupIsIn(companyId, groupId, deptId),
        ),
      ),
    db
      .update(contactGroups)
      .set({ isDefault: 1 })
      .where(and(inCompany(companyId, groupId), eq(contactGroups.deptId, deptId)))
      .returning({ id: contactGroups.id }),
  ] as const;
}

export async function createGroup(db: Db, companyId: number, input: CreateGroupInput): Promise<GroupRow> {
  const deptId = await departmentInCompany(db, companyId, input.deptid);
  const isDefault = input.isdefault ?? 0;
  const insert = db
    .insert(contactGroups)
    .values({ companyId, deptId, name: input.group_name, nameKey: nameKey(input.group_name), isDefault })
    .returning({ id: contactGroups.id });
  // One transaction: a new default replaces the department's current one.
  const unsetDefault = db
    .update(contactGroups)
    .set({ isDefault: 0 })
    .where(
      and(eq(contactGroups.companyId, companyId), eq(contactGroups.deptId, deptId), eq(contactGroups.isDefault, 1)),
    );
  const results = await writeGroup(db, input.group_name, isDefault === 1 ? [unsetDefault, insert] : [insert]);
  const [created] = results[results.length - 1] as Array<{ id: number }>;
  return getGroup(db, companyId, created!.id);
}

export async function updateGroup(
  db: Db,
  companyId: number,
  groupId: number,
  input: UpdateGroupInput,
): Promise<GroupRow> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getGroup(db, companyId, groupId);
    const targetDept =
      input.deptid !== undefined ? await departmentInCompany(db, companyId, input.deptid) : current.deptId;
    const moving = targetDept !== current.deptId;
    if (current.isDefault === 1 && input.isdefault === 0) {
      throw badRequest("A department keeps exactly one default group: make another group the default instead");
    }
    if (current.isDefault === 1 && moving) {
      throw badRequest("The default group cannot move to another department: make another group the default first");
    }
    if (input.isdefault === 1 && !moving && !(await selectDepartment(db, companyId, current.deptId).get())) {
      // Like PATCH .../default: only a group of a valid department can become its default.
      throw invalidGroupDepartment(current.deptId);
    }
    const changes: Partial<typeof contactGroups.$inferInsert> = {};
    if (input.group_name !== undefined) {
      changes.name = input.group_name;
      changes.nameKey = nameKey(input.group_name);
    }
    if (moving) changes.deptId = targetDept;

    // Every statement re-checks what was read: the group is still where it was (and, when it
    // moves, still not a default); later statements check the state the earlier ones left.
    const statements: BatchItem<"sqlite">[] = [];
    let check: number | undefined;
    if (Object.keys(changes).length > 0) {
      check = statements.length;
      statements.push(
        db
          .update(contactGroups)
          .set(changes)
          .where(
            and(
              inCompany(companyId, groupId),
              eq(contactGroups.deptId, current.deptId),
              moving ? eq(contactGroups.isDefault, 0) : undefined,
            ),
          )
          .returning({ id: contactGroups.id }),
      );
    }
    if (moving) {
      // A group's contacts live in the group's department, so they move with it.
      statements.push(
        db
          .update(contacts)
          .set({ deptId: targetDept, updatedAt: sql`CURRENT_TIMESTAMP` })
          .where(
            and(
              eq(contacts.companyId, companyId),
              eq(contacts.groupId, groupId),
              groupIsIn(companyId, groupId, targetDept),
            ),
          ),
      );
    }
    if (input.isdefault === 1) {
      check ??= statements.length + 1;
      statements.push(...makeDefaultStatements(db, companyId, groupId, targetDept));
    }
    if (statements.length === 0) return current;
    const results = await writeGroup(db, input.group_name, statements);
    if ((results[check!] as unknown[]).length > 0) return getGroup(db, companyId, groupId);
  }
  throw lostGroupRace();
}

export async function deleteGroup(db: Db, companyId: number, groupId: number): Promise<void> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const group = await getGroup(db, companyId, groupId);
    if (group.isDefault === 1) {
      throw badRequest("The default contact group cannot be deleted: make another group the default first");
    }
    // Both statements require the group to be still there and still not the default.
    const stillDeletable = and(inCompany(companyId, groupId), eq(contactGroups.isDefault, 0));
    const defaultGroup = db
      .select({ id: contactGroups.id })
      .from(contactGroups)
      .where(
        and(
          eq(contactGroups.companyId, companyId),
          eq(contactGroups.deptId, group.deptId),
          eq(contactGroups.isDefault, 1),
        ),
      );
    const [, deleted] = await writeGroup(db, undefined, [
      // Its contacts are kept: they move to the department's default group, or to no group.
      db
        .update(contacts)
        .set({ groupId: sql`(${defaultGroup})`, updatedAt: sql`CURRENT_TIMESTAMP` })
        .where(
          and(
            eq(contacts.companyId, companyId),
            eq(contacts.groupId, groupId),
            sql`EXISTS (SELECT 1 FROM contact_groups AS g WHERE g.id = ${groupId} AND g.company_id = ${companyId} AND g.is_default = 0)`,
          ),
        ),
      db.delete(contactGroups).where(stillDeletable).returning({ id: contactGroups.id }),
    ]);
    if ((deleted as unknown[]).length > 0) return;
  }
  throw lostGroupRace();
}

export async function makeDefaultGroup(db: Db, companyId: number, groupId: number): Promise<GroupRow> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const row = await db
      .select({ id: contactGroups.id, deptId: contactGroups.deptId, validDept: departments.id })
      .from(contactGroups)
      .leftJoin(departments, and(eq(departments.id, contactGroups.deptId), eq(departments.companyId, companyId)))
      .where(inCompany(companyId, groupId))
      .get();
    if (!row) throw notFound("Contact group");
    if (row.validDept === null) throw invalidGroupDepartment(row.deptId);
    const [, set] = await writeGroup(db, undefined, [...makeDefaultStatements(db, companyId, groupId, row.deptId)]);
    if ((set as unknown[]).length > 0) return getGroup(db, companyId, groupId);
  }
  throw lostGroupRace();
}
