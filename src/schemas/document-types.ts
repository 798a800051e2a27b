import { z } from "@hono/zod-openapi";
import { echo } from "../lib/echo";
import {
  Flag,
  Timestamp,
  flagField,
  idField,
  idQuery,
  optionalText,
  paginationQuery,
  requiredText,
  searchQuery,
} from "../lib/schemas";
import { nameKey } from "../lib/text-key";

/** The allowed values of `field_type`. */
export const FIELD_TYPES = ["text", "textarea", "number", "date", "select", "checkbox", "email", "url"] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** Most custom fields per document type, and most options of a `select` field. */
export const MAX_FIELDS = 50;
export const MAX_SELECT_OPTIONS = 100;
export const MAX_FIELD_DATA = 2000;

/**
 * The options of a `select` field's `field_data`: one per line (LF or CRLF), each trimmed, blank
 * lines ignored. The service stores and returns them joined by "\n".
 */
export function selectOptions(fieldData: string | undefined): string[] {
  return (fieldData ?? "")
    .split(/\r?\n|\r/)
    .map((option) => option.trim())
    .filter((option) => option !== "");
}

// ---- output ----

export const DocumentTypeFieldSchema = z
  .object({
    autonum: z
      .number()
      .int()
      .openapi({ example: 17, description: "The field's id, assigned by the service; stable across updates" }),
    field_name: z.string().openapi({ example: "Policy number" }),
    field_type: z.enum(FIELD_TYPES).openapi({ example: "text" }),
    field_data: z.string().openapi({
      example: "",
      description:
        "select: the options, one per line. Other types: an optional default value or " + 'hint ("" when none).',
    }),
    private: Flag.openapi({ example: 0, description: "1: the field's values are private" }),
  })
  .openapi("DocumentTypeField");

export const DocumentTypeInfoSchema = z
  .object({
    typeid: z.number().int().openapi({ example: 5 }),
    name: z.string().openapi({ example: "Insurance policy" }),
    deptid: z.number().int().openapi({ example: 1 }),
    isdefault: Flag.openapi({ example: 0, description: "0 or 1; at most one default document type per company" }),
    add_date: Timestamp,
    empid: z.number().int().openapi({ example: 1, description: "The user who created the document type" }),
    docs_count: z.number().int().openapi({ example: 0, description: "Documents (items) of this type" }),
    fields: z.array(DocumentTypeFieldSchema).openapi({
      description: "Custom field definitions, in their order",
      example: [
        { autonum: 17, field_name: "Policy number", field_type: "text", field_data: "", private: 0 },
        { autonum: 18, field_name: "Cover", field_type: "select", field_data: "Basic\nPremium", private: 0 },
      ],
    }),
  })
  .openapi("DocumentTypeInfo", { description: "A document type: a kind of tracked document and its custom fields" });

// ---- input ----

const fieldType = z
  .enum(FIELD_TYPES, {
    error: (issue) =>
      issue.input === undefined ? "field_type is required" : `field_type must be one of: ${FIELD_TYPES.join(", ")}`,
  })
  .openapi({ example: "text" });

const fieldProperties = {
  field_name: requiredText("field_name", 100).openapi({
    example: "Policy number",
    description: "Unique within the document type, case-insensitively",
  }),
  field_type: fieldType,
  field_data: optionalText("field_data", MAX_FIELD_DATA, { multiline: true }).openapi({
    example: "",
    description: `Required for select: its options, one per line (LF or CRLF); each option is trimmed, blank lines are ignored, 1 to ${MAX_SELECT_OPTIONS} options, unique case-insensitively. Other types: an optional default value or hint, stored as sent (not checked against the type). At most ${MAX_FIELD_DATA} characters.`,
  }),
  private: flagField("private").optional().openapi({ example: 0, description: "0 (default) or 1" }),
};

/** A `select` field needs its options; each field's own rules beyond the shape. */
function checkField(field: { field_type: FieldType; field_data?: string }, ctx: z.RefinementCtx) {
  if (field.field_type !== "select") return;
  const options = selectOptions(field.field_data);
  const problem =
    options.length === 0
      ? "a select field needs its options in field_data, one per line"
      : options.length > MAX_SELECT_OPTIONS
        ? `a select field has at most ${MAX_SELECT_OPTIONS} options (${options.length} given)`
        : undefined;
  if (problem) {
    ctx.addIssue({ code: "custom", path: ["field_data"], message: problem });
    return;
  }
  const seen = new Set<string>();
  for (const option of options) {
    const key = nameKey(option);
    if (seen.has(key)) {
      ctx.addIssue({
        code: "custom",
        path: ["field_data"],
        message: `option "${echo(option)}" is listed more than once`,
      });
      return;
    }
    seen.add(key);
  }
}

const FIELDS_DESCRIPTION = `At most ${MAX_FIELDS}; field names must be unique case-insensitively (a repeated name is 400 naming it).`;

export const CreateFieldSchema = z
  .strictObject(fieldProperties)
  .superRefine(checkField)
  .openapi("CreateDocumentTypeField", {
    example: { field_name: "Cover", field_type: "select", field_data: "Basic\nPremium", private: 0 },
  });

