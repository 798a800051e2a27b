import { and, asc, eq, gt, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  contactGroups,
  contacts,
  documentTypeFields,
  documentTypes,
  itemFieldValues,
  items,
  itemTags,
  tags,
} from "../db/schema";
import { joinCsvList } from "../lib/csv";
import { nameKey } from "../lib/text-key";
import { formatDate, todayIn, type DateFormat } from "../lib/time";
import { companySettings } from "./companies";
import { contactFilter } from "./contacts";
import { itemFilter, itemsAfter } from "./items/queries";
import { parseRuleState } from "../lib/recurrence";
import { ruleState } from "../db/rule-state";
import { ruleView } from "./items/recurrence";
import { RULE_KEYS } from "../lib/recurrence";
import {
  CONTACT_COLUMNS,
  FIELD_PREFIX,
  ITEM_COLUMNS,
  ITEM_LAST_COLUMN,
  type ContactExportRecord,
  type ExportContactsInput,
  type ExportItemsInput,
  type ItemExportRecord,
} from "../schemas/exports";

// Exports read a company's rows page by page in the list's order, with keyset pagination (each
// page starts after the last row of the previous one), one D1 statement per page: the page's rows
// come with everything they show (document type name, contact email, group name joined; tags and
// custom field values aggregated per row inside the same statement). Folder paths come from a map
// of the company's folders, read when a page first shows a folder it does not know.
// Budget (docs/api-notes.md, "Exports"): setup 2-4 D1 calls, then one per page (two for a page
// that shows a folder created after the map was read).

/** An export ready to stream: its header, and its records page by page (each source keeps its keyset position). */
export interface ExportSource<R> {
  /** The CSV header row (the NDJSON objects have the same keys). */
  columns: readonly string[];
  /** The company's today (YYYY-MM-DD), for the file name. */
  today: string;
  /** The next page; `last` once there is nothing after it. One D1 statement per call. */
  nextPage(): Promise<{ records: R[]; last: boolean }>;
  csv(record: R): string[];
  json(record: R): unknown;
}

/** Rows per D1 statement. Items are wider (notes up to 5,000 characters). */
export const ITEM_PAGE_ROWS = 1_000;
export const CONTACT_PAGE_ROWS = 2_000;
/** Deeper folders than this get an empty folder_path (none is: moves refuse loops, and paths are created 10 deep at most). */
const MAX_FOLDER_DEPTH = 100;

// ---- items ----

/** An item row of a page, with its tags and custom field values. */
interface ItemRecord {
  id: number;
  externalId: string | null;
  title: string;
  itemType: string;
  expiryDate: string;
  status: string;
  archived: boolean;
  documentType: string;
  folderPath: string;
  contactEmail: string;
  notes: string;
  tags: string[];
  /** The recurrence rule as the API shows it, until in the export's date_format; null for a plain item. */
  recurrence: ItemExportRecord["recurrence"];
  /** [field id, value] of the fields of the item's document type. */
  fields: Array<[number, string]>;
  addDate: string;
}

const STANDARD_KEYS = new Set<string>([...ITEM_COLUMNS, ITEM_LAST_COLUMN]);

/** The header of a custom field's column: its name, with `field:` in front when it could be taken for a standard column. */
export function fieldColumnName(fieldName: string): string {
  const key = nameKey(fieldName);
  return STANDARD_KEYS.has(key) || key.startsWith(FIELD_PREFIX) ? `${FIELD_PREFIX}${fieldName}` : fieldName;
}

/**
 * The custom fields of the document types that at least one exported item has (one EXISTS probe
 * per type of the company, on items_type_date_idx), in the types' order and each type's field order.
 */
export function exportedFields(db: Db, companyId: number, where: SQL) {
  const exportedTypes = sql`SELECT ${documentTypes.id} FROM ${documentTypes} WHERE ${documentTypes.companyId} = ${companyId}
    AND EXISTS (SELECT 1 FROM ${items} WHERE ${items.documentTypeId} = ${documentTypes.id} AND ${where})`;
  return db
    .select({ id: documentTypeFields.id, name: documentTypeFields.fieldName })
    .from(documentTypeFields)
    .where(and(eq(documentTypeFields.companyId, companyId), sql`${documentTypeFields.typeId} IN (${exportedTypes})`))
    .orderBy(asc(documentTypeFields.typeId), asc(documentTypeFields.position), asc(documentTypeFields.id));
}

/**
 * One page of the item export: up to `limit` rows after `after` in (expiry_date, item_id) order.
 * The ids come from the filter's index in order (as the list's page does); tags and custom field
 * values are aggregated per row as JSON (sorted in the Worker: no reliance on aggregate order).
 */
