import { and, asc, eq, gte, inArray, isNotNull, isNull, lte, ne, sql, type SQL } from "drizzle-orm";
import { isUniqueViolation, type Db } from "../../db/client";
import { selectDepartment } from "../../db/departments";
import { MAX_ATTEMPTS, lostRace } from "../../db/guarded";
import { cappedMeta, countMatches, countUpTo, listPage } from "../../db/pages";
import { alias } from "drizzle-orm/sqlite-core";
import {
  companies,
  contacts,
  departments,
  documentTypeFields,
  documentTypes,
  folders,
  itemFieldValues,
  itemRenewals,
  itemReminderViews,
  items,
  reminderSync,
  type ItemRow,
} from "../../db/schema";
import { echo } from "../../lib/echo";
import { badRequest, conflict, notFound } from "../../lib/errors";
import { MAX_EXACT_SEARCH_TOTAL, itemStates, matchExpression, searchWords } from "../../lib/search";
import { nameKey } from "../../lib/text-key";
import { DEFAULT_TIME_ZONE, addYears, isCalendarDate, todayIn } from "../../lib/time";
import {
  snapshotQueries,
  toSnapshots,
  type SnapshotResults,
  type Snapshots,
} from "../../company-clock/handoff/snapshots";
import { COMPANY_SETTINGS } from "../../company-clock/handoff/worker";
import { trustedReminders } from "../../company-clock/handoff/views";
import { folderPathWrites } from "../folders";
import { sequenceInCompany } from "../reminder-sequences";
import { deleteItemTags, tagsOfItems } from "../tags";
import { periodRange } from "../../lib/period";
import { ruleState } from "../../db/rule-state";
import { reanchorOnNewDate, recurrenceView, renewalWrites, ruleColumns, type RenewalReason } from "./recurrence";
import { insertItems, insertItemsQuery, itemRowOf, newItemRow, type NewItem } from "./writer";
import { occurrenceState } from "./actions";
import type { Statement } from "../../db/commit";
import { parseRuleState, renewalDate } from "../../lib/recurrence";
import type { CreateItemInput, ItemDetail, ItemListEntry, ListItemsInput, UpdateItemInput } from "../../schemas/items";
import { decodeCursor, encodeCursor, invalidCursor } from "../../lib/cursor";

/** Filtered totals are counted up to this many matches; beyond it `meta.total_exact` is false. */
export const MAX_EXACT_TOTAL = 10_000;

const itemColumns = {
  id: items.id,
  title: items.title,
  itemType: items.itemType,
  documentTypeId: items.documentTypeId,
  documentTypeName: documentTypes.name,
  deptId: items.deptId,
  expiryDate: items.expiryDate,
  status: items.status,
  folderId: items.folderId,
  archived: items.archived,
};
interface ItemEntryRow {
  id: number;
  title: string;
  itemType: string;
  documentTypeId: number | null;
  documentTypeName: string | null;
  deptId: number;
  expiryDate: string;
  status: string;
  folderId: number | null;
  archived: number;
}

export function itemEntry(row: ItemEntryRow): ItemListEntry {
  return {
    item_id: row.id,
    title: row.title,
    item_type: row.itemType as ItemListEntry["item_type"],
    document_type: row.documentTypeName ?? "",
    document_type_id: row.documentTypeId ?? 0,
    deptid: row.deptId,
    expiry_date: row.expiryDate,
    status: row.status as ItemListEntry["status"],
    folder_id: row.folderId ?? 0,
    active: row.archived === 0,
  };
}

const inCompany = (companyId: number, itemId: number) => and(eq(items.id, itemId), eq(items.companyId, companyId));

function selectEntries(db: Db) {
  return db.select(itemColumns).from(items).leftJoin(documentTypes, eq(documentTypes.id, items.documentTypeId));
}

// ---- cursors: the (expiry_date, item_id) of the last row, for keyset pagination ----

const itemCursor = (row: { expiryDate: string; id: number }) => encodeCursor(row.expiryDate, row.id);

function itemCursorKey(cursor: string): { date: string; id: number } {
  const match = decodeCursor(cursor, /^(\d{4}-\d{2}-\d{2})~([1-9]\d{0,15})$/);
  if (!isCalendarDate(match[1]!)) throw invalidCursor();
  return { date: match[1]!, id: Number(match[2]) };
}

/** The company's time zone (settings), for "today". */
async function companyTimeZone(db: Db, companyId: number): Promise<string> {
  const row = await db
    .select({ zone: sql<string | null>`json_extract(${companies.settings}, '$.timezone')` })
    .from(companies)
    .where(eq(companies.id, companyId))
    .get();
  return row?.zone || DEFAULT_TIME_ZONE;
}

/** The list's filters, without its window (limit, offset, cursor): what the export takes too. */
export type ItemFilterInput = Omit<ListItemsInput, "limit" | "offset" | "cursor">;