export const UpdateFieldSchema = z
  .strictObject({
    autonum: idField("autonum").optional().openapi({
      example: 17,
      description: "An existing field of this document type to update; leave out to add a new field",
    }),
    ...fieldProperties,
  })
  .superRefine(checkField)
  .openapi("UpdateDocumentTypeField", {
    description: 'A complete field definition: field_data and private left out become "" and 0.',
    example: { autonum: 17, field_name: "Policy number", field_type: "text", field_data: "", private: 1 },
  });

/** Field names repeat nowhere in one list (case-insensitively), nor do autonums. */
function uniqueFields(fields: Array<{ field_name: string; autonum?: number }>, ctx: z.RefinementCtx) {
  const names = new Map<string, number>();
  const autonums = new Set<number>();
  fields.forEach((field, i) => {
    const key = nameKey(field.field_name);
    if (names.has(key)) {
      ctx.addIssue({
        code: "custom",
        path: [i, "field_name"],
        message: `field_name "${echo(field.field_name)}" is used by more than one field (names are unique case-insensitively)`,
      });
    }
    names.set(key, i);
    if (field.autonum !== undefined) {
      if (autonums.has(field.autonum)) {
        ctx.addIssue({
          code: "custom",
          path: [i, "autonum"],
          message: `autonum ${field.autonum} is listed more than once`,
        });
      }
      autonums.add(field.autonum);
    }
  });
}

const fieldsArray = <T extends z.ZodType<{ field_name: string; autonum?: number }>>(item: T) =>
  z
    .array(item)
    .max(MAX_FIELDS, { error: `fields must have at most ${MAX_FIELDS} entries` })
    .superRefine(uniqueFields);

const doctypeName = requiredText("doctype_name", 100).openapi({
  example: "Insurance policy",
  description: "Unique within the company, case-insensitively (409 otherwise)",
});

export const CreateDocumentTypeSchema = z
  .strictObject({
    doctype_name: doctypeName,
    deptid: idField("deptid")
      .optional()
      .openapi({ example: 1, description: "Defaults to the company's default department" }),
    isdefault: flagField("isdefault").optional().openapi({
      example: 0,
      description: "1 makes it the company's default document type (the previous default is unset); default 0",
    }),
    fields: fieldsArray(CreateFieldSchema)
      .optional()
      .openapi({ description: `Custom field definitions. ${FIELDS_DESCRIPTION}` }),
  })
  .openapi("CreateDocumentType", {
    example: {
      doctype_name: "Insurance policy",
      isdefault: 0,
      fields: [
        { field_name: "Policy number", field_type: "text" },
        { field_name: "Cover", field_type: "select", field_data: "Basic\nPremium" },
      ],
    },
  });

export const UpdateDocumentTypeSchema = z
  .strictObject({
    doctype_name: doctypeName.optional(),
    deptid: idField("deptid")
      .optional()
      .openapi({ example: 2, description: "Extension: moves the document type to another department of the company" }),
    isdefault: flagField("isdefault")
      .optional()
      .openapi({
        example: 1,
        description:
          "1 makes it the company's default (the previous default is unset); 0 unsets it " +
          "(the company then has no default type)",
      }),
    fields: fieldsArray(UpdateFieldSchema)
      .optional()
      .openapi({
        description: `Replaces the whole list. An entry with autonum updates that field (an autonum that is not a field of this type is 400); an entry without autonum adds a field; fields left out are removed; [] removes all; leave fields out to keep them as they are. The array order is the new order. ${FIELDS_DESCRIPTION}`,
      }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateDocumentType", {
    example: {
      doctype_name: "Insurance policy",
      fields: [
        { autonum: 17, field_name: "Policy number", field_type: "text", private: 1 },
        { field_name: "Insurer", field_type: "text" },
      ],
    },
  });

export const ListDocumentTypesQuery = z.object({
  ...paginationQuery(200, 200),
  deptid: idQuery("deptid"),
  q: searchQuery.openapi({ description: "Substring of the name, compared case-insensitively (Unicode case folding)." }),
});

export const DocumentTypeListMeta = z
  .object({
    total: z.number().int().openapi({ example: 1, description: "Document types matching the filters" }),
    max_allowed: z
      .number()
      .int()
      .openapi({ example: 50, description: "The account's ceiling: document types across all its companies" }),
    limit: z.number().int().openapi({ example: 200 }),
    offset: z.number().int().openapi({ example: 0 }),
  })
  .openapi("DocumentTypeListMeta");

export const DocumentTypeListEnvelope = z
  .object({ success: z.literal(true), data: z.array(DocumentTypeInfoSchema), meta: DocumentTypeListMeta })
  .openapi("DocumentTypeList");

export type DocumentTypeOutput = z.infer<typeof DocumentTypeInfoSchema>;
export type DocumentTypeFieldOutput = z.infer<typeof DocumentTypeFieldSchema>;
export type CreateDocumentTypeInput = z.infer<typeof CreateDocumentTypeSchema>;
export type UpdateDocumentTypeInput = z.infer<typeof UpdateDocumentTypeSchema>;
export type ListDocumentTypesInput = z.infer<typeof ListDocumentTypesQuery>;
export type FieldInput = z.infer<typeof UpdateFieldSchema>;
