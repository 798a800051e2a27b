// GET /v1/items/export and GET /v1/contacts/export: the column contract, CSV quoting and formula
// neutralisation, NDJSON, filters (the same ids as the list), tenancy, scopes, several pages with
// every row exactly once, and a D1 failure mid-stream that cuts the transfer short.
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import worker from "../../src/index";
import { restoreCsvFormula, splitCsvList } from "../../src/lib/csv";
import { todayIn } from "../../src/lib/time";
import {
  CONTACT_PAGE_ROWS,
  contactExportPage,
  exportedFields,
  ITEM_PAGE_ROWS,
  itemExportPage,
} from "../../src/records/exports";
import { contactFilter } from "../../src/records/contacts";
import { itemFilter } from "../../src/records/items/queries";
import type { ContactExportRecordSchema, ItemExportRecordSchema } from "../../src/schemas/exports";
import { ListItemsQuery } from "../../src/schemas/items";
import type { z } from "zod";
import {
  BASE,
  call,
  captureErrorLogs,
  createAccount,
  createContact,
  createDocumentType,
  createGroup,
  createItem,
  env,
  expectShapeA,
  expectShapeB,
  fullScansOf,
  queryPlan,
  tokenFor,
  type DataOf,
  type TestAccount,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";
import { parseCsv } from "./support/csv";

/** The columns before the rule: NDJSON has these keys, then `recurrence` for the five rule columns. */
const PLAIN_COLUMNS = [
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
];
const RULE_COLUMNS = [
  "recurrence_every",
  "recurrence_unit",
  "recurrence_renew_on",
  "recurrence_until",
  "recurrence_count",
];
const ITEM_COLUMNS = [...PLAIN_COLUMNS, ...RULE_COLUMNS];
const CONTACT_COLUMNS = [
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
];

interface Download {
  status: number;
  headers: Headers;
  text: string;
}

async function download(path: string, token: string, method = "GET"): Promise<Download> {
  const res = await exports.default.fetch(
    new Request(`${BASE}${path}`, { method, headers: { Authorization: `Bearer ${token}` } }),
  );
  // Decoded by hand: workerd warns about .text() on a Content-Type it does not know as text (application/x-ndjson).
  return {
    status: res.status,
    headers: res.headers,
    text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(await res.arrayBuffer()),
  };
}

/** The CSV as objects by header, with the formula quote removed (as the importer does). */
function csvObjects(text: string): { header: string[]; rows: Array<Record<string, string>> } {
  const [header, ...records] = parseCsv(text);
  return {
    header: header!,
    rows: records.map((r) => Object.fromEntries(header!.map((h, i) => [h, restoreCsvFormula(r[i]!)]))),
  };
}
type ContactRecord = z.output<typeof ContactExportRecordSchema>;

/** NDJSON lines, typed by the export's record schema (src/schemas/exports.ts, published as `x-itemSchema`). */
const ndjson = <T = z.output<typeof ItemExportRecordSchema>>(text: string): T[] => {
  expect(text === "" || text.endsWith("\n")).toBe(true);
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));
};

async function exportCsv(token: string, query = "") {
  const res = await download(`/v1/items/export${query ? `?${query}` : ""}`, token);
  expectStatus(res, 200, res.text);
  return { ...res, ...csvObjects(res.text) };
}
async function exportNdjson(token: string, query = "") {
  const res = await download(`/v1/items/export?format=ndjson${query ? `&${query}` : ""}`, token);
  expectStatus(res, 200, res.text);
  return ndjson(res.text);
}
const sql = (statement: string, ...values: unknown[]) =>
  env.DB.prepare(statement)
    .bind(...values)
    .run();

// ---------------------------------------------------------------------------------------------
// A small company with one item of each kind

let acct: TestAccount;
let ada: DataOf<"createContact">;
let inspection: DataOf<"createDocumentType">, permit: DataOf<"createDocumentType">;
let a: DataOf<"getItem">, b: DataOf<"getItem">, archivedItem: DataOf<"getItem">, done: DataOf<"getItem">;
let foreignItem: number;

