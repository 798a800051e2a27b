// Item rows of an import (docs/imports.md): checked against the company's document types,
// contacts, sequences and tags without writing; then written chunk by chunk, each chunk one D1
// batch (new items inserted, changed ones updated by external_id, unchanged ones left alone).
import { sql } from "drizzle-orm";
import { sqlText } from "../db/client";
import { splitCsvList } from "../lib/csv";
import { requiredText, optionalText } from "../lib/schemas";
import { searchWords } from "../lib/search";
import { nameKey } from "../lib/text-key";
import { RULE_COLUMNS, RULE_KEYS, ruleColumn, type RecurrenceRule, type RuleKey } from "../lib/recurrence";
import { formatDate, parseDate } from "../lib/time";
import { syncReminders } from "../company-clock/handoff/worker";
import { ensureFolderPath, folderPathSegments } from "../records/folders";
import { ruleAnchor } from "../records/items/recurrence";
import { insertItems, newItemRow, type NewItem } from "../records/items/writer";
import { ITEM_STATUSES, ITEM_TYPES, ruleValueChecks } from "../schemas/items";
import { MAX_TAGS_PER_ITEM, MAX_TAG_LENGTH } from "../schemas/tags";
import { distinctTagNames } from "../records/tags";
import {
  REF_BASE,
  RowErrors,
  booleanCell,
  cellText,
  checkCell,
  checkWith,
  chunkLead,
  fenceRefused,
  integerCell,
  lookup,
  type ImportJob,
  type ImportResource,
  type RowError,
} from "./context";
import type { RawRow } from "./parse";

/** Item columns; any other column names a custom field of the row's document type (`field:<name>` always does). */
const COLUMNS = new Set([
  "external_id",
  "title",
  "expiry_date",
  "item_type",
  "document_type",
  "folder_path",
  "contact_email",
  "contact_id",
  "seqid",
  "notes",
  "tags",
  "status",
  "archived",
  ...RULE_COLUMNS,
]);
/** Columns of an export that an import reads past (they describe, they do not set). */
const IGNORED = new Set(["item_id", "add_date"]);
/** Tags in one CSV cell: `|`-separated, `\|` and `\\` inside a name (joinCsvList, as exports write them). */
export const TAG_SEPARATOR = "|";

/** A checked row; absent fields are left as they are on an existing item, or take the API's defaults on a new one. */
export interface ItemRow {
  row: number;
  ext: string | null;
  title?: string;
  expiry?: string;
  type?: string;
  docType?: number;
  dept: number;
  folderPath?: string;
  contact?: number;
  seq?: number;
  notes?: string;
  tags?: Array<{ name: string; key: string }>;
  fields?: Array<{ id: number; value: string }>;
  status?: string;
  archived?: number;
  /** The recurrence rule: absent, the item's is left as it is; null, none. */
  rule?: ImportedRule | null;
}

type ImportedRule = Omit<RecurrenceRule, "anchor">;

interface TypeInfo {
  id: number;
  deptId: number;
  fields: Map<string, { id: number; type: string; options: string[] }>;
}

const title = requiredText("title", 200);
const notes = optionalText("notes", 5000, { multiline: true });
const externalId = requiredText("external_id", 255);
const tagName = requiredText("tag", MAX_TAG_LENGTH);
const fieldValue = optionalText("field value", 2000, { multiline: true });
const ruleChecks = ruleValueChecks(ruleColumn);
/** A JSON row may give its rule as one object, as exports and GET /v1/items/{item_id} show it. */
const RULE_OBJECT = "recurrence";

