// The one writer of new item rows, shared by POST /v1/items (src/records/items/queries.ts) and the
// importer (src/imports/items.ts): every column of a new item is decided here, once. A writer
// describes each new item (`NewItem`); `newItemRow` turns it into the row's values (the defaults,
// the search words, the anchors), and `insertItems` writes any number of such rows in one
// statement, `INSERT … SELECT … FROM json_each(?)` (one bound parameter however many rows). What
// the statement looks up itself: the company's default department, reminder sequence and a
// document type named by its key. Its text is built once per shape and cached, so a request pays
// no SQL building (docs/data-layer.md).
//
// A column added to `items` fails to compile here until `NEW_ITEM` says how a new item gets it
// (src/db/json-rows.ts: the statement's shape, shared with the contacts' writer).
import { sql, type SQL } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { jsonField, jsonRowsInsert, rowOf, type ColumnsMade } from "../../db/json-rows";
import { items, type ItemRow } from "../../db/schema";
import { searchWords } from "../../lib/search";

/** A new item as a writer describes it. Absent fields take the API's defaults. */
export interface NewItem {
  companyId: number;
  createdBy: number;
  title: string;
  expiryDate: string;
  notes?: string;
  itemType?: string;
  status?: string;
  archived?: number;
  /** Absent: the document type's department, else the company's default department. */
  deptId?: number;
  /** The document type, by id or by its name key (looked up by the statement); neither: none. */
  documentTypeId?: number;
  documentTypeKey?: string;
  folderId?: number | null;
  /** The folder comes from the statement's own expression (a path the batch creates) and must be found. */
  folderRequired?: boolean;
  contactId?: number | null;
  /** Absent: the company's default sequence; null: none. */
  seqId?: number | null;
  externalId?: string | null;
  importRef?: number | null;
  rule?: { every: number; unit: string; renewOn: string; until: string | null; count: number | null } | null;
  /** The importer's place of the row among its chunk's creations (its room check); the API leaves it out. */
  nth?: number;
}

/** The values of a new item row as the statement reads them from its JSON (`$.<column name>`). */
export function newItemRow(item: NewItem): Record<string, unknown> {
  const rule = item.rule ?? null;
  return {
    company_id: item.companyId,
    dept_id: item.deptId ?? null,
    document_type_id: item.documentTypeId ?? null,
    document_type_key: item.documentTypeId === undefined ? (item.documentTypeKey ?? null) : null,
    folder_id: item.folderId ?? null,
    folder_required: item.folderRequired ? 1 : null,
    contact_id: item.contactId ?? null,
    seq_given: item.seqId === undefined ? 0 : 1,
    seq_id: item.seqId || null,
    // Relative reminders count from the item's date until a PATCH moves it with reschedule_reminders.
    reminder_anchor: item.expiryDate,
    title: item.title,
    notes: item.notes ?? "",
    item_type: item.itemType ?? "exp",
    expiry_date: item.expiryDate,
    status: item.status ?? "pending",
    archived: item.archived ?? 0,
    created_by: item.createdBy,
    external_id: item.externalId ?? null,
    import_ref: item.importRef ?? null,
    search_words: searchWords(item.title, item.notes),
    recur_every: rule?.every ?? null,
    recur_unit: rule?.unit ?? null,
    recur_renew_on: rule?.renewOn ?? null,
    recur_until: rule?.until ?? null,
    recur_count: rule?.count ?? null,
    // A rule counts its occurrences from the item's first date.
    recur_anchor: rule ? item.expiryDate : null,
    nth: item.nth ?? null,
  };
}

const field = (name: string) => jsonField(name);

/** Marks where a statement's text takes the folder's expression: the row's, or one of the caller's (`insertItemsQuery`). */
const FOLDER = "\u0001";

/** How each column of a new item is made, over `r`: the row's JSON `r.v`, its company `r.company_id`, its document type `r.type_id`. */
const NEW_ITEM: ColumnsMade<typeof items> = {
  id: null, // the table's own
  companyId: "r.company_id",
  deptId: `coalesce(${field("dept_id")}, (SELECT t.dept_id FROM document_types AS t WHERE t.id = r.type_id AND t.company_id = r.company_id),
          (SELECT d.id FROM departments AS d WHERE d.company_id = r.company_id AND d.is_default = 1))`,
  documentTypeId: "r.type_id",
  folderId: FOLDER,
  contactId: field("contact_id"),
  seqId: `CASE WHEN ${field("seq_given")} = 1 THEN ${field("seq_id")}
          ELSE (SELECT s.id FROM reminder_sequences AS s WHERE s.company_id = r.company_id AND s.is_default = 1) END`,
  reminderAnchor: field("reminder_anchor"),
  scheduleEpoch: "1",
  title: field("title"),
  notes: field("notes"),
  itemType: field("item_type"),
  expiryDate: field("expiry_date"),
  status: field("status"),
  archived: field("archived"),
  createdBy: field("created_by"),
  createdAt: "CURRENT_TIMESTAMP",
  updatedAt: "CURRENT_TIMESTAMP",
  version: "1",
  externalId: field("external_id"),
  importRef: field("import_ref"),
  searchWords: field("search_words"),
  recurEvery: field("recur_every"),
  recurUnit: field("recur_unit"),
  recurRenewOn: field("recur_renew_on"),
  recurUntil: field("recur_until"),
  recurCount: field("recur_count"),
  recurAnchor: field("recur_anchor"),
  // A new item's occurrence is neither acknowledged nor snoozed.
  ackEpoch: "NULL",
  acknowledgement: "NULL",
  snoozeEpoch: "NULL",
  snoozedUntil: "NULL",
  snoozeContactId: "NULL",
};