/**
 * The WHERE of the item list and the item export: the company, `archived` and every filter.
 * `filtered` is false when only the company and `archived` remain (the list's total is then a
 * counter). `today` is the company's today, needed only for `period`. Null when `q` has no
 * searchable word (nothing matches).
 */
export function itemFilter(
  companyId: number,
  query: ItemFilterInput,
  today: string,
): { where: SQL; filtered: boolean } | null {
  const conditions: SQL[] = [eq(items.companyId, companyId)];
  let filtered = false;
  const filter = (condition: SQL | undefined) => {
    if (condition) conditions.push(condition);
    filtered = true;
  };
  if (query.archived !== "any") conditions.push(eq(items.archived, query.archived === "true" ? 1 : 0));
  if (query.status !== "any") filter(eq(items.status, query.status));
  if (query.item_type !== "all") filter(eq(items.itemType, query.item_type));
  if (query.deptid !== undefined) filter(eq(items.deptId, query.deptid));
  if (query.document_type_id !== undefined) filter(eq(items.documentTypeId, query.document_type_id));
  if (query.contact_id !== undefined) filter(eq(items.contactId, query.contact_id));
  if (query.folder_id !== undefined)
    filter(query.folder_id === 0 ? isNull(items.folderId) : eq(items.folderId, query.folder_id));
  if (query.external_id !== undefined) filter(eq(items.externalId, query.external_id));
  if (query.recurring !== undefined)
    filter(query.recurring === "true" ? isNotNull(items.recurEvery) : isNull(items.recurEvery));
  // items_company_ack_date_idx's expression, as written there.
  if (query.acknowledged !== undefined)
    filter(sql`(ack_epoch IS schedule_epoch) = ${query.acknowledged === "true" ? 1 : 0}`);
  if (query.period) {
    const range = periodRange(query.period, today);
    filter(range.from ? gte(items.expiryDate, range.from) : undefined);
    if (range.to) conditions.push(lte(items.expiryDate, range.to));
    if (range.pendingOnly && query.status === "any") conditions.push(eq(items.status, "pending"));
  }
  if (query.q) {
    // The export's filter (the list with q has its own plan: itemSearchQueries).
    const match = matchExpression(companyId, query.q, itemStates(query.archived));
    if (!match) return null;
    filter(sql`${items.id} IN (SELECT rowid & ${SEARCH_ID_MASK} FROM items_search WHERE items_search MATCH ${match})`);
  }
  return { where: and(...conditions)!, filtered };
}

/** Rows after `after` in the list's order (expiry_date, item_id): the keyset of cursors and export pages. */
export const itemsAfter = (after: { date: string; id: number }) =>
  sql`(${items.expiryDate}, ${items.id}) > (${after.date}, ${after.id})`;

/** The low 32 bits of an items_search rowid: the item id (docs/search.md). */
const SEARCH_ID_MASK = sql.raw("4294967295");
/** The items_search rowid of (date, id): the list's order, as the search triggers compute it. */
const searchKey = (date: string, id: number) => sql`(((CAST(julianday(${date}) AS INTEGER) - 2415020) << 32) | ${id})`;

/**
 * The page and total queries of a list request, unexecuted (tests read their query plans).
 * `today` is the company's today, needed only for `period`. Null when `q` has no searchable word.
 */
export function itemListQueries(db: Db, companyId: number, query: ListItemsInput, today: string) {
  if (query.q) return itemSearchQueries(db, companyId, query, today);
  const filter = itemFilter(companyId, query, today);
  if (!filter) return null;
  const { where, filtered } = filter;
  let pageWhere: SQL | undefined = where;
  if (query.cursor) {
    if (query.offset !== 0) throw badRequest("offset must be 0 when cursor is given");
    pageWhere = and(where, itemsAfter(itemCursorKey(query.cursor)));
  }
  const unfilteredTotal =
    query.archived === "true"
      ? companies.itemsArchived
      : query.archived === "false"
        ? sql<number>`${companies.documentsUsed} - ${companies.itemsArchived}`
        : companies.documentsUsed;
  // The page's ids come from the index alone (ordered, skipping `offset` entries without
  // touching rows); only those rows are read and joined.
  const ids = db
    .select({ id: items.id })
    .from(items)
    .where(pageWhere)
    .orderBy(asc(items.expiryDate), asc(items.id))
    .limit(query.limit)
    .offset(query.offset);
  return {
    ids,
    page: selectEntries(db).where(inArray(items.id, ids)).orderBy(asc(items.expiryDate), asc(items.id)),
    // Unfiltered, the total is the company's trigger-maintained counters (exact); filtered, an
    // index count that stops after the cap + 1 matches.
    total: filtered
      ? countMatches(db, items, where, MAX_EXACT_TOTAL)
      : db
          .select({ n: sql<number>`${unfilteredTotal}` })
          .from(companies)
          .where(eq(companies.id, companyId)),
    cap: filtered ? MAX_EXACT_TOTAL : Number.POSITIVE_INFINITY,
  };
}

