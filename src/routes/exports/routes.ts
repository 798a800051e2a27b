import { echo } from "../../lib/echo";
import { apiError } from "../../lib/errors";
import { createRouter, inlineSchema, scopedRoute, type z } from "../../lib/openapi";
import { contactExport, itemExport, ITEM_PAGE_ROWS, CONTACT_PAGE_ROWS } from "../../records/exports";
import {
  CONTACT_COLUMNS,
  ContactExportRecordSchema,
  ExportContactsQuery,
  ExportItemsQuery,
  FIELD_PREFIX,
  ITEM_COLUMNS,
  ITEM_LAST_COLUMN,
  ItemExportRecordSchema,
  type ContactExportRecord,
  type ItemExportRecord,
} from "../../schemas/exports";
import { exportResponse } from "./stream";

// Registered before the items and contacts routers (src/app.ts): `/v1/items/export` would
// otherwise reach `/v1/items/{item_id}`, whose id validation answers 400.

const text = (description: string) => ({ description, schema: { type: "string" as const } });
const headers = {
  "Content-Disposition": text(
    '`attachment; filename="items-YYYYMMDD.csv"` (`contacts-…`, `.ndjson`), dated ' + "with the company's today",
  ),
  "Cache-Control": text("`no-store`"),
};

export const exportsRouter = createRouter();

/** The example lines of each export (two records; the NDJSON example is these, one per line). */
const EXAMPLES = {
  items: {
    csv:
      "item_id,external_id,title,item_type,expiry_date,status,archived,document_type,folder_path,contact_email,notes,tags,recurrence_every,recurrence_unit,recurrence_renew_on,recurrence_until,recurrence_count,Inspector,add_date\r\n" +
      "120,ERP-4711,Fire safety " +
      "certificate,exp,2027-03-31,pending,false,Certificate,Permits/City,ada@example.com,,fire|building " +
      "A,1,year,completed,,,Ada,2026-11-20 09:30:00\r\n" +
      '121,,Lift inspection,exp,2027-04-30,pending,false,,,,"Call first, gate code ' +
      '42",,,,,,,,2026-11-21 14:05:00\r\n',
    records: [
      {
        item_id: 120,
        external_id: "ERP-4711",
        title: "Fire safety certificate",
        item_type: "exp",
        expiry_date: "2027-03-31",
        status: "pending",
        archived: false,
        document_type: "Certificate",
        folder_path: "Permits/City",
        contact_email: "ada@example.com",
        notes: "",
        tags: ["fire", "building A"],
        recurrence: { every: 1, unit: "year", renew_on: "completed", until: null, count: null },
        fields: { Inspector: "Ada" },
        add_date: "2026-11-20 09:30:00",
      },
      {
        item_id: 121,
        external_id: "",
        title: "Lift inspection",
        item_type: "exp",
        expiry_date: "2027-04-30",
        status: "pending",
        archived: false,
        document_type: "",
        folder_path: "",
        contact_email: "",
        notes: "Call first, gate code 42",
        tags: [],
        recurrence: null,
        fields: {},
        add_date: "2026-11-21 14:05:00",
      },
    ] satisfies ItemExportRecord[],
  },
  contacts: {
    csv:
      "contact_id,first_name,last_name,email,country_code,iso,mobile_code,phone_number,group_name,add_date\r\n" +
      "42,Ada,Lovelace,ada@example.com,'+44,GB,'+44,7700900123,Suppliers,2026-11-20 09:30:00\r\n" +
      "43,Grace,Hopper,grace@example.com,,,,,,2026-11-21 14:05:00\r\n",
    records: [
      {
        contact_id: 42,
        first_name: "Ada",
        last_name: "Lovelace",
        email: "ada@example.com",
        country_code: "+44",
        iso: "GB",
        mobile_code: "+44",
        phone_number: "7700900123",
        group_name: "Suppliers",
        add_date: "2026-11-20 09:30:00",
      },
      {
        contact_id: 43,
        first_name: "Grace",
        last_name: "Hopper",
        email: "grace@example.com",
        country_code: "",
        iso: "",
        mobile_code: "",
        phone_number: "",
        group_name: "",
        add_date: "2026-11-21 14:05:00",
      },
    ] satisfies ContactExportRecord[],
  },
};

/**
 * The 200 response: CSV or NDJSON, each a string. NDJSON is a stream of records, which an OpenAPI 3.0
 * schema cannot type (it describes one JSON value, and validators read this body as text): the schema
 * is a string whose description says what a line is, the example has several lines, and
 * `x-itemSchema` holds the schema of one line (OpenAPI 3.2's `itemSchema` for sequential media
 * types; docs/api-notes.md, "Exports"). Inline, not a component: no operation would use one.
 */
function exported(what: keyof typeof EXAMPLES, record: z.ZodType, name: string) {
  return {
    description: `The ${what}, streamed: \`text/csv; charset=utf-8; header=present\` or \`application/x-ndjson\` (one ${name} object per line)`,
    headers,
    content: {
      "text/csv": {
        schema: {
          type: "string" as const,
          description: "RFC 4180: a header row, then one record per line; CRLF line ends, UTF-8 without " + "BOM",
        },
        example: EXAMPLES[what].csv,
      },
      "application/x-ndjson": {
        schema: {
          type: "string" as const,
          description: `Newline-delimited JSON: one ${name} object per line (its schema: \`x-itemSchema\`), each line ended by LF, one line per record (no line for no match).`,
        },
        example: EXAMPLES[what].records.map((r) => `${JSON.stringify(r)}\n`).join(""),
        "x-itemSchema": inlineSchema(record, name),
      },
    },
  };
}

