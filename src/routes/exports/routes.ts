import { echo } from "../../lib/echo";
import { apiError } from "../../lib/errors";
import { createRouter, scopedRoute } from "../../lib/openapi";
import { contactExport, itemExport, ITEM_PAGE_ROWS, CONTACT_PAGE_ROWS } from "./queries";
import { CONTACT_COLUMNS, ContactExportRecordSchema, ExportContactsQuery, ExportItemsQuery, FIELD_PREFIX, ITEM_COLUMNS, ITEM_LAST_COLUMN, ItemExportRecordSchema } from "./schemas";
import { exportResponse } from "./stream";

// Registered before the items and contacts routers (src/app.ts): `/v1/items/export` would
// otherwise reach `/v1/items/{item_id}`, whose id validation answers 400.

const text = (description: string) => ({ description, schema: { type: "string" as const } });
const headers = {
  "Content-Disposition": text('`attachment; filename="items-YYYYMMDD.csv"` (`contacts-…`, `.ndjson`), dated with the company\'s today'),
  "Cache-Control": text("`no-store`"),
};

/** The 200 response: CSV (a string) or NDJSON (one `record` object per line). */
function exported(record: typeof ItemExportRecordSchema | typeof ContactExportRecordSchema, what: string) {
  return {
    description: `The ${what}, streamed: \`text/csv; charset=utf-8; header=present\` or \`application/x-ndjson\` (one JSON object per line, the schema below)`,
    headers,
    content: {
      "text/csv": { schema: { type: "string" as const, description: "RFC 4180: a header row, CRLF line ends, UTF-8 without BOM" } },
      "application/x-ndjson": { schema: record },
    },
  };
}

const COMMON = [
  "Streams every matching record, without a row limit, read page by page in the list's order with keyset pagination; the body is not " +
    "buffered. `format=csv` (default): RFC 4180, a header row, CRLF line ends, fields quoted when they hold `\"`, `,`, CR or LF (quotes " +
    "doubled), UTF-8 without a byte-order mark. Against formula injection, each line of a cell (its start and " +
    "every start after a CR, LF or CRLF in it) that starts with `=`, `+`, `-`, `@` or a form spreadsheets fold to one (fullwidth `＝＋－＠`, " +
    "small, super- or subscript forms, `−`), past any white space, invisible or control characters and `'`, gets one `'` in front, as " +
    "does a cell starting with tab or CR; an import strips exactly that one from each such line. `format=ndjson`: one JSON object per line with the same keys, " +
    "values as they are (no `'`).",
  "A failure after the first byte (a database error, the Worker's limits) cannot change the status any more: the transfer is cut short " +
    "(no terminating chunk), never ended as if complete; retry the export. The rows are not one snapshot: each page is read in one " +
    "statement, pages one after another. A record present and unchanged for the whole transfer appears exactly once.",
];

export const exportsRouter = createRouter();

exportsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items/export",
    operationId: "exportItems",
    scope: "items:read",
    tags: ["Items"],
    summary: "Export items as CSV or NDJSON",
    description: [
      "Takes every filter of `GET /v1/items` (archived items are left out unless `archived=true` or `any`), ordered by expiry_date, then item_id.",
      `Columns, in order: ${ITEM_COLUMNS.map((c) => `\`${c}\``).join(", ")}, then one column per custom field of the document types the exported ` +
        `items have (header: the field name; names equal case-insensitively share a column; a name equal to a standard column's, or ` +
        `starting with \`${FIELD_PREFIX}\`, is written \`${FIELD_PREFIX}<name>\`), then \`${ITEM_LAST_COLUMN}\` (UTC). \`external_id\` is "" when unset; ` +
        "`expiry_date` and `recurrence_until` are written in `date_format` (default: the company's settings.date_format); `archived` is `true`/`false`; `folder_path` " +
        "is the folder's full path `A/B/C` (folder names cannot contain `/`); `contact_email` is \"\" without a contact; `tags` are joined " +
        "with `|` in CSV, a `\\` or `|` inside a tag escaped with `\\`. The `recurrence_*` columns are the item's recurrence rule " +
        "(every, unit, renew_on, until, count as GET /v1/items/{item_id} shows them; all empty for an item without one, until or count empty " +
        "when the rule has none), so an import of the export leaves every rule as it is. In NDJSON `item_id` is a number, `archived` a boolean, " +
        "`tags` an array, the rule an object `recurrence` (`{every, unit, renew_on, until, count}`, or null) in place of the `recurrence_*` " +
        "columns, and the custom fields are an object `fields` by field name (the item's values only).",
      ...COMMON,
      `An item whose expiry_date changes while the export runs may be missed or appear twice (the order is by that date). Pages of ` +
        `${ITEM_PAGE_ROWS.toLocaleString("en-US")} rows, one D1 statement each: about a million rows fit in one request's D1 budget (docs/api-notes.md, Exports).`,
    ].join("\n\n"),
    request: { query: ExportItemsQuery },
    responses: { 200: exported(ItemExportRecordSchema, "items") },
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
        "`group_name` is the contact's group, \"\" for none; `add_date` is UTC). In NDJSON `contact_id` is a number.",
      ...COMMON,
      `Pages of ${CONTACT_PAGE_ROWS.toLocaleString("en-US")} rows, one D1 statement each.`,
    ].join("\n\n"),
    request: { query: ExportContactsQuery },
    responses: { 200: exported(ContactExportRecordSchema, "contacts") },
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
    throw apiError(405, `Method ${echo(c.req.method)} is not allowed on ${path}; allowed: GET, HEAD`, { Allow: "GET, HEAD" });
  });
}