beforeAll(async () => {
  acct = await createAccount({ documents: 20_000, contacts: 20_000 }, { documents: 10_000, contacts: 10_000 });
  const token = acct.ownerToken;
  ada = await createContact(token, { first_name: "Ada", last_name: "Lovelace", email: "ada@example.test" });
  inspection = await createDocumentType(token, {
    doctype_name: "Inspection",
    fields: [
      { field_name: "Inspector", field_type: "text" },
      { field_name: "Result", field_type: "select", field_data: "Passed\nFailed" },
      { field_name: "Title", field_type: "text" },
      { field_name: "field:raw", field_type: "text" },
    ],
  });
  permit = await createDocumentType(token, {
    doctype_name: "Permit",
    fields: [
      { field_name: "inspector", field_type: "text" },
      { field_name: "Authority", field_type: "text" },
    ],
  });
  await createDocumentType(token, { doctype_name: "Unused", fields: [{ field_name: "Ghost", field_type: "text" }] });

  a = await createItem(token, {
    title: "=SUM(A1:A2)",
    expiry_date: "2030-03-31",
    document_type_id: inspection.typeid,
    folder_path: "Permits/City/North",
    contact_id: ada.contact_id,
    notes: 'Check 🧯, the "main" hall\nsecond line, café',
  });
  expectStatus(
    await call("setItemTags", `/v1/items/${a.item_id}/tags`, { token, body: { tags: ["-neg", "a|b", "fire"] } }),
    200,
  );
  const [inspector, result, title, raw] = inspection.fields.map((f) => f.autonum);
  for (const [field, value] of [
    [inspector, 'Ada, "the" inspector'],
    [result, "Passed"],
    [title, "-42"],
    [raw, "x"],
  ] as const) {
    await sql(
      "INSERT INTO item_field_values (item_id, field_id, company_id, value) VALUES (?, ?, ?, ?)",
      a.item_id,
      field,
      acct.companyId,
      value,
    );
  }
  b = await createItem(token, {
    title: "City permit",
    expiry_date: "2030-01-15",
    document_type_id: permit.typeid,
    folder_path: "Permits",
  });
  await sql("UPDATE items SET external_id = 'ERP-1' WHERE id = ?", b.item_id);
  const [permitInspector, authority] = permit.fields.map((f) => f.autonum);
  await sql(
    "INSERT INTO item_field_values (item_id, field_id, company_id, value) VALUES (?, ?, ?, 'Bob'), (?, ?, ?, 'City')",
    b.item_id,
    permitInspector,
    acct.companyId,
    b.item_id,
    authority,
    acct.companyId,
  );
  archivedItem = await createItem(token, { title: "Old lease", expiry_date: "2029-06-01" });
  expectStatus(
    await call("archiveItem", `/v1/items/${archivedItem.item_id}/archive`, { token, body: { archived: true } }),
    200,
  );
  done = await createItem(token, { title: "+1 call the office", expiry_date: "2031-12-01", item_type: "due" });
  expectStatus(
    await call("setItemStatus", `/v1/items/${done.item_id}/status`, { token, body: { status: "completed" } }),
    200,
  );

  const other = await createAccount();
  foreignItem = (await createItem(other.ownerToken, { title: "Someone else's", expiry_date: "2030-02-01" })).item_id;
});