/**
 * A list with `q`: the company's matches stream from items_search in list order (its rowid is
 * (expiry_date, id)), `archived` picks the postings (every token carries the item's state), and only the other filters
 * read the item row. A page stops after its `limit` hits and the total after the cap + 1
 * matches, whatever the term (docs/search.md).
 */
function itemSearchQueries(db: Db, companyId: number, query: ListItemsInput, today: string) {
  const match = matchExpression(companyId, query.q!, itemStates(query.archived));
  if (!match) return null;
  const rest = itemFilter(companyId, { ...query, q: undefined, archived: "any" }, today)!;
  const matching = sql`items_search MATCH ${match}`;
  let pageMatching = matching;
  if (query.cursor) {
    if (query.offset !== 0) throw badRequest("offset must be 0 when cursor is given");
    const after = itemCursorKey(query.cursor);
    pageMatching = sql`${matching} AND items_search.rowid > ${searchKey(after.date, after.id)}`;
  }
  const onItem = sql`${items.id} = (items_search.rowid & ${SEARCH_ID_MASK})`;
  // Only `q` and `archived`: the ids come from the postings alone, so an offset skips postings,
  // not rows. Other filters need the row of every match they test.
  const ids = rest.filtered
    ? db
        .select({ id: items.id })
        .from(sql`items_search`)
        .innerJoin(items, onItem)
        .where(and(pageMatching, rest.where))
        .orderBy(sql`items_search.rowid`)
        .limit(query.limit)
        .offset(query.offset)
    : db
        .select({ id: sql<number>`items_search.rowid & ${SEARCH_ID_MASK}` })
        .from(sql`items_search`)
        .where(pageMatching)
        .orderBy(sql`items_search.rowid`)
        .limit(query.limit)
        .offset(query.offset);
  // Only `q` and `archived`: the matches are counted in the index alone.
  const firstMatches = rest.filtered
    ? db.select({ one: sql`1` }).from(sql`items_search`).innerJoin(items, onItem).where(and(matching, rest.where))
    : db.select({ one: sql`1` }).from(sql`items_search`).where(matching);
  return {
    ids,
    // The ids are the company's already; the check on the row is `+company_id` so that the
    // planner reads the rows by id, not the company's whole index (as `company_id = ?` made it).
    page: selectEntries(db)
      .where(and(sql`+${items.companyId} = ${companyId}`, inArray(items.id, ids)))
      .orderBy(asc(items.expiryDate), asc(items.id)),
    total: countUpTo(db, firstMatches, MAX_EXACT_SEARCH_TOTAL),
    cap: MAX_EXACT_SEARCH_TOTAL,
  };
}

export async function listItems(db: Db, companyId: number, query: ListItemsInput) {
  const today = query.period ? todayIn(await companyTimeZone(db, companyId)) : "";
  const queries = itemListQueries(db, companyId, query, today);
  if (!queries)
    return {
      rows: [],
      meta: { total: 0, limit: query.limit, offset: query.offset, total_exact: true, next_cursor: null },
    };
  const result = await listPage(db, query, queries.page, queries.total);
  const last = result.rows[result.rows.length - 1];
  return {
    rows: result.rows,
    meta: {
      ...cappedMeta(result.meta, queries.cap),
      next_cursor: last && result.rows.length === query.limit ? itemCursor(last) : null,
    },
  };
}

/** Reads an item's reminders from the company's Durable Object (`syncFirst`: apply the item's D1 state first). */
export type RemindersLoader = (syncFirst: boolean) => Promise<ItemDetail["reminders"]>;

const zoneSync = alias(reminderSync, "zone_sync");

/**
 * The item row with, by primary key, its reminder view and the outbox rows (the item's, the
 * company settings') the view is checked against (src/company-clock/handoff/views.ts `trustedReminders`).
 */
export function itemDetailQuery(db: Db, companyId: number, itemId: number) {
  return db
    .select({
      ...itemColumns,
      notes: items.notes,
      contactId: items.contactId,
      seqId: items.seqId,
      createdAt: items.createdAt,
      externalId: items.externalId,
      ruleState: sql<string>`${ruleState}`.as("rule_state"),
      epoch: items.scheduleEpoch,
      ackEpoch: items.ackEpoch,
      acknowledgement: items.acknowledgement,
      snoozeEpoch: items.snoozeEpoch,
      snoozedUntil: items.snoozedUntil,
      // The company's time zone, only for a snoozed item (whether its snooze date has passed).
      snoozeZone: sql<string | null>`CASE WHEN ${items.snoozeEpoch} = ${items.scheduleEpoch}
        THEN (SELECT json_extract(c.settings, '$.timezone') FROM companies AS c WHERE c.id = ${items.companyId}) END`.as(
        "snooze_zone",
      ),
      // Aliased: a batch maps its rows by column name, and three of these tables have a `version`.
      syncVersion: sql<number | null>`${reminderSync.version}`.as("sync_version"),
      syncedVersion: sql<number | null>`${reminderSync.syncedVersion}`.as("sync_synced_version"),
      zoneVersion: sql<number | null>`${zoneSync.version}`.as("zone_version"),
      zoneSyncedVersion: sql<number | null>`${zoneSync.syncedVersion}`.as("zone_synced_version"),
      viewReminders: sql<string | null>`${itemReminderViews.reminders}`.as("view_reminders"),
      viewVersion: sql<number | null>`${itemReminderViews.version}`.as("view_version"),
      viewZoneVersion: sql<number | null>`${itemReminderViews.zoneVersion}`.as("view_zone_version"),
      viewStaleAt: sql<number | null>`${itemReminderViews.staleAt}`.as("view_stale_at"),
    })
    .from(items)
    .leftJoin(documentTypes, eq(documentTypes.id, items.documentTypeId))
    .leftJoin(reminderSync, and(eq(reminderSync.companyId, companyId), eq(reminderSync.itemId, items.id)))
    .leftJoin(zoneSync, and(eq(zoneSync.companyId, companyId), eq(zoneSync.itemId, COMPANY_SETTINGS)))
    .leftJoin(
      itemReminderViews,
      and(eq(itemReminderViews.companyId, companyId), eq(itemReminderViews.itemId, items.id)),
    )
    .where(inCompany(companyId, itemId));
}

