import { z } from "@hono/zod-openapi";
import { idQuery, paginationQuery, pageEnvelope } from "../lib/schemas";
import { DATE_FORMATS } from "../lib/time";

export const IMPORT_RESOURCES = ["items", "contacts"] as const;
export const IMPORT_STATUSES = ["queued", "validating", "running", "completed", "failed", "canceled"] as const;
/** Import jobs a company may have unfinished at once (checked inside the INSERT). */
export const MAX_OPEN_IMPORTS = 3;

const flag = (name: string) =>
  z
    .enum(["true", "false"], { error: `${name} must be true or false` })
    .default("false")
    .transform((v) => v === "true")
    .openapi({ param: { name, in: "query" }, type: "string", enum: ["true", "false"], default: "false" });

export const CreateImportQuery = z.object({
  resource: z
    .enum(IMPORT_RESOURCES, {
      error: (i) =>
        i.input === undefined ? "resource is required (items or contacts)" : "resource must be items or contacts",
    })
    .openapi({ param: { name: "resource", in: "query" }, example: "items" }),
  dry_run: flag("dry_run").openapi({ description: "true: check every row and report, write nothing" }),
  date_format: z
    .enum(DATE_FORMATS, { error: `date_format must be one of: ${DATE_FORMATS.join(", ")}` })
    .optional()
    .openapi({
      param: { name: "date_format", in: "query" },
      description: "How dates in the file are written; default: the company's date_format",
    }),
  on_error: z
    .enum(["abort", "skip"], { error: "on_error must be abort or skip" })
    .default("abort")
    .openapi({
      param: { name: "on_error", in: "query" },
      default: "abort",
      description: "abort: any invalid row and nothing is written; skip: the valid rows are written",
    }),
});

export const ImportSchema = z
  .object({
    import_id: z.number().int().openapi({ example: 12 }),
    resource: z.enum(IMPORT_RESOURCES),
    format: z.enum(["csv", "json", "ndjson"]),
    status: z.enum(IMPORT_STATUSES).openapi({
      description:
        "queued → validating → running → completed; failed (see message); canceled " +
        "(DELETE). A dry run goes from validating to completed.",
    }),
    dry_run: z.boolean(),
    on_error: z.enum(["abort", "skip"]),
    date_format: z.enum(DATE_FORMATS),
    counts: z
      .object({
        rows: z.number().int().openapi({ description: "Data rows in the file (the header row not counted)" }),
        valid: z.number().int().openapi({ description: "Rows that passed every check" }),
        created: z.number().int(),
        updated: z
          .number()
          .int()
          .openapi({ description: "Existing records (by external_id, or a contact's email) the file changed" }),
        skipped: z
          .number()
          .int()
          .openapi({ description: "Valid rows equal to the existing record: nothing to change" }),
        failed: z
          .number()
          .int()
          .openapi({ description: "Rows with an error (GET …/errors), including rows past the company's limit" }),
      })
      .openapi("ImportCounts"),
    progress: z.number().openapi({ example: 0.5, description: "0 to 1: the share of the file's rows dealt with" }),
    message: z.string().openapi({ description: 'Why the job failed, or a dry run\'s summary; "" otherwise' }),
    bytes: z.number().int(),
    created_at: z.string().openapi({ example: "2026-11-23T10:00:00.000Z" }),
    finished_at: z.string().nullable(),
  })
  .openapi("Import");

export const ImportErrorSchema = z
  .object({
    row: z
      .number()
      .int()
      .openapi({ example: 3, description: "1 is the first data row (the header row is not counted)" }),
    column: z.string().openapi({ example: "expiry_date", description: '"" when the error is the row\'s as a whole' }),
    value: z.string().openapi({ example: "2027-02-30", description: "The cell as sent, cut to 200 characters" }),
    message: z.string().openapi({ example: "expiry_date must be a real calendar date in the format YYYY-MM-DD" }),
  })
  .openapi("ImportError");

export const ListImportsQuery = z.object({ ...paginationQuery(100, 20) });
export const ListImportErrorsQuery = z.object({
  ...paginationQuery(1000, 100),
  row: idQuery("row").openapi({ description: "Only this row's errors" }),
});
export const ImportListEnvelope = pageEnvelope(ImportSchema, "ImportList");
export const ImportErrorListEnvelope = pageEnvelope(ImportErrorSchema, "ImportErrorList");

export type CreateImportInput = z.infer<typeof CreateImportQuery>;
export type ImportOutput = z.infer<typeof ImportSchema>;