describe("GET /v1/items/export: CSV", () => {
  it("streams the columns in contract order, custom fields in the middle, with the headers of a download", async () => {
    const res = await exportCsv(acct.ownerToken);
    expect(res.headers.get("Content-Type")).toBe("text/csv; charset=utf-8; header=present");
    expect(res.headers.get("Content-Disposition")).toBe(
      `attachment; filename="items-${todayIn("UTC").replace(/-/g, "")}.csv"`,
    );
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(res.text.charCodeAt(0)).not.toBe(0xfeff);
    // Inspection's fields in order, then Permit's: "inspector" shares Inspector's column; "Title" and
    // "field:raw" could be taken for a standard column or a prefixed one; Unused has no item, so no Ghost.
    expect(res.header).toEqual([
      ...ITEM_COLUMNS,
      "Inspector",
      "Result",
      "field:Title",
      "field:field:raw",
      "Authority",
      "add_date",
    ]);
    expect(res.rows.map((r) => Number(r.item_id))).toEqual([b.item_id, a.item_id, done.item_id]);
  });

  it("writes each value: dates, flags, type, folder path, contact email, tags, custom fields", async () => {
    const { rows } = await exportCsv(acct.ownerToken);
    const [rb, ra, rd] = rows;
    expect(ra).toEqual({
      item_id: String(a.item_id),
      external_id: "",
      title: "=SUM(A1:A2)",
      item_type: "exp",
      expiry_date: "2030-03-31",
      status: "pending",
      archived: "false",
      document_type: "Inspection",
      folder_path: "Permits/City/North",
      contact_email: "ada@example.test",
      notes: 'Check 🧯, the "main" hall\nsecond line, café',
      tags: "-neg|a\\|b|fire",
      ...Object.fromEntries(RULE_COLUMNS.map((c) => [c, ""])),
      Inspector: 'Ada, "the" inspector',
      Result: "Passed",
      "field:Title": "-42",
      "field:field:raw": "x",
      Authority: "",
      add_date: a.add_date,
    });
    expect(splitCsvList(ra!.tags!)).toEqual(["-neg", "a|b", "fire"]);
    expect(rb).toMatchObject({
      external_id: "ERP-1",
      document_type: "Permit",
      folder_path: "Permits",
      contact_email: "",
      tags: "",
      Inspector: "Bob",
      Authority: "City",
      Result: "",
    });
    expect(rd).toMatchObject({
      title: "+1 call the office",
      item_type: "due",
      status: "completed",
      document_type: "",
      folder_path: "",
    });
  });

  it("neutralises formulas and quotes what needs it, in the raw bytes", async () => {
    const { text } = await exportCsv(acct.ownerToken);
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(
      [...ITEM_COLUMNS, "Inspector", "Result", "field:Title", "field:field:raw", "Authority", "add_date"].join(","),
    );
    const rowA = text.slice(text.indexOf(`\r\n${a.item_id},`) + 2);
    expect(
      rowA.startsWith(
        `${a.item_id},,'=SUM(A1:A2),exp,2030-03-31,pending,false,Inspection,Permits/City/North,ada@example.test,"Check 🧯, the ""main"" hall\nsecond line, café",'-neg|a\\|b|fire,,,,,,"Ada, ""the"" inspector",Passed,'-42,x,,`,
      ),
    ).toBe(true);
    expect(text).toContain(`\r\n${done.item_id},,'+1 call the office,due,`);
    expect(text.endsWith("\r\n")).toBe(true);
  });

  it("writes expiry_date in date_format, by default the company's", async () => {
    let { rows } = await exportCsv(acct.ownerToken, "date_format=DD.MM.YYYY");
    expect(rows.map((r) => r.expiry_date)).toEqual(["15.01.2030", "31.03.2030", "01.12.2031"]);
    const { text } = await exportCsv(acct.ownerToken, `date_format=${encodeURIComponent("MMM D, YYYY")}`);
    expect(text).toContain(`,"Jan 15, 2030",`);
    const settings = await call("updateCompanySettings", `/v1/companies/${acct.companyId}/settings`, {
      token: acct.ownerToken,
      body: { date_format: "MM/DD/YYYY" },
    });
    expectStatus(settings, 200, JSON.stringify(settings.body));
    try {
      ({ rows } = await exportCsv(acct.ownerToken));
      expect(rows[0]!.expiry_date).toBe("01/15/2030");
      ({ rows } = await exportCsv(acct.ownerToken, "date_format=YYYY-MM-DD"));
      expect(rows[0]!.expiry_date).toBe("2030-01-15");
    } finally {
      await call("updateCompanySettings", `/v1/companies/${acct.companyId}/settings`, {
        token: acct.ownerToken,
        body: { date_format: "YYYY-MM-DD" },
      });
    }
  });
});