export async function getItem(
  db: Db,
  companyId: number,
  itemId: number,
  loadReminders: RemindersLoader,
): Promise<ItemDetail> {
  const [[row], tagRows, renewals, fieldValues] = await db.batch([
    itemDetailQuery(db, companyId, itemId),
    tagsOfItems(db, companyId, [itemId]),
    db
      .select({
        previous_date: itemRenewals.previousDate,
        new_date: itemRenewals.newDate,
        renewed_at: itemRenewals.renewedAt,
        reason: sql<RenewalReason>`${itemRenewals.reason}`,
      })
      .from(itemRenewals)
      .where(and(eq(itemRenewals.itemId, itemId), eq(itemRenewals.companyId, companyId)))
      .orderBy(asc(itemRenewals.id)),
    db
      .select({
        autonum: documentTypeFields.id,
        field_name: documentTypeFields.fieldName,
        value: itemFieldValues.value,
      })
      .from(itemFieldValues)
      .innerJoin(documentTypeFields, eq(documentTypeFields.id, itemFieldValues.fieldId))
      .where(and(eq(itemFieldValues.itemId, itemId), eq(itemFieldValues.companyId, companyId)))
      .orderBy(asc(documentTypeFields.position), asc(documentTypeFields.id)),
  ]);
  if (!row) throw notFound("Item");
  // The D1 view when it can be trusted; otherwise the Durable Object, which applies a change it
  // has not seen yet (a failed sync) first, and writes the view for the next read.
  const reminders =
    trustedReminders<ItemDetail["reminders"]>(row, Date.now()) ??
    (await loadReminders(row.syncVersion === null || row.syncVersion > (row.syncedVersion ?? 0)));
  return {
    ...itemEntry(row),
    tags: tagRows.map((t) => t.name),
    reminders,
    notes: row.notes,
    contact_id: row.contactId ?? 0,
    seqid: row.seqId ?? 0,
    renewals: renewals.map((r) => ({ ...r, automatic: r.reason !== "manual" })),
    add_date: row.createdAt,
    external_id: row.externalId,
    fields: fieldValues,
    ...recurrenceView(row.ruleState),
    ...occurrenceState(row, () => row.snoozeZone || DEFAULT_TIME_ZONE),
  };
}

// ---- references: ids of the company, checked when read and again inside the write ----

interface Refs {
  deptId?: number;
  documentTypeId?: number | null;
  folderId?: number | null;
  contactId?: number | null;
}

/** `EXISTS` a row `id` of `table` in the company (also the calendar feeds' filter check). */
export const refExists = (
  table: typeof departments | typeof documentTypes | typeof folders | typeof contacts,
  companyId: number,
  id: number,
) => sql`EXISTS (SELECT 1 FROM ${table} WHERE ${table.id} = ${id} AND ${table.companyId} = ${companyId})`;

/** Every reference the write sets still exists in the company (re-checked by the statement itself). */
function refsHold(companyId: number, refs: Refs): SQL {
  const checks: SQL[] = [sql`1`];
  if (refs.deptId) checks.push(refExists(departments, companyId, refs.deptId));
  if (refs.documentTypeId) checks.push(refExists(documentTypes, companyId, refs.documentTypeId));
  if (refs.folderId) checks.push(refExists(folders, companyId, refs.folderId));
  if (refs.contactId) checks.push(refExists(contacts, companyId, refs.contactId));
  return and(...checks)!;
}