/** Computed from the row first: its company, and the document type it names (by id, or the company's type with its name key). */
const FIRST = {
  company_id: jsonField("company_id", "j.value"),
  type_id: `coalesce(${jsonField("document_type_id", "j.value")}, (SELECT t.id FROM document_types AS t
          WHERE t.company_id = (${jsonField("company_id", "j.value")}) AND t.name_key = ${jsonField("document_type_key", "j.value")}))`,
};
/** What the guards read besides the columns. */
const MORE = {
  nth: field("nth"),
  type_asked: `coalesce(${field("document_type_id")}, ${field("document_type_key")})`,
  folder_required: field("folder_required"),
};

/**
 * Which rows a statement writes:
 * - `references`: POST's guards, each re-checked by the statement: the company under its
 *   documents_limit, and every reference of the row in the company (its department, the document
 *   type it asked for, its folder, contact and sequence);
 * - `room`: the importer's, whose rows were checked against the company when the job read them: a
 *   row creates only while the company has room for its `nth` place among the chunk's creations.
 */
export type NewItemGuard = "references" | "room";

const GUARDS: Record<NewItemGuard, string> = {
  references: `n.dept_id IS NOT NULL
      AND EXISTS (SELECT 1 FROM departments AS d WHERE d.id = n.dept_id AND d.company_id = n.company_id)
      AND ((n.type_asked IS NULL AND n.document_type_id IS NULL)
        OR EXISTS (SELECT 1 FROM document_types AS t WHERE t.id = n.document_type_id AND t.company_id = n.company_id))
      AND (n.folder_id IS NULL OR EXISTS (SELECT 1 FROM folders AS f WHERE f.id = n.folder_id AND f.company_id = n.company_id))
      AND (n.folder_id IS NOT NULL OR n.folder_required IS NULL)
      AND (n.contact_id IS NULL OR EXISTS (SELECT 1 FROM contacts AS k WHERE k.id = n.contact_id AND k.company_id = n.company_id))
      AND (n.seq_id IS NULL OR EXISTS (SELECT 1 FROM reminder_sequences AS s WHERE s.id = n.seq_id AND s.company_id = n.company_id))
      AND EXISTS (SELECT 1 FROM companies AS c WHERE c.id = n.company_id AND c.documents_used < c.documents_limit)`,
  room: "n.nth <= (SELECT max(0, c.documents_limit - c.documents_used) FROM companies AS c WHERE c.id = n.company_id)",
};

/** The texts built so far, by guard and RETURNING: with the folder's marker, and with the row's folder in its place. */
const texts = new Map<string, { template: string; plain: string }>();
const dialect = new SQLiteAsyncDialect();

/**
 * The statement that inserts `rows` (from `newItemRow`), guarded by `guard`; `returning`: answer the
 * new rows (`itemRowOf` reads them). `folder`: the folder column as an SQL expression instead of the
 * row's (POST with folder_path: the last folder of the path its batch creates, which must then
 * exist: `folderRequired`). As text and parameters, for a D1 statement (`insertItems`) or a query plan.
 */
export function insertItemsQuery(
  rows: Array<Record<string, unknown>>,
  options: { guard: NewItemGuard; returning: boolean; folder?: SQL },
): { sql: string; params: unknown[] } {
  const json = JSON.stringify(rows);
  const key = `${options.guard}:${options.returning}`;
  let text = texts.get(key);
  if (!text) {
    const template = jsonRowsInsert(items, NEW_ITEM, {
      guard: GUARDS[options.guard],
      returning: options.returning,
      first: FIRST,
      more: MORE,
    });
    texts.set(key, (text = { template, plain: template.replace(FOLDER, field("folder_id")) }));
  }
  if (!options.folder) return { sql: text.plain, params: [json] };
  // The folder's expression binds its own parameters, before the rows' in the text.
  const [before, after] = text.template.split(FOLDER) as [string, string];
  const [middle, end] = after.split("json_each(?)") as [string, string];
  return dialect.sqlToQuery(
    sql`${sql.raw(before)}(${options.folder})${sql.raw(middle)}json_each(${json})${sql.raw(end)}`,
  );
}

/** `insertItemsQuery` as a statement of `d1`, for a commit. */
export function insertItems(d1: D1Database, ...args: Parameters<typeof insertItemsQuery>): D1PreparedStatement {
  const { sql: text, params } = insertItemsQuery(...args);
  return d1.prepare(text).bind(...params);
}

/** A row of `RETURNING *` as drizzle's ItemRow. */
export const itemRowOf = (raw: Record<string, unknown>): ItemRow => rowOf(items, raw);