describe("GET /v1/items/export: NDJSON", () => {
  it("one object per line with the same keys; item_id a number, archived a boolean, tags an array, fields an object; nothing neutralised", async () => {
    const res = await download("/v1/items/export?format=ndjson", acct.ownerToken);
    expectStatus(res, 200);
    expect(res.headers.get("Content-Type")).toBe("application/x-ndjson");
    expect(res.headers.get("Content-Disposition")).toMatch(/^attachment; filename="items-\d{8}\.ndjson"$/);
    const lines = ndjson(res.text);
    expect(lines.map((l) => l.item_id)).toEqual([b.item_id, a.item_id, done.item_id]);
    expect(Object.keys(lines[1]!)).toEqual([...PLAIN_COLUMNS, "recurrence", "fields", "add_date"]);
    expect(lines[1]).toEqual({
      item_id: a.item_id,
      external_id: "",
      title: "=SUM(A1:A2)",
      item_type: "exp",
      expiry_date: "2030-03-31",
      status: "pending",
      archived: false,
      document_type: "Inspection",
      folder_path: "Permits/City/North",
      contact_email: "ada@example.test",
      notes: 'Check 🧯, the "main" hall\nsecond line, café',
      tags: ["-neg", "a|b", "fire"],
      recurrence: null,
      fields: { Inspector: 'Ada, "the" inspector', Result: "Passed", Title: "-42", "field:raw": "x" },
      add_date: a.add_date,
    });
    expect(lines[0]).toMatchObject({ external_id: "ERP-1", tags: [], fields: { inspector: "Bob", Authority: "City" } });
    expect(lines[2]).toMatchObject({ title: "+1 call the office", fields: {}, archived: false });
    const withArchived = await exportNdjson(acct.ownerToken, "archived=true&date_format=DD/MM/YYYY");
    expect(withArchived).toEqual([
      expect.objectContaining({ item_id: archivedItem.item_id, archived: true, expiry_date: "01/06/2029" }),
    ]);
  });
});

describe("GET /v1/items/export: recurrence rules", () => {
  it("writes the rule in the five recurrence columns (until in date_format, empty cells for none) and as `recurrence` in NDJSON", async () => {
    const own = await createAccount();
    const token = own.ownerToken;
    const type = await createDocumentType(token, { fields: [{ field_name: "Recurrence_Unit", field_type: "text" }] });
    await createItem(token, {
      expiry_date: "2030-01-31",
      document_type_id: type.typeid,
      recurrence: { every: 1, unit: "month", renew_on: "expired", until: "2030-12-31", count: 6 },
    });
    await createItem(token, {
      expiry_date: "2030-02-01",
      recurrence: { every: 2, unit: "year", renew_on: "completed" },
    });
    await createItem(token, { expiry_date: "2030-03-01" });
    const { header, rows } = await exportCsv(token, "date_format=DD.MM.YYYY");
    // A custom field named like a rule column is written field:<name>, as for the other standard columns.
    expect(header).toEqual([...ITEM_COLUMNS, "field:Recurrence_Unit", "add_date"]);
    expect(rows.map((r) => RULE_COLUMNS.map((c) => r[c]))).toEqual([
      ["1", "month", "expired", "31.12.2030", "6"],
      ["2", "year", "completed", "", ""],
      ["", "", "", "", ""],
    ]);
    const lines = await exportNdjson(token, `date_format=${encodeURIComponent("MM/DD/YYYY")}`);
    expect(lines.map((l) => l.recurrence)).toEqual([
      { every: 1, unit: "month", renew_on: "expired", until: "12/31/2030", count: 6 },
      { every: 2, unit: "year", renew_on: "completed", until: null, count: null },
      null,
    ]);
  });
});