/** Reads the given references in one round trip; 400 naming the first that is not in the company. */
async function resolveRefs(
  db: Db,
  companyId: number,
  given: {
    deptid?: number;
    document_type_id?: number;
    document_type?: string;
    folder_id?: number;
    contact_id?: number;
  },
) {
  const none = db.select({ id: sql<number>`0`, deptId: sql<number>`0` }).from(companies).where(sql`0`);
  const [[dept], [type], [folder], [contact]] = await db.batch([
    selectDepartment(db, companyId, given.deptid),
    given.document_type_id !== undefined || given.document_type !== undefined
      ? db
          .select({ id: documentTypes.id, deptId: documentTypes.deptId })
          .from(documentTypes)
          .where(
            and(
              eq(documentTypes.companyId, companyId),
              given.document_type_id !== undefined
                ? eq(documentTypes.id, given.document_type_id)
                : eq(documentTypes.nameKey, nameKey(given.document_type!)),
            ),
          )
      : none,
    given.folder_id
      ? db
          .select({ id: folders.id, deptId: folders.deptId })
          .from(folders)
          .where(and(eq(folders.id, given.folder_id), eq(folders.companyId, companyId)))
      : none,
    given.contact_id
      ? db
          .select({ id: contacts.id, deptId: contacts.deptId })
          .from(contacts)
          .where(and(eq(contacts.id, given.contact_id), eq(contacts.companyId, companyId)))
      : none,
  ]);
  if (given.deptid !== undefined && !dept) throw badRequest(`deptid ${given.deptid} does not exist`);
  if (given.document_type_id !== undefined && !type)
    throw badRequest(`document_type_id ${given.document_type_id} does not exist`);
  if (given.document_type !== undefined && given.document_type_id === undefined && !type) {
    throw badRequest(`document_type "${echo(given.document_type)}" is not a document type of the company`);
  }
  if (given.document_type !== undefined && given.document_type_id !== undefined) {
    const named = await db
      .select({ id: documentTypes.id })
      .from(documentTypes)
      .where(and(eq(documentTypes.companyId, companyId), eq(documentTypes.nameKey, nameKey(given.document_type))))
      .get();
    if (named?.id !== given.document_type_id)
      throw badRequest("document_type and document_type_id name different document types");
  }
  if (given.folder_id && !folder) throw badRequest(`folder_id ${given.folder_id} does not exist`);
  if (given.contact_id && !contact) throw badRequest(`contact_id ${given.contact_id} does not exist`);
  return { dept, type, folder, contact };
}

// ---- writes ----

/** A write that may set external_id: another item of the company holding it is a 409. */
async function externalIdUnique<T>(externalId: string | null | undefined, write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (externalId && isUniqueViolation(err, "items.external_id"))
      throw conflict(`external_id "${echo(externalId)}" belongs to another item of the company`);
    throw err;
  }
}

/** A write's row and the reminder snapshot its batch read after it (for `syncReminders`; null when nothing was written). */
export interface Written<R> {
  row: R;
  snapshot: Snapshots | null;
}

/**
 * Runs `write` (after the `before` statements of the same batch) with the reminder snapshot of
 * `itemIds`, or of the row it inserts, in the same batch: one round trip.
 */
async function withSnapshot<R>(
  db: Db,
  companyId: number,
  itemIds: number[] | "inserted",
  write: Statement,
  before: Statement[] = [],
  rowOf: (result: unknown) => R | undefined = (rows) => (rows as R[])[0],
): Promise<Written<R | undefined>> {
  const results = await db.commit([...before, write, ...snapshotQueries(db.d1, companyId, itemIds)]);
  const [written, ...snapshot] = results.slice(before.length) as unknown as [unknown, ...SnapshotResults];
  const row = rowOf(written);
  if (!row) return { row, snapshot: null };
  const read = toSnapshots(snapshot);
  // Only a snapshot of exactly the rows written is handed on (else the object reads its own).
  const expected = itemIds === "inserted" ? [(row as { id?: number }).id] : itemIds;
  return { row, snapshot: read.items.map((i) => i.itemId).join() === expected.join() ? read : null };
}

/**
 * The new item of a POST, for the one writer of item rows (src/records/items/writer.ts). `resolved`:
 * its department and document type as read (folder_path, or a type named both ways); else the
 * statement finds them itself: the type by id or name, the department given, the type's, or the
 * company's default.
 */
function newItemOf(
  companyId: number,
  userId: number,
  input: CreateItemInput,
  resolved?: { deptId: number; documentTypeId: number | null },
): NewItem {
  const rule = input.recurrence;
  return {
    companyId,
    createdBy: userId,
    title: input.title,
    expiryDate: input.expiry_date,
    notes: input.notes,
    itemType: input.item_type,
    deptId: resolved ? resolved.deptId : input.deptid,
    documentTypeId: resolved ? (resolved.documentTypeId ?? undefined) : input.document_type_id,
    documentTypeKey: !resolved && input.document_type !== undefined ? nameKey(input.document_type) : undefined,
    folderId: input.folder_id ?? null,
    contactId: input.contact_id ?? null,
    seqId: input.seqid === undefined ? undefined : input.seqid || null,
    externalId: input.external_id ?? null,
    rule: rule
      ? {
          every: rule.every,
          unit: rule.unit,
          renewOn: rule.renew_on,
          until: rule.until ?? null,
          count: rule.count ?? null,
        }
      : null,
  };
}