async function companyRefs(db: D1Database, companyId: number) {
  const [types, fields, sequences, dept] = await db.batch<Record<string, unknown>>([
    db.prepare("SELECT id, name_key, dept_id FROM document_types WHERE company_id = ?").bind(companyId),
    db
      .prepare(
        "SELECT id, type_id, field_key, field_type, field_data FROM document_type_fields " + "WHERE company_id = ?",
      )
      .bind(companyId),
    db.prepare("SELECT id FROM reminder_sequences WHERE company_id = ?").bind(companyId),
    db.prepare("SELECT id FROM departments WHERE company_id = ? AND is_default = 1").bind(companyId),
  ]);
  const byId = new Map<number, TypeInfo>();
  const byKey = new Map<string, TypeInfo>();
  for (const t of types!.results) {
    const info: TypeInfo = { id: Number(t.id), deptId: Number(t.dept_id), fields: new Map() };
    byId.set(info.id, info);
    byKey.set(String(t.name_key), info);
  }
  for (const f of fields!.results) {
    byId.get(Number(f.type_id))?.fields.set(String(f.field_key), {
      id: Number(f.id),
      type: String(f.field_type),
      options: String(f.field_data)
        .split("\n")
        .map((o) => o.trim()),
    });
  }
  return {
    typesById: byId,
    typesByKey: byKey,
    sequences: new Set(sequences!.results.map((s) => Number(s.id))),
    defaultDept: dept!.results[0] ? Number(dept!.results[0].id) : undefined,
  };
}

function checkField(
  errors: RowErrors,
  column: string,
  field: { type: string; options: string[] },
  raw: unknown,
  job: ImportJob,
): string | undefined {
  const text = checkCell(
    errors,
    column,
    fieldValue,
    typeof raw === "string" ? raw : typeof raw === "number" || typeof raw === "boolean" ? String(raw) : raw,
  );
  if (text === undefined || text === "") return text;
  switch (field.type) {
    case "number":
      if (!Number.isFinite(Number(text))) errors.add(column, raw, `${column} must be a number`);
      return text;
    case "date": {
      const date = parseDate(text, job.dateFormat);
      if (!date) errors.add(column, raw, `${column} must be a real date in the format ${job.dateFormat}`);
      return date ?? undefined;
    }
    case "checkbox": {
      const flag = booleanCell(errors, column, text);
      return flag === undefined ? undefined : flag ? "1" : "0";
    }
    case "select":
      if (!field.options.includes(text))
        errors.add(column, raw, `${column} must be one of: ${field.options.join(", ").slice(0, 300)}`);
      return text;
    default:
      return text;
  }
}

/** A whole-number cell: text of digits as its number (the check then names the range); anything else as it is, to be refused. */
const wholeCell = (value: unknown) =>
  typeof value === "string" && /^\s*[+-]?\d{1,15}\s*$/.test(value) ? Number(value) : value;
const trimmed = (value: unknown) => (typeof value === "string" ? value.trim() : value);

/**
 * The row's recurrence rule, checked as the API checks one: undefined when the row carries none of
 * its columns (an existing item's rule stays; CSV: the header has none; JSON: the object has no such
 * key), null when all its cells are empty or the JSON object is null (no rule). `date`: the item's date after the row (its
 * cell, else the stored one), to check until against; undefined when that is unknown (a bad cell).
 */
