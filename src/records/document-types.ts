import { and, asc, count, eq, inArray, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace, writeBatch } from "../db/guarded";
import { selectDepartment } from "../db/departments";
import { accounts, documentTypeFields, documentTypes } from "../db/schema";
import { echo } from "../lib/echo";
import { badRequest, conflict, notFound } from "../lib/errors";
import { toFlag } from "../lib/schemas";
import { nameKey } from "../lib/text-key";
import {
  selectOptions,
  type CreateDocumentTypeInput,
  type DocumentTypeFieldOutput,
  type DocumentTypeOutput,
  type FieldInput,
  type FieldType,
  type ListDocumentTypesInput,
  type UpdateDocumentTypeInput,
} from "../schemas/document-types";

/** Who is asking: the token's company, account and user. */
export interface Caller {
  companyId: number;
  accountId: number;
  userId: number;
}

const typeColumns = {
  id: documentTypes.id,
  name: documentTypes.name,
  deptId: documentTypes.deptId,
  isDefault: documentTypes.isDefault,
  createdAt: documentTypes.createdAt,
  createdBy: documentTypes.createdBy,
  docsCount: documentTypes.docsCount,
};

const fieldColumns = {
  id: documentTypeFields.id,
  typeId: documentTypeFields.typeId,
  fieldName: documentTypeFields.fieldName,
  fieldType: documentTypeFields.fieldType,
  fieldData: documentTypeFields.fieldData,
  private: documentTypeFields.private,
};

type TypeRow = {
  id: number;
  name: string;
  deptId: number;
  isDefault: number;
  createdAt: string;
  createdBy: number;
  docsCount: number;
};
type FieldRow = {
  id: number;
  typeId: number;
  fieldName: string;
  fieldType: string;
  fieldData: string;
  private: number;
};
export type DocumentTypeRecord = TypeRow & { fields: FieldRow[] };

function fieldOutput(row: FieldRow): DocumentTypeFieldOutput {
  return {
    autonum: row.id,
    field_name: row.fieldName,
    field_type: row.fieldType as FieldType,
    field_data: row.fieldData,
    private: toFlag(row.private),
  };
}

export function documentTypeOutput(record: DocumentTypeRecord): DocumentTypeOutput {
  return {
    typeid: record.id,
    name: record.name,
    deptid: record.deptId,
    isdefault: toFlag(record.isDefault),
    add_date: record.createdAt,
    empid: record.createdBy,
    docs_count: record.docsCount,
    fields: record.fields.map(fieldOutput),
  };
}

/** Fields in their order: position, then autonum. */
const fieldOrder = [asc(documentTypeFields.typeId), asc(documentTypeFields.position), asc(documentTypeFields.id)];

/** Attaches to each type its fields (`fields` holds the fields of all the types, in order). */
function withFields(types: TypeRow[], fields: FieldRow[]): DocumentTypeRecord[] {
  const byType = new Map<number, FieldRow[]>();
  for (const field of fields) {
    const list = byType.get(field.typeId);
    if (list) list.push(field);
    else byType.set(field.typeId, [field]);
  }
  return types.map((type) => ({ ...type, fields: byType.get(type.id) ?? [] }));
}

const inCompany = (companyId: number, typeId: number) =>
  and(eq(documentTypes.id, typeId), eq(documentTypes.companyId, companyId));

const duplicateName = (name: string) =>
  conflict(`A document type named "${echo(name)}" already exists in this company`);

/**
 * One batch: a duplicate name is 409; "one default per company", a field name taken meanwhile, or
 * a department or type deleted in between means another request won (the batch wrote nothing).
 */
const writeType = (db: Db, name: string | undefined, statements: BatchItem<"sqlite">[]) =>
  writeBatch(db, statements, "document type", {
    marker: "document_types.name_key",
    error: () => duplicateName(name ?? ""),
  });
const lostTypeRace = () => lostRace("document type");

// ---- reads ----