/** The first row of a `RETURNING *` result, as an ItemRow. */
const insertedRow = (result: unknown) => {
  const raw = (result as D1Result<Record<string, unknown>>).results[0];
  return raw && itemRowOf(raw);
};

/**
 * The create in one statement, its references looked up inside the INSERT (no round trip before
 * it), as text and parameters. Null when that cannot be done in one statement (folder_path creates
 * folders first; document_type with document_type_id must agree).
 */
export function createItemQuery(companyId: number, userId: number, input: CreateItemInput) {
  if (input.folder_path !== undefined || (input.document_type !== undefined && input.document_type_id !== undefined))
    return null;
  return insertItemsQuery([newItemRow(newItemOf(companyId, userId, input))], { guard: "references", returning: true });
}

export async function createItem(
  db: Db,
  companyId: number,
  userId: number,
  input: CreateItemInput,
): Promise<Written<ItemRow>> {
  const inline = createItemQuery(companyId, userId, input);
  if (inline) {
    const insert = db.d1.prepare(inline.sql).bind(...inline.params);
    const { row, snapshot } = await externalIdUnique(input.external_id, () =>
      withSnapshot(db, companyId, "inserted", insert, [], insertedRow),
    );
    if (row) return { row, snapshot };
    // Refused: the lookups below find which reference (or the limit) it was, or try again.
  }
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const { dept, type } = await resolveRefs(db, companyId, input);
    const deptId = input.deptid ?? type?.deptId ?? dept?.id;
    if (!deptId) throw badRequest("The company has no default department; send deptid");
    // folder_path: its folders are created in the insert's own batch, so a request that dies
    // leaves both or neither (a key's retry then never finds folders without their item).
    const path = input.folder_path !== undefined ? folderPathWrites(db, companyId, deptId, input.folder_path) : null;
    const item = newItemOf(companyId, userId, input, { deptId, documentTypeId: type?.id ?? null });
    const insert = insertItems(db.d1, [newItemRow({ ...item, folderRequired: path !== null })], {
      guard: "references",
      returning: true,
      folder: path?.lastFolder,
    });
    const { row, snapshot } = await externalIdUnique(input.external_id, () =>
      withSnapshot(db, companyId, "inserted", insert, path?.statements, insertedRow),
    );
    if (row) return { row, snapshot };
    const company = await db
      .select({ used: companies.documentsUsed, limit: companies.documentsLimit })
      .from(companies)
      .where(eq(companies.id, companyId))
      .get();
    if (!company || company.used >= company.limit) {
      throw badRequest(
        `Document limit reached: the company may hold at most ${company?.limit ?? 0} documents (documents_limit)`,
      );
    }
    if (input.seqid && !(await db.get(sql`SELECT 1 AS found WHERE ${sequenceInCompany(companyId, input.seqid)}`))) {
      throw badRequest(`seqid ${input.seqid} is not a reminder sequence of the company`);
    }
    // A reference vanished meanwhile: resolve again (a gone one is then a 400).
  }
  throw lostRace("item");
}

export async function updateItem(
  db: Db,
  companyId: number,
  itemId: number,
  input: UpdateItemInput,
): Promise<Written<ItemRow> & { previousDate: string }> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await db
      .select({ expiryDate: items.expiryDate, title: items.title, notes: items.notes })
      .from(items)
      .where(inCompany(companyId, itemId))
      .get();
    if (!current) throw notFound("Item");
    const date = input.expiry_date ?? current.expiryDate;
    if (input.recurrence?.until && input.recurrence.until < date)
      throw badRequest(`recurrence.until must not be earlier than the item's expiry_date ${date}`);
    await resolveRefs(db, companyId, {
      document_type_id: input.document_type_id || undefined,
      folder_id: input.folder_id || undefined,
      contact_id: input.contact_id || undefined,
    });
    const changes: Partial<typeof items.$inferInsert> = {};
    if (input.title !== undefined) changes.title = input.title;
    if (input.notes !== undefined) changes.notes = input.notes;
    if (input.expiry_date !== undefined) changes.expiryDate = input.expiry_date;
    // Relative reminders follow the date only when asked to (reschedule_reminders).
    if (input.expiry_date !== undefined && input.reschedule_reminders === true)
      changes.reminderAnchor = input.expiry_date;
    if (input.item_type !== undefined) changes.itemType = input.item_type;
    if (input.folder_id !== undefined) changes.folderId = input.folder_id || null;
    if (input.document_type_id !== undefined) changes.documentTypeId = input.document_type_id || null;
    if (input.contact_id !== undefined) changes.contactId = input.contact_id || null;
    if (input.external_id !== undefined) changes.externalId = input.external_id;
    const dateChanged = input.expiry_date !== undefined && input.expiry_date !== current.expiryDate;
    if (input.recurrence !== undefined) Object.assign(changes, ruleColumns(input.recurrence, date, dateChanged));
    else if (dateChanged) changes.recurAnchor = reanchorOnNewDate(date);
    // The words come from both texts: the one not changed must still be the one read.
    const wordsHold = [sql`1`];
    if (input.title !== undefined || input.notes !== undefined) {
      changes.searchWords = searchWords(input.title ?? current.title, input.notes ?? current.notes);
      if (input.title === undefined) wordsHold.push(eq(items.title, current.title));
      if (input.notes === undefined) wordsHold.push(eq(items.notes, current.notes));
    }
    const { row, snapshot } = await externalIdUnique(input.external_id, () =>
      withSnapshot<ItemRow>(
        db,
        companyId,
        [itemId],
        db
          .update(items)
          .set({ ...changes, updatedAt: sql`CURRENT_TIMESTAMP` })
          .where(
            and(
              inCompany(companyId, itemId),
              ...wordsHold,
              input.recurrence !== undefined ? eq(items.expiryDate, current.expiryDate) : undefined,
              refsHold(companyId, {
                documentTypeId: changes.documentTypeId,
                folderId: changes.folderId,
                contactId: changes.contactId,
              }),
            ),
          )
          .returning(),
      ),
    );
    if (row) return { row, snapshot, previousDate: current.expiryDate };
  }
  throw lostRace("item");
}