describe("GET /v1/items/export: filters, tenancy, scopes, routing", () => {
  const listIds = async (query: string) => {
    const res = await call("listItems", `/v1/items?limit=200${query ? `&${query}` : ""}`, { token: acct.ownerToken });
    expectStatus(res, 200, JSON.stringify(res.body));
    return res.body.data.map((i) => i.item_id);
  };

  it("honours every filter of the list: the same items in the same order", async () => {
    const queries = [
      "",
      "archived=any",
      "archived=true",
      "status=completed",
      "status=pending",
      "item_type=due",
      `document_type_id=${inspection.typeid}`,
      `deptid=${acct.deptId}`,
      `contact_id=${ada.contact_id}`,
      `folder_id=${a.folder_id}`,
      "folder_id=0",
      "period=2030-01-01..2030-12-31",
      "period=expired",
      "q=permit",
      "q=sum",
      "q=%21%21",
      "status=pending&archived=any&item_type=exp",
    ];
    for (const query of queries) {
      const expected = await listIds(query);
      const csv = await exportCsv(acct.ownerToken, query);
      expect(
        csv.rows.map((r) => Number(r.item_id)),
        query,
      ).toEqual(expected);
      expect(
        (await exportNdjson(acct.ownerToken, query)).map((l) => l.item_id),
        query,
      ).toEqual(expected);
    }
    expect(await listIds("q=permit")).toEqual([b.item_id]);
  });

  it("lists the custom fields of the exported items' document types only", async () => {
    expect((await exportCsv(acct.ownerToken, `document_type_id=${permit.typeid}`)).header).toEqual([
      ...ITEM_COLUMNS,
      "inspector",
      "Authority",
      "add_date",
    ]);
    expect((await exportCsv(acct.ownerToken, "status=completed")).header).toEqual([...ITEM_COLUMNS, "add_date"]);
    const empty = await exportCsv(acct.ownerToken, "q=%21%21");
    expect(empty.text).toBe(`${[...ITEM_COLUMNS, "add_date"].join(",")}\r\n`);
    expect((await download("/v1/items/export?format=ndjson&q=nomatchatall", acct.ownerToken)).text).toBe("");
  });

  it("shows only the caller's company", async () => {
    const mine = await exportNdjson(acct.ownerToken, "archived=any");
    expect(mine.map((l) => l.item_id)).not.toContain(foreignItem);
    expect(mine).toHaveLength(4);
    const demo = await exportNdjson(await tokenFor("demo-owner"), "archived=any");
    expect(demo.map((l) => l.item_id)).not.toContain(a.item_id);
    const inDemo = (await env.DB.prepare("SELECT count(*) AS n FROM items WHERE company_id = 1").first<{
      n: number;
    }>())!.n;
    expect(demo).toHaveLength(inDemo);
  });

  it("needs items:read (403 Shape A), contacts export contacts:read", async () => {
    const contactsOnly = await tokenFor("demo-readonly", "contacts:read");
    const itemsOnly = await tokenFor("demo-readonly", "items:read");
    const refused = await call("exportItems", "/v1/items/export", { token: contactsOnly });
    expectShapeA(refused, 403, "insufficient_scope");
    expect(refused.body.required_scope).toBe("items:read");
    expectShapeA(await call("exportContacts", "/v1/contacts/export", { token: itemsOnly }), 403, "insufficient_scope");
    expectStatus(await download("/v1/items/export", itemsOnly), 200);
    expectStatus(await download("/v1/contacts/export", contactsOnly), 200);
    expectShapeA(await call("exportItems", "/v1/items/export"), 401, "invalid_token");
  });

  it("is matched before /v1/items/{item_id}; refuses bad parameters with 400 Shape B; HEAD reads no page", async () => {
    expectStatus(await call("getItem", `/v1/items/${a.item_id}`, { token: acct.ownerToken }), 200);
    expectShapeB(
      await call("getItem", "/v1/items/exports", { token: acct.ownerToken }),
      400,
      /item_id must be a positive integer/,
    );
    expectShapeB(
      await call("exportItems", "/v1/items/export?format=xml", { token: acct.ownerToken }),
      400,
      /format must be one of: csv, ndjson/,
    );
    expectShapeB(
      await call("exportItems", "/v1/items/export?date_format=YY", { token: acct.ownerToken }),
      400,
      /date_format must be one of/,
    );
    expectShapeB(
      await call("exportItems", "/v1/items/export?status=open", { token: acct.ownerToken }),
      400,
      /status must be one of/,
    );
    expectShapeB(
      await call("exportItems", "/v1/items/export?format=csv&format=csv", { token: acct.ownerToken }),
      400,
      /^format /,
    );
    expectShapeB(
      await call("exportContacts", "/v1/contacts/export?groupid=x", { token: acct.ownerToken }),
      400,
      /groupid/,
    );
    for (const path of ["/v1/items/export", "/v1/contacts/export"]) {
      for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
        const res = await callRaw(method, path, { token: acct.ownerToken, body: {} });
        expectShapeB(res, 405, /allowed: GET, HEAD$/);
        expect(res.headers.get("Allow")).toBe("GET, HEAD");
      }
    }
    const head = await download("/v1/items/export", acct.ownerToken, "HEAD");
    expectStatus(head, 200);
    expect(head.headers.get("Content-Type")).toBe("text/csv; charset=utf-8; header=present");
    expect(head.text).toBe("");
  });
});