export async function listDocumentTypes(db: Db, caller: Caller, query: ListDocumentTypesInput) {
  const conditions: SQL[] = [eq(documentTypes.companyId, caller.companyId)];
  if (query.deptid !== undefined) conditions.push(eq(documentTypes.deptId, query.deptid));
  // instr() on the folded key: case-insensitive for every script, and no LIKE pattern limit.
  if (query.q) conditions.push(sql`instr(${documentTypes.nameKey}, ${nameKey(query.q)}) > 0`);
  const where = and(...conditions);
  const pageIds = db
    .select({ id: documentTypes.id })
    .from(documentTypes)
    .where(where)
    .orderBy(asc(documentTypes.id))
    .limit(query.limit)
    .offset(query.offset);
  // One round trip, one snapshot: the page, its total, the ceiling, and the fields of the page's types.
  const [types, totals, account, fields] = await db.batch([
    db
      .select(typeColumns)
      .from(documentTypes)
      .where(where)
      .orderBy(asc(documentTypes.id))
      .limit(query.limit)
      .offset(query.offset),
    db.select({ n: count() }).from(documentTypes).where(where),
    db.select({ max: accounts.maxDocumentTypes }).from(accounts).where(eq(accounts.id, caller.accountId)),
    db
      .select(fieldColumns)
      .from(documentTypeFields)
      .where(and(eq(documentTypeFields.companyId, caller.companyId), inArray(documentTypeFields.typeId, pageIds)))
      .orderBy(...fieldOrder),
  ]);
  return {
    rows: withFields(types, fields),
    meta: { total: totals[0]?.n ?? 0, max_allowed: account[0]?.max ?? 0, limit: query.limit, offset: query.offset },
  };
}

/** The type and its fields (one round trip), or 404. */
export async function getDocumentType(db: Db, companyId: number, typeId: number): Promise<DocumentTypeRecord> {
  const [types, fields] = await db.batch([
    db.select(typeColumns).from(documentTypes).where(inCompany(companyId, typeId)),
    db
      .select(fieldColumns)
      .from(documentTypeFields)
      .where(and(eq(documentTypeFields.typeId, typeId), eq(documentTypeFields.companyId, companyId)))
      .orderBy(...fieldOrder),
  ]);
  const [record] = withFields(types, fields);
  if (!record) throw notFound("Document type");
  return record;
}

// ---- writes ----

/** A field as stored: the text normalised, the key computed, its position in the list. */
interface StoredField {
  id?: number;
  name: string;
  key: string;
  type: FieldType;
  data: string;
  private: 0 | 1;
  position: number;
}

function storedFields(fields: FieldInput[]): StoredField[] {
  return fields.map((field, position) => ({
    id: field.autonum,
    name: field.field_name,
    key: nameKey(field.field_name),
    type: field.field_type,
    // A select's options are stored one per line, trimmed, without blank lines.
    data: field.field_type === "select" ? selectOptions(field.field_data).join("\n") : (field.field_data ?? ""),
    private: field.private ?? 0,
    position,
  }));
}

/** One JSON parameter for a list of fields (D1 caps bound parameters per statement at 100). */
const fieldsJson = (fields: StoredField[]) => JSON.stringify(fields.map((f) => ({ ...f, id: f.id ?? null })));

/** The JSON object of one field inside `json_each(...) AS j`. */
const fromJson = (key: keyof StoredField) => sql.raw(`json_extract(j.value, '$.${key}')`);

/** The definition columns of a field, read from the JSON object `j.value`. */
const fieldColumnsFromJson = () => ({
  fieldName: fromJson("name"),
  fieldKey: fromJson("key"),
  fieldType: fromJson("type"),
  fieldData: fromJson("data"),
  private: fromJson("private"),
  position: fromJson("position"),
});

/**
 * Inserts `fields` into type `typeId` (an SQL expression) where `guard` holds: one statement for
 * the whole list, which arrives as a single JSON parameter.
 */
function insertFields(db: Db, companyId: number, typeId: SQL, fields: StoredField[], guard: SQL) {
  return db.insert(documentTypeFields).select(
    // drizzle types insert-select fields as columns; these are SQL expressions in column order.
    (qb) =>
      qb
        .select({
          id: sql`NULL`,
          typeId: sql`${typeId}`,
          companyId: sql`${companyId}`,
          ...fieldColumnsFromJson(),
        })
        .from(sql`json_each(${fieldsJson(fields)}) AS j`)
        .where(guard)
        .orderBy(sql`j.key`) as never,
  );
}

async function departmentInCompany(db: Db, companyId: number, deptId: number | undefined): Promise<number> {
  const dept = await selectDepartment(db, companyId, deptId).get();
  if (!dept)
    throw badRequest(
      deptId !== undefined ? `deptid ${deptId} does not exist` : "The company has no default department; send deptid",
    );
  return dept.id;
}

const departmentIsIn = (companyId: number, deptId: number) =>
  sql`EXISTS (SELECT 1 FROM departments AS d WHERE d.id = ${deptId} AND d.company_id = ${companyId})`;