export function itemExportPage(
  db: Db,
  companyId: number,
  where: SQL,
  after: { date: string; id: number } | undefined,
  limit = ITEM_PAGE_ROWS,
) {
  const ids = db
    .select({ id: items.id })
    .from(items)
    .where(after ? and(where, itemsAfter(after)) : where)
    .orderBy(asc(items.expiryDate), asc(items.id))
    .limit(limit);
  return (
    db
      .select({
        id: items.id,
        externalId: items.externalId,
        title: items.title,
        itemType: items.itemType,
        expiryDate: items.expiryDate,
        status: items.status,
        archived: items.archived,
        documentType: documentTypes.name,
        folderId: items.folderId,
        contactEmail: contacts.email,
        notes: items.notes,
        createdAt: items.createdAt,
        ruleState,
        tags: sql<string>`(SELECT json_group_array(json_array(${itemTags.position}, ${itemTags.tagId}, ${tags.name})) FROM ${itemTags}
        JOIN ${tags} ON ${tags.id} = ${itemTags.tagId} WHERE ${itemTags.itemId} = ${items.id} AND ${itemTags.companyId} = ${companyId})`,
        fields: sql<string>`(SELECT json_group_array(json_array(${itemFieldValues.fieldId}, ${itemFieldValues.value})) FROM ${itemFieldValues}
        JOIN ${documentTypeFields} ON ${documentTypeFields.id} = ${itemFieldValues.fieldId}
        WHERE ${itemFieldValues.itemId} = ${items.id} AND ${itemFieldValues.companyId} = ${companyId} AND ${documentTypeFields.typeId} = ${items.documentTypeId})`,
      })
      .from(items)
      .leftJoin(documentTypes, and(eq(documentTypes.id, items.documentTypeId), eq(documentTypes.companyId, companyId)))
      .leftJoin(contacts, and(eq(contacts.id, items.contactId), eq(contacts.companyId, companyId)))
      // The ids carry the company (and every filter); a second company condition here would make
      // SQLite walk the company's rows instead of looking the page's ids up.
      .where(inArray(items.id, ids))
      .orderBy(asc(items.expiryDate), asc(items.id))
  );
}

/** Every folder of the company with its full path `A/B/C` (folder names cannot contain `/`), walked down from the top. */
async function folderPaths(db: Db, companyId: number): Promise<Array<{ id: number; path: string }>> {
  return db.all(sql`WITH RECURSIVE paths(id, path, depth) AS (
      SELECT id, name, 1 FROM folders WHERE company_id = ${companyId} AND parent_id = 0
      UNION ALL
      SELECT f.id, paths.path || '/' || f.name, paths.depth + 1 FROM folders AS f JOIN paths ON f.parent_id = paths.id
      WHERE f.company_id = ${companyId} AND paths.depth < ${MAX_FOLDER_DEPTH}
    ) SELECT id, path FROM paths`);
}

const byPosition = (a: [number, number, string], b: [number, number, string]) => a[0] - b[0] || a[1] - b[1];