function ruleOfRow(
  e: RowErrors,
  raw: RawRow,
  job: ImportJob,
  date: { value: string | undefined; given: boolean },
): ImportedRule | null | undefined {
  const json = job.format !== "csv";
  const flat = RULE_COLUMNS.some((c) => raw.columns.has(c));
  if (!flat && !(json && raw.columns.has(RULE_OBJECT))) return undefined;
  const cells = new Map<RuleKey, unknown>(
    RULE_KEYS.flatMap((key) =>
      raw.cells.has(ruleColumn(key)) ? [[key, raw.cells.get(ruleColumn(key))] as const] : [],
    ),
  );
  const object = json ? raw.cells.get(RULE_OBJECT) : undefined;
  if (object !== undefined) {
    if (typeof object !== "object" || object === null || Array.isArray(object)) {
      e.add(RULE_OBJECT, object, `${RULE_OBJECT} must be an object {${RULE_KEYS.join(", ")}}, or null for no rule`);
      return undefined;
    }
    if (flat) {
      e.add(RULE_OBJECT, object, `A row gives its rule as ${RULE_OBJECT} or as ${RULE_COLUMNS.join(", ")}, not both`);
      return undefined;
    }
    for (const [key, value] of Object.entries(object)) {
      if (!(RULE_KEYS as readonly string[]).includes(key))
        e.add(
          RULE_OBJECT,
          object,
          `${RULE_OBJECT} has no key "${key.slice(0, 100)}"; its keys: ${RULE_KEYS.join(", ")}`,
        );
      else if (value !== null && value !== "") cells.set(key as RuleKey, value);
    }
  }
  // No cell filled: no rule. An object is a rule, checked whole (as the API checks `recurrence: {}`).
  if (cells.size === 0 && object === undefined) return null;
  const every = checkCell(e, ruleColumn("every"), ruleChecks.every, wholeCell(cells.get("every")));
  const unit = checkCell(e, ruleColumn("unit"), ruleChecks.unit, trimmed(cells.get("unit")));
  const renewOn = checkCell(e, ruleColumn("renew_on"), ruleChecks.renew_on, trimmed(cells.get("renew_on")));
  const count = cells.has("count")
    ? checkCell(e, ruleColumn("count"), ruleChecks.count, wholeCell(cells.get("count")))
    : null;
  let until: string | null = null;
  const untilText = cellText(e, ruleColumn("until"), cells.get("until"));
  if (untilText !== undefined) {
    until = parseDate(untilText, job.dateFormat);
    if (!until)
      e.add(
        ruleColumn("until"),
        untilText,
        `${ruleColumn("until")} must be a real calendar date in the format ${job.dateFormat}`,
      );
    else if (date.value !== undefined && until < date.value) {
      const than = date.given ? "expiry_date" : `the item's expiry_date ${formatDate(date.value, job.dateFormat)}`;
      e.add(ruleColumn("until"), untilText, `${ruleColumn("until")} must not be earlier than ${than}`);
    }
  }
  if (
    every === undefined ||
    unit === undefined ||
    renewOn === undefined ||
    count === undefined ||
    (untilText !== undefined && !until)
  )
    return undefined;
  return { every, unit, renewOn, until, count };
}

/** An item's rule columns as a row sets them; none when the row leaves the rule alone. */
function ruleSet(rule: ImportedRule | null | undefined): Record<string, unknown> {
  if (rule === undefined) return {};
  return {
    recur_every: rule?.every ?? null,
    recur_unit: rule?.unit ?? null,
    recur_renew_on: rule?.renewOn ?? null,
    recur_until: rule?.until ?? null,
    recur_count: rule?.count ?? null,
  };
}

// An update row of a chunk is `{id, row, set}` (json_each's j.value), `set` holding the columns it changes.
const given = (column: string) => `json_type(j.value, '$.set.${column}') IS NOT NULL`;
/** A column's value after an update row: the row's, else the item's. */
const valueAfter = (column: string) =>
  `CASE WHEN ${given(column)} THEN json_extract(j.value, '$.set.${column}') ELSE items.${column} END`;
const RULE_SET_COLUMNS = Object.keys(ruleSet(null));
/** recur_anchor after an update row: the API's rule (ruleAnchor) over the rule and date the row leaves the item with. */
const ANCHOR_AFTER = sqlText(
  ruleAnchor({
    every: sql.raw(valueAfter("recur_every")),
    unit: sql.raw(valueAfter("recur_unit")),
    date: sql.raw(valueAfter("expiry_date")),
    dateChanged: sql.raw(given("expiry_date")),
  }),
);