// ---------------------------------------------------------------------------------------------
// Contacts

describe("GET /v1/contacts/export", () => {
  let own: TestAccount;
  let group: DataOf<"createContactGroup">, plain: DataOf<"createContact">, formula: DataOf<"createContact">;

  beforeAll(async () => {
    own = await createAccount();
    group = await createGroup(own.ownerToken, { group_name: 'Suppliers, "key"' });
    plain = await createContact(own.ownerToken, {
      first_name: "Zoë",
      last_name: "Ünal",
      email: "zoe@example.test",
      country_code: "+44",
      iso: "GB",
      mobile_code: "+44",
      phone_number: "7700 900123",
      groupid: group.groupid,
    });
    formula = await createContact(own.ownerToken, {
      first_name: "=cmd|' /C calc'!A0",
      last_name: "@risk",
      email: "f@example.test",
      groupid: 0,
    });
  });

  it("CSV: the contract's columns, group by name, neutralised and quoted cells", async () => {
    const res = await download("/v1/contacts/export", own.ownerToken);
    expectStatus(res, 200);
    expect(res.headers.get("Content-Disposition")).toMatch(/^attachment; filename="contacts-\d{8}\.csv"$/);
    const { header, rows } = csvObjects(res.text);
    expect(header).toEqual(CONTACT_COLUMNS);
    expect(rows).toEqual([
      {
        contact_id: String(plain.contact_id),
        first_name: "Zoë",
        last_name: "Ünal",
        email: "zoe@example.test",
        country_code: "+44",
        iso: "GB",
        mobile_code: "+44",
        phone_number: "7700 900123",
        group_name: 'Suppliers, "key"',
        add_date: plain.add_date,
      },
      expect.objectContaining({
        contact_id: String(formula.contact_id),
        first_name: "=cmd|' /C calc'!A0",
        last_name: "@risk",
        group_name: "",
      }),
    ]);
    expect(res.text).toContain(
      `\r\n${plain.contact_id},Zoë,Ünal,zoe@example.test,'+44,GB,'+44,7700 900123,"Suppliers, ""key""",`,
    );
    expect(res.text).toContain(`\r\n${formula.contact_id},'=cmd|' /C calc'!A0,'@risk,f@example.test,,,,,,`);
  });

  it("NDJSON, filters as the list's, tenancy", async () => {
    const res = await download("/v1/contacts/export?format=ndjson", own.ownerToken);
    const lines = ndjson<ContactRecord>(res.text);
    expect(lines[0]).toEqual({
      contact_id: plain.contact_id,
      first_name: "Zoë",
      last_name: "Ünal",
      email: "zoe@example.test",
      country_code: "+44",
      iso: "GB",
      mobile_code: "+44",
      phone_number: "7700 900123",
      group_name: 'Suppliers, "key"',
      add_date: plain.add_date,
    });
    for (const query of [`groupid=${group.groupid}`, "groupid=0", `deptid=${own.deptId}`, "q=zoe", "q=risk", "q=%21"]) {
      const list = ok(await call("listContacts", `/v1/contacts?limit=200&${query}`, { token: own.ownerToken }));
      const exported = ndjson<ContactRecord>(
        (await download(`/v1/contacts/export?format=ndjson&${query}`, own.ownerToken)).text,
      );
      expect(
        exported.map((l) => l.contact_id),
        query,
      ).toEqual(list.body.data.map((c) => c.contact_id));
    }
    expect(lines.map((l) => l.contact_id)).toEqual([plain.contact_id, formula.contact_id]);
    const other = ndjson<ContactRecord>((await download("/v1/contacts/export?format=ndjson", acct.ownerToken)).text);
    expect(other.map((l) => l.contact_id)).toEqual([ada.contact_id]);
  });
});