export async function itemExport(
  db: Db,
  companyId: number,
  query: ExportItemsInput,
): Promise<ExportSource<ItemRecord>> {
  const settings = await companySettings(db, companyId);
  const today = todayIn(settings.timezone);
  const dateFormat: DateFormat = query.date_format ?? settings.date_format;
  const filter = itemFilter(companyId, query, today);

  // The custom field columns, known before the first row: one per field name (case-insensitive,
  // as names are unique within a type), headed by its first spelling.
  const fieldColumn = new Map<number, { column: number; name: string }>();
  const fieldHeaders: string[] = [];
  if (filter) {
    const columnOfKey = new Map<string, number>();
    for (const field of await exportedFields(db, companyId, filter.where)) {
      const key = nameKey(field.name);
      let column = columnOfKey.get(key);
      if (column === undefined) {
        column = fieldHeaders.push(fieldColumnName(field.name)) - 1;
        columnOfKey.set(key, column);
      }
      fieldColumn.set(field.id, { column, name: field.name });
    }
  }

  let folders: Map<number, string> | undefined;
  /** Paths of the page's folders; the map is read (again) when a folder is not in it, at most once per page. */
  async function resolveFolders(ids: number[]): Promise<Map<number, string>> {
    if (!folders || ids.some((id) => !folders!.has(id))) {
      folders = new Map((await folderPaths(db, companyId)).map((f) => [f.id, f.path]));
      for (const id of ids) if (!folders.has(id)) folders.set(id, "");
    }
    return folders;
  }

  /** The rule as the API shows it, until in the export's date_format. */
  const recurrenceOf = (state: string): ItemRecord["recurrence"] => {
    const { rule } = parseRuleState(state);
    return rule && { ...ruleView(rule), until: rule.until === null ? null : formatDate(rule.until, dateFormat) };
  };

  let after: { date: string; id: number } | undefined;
  let finished = !filter;
  return {
    columns: [...ITEM_COLUMNS, ...fieldHeaders, ITEM_LAST_COLUMN],
    today,
    async nextPage() {
      if (finished) return { records: [], last: true };
      const rows = await itemExportPage(db, companyId, filter!.where, after);
      const last = rows[rows.length - 1];
      if (last) after = { date: last.expiryDate, id: last.id };
      finished = rows.length < ITEM_PAGE_ROWS;
      const folderIds = [...new Set(rows.flatMap((r) => (r.folderId === null ? [] : [r.folderId])))];
      const paths = folderIds.length > 0 ? await resolveFolders(folderIds) : undefined;
      const records = rows.map(
        (r): ItemRecord => ({
          id: r.id,
          externalId: r.externalId,
          title: r.title,
          itemType: r.itemType,
          expiryDate: formatDate(r.expiryDate, dateFormat),
          status: r.status,
          archived: r.archived !== 0,
          documentType: r.documentType ?? "",
          folderPath: r.folderId === null ? "" : (paths?.get(r.folderId) ?? ""),
          contactEmail: r.contactEmail ?? "",
          notes: r.notes,
          tags: (JSON.parse(r.tags) as Array<[number, number, string]>).sort(byPosition).map((t) => t[2]),
          recurrence: recurrenceOf(r.ruleState),
          fields: (JSON.parse(r.fields) as Array<[number, string]>).filter(([id]) => fieldColumn.has(id)),
          addDate: r.createdAt,
        }),
      );
      return { records, last: finished };
    },
    csv(r) {
      const custom = fieldHeaders.map(() => "");
      for (const [id, value] of r.fields) custom[fieldColumn.get(id)!.column] = value;
      const archived = r.archived ? "true" : "false";
      const rule = RULE_KEYS.map((key) => String(r.recurrence?.[key] ?? ""));
      const standard = [
        String(r.id),
        r.externalId ?? "",
        r.title,
        r.itemType,
        r.expiryDate,
        r.status,
        archived,
        r.documentType,
        r.folderPath,
        r.contactEmail,
        r.notes,
        joinCsvList(r.tags),
        ...rule,
      ];
      return [...standard, ...custom, r.addDate];
    },
    json(r): ItemExportRecord {
      return {
        item_id: r.id,
        external_id: r.externalId ?? "",
        title: r.title,
        item_type: r.itemType,
        expiry_date: r.expiryDate,
        status: r.status,
        archived: r.archived,
        document_type: r.documentType,
        folder_path: r.folderPath,
        contact_email: r.contactEmail,
        notes: r.notes,
        tags: r.tags,
        recurrence: r.recurrence,
        fields: Object.fromEntries(r.fields.map(([id, value]) => [fieldColumn.get(id)!.name, value])),
        add_date: r.addDate,
      };
    },
  };
}

// ---- contacts ----

/** One page of the contact export: up to `limit` contacts after contact `after`, in contact_id order, with their group's name. */
export function contactExportPage(
  db: Db,
  companyId: number,
  conditions: SQL[],
  after: number,
  limit = CONTACT_PAGE_ROWS,
) {
  return db
    .select({
      id: contacts.id,
      firstName: contacts.firstName,
      lastName: contacts.lastName,
      email: contacts.email,
      countryCode: contacts.countryCode,
      iso: contacts.iso,
      mobileCode: contacts.mobileCode,
      phoneNumber: contacts.phoneNumber,
      groupName: contactGroups.name,
      createdAt: contacts.createdAt,
    })
    .from(contacts)
    .leftJoin(contactGroups, and(eq(contactGroups.id, contacts.groupId), eq(contactGroups.companyId, companyId)))
    .where(and(...conditions, gt(contacts.id, after)))
    .orderBy(asc(contacts.id))
    .limit(limit);
}

export async function contactExport(
  db: Db,
  companyId: number,
  query: ExportContactsInput,
): Promise<ExportSource<ContactExportRecord>> {
  const settings = await companySettings(db, companyId);
  const conditions = contactFilter(companyId, query);
  let after = 0;
  let finished = !conditions;
  return {
    columns: CONTACT_COLUMNS,
    today: todayIn(settings.timezone),
    async nextPage() {
      if (finished) return { records: [], last: true };
      const rows = await contactExportPage(db, companyId, conditions!, after);
      after = rows[rows.length - 1]?.id ?? after;
      finished = rows.length < CONTACT_PAGE_ROWS;
      const records = rows.map(
        (r): ContactExportRecord => ({
          contact_id: r.id,
          first_name: r.firstName,
          last_name: r.lastName,
          email: r.email,
          country_code: r.countryCode,
          iso: r.iso,
          mobile_code: r.mobileCode,
          phone_number: r.phoneNumber,
          group_name: r.groupName ?? "",
          add_date: r.createdAt,
        }),
      );
      return { records, last: finished };
    },
    csv: (r) => CONTACT_COLUMNS.map((column) => String(r[column])),
    json: (r) => r,
  };
}