export const itemImport: ImportResource<ItemRow> = {
  async validate(_env, job, rows) {
    const db = job.db.d1;
    const refs = await companyRefs(db, job.companyId);
    const errors: RowError[] = [];
    const cellOf = (r: RawRow, name: string) => r.cells.get(name);
    // Look-ups for the whole file, a slice of 2,000 values per query.
    const exts = [
      ...new Set(
        rows
          .map((r) => cellOf(r, "external_id"))
          .filter((v): v is string => typeof v === "string")
          .map((v) => v.normalize("NFC").trim()),
      ),
    ];
    const existing = new Map(
      (
        await lookup<{
          id: number;
          external_id: string;
          document_type_id: number | null;
          dept_id: number;
          expiry_date: string;
        }>(
          db,
          exts,
          "SELECT id, external_id, document_type_id, dept_id, expiry_date FROM items WHERE " +
            "company_id = ?2 AND external_id IN (SELECT value FROM json_each(?1))",
          job.companyId,
        )
      ).map((r) => [r.external_id, r]),
    );
    const emails = [
      ...new Set(
        rows
          .map((r) => cellOf(r, "contact_email"))
          .filter((v): v is string => typeof v === "string")
          .map((v) => nameKey(v)),
      ),
    ];
    const contactsByEmail = new Map(
      (
        await lookup<{ id: number; email_key: string }>(
          db,
          emails,
          "SELECT id, email_key FROM contacts WHERE company_id = ?2 AND email_key IN " +
            "(SELECT value FROM json_each(?1))",
          job.companyId,
        )
      ).map((r) => [r.email_key, r.id]),
    );
    const contactIds = [
      ...new Set(rows.map((r) => Number(cellOf(r, "contact_id"))).filter((n) => Number.isSafeInteger(n) && n > 0)),
    ];
    const knownContacts = new Set(
      (
        await lookup<{ id: number }>(
          db,
          contactIds,
          "SELECT id FROM contacts WHERE company_id = ?2 AND id IN (SELECT value FROM " + "json_each(?1))",
          job.companyId,
        )
      ).map((r) => r.id),
    );

    const valid: ItemRow[] = [];
    const seenExt = new Map<string, number>();
    let creates = 0;
    for (const raw of rows) {
      const e = new RowErrors(raw.row);
      if (raw.unreadable) {
        e.add("", "", raw.unreadable);
        errors.push(...e.list);
        continue;
      }
      const out: ItemRow = { row: raw.row, ext: null, dept: 0 };
      const ext = raw.cells.has("external_id")
        ? checkCell(e, "external_id", externalId, cellText(e, "external_id", cellOf(raw, "external_id")))
        : undefined;
      if (ext !== undefined) {
        const earlier = seenExt.get(ext);
        if (earlier !== undefined) e.add("external_id", ext, `external_id repeats row ${earlier}`);
        else seenExt.set(ext, raw.row);
        out.ext = ext;
      }
      const current = ext !== undefined ? existing.get(ext) : undefined;
      const isNew = !current;
      if (raw.cells.has("title")) out.title = checkCell(e, "title", title, cellText(e, "title", cellOf(raw, "title")));
      else if (isNew) e.add("title", "", "title is required for a new item");
      const date = cellText(e, "expiry_date", cellOf(raw, "expiry_date"));
      if (date !== undefined) {
        out.expiry = parseDate(date, job.dateFormat) ?? undefined;
        if (!out.expiry)
          e.add("expiry_date", date, `expiry_date must be a real calendar date in the format ${job.dateFormat}`);
      } else if (isNew) e.add("expiry_date", "", "expiry_date is required for a new item");
      const rule = ruleOfRow(e, raw, job, {
        value: date !== undefined ? out.expiry : current?.expiry_date,
        given: date !== undefined,
      });
      if (rule !== undefined) out.rule = rule;
      const type = cellText(e, "item_type", cellOf(raw, "item_type"));
      if (type !== undefined) {
        if ((ITEM_TYPES as readonly string[]).includes(type.trim())) out.type = type.trim();
        else e.add("item_type", type, `item_type must be one of: ${ITEM_TYPES.join(", ")}`);
      }
      const status = cellText(e, "status", cellOf(raw, "status"));
      if (status !== undefined) {
        if ((ITEM_STATUSES as readonly string[]).includes(status.trim())) out.status = status.trim();
        else e.add("status", status, `status must be one of: ${ITEM_STATUSES.join(", ")}`);
      }
      const archived = booleanCell(e, "archived", cellOf(raw, "archived"));
      if (archived !== undefined) out.archived = archived ? 1 : 0;
      const typeName = cellText(e, "document_type", cellOf(raw, "document_type"));
      let typeInfo = current?.document_type_id ? refs.typesById.get(current.document_type_id) : undefined;
      if (typeName !== undefined) {
        typeInfo = refs.typesByKey.get(nameKey(typeName.normalize("NFC").trim()));
        if (typeInfo) out.docType = typeInfo.id;
        else
          e.add(
            "document_type",
            typeName,
            "document_type names no document type of the company (create it through " + "/v1/document-types)",
          );
      }
      out.dept = current?.dept_id ?? typeInfo?.deptId ?? refs.defaultDept ?? 0;
      if (!out.dept) e.add("", "", "The company has no default department");
      const path = cellText(e, "folder_path", cellOf(raw, "folder_path"));
      if (path !== undefined && checkWith(e, "folder_path", path, () => folderPathSegments(path)))
        out.folderPath = path;
      const email = cellText(e, "contact_email", cellOf(raw, "contact_email"));
      if (email !== undefined) {
        out.contact = contactsByEmail.get(nameKey(email));
        if (out.contact === undefined) e.add("contact_email", email, "contact_email is no contact of the company");
      }
      const contactId = integerCell(e, "contact_id", cellOf(raw, "contact_id"), 1);
      if (contactId !== undefined) {
        if (!knownContacts.has(contactId))
          e.add("contact_id", contactId, `contact_id ${contactId} is no contact of the company`);
        else if (out.contact !== undefined && out.contact !== contactId)
          e.add("contact_id", contactId, "contact_id and contact_email name different contacts");
        else out.contact = contactId;
      }
      const seq = integerCell(e, "seqid", cellOf(raw, "seqid"), 0);
      if (seq !== undefined) {
        if (seq !== 0 && !refs.sequences.has(seq))
          e.add("seqid", seq, `seqid ${seq} is not a reminder sequence of the company`);
        else out.seq = seq;
      }
      if (raw.cells.has("notes")) out.notes = checkCell(e, "notes", notes, cellText(e, "notes", cellOf(raw, "notes")));
      const tagCell = cellOf(raw, "tags");
      if (tagCell !== undefined) {
        const names = Array.isArray(tagCell)
          ? tagCell
          : typeof tagCell === "string"
            ? splitCsvList(tagCell)
            : [tagCell];
        const checked = names
          .filter((n) => !(typeof n === "string" && n.trim() === ""))
          .map((n) => checkCell(e, "tags", tagName, n));
        if (checked.length > MAX_TAGS_PER_ITEM)
          e.add("tags", tagCell, `tags may name at most ${MAX_TAGS_PER_ITEM} tags`);
        if (checked.every((n) => n !== undefined)) out.tags = distinctTagNames(checked as string[]);
      }
      for (const [column, value] of raw.cells) {
        if (IGNORED.has(column) || (column === RULE_OBJECT && job.format !== "csv")) continue;
        const explicit = column.startsWith("field:");
        if (!explicit && COLUMNS.has(column)) continue;
        const name = explicit ? column.slice(6) : column;
        const field = typeInfo?.fields.get(nameKey(name.normalize("NFC").trim()));
        if (!field) {
          e.add(
            column,
            value,
            typeInfo
              ? `The item's document type has no field "${name.slice(0, 100)}"`
              : `"${column.slice(0, 100)}" is no item column, and the item has no document type whose field it could be`,
          );
          continue;
        }
        const text = checkField(e, column, field, value, job);
        if (text !== undefined) (out.fields ??= []).push({ id: field.id, value: text });
      }
      if (!e.ok) {
        errors.push(...e.list);
        continue;
      }
      if (isNew) creates++;
      valid.push(out);
    }
    return { valid, errors, creates };
  },

  async write(env, job, chunk, fence) {
    const db = job.db.d1;
    // Folders first (mkdir -p, idempotent): the batch needs their ids.
    const folderIds = new Map<string, number>();
    for (const r of chunk) {
      if (r.folderPath === undefined) continue;
      const key = `${r.dept}:${r.folderPath}`;
      if (!folderIds.has(key)) folderIds.set(key, await ensureFolderPath(job.db, job.companyId, r.dept, r.folderPath));
    }
    const exts = chunk.filter((r) => r.ext !== null).map((r) => r.ext);
    const current = new Map(
      (
        await lookup<Record<string, unknown>>(
          db,
          exts,
          `SELECT i.id, i.external_id, i.title, i.notes, i.item_type, i.expiry_date, i.document_type_id, i.folder_id, i.contact_id, i.seq_id, i.status, i.archived,
           i.recur_every, i.recur_unit, i.recur_renew_on, i.recur_until, i.recur_count,
           (SELECT json_group_array(t.name_key) FROM (SELECT tg.name_key FROM item_tags AS it JOIN tags AS tg ON tg.id = it.tag_id WHERE it.item_id = i.id ORDER BY it.position) AS t) AS tag_keys,
           (SELECT json_group_object(v.field_id, v.value) FROM item_field_values AS v WHERE v.item_id = i.id) AS field_values
         FROM items AS i WHERE i.company_id = ?2 AND i.external_id IN (SELECT value FROM json_each(?1))`,
          job.companyId,
        )
      ).map((r) => [String(r.external_id), r]),
    );
    const creates: Array<{ row: number; nth: number; item: NewItem }> = [];
    const updates: Array<Record<string, unknown>> = [];
    const tagRows: Array<{ row: number; tags: Array<{ name: string; key: string; position: number }> }> = [];
    const fieldRows: Array<{ row: number; id: number; value: string }> = [];
    let skips = 0;
    for (const r of chunk) {
      const folder = r.folderPath === undefined ? undefined : folderIds.get(`${r.dept}:${r.folderPath}`);
      const was = r.ext === null ? undefined : current.get(r.ext);
      const wanted: Record<string, unknown> = {
        title: r.title,
        notes: r.notes,
        item_type: r.type,
        expiry_date: r.expiry,
        document_type_id: r.docType,
        folder_id: folder,
        contact_id: r.contact,
        seq_id: r.seq === undefined ? undefined : r.seq || null,
        status: r.status,
        archived: r.archived,
        ...ruleSet(r.rule),
      };
      const tagsChange =
        r.tags !== undefined && (!was || JSON.stringify(r.tags.map((t) => t.key)) !== String(was.tag_keys));
      const oldFields = was ? (JSON.parse(String(was.field_values ?? "{}")) as Record<string, string>) : {};
      const fieldsChange = (r.fields ?? []).filter((f) => !was || oldFields[f.id] !== f.value);
      if (tagsChange) tagRows.push({ row: r.row, tags: r.tags!.map((t, position) => ({ ...t, position })) });
      for (const f of fieldsChange) fieldRows.push({ row: r.row, ...f });
      if (r.title !== undefined || r.notes !== undefined) {
        const words = searchWords(
          r.title ?? (was?.title as string | undefined),
          r.notes ?? (was?.notes as string | undefined),
        );
        if (!was || words !== searchWords(String(was.title), String(was.notes))) wanted.search_words = words;
      }
      if (!was) {
        // Written by the one writer of new items (src/records/items/writer.ts), as POST writes them.
        creates.push({
          row: r.row,
          nth: creates.length + 1,
          item: {
            companyId: job.companyId,
            createdBy: job.userId,
            title: r.title!,
            expiryDate: r.expiry!,
            notes: r.notes,
            itemType: r.type,
            status: r.status,
            archived: r.archived,
            deptId: r.dept,
            documentTypeId: r.docType,
            folderId: folder ?? null,
            contactId: r.contact ?? null,
            seqId: r.seq === undefined ? undefined : r.seq || null,
            externalId: r.ext,
            importRef: job.id * REF_BASE + r.row,
            rule: r.rule ?? null,
            nth: creates.length + 1,
          },
        });
        continue;
      }
      const set = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => v !== undefined && v !== was[k]));
      if (Object.keys(set).length === 0 && !tagsChange && fieldsChange.length === 0) {
        skips++;
        continue;
      }
      updates.push({ id: was.id, row: r.row, set });
    }
    const ref = job.id * REF_BASE;
    const setCol = (column: string) => `${column} = ${valueAfter(column)}`;
    const statements = [
      ...chunkLead(
        db,
        job,
        fence.index,
        { creates: creates.map((c) => ({ row: c.row, nth: c.nth })), updates: updates.length, skips },
        fence.now,
      ),
      // A row creates only while the company has room for it (its nth place among the chunk's creations).
      insertItems(
        db,
        creates.map((c) => newItemRow(c.item)),
        { guard: "room", returning: false },
      ),
    ];
    if (updates.length > 0) {
      statements.push(
        db
          .prepare(
            // A new date moves the reminders with it, as PATCH with reschedule_reminders does.
            `UPDATE items SET ${["title", "notes", "search_words", "item_type", "document_type_id", "folder_id", "contact_id", "seq_id", "status", "archived", ...RULE_SET_COLUMNS].map((c) => setCol(c)).join(", ")},
               ${setCol("expiry_date")},
               reminder_anchor = CASE WHEN ${given("expiry_date")} THEN json_extract(j.value, '$.set.expiry_date') ELSE items.reminder_anchor END,
               recur_anchor = ${ANCHOR_AFTER},
               import_ref = ?2 + json_extract(j.value, '$.row'), updated_at = CURRENT_TIMESTAMP
             FROM json_each(?3) AS j WHERE items.id = json_extract(j.value, '$.id') AND items.company_id = ?1`,
          )
          .bind(job.companyId, ref, JSON.stringify(updates)),
      );
    }
    const target = `(SELECT i.id FROM items AS i WHERE i.import_ref = ?2 + json_extract(j.value, '$.row'))`;
    if (tagRows.length > 0) {
      const tagsJson = JSON.stringify(tagRows);
      statements.push(
        db
          .prepare(
            `DELETE FROM item_tags WHERE item_id IN (SELECT ${target} FROM json_each(?3) AS j) AND company_id = ?1`,
          )
          .bind(job.companyId, ref, tagsJson),
        db
          .prepare(
            `INSERT INTO tags (company_id, name, name_key, items_count, created_at)
             SELECT ?1, json_extract(t.value, '$.name'), json_extract(t.value, '$.key'), 0, CURRENT_TIMESTAMP
             FROM json_each(?2) AS j, json_each(json_extract(j.value, '$.tags')) AS t WHERE 1
             ON CONFLICT (company_id, name_key) DO UPDATE SET name = excluded.name WHERE tags.items_count = 0`,
          )
          .bind(job.companyId, tagsJson),
        db
          .prepare(
            `INSERT OR IGNORE INTO item_tags (item_id, tag_id, company_id, position)
             SELECT ${target}, (SELECT tg.id FROM tags AS tg WHERE tg.company_id = ?1 AND tg.name_key = json_extract(t.value, '$.key')), ?1, json_extract(t.value, '$.position')
             FROM json_each(?3) AS j, json_each(json_extract(j.value, '$.tags')) AS t WHERE ${target} IS NOT NULL`,
          )
          .bind(job.companyId, ref, tagsJson),
        db.prepare("DELETE FROM tags WHERE company_id = ? AND items_count = 0").bind(job.companyId),
      );
    }
    if (fieldRows.length > 0) {
      statements.push(
        db
          .prepare(
            `INSERT INTO item_field_values (item_id, field_id, company_id, value)
             SELECT ${target}, json_extract(j.value, '$.id'), ?1, json_extract(j.value, '$.value') FROM json_each(?3) AS j WHERE ${target} IS NOT NULL
             ON CONFLICT (item_id, field_id) DO UPDATE SET value = excluded.value`,
          )
          .bind(job.companyId, ref, JSON.stringify(fieldRows)),
      );
    }
    const first = chunk[0]!.row;
    const last = chunk[chunk.length - 1]!.row;
    statements.push(db.prepare("SELECT id FROM items WHERE import_ref BETWEEN ? AND ?").bind(ref + first, ref + last));
    let results: D1Result[];
    try {
      results = await job.db.commit(statements);
    } catch (err) {
      if (fenceRefused(err)) return null;
      throw err;
    }
    const ids = (results[results.length - 1]!.results as Array<{ id: number }>).map((r) => r.id);
    await syncReminders(env, job.companyId, ids);
    return ids;
  },
};