async function setColumns(
  db: Db,
  companyId: number,
  itemId: number,
  changes: Partial<typeof items.$inferInsert>,
  guard?: SQL,
): Promise<Written<ItemRow | undefined>> {
  return withSnapshot<ItemRow>(
    db,
    companyId,
    [itemId],
    db
      .update(items)
      .set({ ...changes, updatedAt: sql`CURRENT_TIMESTAMP` })
      .where(and(inCompany(companyId, itemId), guard))
      .returning(),
  );
}

/** The item's date as D1 has it now (after the company clock may have renewed it). */
export async function currentDate(db: Db, companyId: number, itemId: number): Promise<string | undefined> {
  return (await db.select({ date: items.expiryDate }).from(items).where(inCompany(companyId, itemId)).get())?.date;
}

// ---- completing an occurrence (docs/recurrence.md, "Completing an occurrence") ----

/**
 * What a status change is bound to: the occurrence of the item its caller saw.
 * - `{ date }`: the item's date as the caller read it (PATCH …/status's `expiry_date`; the date of a
 *   reminder a recipient acts on). The change applies only while the item is still so dated.
 * - `"current"`: bound by other means: If-Match, whose row version the request's write carries.
 * - `"bare"`: nothing named. A completion that finds the item renewed by a completion less than
 *   RENEWAL_SETTLE_SECONDS ago is refused: it was sent with that one (or is a retry of it), and
 *   would otherwise complete the new occurrence unseen.
 */
export type OccurrenceBinding = { date: string } | "current" | "bare";

/** How long after a renewal on completion a bare completion is taken for a repeat of it (409). */
export const RENEWAL_SETTLE_SECONDS = 600;

interface Occurrence {
  state: string;
  date: string;
  /** The renewal on completion that made the current date, when it is less than RENEWAL_SETTLE_SECONDS old. */
  renewed: { from: string; secondsAgo: number } | null;
}

/** The item's rule state and the renewal on completion that led to its date, if recent (one read). */
async function occurrenceOf(db: Db, companyId: number, itemId: number): Promise<Occurrence> {
  const recent = sql<
    string | null
  >`(SELECT json_array(r.previous_date, CAST(strftime('%s', 'now') - strftime('%s', r.created_at) AS INTEGER))
    FROM item_renewals AS r WHERE r.item_id = "items"."id" AND r.company_id = ${companyId} AND r.reason = 'completed'
      AND r.new_date = "items"."expiry_date" AND r.created_at > datetime('now', ${`-${RENEWAL_SETTLE_SECONDS} seconds`})
    ORDER BY r.id DESC LIMIT 1)`;
  const row = await db.select({ state: ruleState, recent }).from(items).where(inCompany(companyId, itemId)).get();
  if (!row) throw notFound("Item");
  const renewed = row.recent ? (JSON.parse(row.recent) as [string, number]) : null;
  return {
    state: row.state,
    date: parseRuleState(row.state).date,
    renewed: renewed && { from: renewed[0], secondsAgo: Math.max(0, renewed[1]) },
  };
}

/** The 409 of a status change whose occurrence is not the item's current one; nothing was written. */
function occurrenceConflict(itemId: number, now: Occurrence, named?: string) {
  const how = `To change the occurrence ${now.date}, send "expiry_date": "${now.date}" or If-Match with the item's current ETag.`;
  if (now.renewed && (named === undefined || named === now.renewed.from)) {
    return conflict(
      `The occurrence ${now.renewed.from} is done: the item was renewed on completion to ${now.date} ${now.renewed.secondsAgo} s ago, ` +
        `and this request does not name the occurrence it is for; nothing was changed. ${how}`,
    );
  }
  if (named !== undefined && named !== now.date)
    return conflict(`Item ${itemId} is dated ${now.date}, not ${named}; nothing was changed. ${how}`);
  return conflict(
    `The item changed while its status was being changed (its rule or archived state); nothing was changed. Read it again and retry.`,
  );
}