async function ceilingOf(db: Db, accountId: number) {
  const row = await db
    .select({
      used: sql<number>`(SELECT count(*) FROM document_types AS t WHERE t.account_id = ${accountId})`,
      max: accounts.maxDocumentTypes,
    })
    .from(accounts)
    .where(eq(accounts.id, accountId))
    .get();
  return { used: row?.used ?? 0, max: row?.max ?? 0 };
}

const ceilingReached = (max: number) =>
  badRequest(
    `Document type limit reached: the account may have at most ${max} document types (across all its companies)`,
  );

/**
 * Creates a type and its fields in one batch. Every statement carries the same guard, "the account
 * is under its ceiling and the department is still in the company", which none of them changes
 * before the type is inserted; the fields are inserted only when the type was (`changes() = 1`
 * right after its INSERT), into the row the type's unique (company_id, name_key) names.
 */
export async function createDocumentType(
  db: Db,
  caller: Caller,
  input: CreateDocumentTypeInput,
): Promise<DocumentTypeRecord> {
  const { companyId, accountId, userId } = caller;
  const name = input.doctype_name;
  const key = nameKey(name);
  const isDefault = input.isdefault ?? 0;
  const fields = storedFields(input.fields ?? []);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const deptId = await departmentInCompany(db, companyId, input.deptid);
    const canInsert = sql`((SELECT count(*) FROM document_types AS c WHERE c.account_id = ${accountId})
      < (SELECT a.max_document_types FROM accounts AS a WHERE a.id = ${accountId}) AND ${departmentIsIn(companyId, deptId)})`;
    const statements: BatchItem<"sqlite">[] = [];
    if (isDefault === 1) {
      // Before the insert (the partial unique index allows one default), under the insert's own guard.
      statements.push(
        db
          .update(documentTypes)
          .set({ isDefault: 0 })
          .where(and(eq(documentTypes.companyId, companyId), eq(documentTypes.isDefault, 1), canInsert)),
      );
    }
    const insertAt = statements.length;
    statements.push(
      db
        .insert(documentTypes)
        .select(
          (qb) =>
            qb
              .select({
                id: sql`NULL`,
                accountId: sql`${accountId}`,
                companyId: sql`${companyId}`,
                deptId: sql`${deptId}`,
                name: sql`${name}`,
                nameKey: sql`${key}`,
                isDefault: sql`${isDefault}`,
                createdBy: sql`${userId}`,
                docsCount: sql`0`,
                createdAt: sql`CURRENT_TIMESTAMP`,
                version: sql`1`,
              })
              .from(accounts)
              .where(and(eq(accounts.id, accountId), canInsert)) as never,
        )
        .returning({ id: documentTypes.id }),
    );
    if (fields.length > 0) {
      const newType = sql`(SELECT t.id FROM document_types AS t WHERE t.company_id = ${companyId} AND t.name_key = ${key})`;
      statements.push(insertFields(db, companyId, newType, fields, sql`changes() = 1`));
    }
    const results = await writeType(db, name, statements);
    const [inserted] = results[insertAt] as Array<{ id: number }>;
    if (inserted) return getDocumentType(db, companyId, inserted.id);
    const { used, max } = await ceilingOf(db, accountId);
    if (used >= max) throw ceilingReached(max);
    // The department was deleted (or stopped being the default) after it was read: resolve it again.
  }
  throw lostTypeRace();
}

/**
 * Updates a type and, when `fields` is given, replaces its field list, in one batch. Every
 * statement carries the same guard: the type is still in the company, every field the request
 * keeps is still one of its fields, and a target department is still in the company. No statement
 * of the batch changes those facts, so the batch either applies whole or not at all; the type's
 * own UPDATE (always present, RETURNING) tells which.
 */
