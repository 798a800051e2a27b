import { and, asc, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { isUniqueViolation, type Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace } from "../db/guarded";
import { cappedListPage, countMatches, countUpTo } from "../db/pages";
import { companies, contacts, items, taskCounts, tasks, users, type TaskRow } from "../db/schema";
import { badRequest, notFound } from "../lib/errors";
import { MAX_EXACT_SEARCH_TOTAL, matchExpression, searchWords } from "../lib/search";
import {
  allowedNext,
  type CreateTaskInput,
  type ListTasksInput,
  type TaskOutput,
  type TaskRef,
  type TaskStatus,
  type UpdateTaskInput,
} from "../schemas/tasks";

/** Totals of lists filtered by assignee or item are counted up to this many matches (`q`: MAX_EXACT_SEARCH_TOTAL); beyond it `meta.total_exact` is false. */
export const MAX_EXACT_TOTAL = 10_000;

/** Who is calling: the token's company, account and user. */
export interface Caller {
  companyId: number;
  accountId: number;
  userId: number;
}

export function taskOutput(row: TaskRow): TaskOutput {
  return {
    task_id: row.id,
    public_id: row.publicId,
    title: row.title,
    description: row.description,
    status: row.status as TaskOutput["status"],
    priority: row.priority as TaskOutput["priority"],
    due_at: row.dueAt,
    ownerid: row.ownerId,
    assignee_type: row.assigneeId === null ? "" : (row.assigneeType as TaskOutput["assignee_type"]),
    assignee_id: row.assigneeId ?? 0,
    item_id: row.itemId ?? 0,
    add_date: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/** `tsk_` and 20 URL-safe characters from 15 random bytes. */
export function newPublicId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(15));
  return `tsk_${btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")}`;
}

const byRef = (ref: TaskRef) => ("id" in ref ? eq(tasks.id, ref.id) : eq(tasks.publicId, ref.publicId));
const inCompany = (companyId: number, ref: TaskRef) => and(byRef(ref), eq(tasks.companyId, companyId));

// ---- list ----

/**
 * The page and total queries of a list request, unexecuted (tests read their query plans). Null
 * when `q` has no searchable word. The page's ids come from an index ending in (due_at, id), in
 * that order, skipping `offset` entries without reading rows; only the page's rows are read.
 */
export function taskListQueries(db: Db, companyId: number, query: ListTasksInput) {
  if (query.assignee_type !== undefined && !query.assignee_id) {
    throw badRequest("assignee_type filters only together with assignee_id (a user or contact id)");
  }
  const conditions: SQL[] = [eq(tasks.companyId, companyId)];
  // Beyond company and status, the total is counted (capped) instead of read from task_counts.
  let counted = false;
  if (query.status !== undefined) conditions.push(eq(tasks.status, query.status));
  if (query.assignee_id !== undefined) {
    conditions.push(query.assignee_id === 0 ? isNull(tasks.assigneeId) : eq(tasks.assigneeId, query.assignee_id));
    counted = true;
  }
  if (query.assignee_type !== undefined) conditions.push(eq(tasks.assigneeType, query.assignee_type));
  if (query.item_id !== undefined) {
    conditions.push(eq(tasks.itemId, query.item_id));
    counted = true;
  }
  if (query.q) return taskSearchQueries(db, companyId, query, conditions);
  const where = and(...conditions);
  const ids = db
    .select({ id: tasks.id })
    .from(tasks)
    .where(where)
    .orderBy(asc(tasks.dueAt), asc(tasks.id))
    .limit(query.limit)
    .offset(query.offset);
  return {
    ids,
    page: db.select().from(tasks).where(inArray(tasks.id, ids)).orderBy(asc(tasks.dueAt), asc(tasks.id)),
    // Unfiltered or by status: the trigger-maintained counters (exact, a primary-key read).
    // Otherwise an index count that stops after `cap` + 1 matches.
    total: counted
      ? countMatches(db, tasks, where, MAX_EXACT_TOTAL)
      : db
          .select({ n: sql<number>`coalesce(sum(${taskCounts.total}), 0)` })
          .from(taskCounts)
          .where(
            and(
              eq(taskCounts.companyId, companyId),
              query.status !== undefined ? eq(taskCounts.status, query.status) : undefined,
            ),
          ),
    cap: counted ? MAX_EXACT_TOTAL : Number.POSITIVE_INFINITY,
  };
}

/** The low 31 bits of a tasks_search rowid: the task id (docs/search.md). */
const SEARCH_ID_MASK = sql.raw("2147483647");

/**
 * A list with `q`: the company's matches stream from tasks_search, whose rowid is the list order
 * at minute precision ((minutes since 1900) << 31 | id). The page needs the first offset + limit
 * matches in (due_at, id) order: they are all in or before the minute of the (offset + limit)-th
 * match in rowid order, so the query reads up to the end of that minute and sorts only those.
 * A page costs about offset + limit postings (plus the tasks due in that same minute), and the
 * total stops after the cap + 1 matches, whatever the term.
 */
function taskSearchQueries(db: Db, companyId: number, query: ListTasksInput, rest: SQL[]) {
  const match = matchExpression(companyId, query.q!);
  if (!match) return null;
  const matching = sql`tasks_search MATCH ${match}`;
  const onTask = sql`${tasks.id} = (tasks_search.rowid & ${SEARCH_ID_MASK})`;
  const filtered = rest.length > 1;
  const lastMinute = filtered
    ? sql`(SELECT tasks_search.rowid >> 31 FROM tasks_search JOIN ${tasks} ON ${onTask} WHERE ${and(matching, ...rest)}
        ORDER BY tasks_search.rowid LIMIT 1 OFFSET ${query.offset + query.limit - 1})`
    : sql`(SELECT rowid >> 31 FROM tasks_search WHERE ${matching} ORDER BY rowid LIMIT 1 OFFSET ${query.offset + query.limit - 1})`;
  // Fewer matches than offset + limit: all of them.
  const bound = sql`tasks_search.rowid < coalesce((${lastMinute} + 1) << 31, 9223372036854775807)`;
  const ids = db
    .select({ id: tasks.id })
    .from(sql`tasks_search`)
    .innerJoin(tasks, onTask)
    .where(and(matching, bound, ...rest))
    .orderBy(asc(tasks.dueAt), asc(tasks.id))
    .limit(query.limit)
    .offset(query.offset);
  const firstMatches = filtered
    ? db
        .select({ one: sql`1` })
        .from(sql`tasks_search`)
        .innerJoin(tasks, onTask)
        .where(and(matching, ...rest))
    : db.select({ one: sql`1` }).from(sql`tasks_search`).where(matching);
  return {
    ids,
    page: db.select().from(tasks).where(inArray(tasks.id, ids)).orderBy(asc(tasks.dueAt), asc(tasks.id)),
    total: countUpTo(db, firstMatches, MAX_EXACT_SEARCH_TOTAL),
    cap: MAX_EXACT_SEARCH_TOTAL,
  };
}

export async function listTasks(db: Db, companyId: number, query: ListTasksInput) {
  const queries = taskListQueries(db, companyId, query);
  if (!queries) return { rows: [], meta: { total: 0, limit: query.limit, offset: query.offset, total_exact: true } };
  return cappedListPage(db, query, queries);
}

export async function getTask(db: Db, companyId: number, ref: TaskRef): Promise<TaskRow> {
  const row = await db.select().from(tasks).where(inCompany(companyId, ref)).get();
  if (!row) throw notFound("Task");
  return row;
}

// ---- references: checked when read and again inside the write ----

interface Assignee {
  type: "user" | "contact";
  id: number;
}

interface Refs {
  ownerId?: number;
  assignee?: Assignee | null;
  itemId?: number | null;
}

const userOfAccount = (accountId: number, userId: number) =>
  sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${userId} AND ${users.accountId} = ${accountId})`;
const ofCompany = (table: typeof contacts | typeof items, companyId: number, id: number) =>
  sql`EXISTS (SELECT 1 FROM ${table} WHERE ${table.id} = ${id} AND ${table.companyId} = ${companyId})`;

/** Every reference the write sets still holds: owner and user assignee in the account, contact and item in the company. */
function refsHold(caller: Caller, refs: Refs): SQL {
  const checks: SQL[] = [sql`1`];
  if (refs.ownerId) checks.push(userOfAccount(caller.accountId, refs.ownerId));
  if (refs.assignee) {
    checks.push(
      refs.assignee.type === "user"
        ? userOfAccount(caller.accountId, refs.assignee.id)
        : ofCompany(contacts, caller.companyId, refs.assignee.id),
    );
  }
  if (refs.itemId) checks.push(ofCompany(items, caller.companyId, refs.itemId));
  return and(...checks)!;
}

/** Reads the references in one round trip; 400 naming the first that is not the caller's. */
async function resolveRefs(db: Db, caller: Caller, refs: Refs): Promise<void> {
  const checks: Array<{ query: BatchItem<"sqlite">; error: string }> = [];
  const userQuery = (id: number) =>
    db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.id, id), eq(users.accountId, caller.accountId)));
  if (refs.ownerId)
    checks.push({ query: userQuery(refs.ownerId), error: `ownerid ${refs.ownerId} is not a user of the account` });
  if (refs.assignee?.type === "user") {
    checks.push({
      query: userQuery(refs.assignee.id),
      error: `assignee_id ${refs.assignee.id} is not a user of the account`,
    });
  } else if (refs.assignee?.type === "contact") {
    checks.push({
      query: db
        .select({ id: contacts.id })
        .from(contacts)
        .where(and(eq(contacts.id, refs.assignee.id), eq(contacts.companyId, caller.companyId))),
      error: `assignee_id ${refs.assignee.id} is not a contact of the company`,
    });
  }
  if (refs.itemId) {
    checks.push({
      query: db
        .select({ id: items.id })
        .from(items)
        .where(and(eq(items.id, refs.itemId), eq(items.companyId, caller.companyId))),
      error: `item_id ${refs.itemId} is not an item of the company`,
    });
  }
  if (checks.length === 0) return;
  const results = (await db.batch(
    checks.map((c) => c.query) as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]],
  )) as unknown[][];
  const missing = checks.findIndex((_, i) => results[i]!.length === 0);
  if (missing >= 0) throw badRequest(checks[missing]!.error);
}

/** The assignee a request sets: null to unassign, undefined when it does not touch it. */
function assigneeOf(input: { assignee_type?: string; assignee_id?: number }): Assignee | null | undefined {
  if (input.assignee_type === undefined && input.assignee_id === undefined) return undefined;
  if (!input.assignee_id || !input.assignee_type) return null; // the schema allows only "unassign" here
  return { type: input.assignee_type as Assignee["type"], id: input.assignee_id };
}

// ---- writes ----

export async function createTask(db: Db, caller: Caller, input: CreateTaskInput): Promise<TaskRow> {
  const refs: Refs = {
    ownerId: input.ownerid ?? caller.userId,
    assignee: assigneeOf(input) ?? null,
    itemId: input.item_id || null,
  };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    await resolveRefs(db, caller, refs);
    try {
      const [[row]] = await db.commit([
        db
          .insert(tasks)
          .select(
            (qb) =>
              qb
                .select({
                  id: sql`NULL`,
                  publicId: sql`${newPublicId()}`,
                  companyId: sql`${caller.companyId}`,
                  itemId: sql`${refs.itemId ?? null}`,
                  title: sql`${input.title}`,
                  description: sql`${input.description ?? ""}`,
                  status: sql`${input.status ?? "open"}`,
                  priority: sql`${input.priority ?? "normal"}`,
                  dueAt: sql`${input.due_at}`,
                  ownerId: sql`${refs.ownerId}`,
                  assigneeType: sql`${refs.assignee?.type ?? null}`,
                  assigneeId: sql`${refs.assignee?.id ?? null}`,
                  createdBy: sql`${caller.userId}`,
                  createdAt: sql`CURRENT_TIMESTAMP`,
                  updatedAt: sql`CURRENT_TIMESTAMP`,
                  version: sql`1`,
                  searchWords: sql`${searchWords(input.title, input.description)}`,
                })
                .from(companies)
                // Every reference, checked by the INSERT itself: one deleted since it was read writes nothing.
                .where(and(eq(companies.id, caller.companyId), refsHold(caller, refs))) as never,
          )
          .returning(),
      ]);
      if (row) return row;
    } catch (err) {
      // A public_id already taken (120 random bits: in practice never): draw another.
      if (!isUniqueViolation(err, "tasks.public_id")) throw err;
    }
    // A reference vanished meanwhile: resolve again (a gone one is then a 400).
  }
  throw lostRace("task");
}

/**
 * Applies a PATCH. The UPDATE requires the status it read (so a transition is checked against the
 * state it replaces) and every reference it sets; when it changed nothing, the task is read again
 * and the request re-validated, up to MAX_ATTEMPTS times, then 409.
 */
export async function updateTask(db: Db, caller: Caller, ref: TaskRef, input: UpdateTaskInput): Promise<TaskRow> {
  const assignee = assigneeOf(input);
  const refs: Refs = { ownerId: input.ownerid, assignee, itemId: input.item_id || null };
  const changes: Partial<typeof tasks.$inferInsert> = {};
  if (input.title !== undefined) changes.title = input.title;
  if (input.description !== undefined) changes.description = input.description;
  if (input.due_at !== undefined) changes.dueAt = input.due_at;
  if (input.status !== undefined) changes.status = input.status;
  if (input.priority !== undefined) changes.priority = input.priority;
  if (input.ownerid !== undefined) changes.ownerId = input.ownerid;
  if (assignee !== undefined) {
    changes.assigneeType = assignee?.type ?? null;
    changes.assigneeId = assignee?.id ?? null;
  }
  if (input.item_id !== undefined) changes.itemId = input.item_id || null;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await db
      .select({ id: tasks.id, status: tasks.status, title: tasks.title, description: tasks.description })
      .from(tasks)
      .where(inCompany(caller.companyId, ref))
      .get();
    if (!current) throw notFound("Task");
    const from = current.status as TaskStatus;
    if (input.status !== undefined && input.status !== from) {
      const allowed = allowedNext(from);
      if (!allowed.includes(input.status)) {
        throw badRequest(`status cannot change from ${from} to ${input.status}; allowed: ${allowed.join(", ")}`);
      }
    }
    await resolveRefs(db, caller, refs);
    // New words come from both texts: the one not sent must still be the one read.
    const words = input.title !== undefined || input.description !== undefined;
    const [[row]] = await db.commit([
      db
        .update(tasks)
        .set({
          ...changes,
          ...(words
            ? { searchWords: searchWords(input.title ?? current.title, input.description ?? current.description) }
            : {}),
          updatedAt: sql`CURRENT_TIMESTAMP`,
        })
        .where(
          and(
            eq(tasks.id, current.id),
            eq(tasks.companyId, caller.companyId),
            eq(tasks.status, from),
            refsHold(caller, refs),
            words && input.title === undefined ? eq(tasks.title, current.title) : undefined,
            words && input.description === undefined ? eq(tasks.description, current.description) : undefined,
          ),
        )
        .returning(),
    ]);
    if (row) return row;
  }
  throw lostRace("task");
}

export async function deleteTask(db: Db, companyId: number, ref: TaskRef): Promise<void> {
  const [deleted] = await db.commit([db.delete(tasks).where(inCompany(companyId, ref)).returning({ id: tasks.id })]);
  if (deleted.length === 0) throw notFound("Task");
}