// ---------------------------------------------------------------------------------------------
// Many pages

describe("exports over several pages", () => {
  const ITEMS = 2 * ITEM_PAGE_ROWS + 537;
  const CONTACTS = 2 * CONTACT_PAGE_ROWS + 311;
  let big: TestAccount;
  let expected: Array<{ id: number; date: string }>;

  beforeAll(async () => {
    big = await createAccount({ documents: 20_000, contacts: 20_000 }, { documents: 10_000, contacts: 10_000 });
    const numbers = JSON.stringify(Array.from({ length: ITEMS }, (_, i) => i));
    // 25 expiry dates: every page boundary falls among rows of one date (the item_id breaks the tie).
    await sql(
      `INSERT INTO items (company_id, dept_id, title, notes, expiry_date, created_by)
       SELECT ?, ?, 'Bulk ' || value, CASE WHEN value % 7 = 0 THEN '=x' || value ELSE 'n, ' || value END, date('2031-01-01', '+' || (value * 7919 % 25) || ' days'), 1
       FROM json_each(?)`,
      big.companyId,
      big.deptId,
      numbers,
    );
    const tagged = await env.DB.prepare(
      "INSERT INTO tags (company_id, name, name_key) VALUES (?, 'bulk', 'bulk') RETURNING id",
    )
      .bind(big.companyId)
      .first<{ id: number }>();
    await sql(
      "INSERT INTO item_tags (item_id, tag_id, company_id, position) SELECT id, ?, company_id, 0 FROM items WHERE company_id = ? AND id % 3 = 0",
      tagged!.id,
      big.companyId,
    );
    const rows = await env.DB.prepare(
      "SELECT id, expiry_date AS date FROM items WHERE company_id = ? ORDER BY expiry_date, id",
    )
      .bind(big.companyId)
      .all<{ id: number; date: string }>();
    expected = rows.results;
    expect(expected).toHaveLength(ITEMS);
    await sql(
      `INSERT INTO contacts (company_id, dept_id, first_name, last_name, email, email_key)
       SELECT ?, ?, 'Bulk', 'C' || value, 'bulk' || value || '@example.test', 'bulk' || value || '@example.test' FROM json_each(?)`,
      big.companyId,
      big.deptId,
      JSON.stringify(Array.from({ length: CONTACTS }, (_, i) => i)),
    );
  });

  it(`items: ${2 * ITEM_PAGE_ROWS + 537} rows over three pages, each exactly once, in (expiry_date, item_id) order, CSV and NDJSON`, async () => {
    const csv = await exportCsv(big.ownerToken);
    expect(csv.rows.map((r) => Number(r.item_id))).toEqual(expected.map((e) => e.id));
    expect(csv.rows.map((r) => r.expiry_date)).toEqual(expected.map((e) => e.date));
    expect(new Set(csv.rows.map((r) => r.item_id)).size).toBe(ITEMS);
    expect(csv.rows.filter((r) => r.tags === "bulk").length).toBe(expected.filter((e) => e.id % 3 === 0).length);
    expect(
      csv.rows.every((r) =>
        r.notes!.startsWith("=x") ? csv.text.includes(`,'${r.notes},`) : r.notes!.startsWith("n, "),
      ),
    ).toBe(true);
    const lines = await exportNdjson(big.ownerToken);
    expect(lines.map((l) => l.item_id)).toEqual(expected.map((e) => e.id));
  });

  it(`contacts: ${2 * CONTACT_PAGE_ROWS + 311} rows over three pages, each exactly once, in contact_id order`, async () => {
    const ids = (
      await env.DB.prepare("SELECT id FROM contacts WHERE company_id = ? ORDER BY id")
        .bind(big.companyId)
        .all<{ id: number }>()
    ).results.map((r) => r.id);
    const csv = csvObjects((await download("/v1/contacts/export", big.ownerToken)).text);
    expect(csv.rows.map((r) => Number(r.contact_id))).toEqual(ids);
    const lines = ndjson<ContactRecord>((await download("/v1/contacts/export?format=ndjson", big.ownerToken)).text);
    expect(lines.map((l) => l.contact_id)).toEqual(ids);
  });

  describe("a D1 failure mid-stream", () => {
    const logged = captureErrorLogs();

    /** env.DB whose sessions' `nth` page query of the item export is a statement D1 refuses. */
    function failingDb(nth: number): D1Database {
      let pages = 0;
      const failing = <T extends { prepare(query: string): D1PreparedStatement }>(inner: T): T =>
        new Proxy(inner, {
          get(target, property) {
            if (property === "prepare") {
              return (query: string) =>
                query.includes("json_group_array") && ++pages === nth
                  ? target.prepare("SELECT * FROM no_such_table")
                  : target.prepare(query);
            }
            if (property === "withSession")
              return (constraint?: string) => failing((target as unknown as D1Database).withSession(constraint));
            const value = Reflect.get(target, property, target);
            return typeof value === "function" ? value.bind(target) : value;
          },
        });
      return failing(env.DB);
    }

    it("errors the stream (a truncated transfer, not a complete-looking file) and logs it with the request id", async () => {
      const ctx = createExecutionContext();
      const request = new Request(`${BASE}/v1/items/export`, {
        headers: { Authorization: `Bearer ${big.ownerToken}`, "X-Request-Id": "export-fails-1" },
      });
      const res = await worker.fetch(
        request as Request<unknown, IncomingRequestCfProperties>,
        { ...env, DB: failingDb(2) } as Cloudflare.Env,
        ctx,
      );
      expectStatus(res, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let received = "";
      let failure: unknown;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          received += decoder.decode(value, { stream: true });
        }
      } catch (err) {
        failure = err;
      }
      await waitOnExecutionContext(ctx);
      expect(failure, "the body must not end as if complete").toBeDefined();
      expect(parseCsv(received)).toHaveLength(1 + ITEM_PAGE_ROWS);
      const line = logged.find((l) => l.includes("export stream failed"));
      expect(line).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({
        level: "error",
        request_id: "export-fails-1",
        operation: "exportItems",
        records_sent: ITEM_PAGE_ROWS,
      });
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Query plans

describe("query plans of the export", () => {
  const db = database(env.DB);
  const cases: Array<[string, string]> = [
    ["", "items_company_date_idx"],
    ["status=pending", "items_company_status_date_idx"],
    ["document_type_id=3", "items_type_date_idx"],
    ["folder_id=0", "items_folder_date_idx"],
    ["contact_id=4", "items_contact_date_idx"],
  ];

  it("reads each item page from the filter's index in order (no sort of the company's items), with no scan of items", async () => {
    for (const [search, index] of cases) {
      const query = ListItemsQuery.parse(Object.fromEntries(new URLSearchParams(search)));
      const { where } = itemFilter(1, query, "2026-11-23")!;
      for (const after of [undefined, { date: "2030-01-01", id: 12 }]) {
        const plan = await queryPlan(itemExportPage(db, 1, where, after));
        expect(fullScansOf("items", plan), plan).toEqual([]);
        expect(plan, plan).toMatch(new RegExp(`SEARCH items USING COVERING INDEX ${index} `));
        expect(plan.split("\n")[0], plan).toBe("SEARCH items USING INTEGER PRIMARY KEY (rowid=?)");
        expect(plan.split("\n").filter((l) => /USE TEMP B-TREE FOR ORDER BY/.test(l)).length, plan).toBeLessThanOrEqual(
          1,
        );
      }
      const fields = await queryPlan(exportedFields(db, 1, where));
      expect(fullScansOf("items", fields), fields).toEqual([]);
    }
  });

  it("reads contact pages along the company's index", async () => {
    const plan = await queryPlan(contactExportPage(db, 1, contactFilter(1, {})!, 500));
    expect(plan, plan).toMatch(/SEARCH contacts USING INDEX contacts_company_idx \(company_id=\? AND rowid>\?\)/);
    expect(plan).not.toMatch(/TEMP B-TREE/);
  });
});