/**
 * Marks the item completed or pending, bound to an occurrence (`binding`). `renewedTo`: the date a
 * completion renewed the item to (its rule renews on completion), else null. `onlyFromOther`: a
 * change that finds the item already in `status` (or loses to one that put it there) is 409 with
 * nothing written, instead of writing it again (a recipient's page: two clicks, one effect). Every write requires
 * the rule state read (date, rule, archived): of completions of one occurrence sent together, one
 * renews and the others are 409 naming the new date.
 */
export async function setItemStatus(
  db: Db,
  companyId: number,
  userId: number,
  itemId: number,
  status: "pending" | "completed",
  binding: OccurrenceBinding = "bare",
  options: { onlyFromOther?: boolean } = {},
): Promise<Written<ItemRow> & { renewedTo: string | null }> {
  const seen = await occurrenceOf(db, companyId, itemId);
  const named = typeof binding === "object" ? binding.date : undefined;
  if (named !== undefined && named !== seen.date) throw occurrenceConflict(itemId, seen, named);
  if (status === "completed" && binding === "bare" && seen.renewed) throw occurrenceConflict(itemId, seen);
  const lost = async () => occurrenceConflict(itemId, await occurrenceOf(db, companyId, itemId), named ?? seen.date);
  const { date, rule, archived } = parseRuleState(seen.state);
  // Archived, the rule is paused: the item is only marked completed.
  const next = status === "completed" && rule?.renewOn === "completed" && !archived ? renewalDate(rule, date) : null;
  if (next) {
    const { history, update } = renewalWrites(db, companyId, [{ itemId, from: date, to: next, state: seen.state }], {
      reason: "completed",
      userId,
    });
    const { row, snapshot } = await withSnapshot<ItemRow>(db, companyId, [itemId], update, [history]);
    if (!row) throw await lost();
    return { row, snapshot, renewedTo: next };
  }
  // onlyFromOther: the write needs the other status too, so that of two sent together only one changes it.
  const guard = options.onlyFromOther
    ? and(sql`${ruleState} = ${seen.state}`, ne(items.status, status))
    : sql`${ruleState} = ${seen.state}`;
  const { row, snapshot } = await setColumns(db, companyId, itemId, { status }, guard);
  if (!row) throw await lost();
  return { row, snapshot, renewedTo: null };
}

export async function setItemArchived(
  db: Db,
  companyId: number,
  itemId: number,
  archived: boolean,
): Promise<Written<ItemRow>> {
  const { row, snapshot } = await setColumns(db, companyId, itemId, { archived: archived ? 1 : 0 });
  if (!row) throw notFound("Item");
  return { row, snapshot };
}

/**
 * Renewal by hand: the new date must be later than the current one (default: one year later; Feb
 * 29 -> Feb 28); the item goes back to pending, the previous date joins the renewal history, and a
 * recurrence rule counts its occurrences from the new date. Both writes require the date read a
 * moment ago, so two concurrent renewals never both apply to it. `seenDate`: the date the caller
 * showed (a recipient's page); an item dated otherwise by then is 409, nothing written.
 */
export async function renewItem(
  db: Db,
  companyId: number,
  userId: number,
  itemId: number,
  requested?: string,
  seenDate?: string,
) {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await db
      .select({ expiryDate: items.expiryDate })
      .from(items)
      .where(inCompany(companyId, itemId))
      .get();
    if (!current) throw notFound("Item");
    if (seenDate !== undefined && current.expiryDate !== seenDate) {
      throw conflict(
        `Item ${itemId} is dated ${current.expiryDate}, not ${seenDate}: it was renewed or changed meanwhile; nothing was changed`,
      );
    }
    const next = requested ?? addYears(current.expiryDate, 1);
    if (next <= current.expiryDate) {
      throw badRequest(`expiry_date must be later than the item's current expiry date ${current.expiryDate}`);
    }
    const { history, update } = renewalWrites(
      db,
      companyId,
      [{ itemId, from: current.expiryDate, to: next, state: null }],
      { reason: "manual", userId },
    );
    const { row, snapshot } = await withSnapshot<ItemRow>(db, companyId, [itemId], update, [history]);
    if (row) return { row, snapshot, previousDate: current.expiryDate };
  }
  throw lostRace("item");
}

/**
 * Deletes the item (its tag links and renewal history go with it by cascade) and tags no item uses
 * any more; returns the reminder snapshot read after it (the item absent).
 */
export async function deleteItem(db: Db, companyId: number, itemId: number): Promise<Snapshots> {
  const tagStatements = deleteItemTags(db, companyId, itemId);
  const [deleted, ...rest] = await db.commit([
    db.delete(items).where(inCompany(companyId, itemId)).returning({ id: items.id }),
    ...tagStatements,
    ...snapshotQueries(db.d1, companyId, [itemId]),
  ]);
  if (deleted.length === 0) throw notFound("Item");
  return toSnapshots(rest.slice(tagStatements.length) as unknown as SnapshotResults);
}