const COMMON = [
  "Streams every matching record, without a row limit, read page by page in the " +
    "list's order with keyset pagination; the body is not " +
    "buffered. `format=csv` (default): RFC 4180, a header row, CRLF line ends, " +
    'fields quoted when they hold `"`, `,`, CR or LF (quotes ' +
    "doubled), UTF-8 without a byte-order mark. Against formula injection, each line of a cell (its start and " +
    "every start after a CR, LF or CRLF in it) that starts with `=`, `+`, `-`, `@` " +
    "or a form spreadsheets fold to one (fullwidth `＝＋－＠`, " +
    "small, super- or subscript forms, `−`), past any white space, invisible or " +
    "control characters and `'`, gets one `'` in front, as " +
    "does a cell starting with tab or CR; an import strips exactly that one from " +
    "each such line. `format=ndjson`: one JSON object per line with the same keys, " +
    "values as they are (no `'`).",
  "A failure after the first byte (a database error, the Worker's limits) cannot " +
    "change the status any more: the transfer is cut short " +
    "(no terminating chunk), never ended as if complete; retry the export. The rows " +
    "are not one snapshot: each page is read in one " +
    "statement, pages one after another. A record present and unchanged for the whole transfer appears exactly once.",
];

exportsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items/export",
    operationId: "exportItems",
    scope: "items:read",
    tags: ["Items"],
    summary: "Export items as CSV or NDJSON",
    description: [
      "Takes every filter of `GET /v1/items` (archived items are left out unless " +
        "`archived=true` or `any`), ordered by expiry_date, then item_id.",
      `Columns, in order: ${ITEM_COLUMNS.map((c) => `\`${c}\``).join(", ")}, then one column per custom field of the document types the exported ` +
        `items have (header: the field name; names equal case-insensitively share a column; a name equal to a standard column's, or ` +
        `starting with \`${FIELD_PREFIX}\`, is written \`${FIELD_PREFIX}<name>\`), then \`${ITEM_LAST_COLUMN}\` (UTC). \`external_id\` is "" when unset; ` +
        "`expiry_date` and `recurrence_until` are written in `date_format` (default: the " +
        "company's settings.date_format); `archived` is `true`/`false`; `folder_path` " +
        "is the folder's full path `A/B/C` (folder names cannot contain `/`); " +
        '`contact_email` is "" without a contact; `tags` are joined ' +
        "with `|` in CSV, a `\\` or `|` inside a tag escaped with `\\`. The `recurrence_*` " +
        "columns are the item's recurrence rule " +
        "(every, unit, renew_on, until, count as GET /v1/items/{item_id} shows them; all " +
        "empty for an item without one, until or count empty " +
        "when the rule has none), so an import of the export leaves every rule as it is. " +
        "In NDJSON `item_id` is a number, `archived` a boolean, " +
        "`tags` an array, the rule an object `recurrence` (`{every, unit, renew_on, " +
        "until, count}`, or null) in place of the `recurrence_*` " +
        "columns, and the custom fields are an object `fields` by field name (the item's values only).",
      ...COMMON,
      `An item whose expiry_date changes while the export runs may be missed or appear twice (the order is by that date). Pages of ` +
        `${ITEM_PAGE_ROWS.toLocaleString("en-US")} rows, one D1 statement each: about a million rows fit in one request's D1 budget (docs/api-notes.md, Exports).`,
    ].join("\n\n"),
    request: { query: ExportItemsQuery },
    responses: { 200: exported("items", ItemExportRecordSchema, "ItemExportRecord") },
  }),
  async (c) => {
    const query = c.req.valid("query");
    return exportResponse(c, "items", query.format, await itemExport(c.var.db, c.var.companyId, query));
  },
);

exportsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/contacts/export",
    operationId: "exportContacts",
    scope: "contacts:read",
    tags: ["Contacts"],
    summary: "Export contacts as CSV or NDJSON",
    description: [
      "Takes every filter of `GET /v1/contacts` (`groupid`, `deptid`, `q`), ordered by contact_id.",
      `Columns, in order: ${CONTACT_COLUMNS.map((c) => `\`${c}\``).join(", ")} (the names of the POST /v1/contacts fields; ` +
        '`group_name` is the contact\'s group, "" for none; `add_date` is UTC). In NDJSON `contact_id` is a number.',
      ...COMMON,
      `Pages of ${CONTACT_PAGE_ROWS.toLocaleString("en-US")} rows, one D1 statement each.`,
    ].join("\n\n"),
    request: { query: ExportContactsQuery },
    responses: { 200: exported("contacts", ContactExportRecordSchema, "ContactExportRecord") },
  }),
  async (c) => {
    const query = c.req.valid("query");
    return exportResponse(c, "contacts", query.format, await contactExport(c.var.db, c.var.companyId, query));
  },
);

// Any other method on the two paths is 405 (GET, HEAD). Without this it would reach the
// `/{item_id}` and `/{contact_id}` routes of PATCH and DELETE and be a 400 for the id "export".
// After the GET routes, so it only answers what they did not.
for (const path of ["/v1/items/export", "/v1/contacts/export"]) {
  exportsRouter.all(path, (c) => {
    throw apiError(405, `Method ${echo(c.req.method)} is not allowed on ${path}; allowed: GET, HEAD`, {
      Allow: "GET, HEAD",
    });
  });
}
