import { z } from "@hono/zod-openapi";
import { RULE_COLUMNS } from "../lib/recurrence";
import { DATE_FORMATS } from "../lib/time";
import { ListContactsQuery } from "./contacts";
import { ListItemsQuery, RecurrenceSchema } from "./items";

export const EXPORT_FORMATS = ["csv", "ndjson"] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

// The column contract: an import reads exactly these names (docs/api-notes.md, "Exports").

/** Item columns before the custom fields, in order. */
export const ITEM_COLUMNS = [
  "item_id",
  "external_id",
  "title",
  "item_type",
  "expiry_date",
  "status",
  "archived",
  "document_type",
  "folder_path",
  "contact_email",
  "notes",
  "tags",
  ...RULE_COLUMNS,
] as const;
/** The item column after the custom fields. */
export const ITEM_LAST_COLUMN = "add_date";
/** A custom field whose name is a standard column's (case-insensitively), or starts with this, gets it in front. */
export const FIELD_PREFIX = "field:";

export const CONTACT_COLUMNS = [
  "contact_id",
  "first_name",
  "last_name",
  "email",
  "country_code",
  "iso",
  "mobile_code",
  "phone_number",
  "group_name",
  "add_date",
] as const;

const exportParams = {
  format: z
    .enum(EXPORT_FORMATS, { error: `format must be one of: ${EXPORT_FORMATS.join(", ")}` })
    .default("csv")
    .openapi({
      param: { name: "format", in: "query" },
      default: "csv",
      description: "`csv` (RFC 4180, a header row) or `ndjson` (one JSON object per line)",
    }),
};

export const ExportItemsQuery = ListItemsQuery.omit({ limit: true, offset: true, cursor: true }).extend({
  ...exportParams,
  date_format: z
    .enum(DATE_FORMATS, { error: `date_format must be one of: ${DATE_FORMATS.join(", ")}` })
    .optional()
    .openapi({
      param: { name: "date_format", in: "query" },
      description: "How expiry_date and recurrence_until are written; default: the company's " + "settings.date_format",
    }),
});

export const ExportContactsQuery = ListContactsQuery.omit({ limit: true, offset: true }).extend(exportParams);

const text = z.string();

/** One NDJSON line of the item export (the response names it in `x-itemSchema`: src/routes/exports/routes.ts). */
export const ItemExportRecordSchema = z
  .object({
    item_id: z.number().int().openapi({ example: 120 }),
    external_id: text.openapi({ example: "ERP-4711", description: '"" when the item has none' }),
    title: text.openapi({ example: "Fire safety certificate" }),
    item_type: text.openapi({ example: "exp" }),
    expiry_date: text.openapi({ example: "31.03.2027", description: "In date_format" }),
    status: text.openapi({ example: "pending" }),
    archived: z.boolean(),
    document_type: text.openapi({ example: "Certificate", description: 'The document type\'s name; "" for none' }),
    folder_path: text.openapi({
      example: "Permits/City",
      description: 'The folder\'s full path from the top; "" for none',
    }),
    contact_email: text.openapi({ example: "ada@example.com", description: '"" when the item has no contact' }),
    notes: text,
    tags: z.array(text).openapi({ example: ["fire", "building A"] }),
    recurrence: z
      .object({
        ...RecurrenceSchema.shape,
        until: text.nullable().openapi({
          example: null,
          description: "The last date an occurrence may fall on, in date_format; null: none",
        }),
      })
      .nullable()
      .openapi({
        description:
          "The item's recurrence rule as GET /v1/items/{item_id} shows it (until in " +
          "date_format); null when it does not recur",
      }),
    fields: z
      .record(z.string(), text)
      .openapi({ example: { Inspector: "Ada" }, description: "The item's custom field values by field name" }),
    add_date: text.openapi({ example: "2026-11-20 09:30:00", description: "UTC" }),
  })
  .openapi("ItemExportRecord", { description: "One line of `GET /v1/items/export?format=ndjson`" });

export const ContactExportRecordSchema = z
  .object({
    contact_id: z.number().int().openapi({ example: 42 }),
    first_name: text.openapi({ example: "Ada" }),
    last_name: text.openapi({ example: "Lovelace" }),
    email: text.openapi({ example: "ada@example.com" }),
    country_code: text.openapi({ example: "+44" }),
    iso: text.openapi({ example: "GB" }),
    mobile_code: text.openapi({ example: "+44" }),
    phone_number: text.openapi({ example: "7700900123" }),
    group_name: text.openapi({ example: "Suppliers", description: '"" when the contact is in no group' }),
    add_date: text.openapi({ example: "2026-11-20 09:30:00", description: "UTC" }),
  })
  .openapi("ContactExportRecord", { description: "One line of `GET /v1/contacts/export?format=ndjson`" });

export type ExportItemsInput = z.infer<typeof ExportItemsQuery>;
export type ExportContactsInput = z.infer<typeof ExportContactsQuery>;
export type ItemExportRecord = z.infer<typeof ItemExportRecordSchema>;
export type ContactExportRecord = z.infer<typeof ContactExportRecordSchema>;