export async function updateDocumentType(
  db: Db,
  companyId: number,
  typeId: number,
  input: UpdateDocumentTypeInput,
): Promise<DocumentTypeRecord> {
  const fields = input.fields !== undefined ? storedFields(input.fields) : undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getDocumentType(db, companyId, typeId);
    const deptId = input.deptid !== undefined ? await departmentInCompany(db, companyId, input.deptid) : undefined;
    const kept = (fields ?? []).filter((f) => f.id !== undefined).map((f) => f.id!);
    if (fields) {
      const existing = new Set(current.fields.map((f) => f.id));
      const index = fields.findIndex((f) => f.id !== undefined && !existing.has(f.id));
      if (index >= 0)
        throw badRequest(`fields.${index}.autonum ${fields[index]!.id} is not a field of document type ${typeId}`);
    }

    const keptJson = JSON.stringify(kept);
    const guards: SQL[] = [
      sql`EXISTS (SELECT 1 FROM document_types AS t WHERE t.id = ${typeId} AND t.company_id = ${companyId})`,
    ];
    if (kept.length > 0) {
      guards.push(
        sql`(SELECT count(*) FROM document_type_fields AS f WHERE f.type_id = ${typeId} AND f.id IN (SELECT value FROM json_each(${keptJson}))) = ${kept.length}`,
      );
    }
    if (deptId !== undefined) guards.push(departmentIsIn(companyId, deptId));
    const guard = sql`(${sql.join(guards, sql` AND `)})`;

    const changes: Partial<typeof documentTypes.$inferInsert> = {};
    if (input.doctype_name !== undefined) {
      changes.name = input.doctype_name;
      changes.nameKey = nameKey(input.doctype_name);
    }
    if (deptId !== undefined) changes.deptId = deptId;
    if (input.isdefault !== undefined) changes.isDefault = input.isdefault;

    const statements: BatchItem<"sqlite">[] = [];
    if (input.isdefault === 1) {
      statements.push(
        db
          .update(documentTypes)
          .set({ isDefault: 0 })
          .where(
            and(
              eq(documentTypes.companyId, companyId),
              eq(documentTypes.isDefault, 1),
              ne(documentTypes.id, typeId),
              guard,
            ),
          ),
      );
    }
    const check = statements.length;
    statements.push(
      db
        .update(documentTypes)
        // Fields only: a no-op assignment, kept for its guard and RETURNING.
        .set(Object.keys(changes).length > 0 ? changes : { isDefault: sql`is_default` })
        .where(and(inCompany(companyId, typeId), guard))
        .returning({ id: documentTypes.id }),
    );
    if (fields) {
      const keptIds = sql`(SELECT value FROM json_each(${keptJson}))`;
      // Removed fields go first, so a new or renamed field may take a removed field's name.
      statements.push(
        db
          .delete(documentTypeFields)
          .where(and(eq(documentTypeFields.typeId, typeId), sql`${documentTypeFields.id} NOT IN ${keptIds}`, guard)),
      );
      const updates = fields.filter((f) => f.id !== undefined);
      if (updates.length > 0) {
        const inKept = and(eq(documentTypeFields.typeId, typeId), sql`${documentTypeFields.id} IN ${keptIds}`, guard);
        statements.push(
          // Kept fields get a placeholder key first (a control character, which no real key has),
          // so that fields may swap names without tripping the unique (type_id, field_key) index.
          db
            .update(documentTypeFields)
            .set({ fieldKey: sql`char(1) || ${documentTypeFields.id}` })
            .where(inKept),
          db
            .update(documentTypeFields)
            .set({
              ...fieldColumnsFromJson(),
            })
            .from(sql`json_each(${fieldsJson(updates)}) AS j`)
            .where(and(sql`${documentTypeFields.id} = ${fromJson("id")}`, inKept)),
        );
      }
      const additions = fields.filter((f) => f.id === undefined);
      if (additions.length > 0) statements.push(insertFields(db, companyId, sql`${typeId}`, additions, guard));
    }
    const results = await writeType(db, input.doctype_name, statements);
    if ((results[check] as unknown[]).length > 0) return getDocumentType(db, companyId, typeId);
    // Nothing was written: the type, one of its kept fields or the department changed meanwhile.
    // Reading again answers 404 / 400 from the new state, or tries once more.
  }
  throw lostTypeRace();
}

/** Deletes a type and its fields in one batch, both guarded by "still there and docs_count = 0". */
export async function deleteDocumentType(db: Db, companyId: number, typeId: number): Promise<void> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const current = await getDocumentType(db, companyId, typeId);
    if (current.docsCount > 0) {
      throw badRequest(`A document type with associated documents cannot be deleted (docs_count ${current.docsCount})`);
    }
    const deletable = and(inCompany(companyId, typeId), eq(documentTypes.docsCount, 0));
    const [, deleted] = await writeType(db, undefined, [
      db
        .delete(documentTypeFields)
        .where(
          and(
            eq(documentTypeFields.typeId, typeId),
            sql`EXISTS (SELECT 1 FROM document_types AS t WHERE t.id = ${typeId} AND t.company_id = ${companyId} AND t.docs_count = 0)`,
          ),
        ),
      db.delete(documentTypes).where(deletable).returning({ id: documentTypes.id }),
    ]);
    if ((deleted as unknown[]).length > 0) return;
  }
  throw lostTypeRace();
}
