import { apiError } from "../../lib/errors";
import { RULE_COLUMNS } from "../../lib/recurrence";
import { createRouter, dataEnvelope, idParam, jsonResponse, resultEnvelope, scopedRoute } from "../../lib/openapi";
import { ok, page, updated } from "../../lib/respond";
import { removeFiles } from "../../imports/job";
import { IMPORT_FORMATS, MAX_COLUMNS, MAX_IMPORT_BYTES, MAX_IMPORT_ROWS } from "../../imports/parse";
import { TAG_SEPARATOR } from "../../imports/items";
import { startImport } from "../../imports/start";
import { companySettings } from "../../records/companies";
import {
  cancelImport,
  createImport,
  getImport,
  importOutput,
  listImportErrors,
  listImports,
} from "../../records/imports";
import {
  CreateImportQuery,
  ImportErrorListEnvelope,
  ImportListEnvelope,
  ImportSchema,
  ListImportErrorsQuery,
  ListImportsQuery,
  MAX_OPEN_IMPORTS,
} from "../../schemas/imports";

const tags = ["Imports"];
const ImportParams = idParam("import_id");
const WRITE_SCOPE = { items: "items:write", contacts: "contacts:write" } as const;
/** A job is seen with any scope of its two resources. */
const READ_SCOPES = ["items:read", "contacts:read"];
/**
 * The file, described per media type (a raw schema, not zod: the handler reads the bytes itself and the
 * job parses them, so no request validator runs on them). JSON first: client generators take the first.
 */
const fileBody = {
  required: true,
  description:
    "The file, in the format its Content-Type names. A file that cannot be read (not " +
    "valid JSON, no header row, too many rows) still answers 202: the job then fails " +
    "with a message.",
  content: {
    "application/json": {
      schema: {
        type: "array" as const,
        description: `An array of objects, one per row (at most ${MAX_IMPORT_ROWS.toLocaleString("en-US")}), keyed by column name; a value may be a string, number, boolean or null (null and "" are no value). Items may give \`tags\` as an array, custom fields as a \`fields\` object and the rule as a \`recurrence\` object. An element that is not an object is a row error.`,
        items: {
          type: "object" as const,
          additionalProperties: true,
          description: `One row: at most ${MAX_COLUMNS} keys`,
        },
      },
      example: [
        {
          external_id: "C-1",
          title: "Fire door check",
          expiry_date: "2027-04-30",
          folder_path: "Permits/City",
          tags: ["doors", "fire"],
        },
        {
          external_id: "C-2",
          title: "Lift inspection",
          expiry_date: "2027-02-28",
          recurrence: { every: 1, unit: "year", renew_on: "completed" },
        },
      ],
    },
    "text/csv": {
      schema: {
        type: "string" as const,
        description: `RFC 4180, UTF-8 with or without a byte-order mark: a header row naming the columns (at most ${MAX_COLUMNS}), then one record per row; CRLF or LF line ends.`,
      },
      example:
        "external_id,title,expiry_date,folder_path,tags\r\nC-1,Fire door " +
        "check,2027-04-30,Permits/City,doors|fire\r\nC-2,Lift inspection,2027-02-28,,\r\n",
    },
    "application/x-ndjson": {
      schema: {
        type: "string" as const,
        description:
          "Newline-delimited JSON: one JSON object per line, keyed as a JSON row; blank " +
          "lines are skipped; a line that is not a JSON object is a row error.",
      },
      example:
        '{"external_id":"C-1","title":"Fire door ' +
        'check","expiry_date":"2027-04-30","tags":["doors","fire"]}\n{"external_id":"C-2","title":"Lift ' +
        'inspection","expiry_date":"2027-02-28"}\n',
    },
  },
};

export const importsRouter = createRouter();

importsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/imports",
    operationId: "createImport",
    scope: ["items:write", "contacts:write"],
    scopeOf: (c) => WRITE_SCOPE[c.req.query("resource") === "contacts" ? "contacts" : "items"],
    tags,
    summary: "Import items or contacts from a file (a job)",
    description:
      `The body is the file: \`text/csv\` (RFC 4180, UTF-8 with or without a BOM, a header row naming the columns), \`application/json\` (an array of ` +
      `objects) or \`application/x-ndjson\` (one object per line); at most ${MAX_IMPORT_ROWS.toLocaleString("en-US")} rows and 20 MiB. Answers 202 at once; ` +
      "the job runs on its own (GET /v1/imports/{import_id}). Rows are numbered from 1, the first data row.\n\n" +
      "**Items** (scope items:write): columns `external_id, title, expiry_date, " +
      "item_type, document_type, folder_path, contact_email, contact_id, seqid, " +
      `notes, tags, status, archived, ${RULE_COLUMNS.join(", ")}\`; \`tags\` separated by \`${TAG_SEPARATOR}\` in CSV (an array in JSON); any other column is a custom field of the row's ` +
      "document type by its name (`field:<name>` always is; in JSON also a `fields` " +
      "object). `item_id` and `add_date` (export columns) are ignored. A " +
      "row whose `external_id` the company has updates that item (only the columns the " +
      "row fills; a new date moves its reminders); the same file " +
      "imported twice changes nothing the second time. New items get their reminders " +
      "queued as POST /v1/items does, and webhook subscribers get " +
      "one item.created or item.updated event per item.\n\n" +
      "**Recurrence** (items): the `recurrence_*` columns set the rule as POST/PATCH " +
      "/v1/items set `recurrence` (every 1-1000; unit day, week, month " +
      "or year; renew_on completed or expired; until a date in `date_format`, not " +
      "before the item's expiry_date; count 0-10000), checked with the " +
      "API's messages naming the column. Without any of them in the file (JSON: in the " +
      "row's object) an item's rule is left as it is; with " +
      "them, a row whose recurrence cells are all empty has no rule (an existing one " +
      "is removed). A JSON row may give the rule as a `recurrence` object (null: no " +
      "rule), as " +
      "exports write it. A rule keeps counting its occurrences from where it did when " +
      "every, unit and the date stay; otherwise (a new " +
      "expiry_date too, with or without these columns) it counts from the item's date, as PATCH does.\n\n" +
      "**Contacts** (scope contacts:write): the fields of POST /v1/contacts plus " +
      "`group_name`; the key is the email: a known email updates that contact.\n\n" +
      "An empty cell is no value (a new record's default, an existing one's value " +
      "kept; the recurrence columns excepted, above). Dates are read strictly in " +
      "`date_format`; an impossible " +
      "or differently written date is a row error, never guessed. A cell that starts " +
      "with ' followed by = + - @ (an export's formula guard) loses " +
      `the quote. At most ${MAX_OPEN_IMPORTS} unfinished imports per company (400 beyond).`,
    request: {
      query: CreateImportQuery,
      body: fileBody,
    },
    responses: { 202: jsonResponse(resultEnvelope(ImportSchema, "ImportQueued"), "The job, queued") },
  }),
  async (c) => {
    const query = c.req.valid("query");
    const mediaType = (c.req.header("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
    const format = IMPORT_FORMATS[mediaType as keyof typeof IMPORT_FORMATS];
    if (!format) throw apiError(415, "Content-Type must be text/csv, application/json or application/x-ndjson");
    const bytes = await c.req.arrayBuffer();
    if (bytes.byteLength === 0) throw apiError(400, "The body is empty: send the file");
    if (bytes.byteLength > MAX_IMPORT_BYTES) throw apiError(413, "An import file may be at most 20 MiB");
    const dateFormat = query.date_format ?? (await companySettings(c.var.db, c.var.companyId)).date_format;
    const bodyKey = `imports/${c.var.companyId}/upload-${crypto.randomUUID()}`;
    await c.env.FILES.put(bodyKey, bytes);
    let row: Awaited<ReturnType<typeof createImport>>;
    try {
      row = await createImport(c.var.db, {
        companyId: c.var.companyId,
        clientId: c.var.auth.clientId,
        userId: c.var.auth.userId,
        resource: query.resource,
        format,
        dryRun: query.dry_run,
        onError: query.on_error,
        dateFormat,
        bodyKey,
        bodyBytes: bytes.byteLength,
        requestId: c.get("requestId") ?? null,
      });
    } catch (err) {
      // Not queued (a full company, a repeated Idempotency-Key): the file goes.
      await c.env.FILES.delete(bodyKey);
      throw err;
    }
    // Should this fail, the job stays queued and the cron sweep starts it.
    await startImport(c.env, c.var.auth.shard, row.id).catch((error) =>
      console.error(
        JSON.stringify({ level: "error", msg: "import left to the sweep", importId: row.id, error: String(error) }),
      ),
    );
    return c.json({ success: true as const, msg: "Import queued", data: importOutput(row) }, 202);
  },
);

importsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/imports",
    operationId: "listImports",
    scope: READ_SCOPES,
    tags,
    summary: "List import jobs",
    description: "Newest first; the company's jobs of every client.",
    request: { query: ListImportsQuery },
    responses: { 200: jsonResponse(ImportListEnvelope, "A page of jobs") },
  }),
  async (c) => {
    const result = await listImports(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(importOutput), meta: result.meta });
  },
);

importsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/imports/{import_id}",
    operationId: "getImport",
    scope: READ_SCOPES,
    tags,
    summary: "An import job's status, counts and progress",
    request: { params: ImportParams },
    responses: { 200: jsonResponse(dataEnvelope(ImportSchema, "ImportEnvelope"), "The job") },
  }),
  async (c) => ok(c, importOutput(await getImport(c.var.db, c.var.companyId, c.req.valid("param").import_id))),
);

importsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/imports/{import_id}/errors",
    operationId: "listImportErrors",
    scope: READ_SCOPES,
    tags,
    summary: "An import job's row errors",
    description:
      "By row, then column. The first 10,000 errors of a job are kept (counts.failed " + "counts every failed row).",
    request: { params: ImportParams, query: ListImportErrorsQuery },
    responses: { 200: jsonResponse(ImportErrorListEnvelope, "A page of row errors") },
  }),
  async (c) => {
    const result = await listImportErrors(
      c.var.db,
      c.var.companyId,
      c.req.valid("param").import_id,
      c.req.valid("query"),
    );
    return page(c, {
      rows: result.rows.map((e) => ({ row: e.rowNumber, column: e.column, value: e.value, message: e.message })),
      meta: result.meta,
    });
  },
);

importsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/imports/{import_id}",
    operationId: "cancelImport",
    scope: ["items:write", "contacts:write"],
    tags,
    summary: "Cancel an unfinished import",
    description:
      "Stops a queued, validating or running job: no chunk is written after the cancel " +
      "commits (each chunk's batch checks the job's status). " +
      "Chunks written before it stay. A finished job is 400.",
    request: { params: ImportParams },
    responses: { 200: jsonResponse(resultEnvelope(ImportSchema, "ImportCanceled"), "Canceled") },
  }),
  async (c) => {
    const row = await cancelImport(c.var.db, c.var.companyId, c.req.valid("param").import_id);
    c.executionCtx.waitUntil(
      Promise.allSettled([
        c.env.IMPORTS.get(`import-${row.id}`).then((instance) => instance.terminate()),
        removeFiles(c.env, { company_id: row.companyId, id: row.id, body_key: row.bodyKey }),
      ]),
    );
    return updated(c, "Import canceled", importOutput(row));
  },
);
