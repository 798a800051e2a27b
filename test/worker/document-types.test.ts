import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  TIMESTAMP,
  type DataOf,
  type Fields,
  call,
  createDepartment,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  noServerError,
  createDocumentType,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

// Document types: CRUD with custom fields, one default per company, the account's ceiling
// (race-safe), owner-only access, scopes and tenancy.
//
// Budget: the demo account 1 allows 50 document types and D1 state persists through this file,
// so the tests in company 1 create few types (about 35 in all); the ceiling tests use account 2
// (demo-other), whose ceiling they lower and restore.

const TYPE_FIELDS = ["typeid", "name", "deptid", "isdefault", "add_date", "empid", "docs_count", "fields"].sort();
const FIELD_FIELDS = ["autonum", "field_name", "field_type", "field_data", "private"].sort();
const FIELD_TYPES = ["text", "textarea", "number", "date", "select", "checkbox", "email", "url"];

let owner: string, member: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, member, other, readonly } = await demoTokens());
});

async function getType(id: number, token = owner): Promise<DataOf<"getDocumentType">> {
  const res = await call("getDocumentType", `/v1/document-types/${id}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function listTypes(query = "", token = owner) {
  const res = await call("listDocumentTypes", `/v1/document-types${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  return res.body;
}

function patchType(id: number, body: unknown, token = owner) {
  return call("updateDocumentType", `/v1/document-types/${id}`, { token, body });
}

async function defaultsOf(companyId: number): Promise<number[]> {
  const { results } = await env.DB.prepare(
    "SELECT id FROM document_types WHERE company_id = ? AND is_default = 1 ORDER BY id",
  )
    .bind(companyId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

async function fieldRows(typeId: number) {
  const { results } = await env.DB.prepare("SELECT * FROM document_type_fields WHERE type_id = ? ORDER BY position, id")
    .bind(typeId)
    .all<Fields>();
  return results;
}

async function typeRow(typeId: number) {
  return env.DB.prepare("SELECT * FROM document_types WHERE id = ?").bind(typeId).first<Fields>();
}

async function typesOfAccount(accountId: number): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM document_types WHERE account_id = ?")
    .bind(accountId)
    .first<{ n: number }>();
  return row!.n;
}

/** Fields whose type does not exist: must never appear. */
async function orphanFields(): Promise<number> {
  const row = await env.DB.prepare(
    "SELECT count(*) AS n FROM document_type_fields AS f WHERE NOT EXISTS (SELECT 1 FROM document_types AS t WHERE t.id = f.type_id)",
  ).first<{ n: number }>();
  return row!.n;
}

describe("POST /v1/document-types", () => {
  it("201 with msg and the type: default department, isdefault 0, empid the caller, docs_count 0, no fields", async () => {
    const name = uniqueWord("Passport");
    const res = await call("createDocumentType", "/v1/document-types", { token: owner, body: { doctype_name: name } });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(TYPE_FIELDS);
    expect(data).toMatchObject({ name, deptid: 1, isdefault: 0, empid: 1, docs_count: 0, fields: [] });
    expect(Number.isInteger(data.typeid)).toBe(true);
    expect(data.add_date).toMatch(TIMESTAMP);
    expect(await getType(data.typeid)).toEqual(data);
    expect(await typeRow(data.typeid)).toMatchObject({ account_id: 1, company_id: 1, created_by: 1 });
  });

  it('creates the fields in order, each with an autonum, output fields exactly; private defaults to 0, field_data to ""', async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "Policy number", field_type: "text" },
        { field_name: "Notes", field_type: "textarea", field_data: "line one\nline two", private: 1 },
        { field_name: "Cover", field_type: "select", field_data: "  Basic \r\n\n Premium\r\n  " },
        { field_name: "Amount", field_type: "number", field_data: "0" },
      ],
    });
    expect(t.fields).toHaveLength(4);
    for (const f of t.fields) {
      expect(Object.keys(f).sort()).toEqual(FIELD_FIELDS);
      expect(Number.isInteger(f.autonum)).toBe(true);
    }
    expect(t.fields.map((f) => [f.field_name, f.field_type, f.field_data, f.private])).toEqual([
      ["Policy number", "text", "", 0],
      ["Notes", "textarea", "line one\nline two", 1],
      // A select's options: one per line, trimmed, blank lines dropped, stored joined by LF.
      ["Cover", "select", "Basic\nPremium", 0],
      ["Amount", "number", "0", 0],
    ]);
    const autonums = t.fields.map((f) => f.autonum);
    expect(new Set(autonums).size).toBe(4);
    const rows = await fieldRows(t.typeid);
    expect(rows.map((r) => r.id)).toEqual(autonums);
    expect(rows.every((r) => r.company_id === 1)).toBe(true);
    expect(await getType(t.typeid)).toEqual(t);
  });

  it("accepts every field type, and 50 fields (one statement, whatever their number)", async () => {
    const fields = Array.from({ length: 50 }, (_, i) => ({
      field_name: `Field ${i}`,
      field_type: FIELD_TYPES[i % FIELD_TYPES.length],
      field_data: FIELD_TYPES[i % FIELD_TYPES.length] === "select" ? "a\nb" : "x".repeat(1000),
    }));
    const t = await createDocumentType(owner, { fields });
    expect(t.fields.map((f) => f.field_name)).toEqual(fields.map((f) => f.field_name));
    expect(new Set(t.fields.map((f) => f.field_type))).toEqual(new Set(FIELD_TYPES));
  });

  it("creates in the given department", async () => {
    const dept = await createDepartment();
    const t = await createDocumentType(owner, { deptid: dept });
    expect(t.deptid).toBe(dept);
  });

  it("400 naming doctype_name when it is missing, empty, blank, too long or not a string", async () => {
    for (const body of [
      {},
      { doctype_name: "" },
      { doctype_name: "  \u200b " },
      { doctype_name: "x".repeat(101) },
      { doctype_name: 5 },
    ]) {
      expectShapeB(await call("createDocumentType", "/v1/document-types", { token: owner, body }), 400, /doctype_name/);
    }
  });

  it("400 naming deptid for an unknown department, another company's, or a non-id; nothing written", async () => {
    for (const deptid of [999999, 2, 0, "1", 1.5]) {
      const name = uniqueWord("nodept");
      expectShapeB(
        await call("createDocumentType", "/v1/document-types", { token: owner, body: { doctype_name: name, deptid } }),
        400,
        /deptid/,
      );
      expect(await env.DB.prepare("SELECT id FROM document_types WHERE name = ?").bind(name).first()).toBeNull();
    }
  });

  it("400 for isdefault other than 0 or 1, unknown body fields, fields not an array", async () => {
    for (const isdefault of [2, "1", true, null]) {
      expectShapeB(
        await call("createDocumentType", "/v1/document-types", {
          token: owner,
          body: { doctype_name: uniqueWord(), isdefault },
        }),
        400,
        /isdefault/,
      );
    }
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), name: "x" },
      }),
      400,
      /Unknown field: name/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), fields: {} },
      }),
      400,
      /fields/,
    );
  });

  it("400 naming the allowed values for an unknown field_type; 400 when field_type or field_name is missing", async () => {
    for (const field_type of ["string", "TEXT", "", 1, null]) {
      const res = await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: {
          doctype_name: uniqueWord(),
          fields: [
            { field_name: "A", field_type: "text" },
            { field_name: "B", field_type },
          ],
        },
      });
      expectShapeB(res, 400, /fields\.1\.field_type/);
      expect(res.body.msg).toContain(FIELD_TYPES.join(", "));
    }
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), fields: [{ field_name: "A" }] },
      }),
      400,
      /fields\.0\.field_type.*required/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), fields: [{ field_type: "text" }] },
      }),
      400,
      /fields\.0\.field_name is required/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), fields: [{ field_name: " ", field_type: "text" }] },
      }),
      400,
      /fields\.0\.field_name/,
    );
  });

  it("400 for a select without options, with too many, or with a repeated option", async () => {
    const cases: Array<[Fields, RegExp]> = [
      [{ field_name: "S", field_type: "select" }, /fields\.0\.field_data.*options/],
      [{ field_name: "S", field_type: "select", field_data: "" }, /fields\.0\.field_data.*options/],
      [{ field_name: "S", field_type: "select", field_data: " \n \r\n " }, /fields\.0\.field_data.*options/],
      [
        {
          field_name: "S",
          field_type: "select",
          field_data: Array.from({ length: 101 }, (_, i) => `o${i}`).join("\n"),
        },
        /at most 100 options/,
      ],
      [
        { field_name: "S", field_type: "select", field_data: "Red\nGreen\n red " },
        /option "red" is listed more than once/,
      ],
    ];
    for (const [field, msg] of cases) {
      const name = uniqueWord("sel");
      expectShapeB(
        await call("createDocumentType", "/v1/document-types", {
          token: owner,
          body: { doctype_name: name, fields: [field] },
        }),
        400,
        msg,
      );
      expect(await env.DB.prepare("SELECT id FROM document_types WHERE name = ?").bind(name).first()).toBeNull();
    }
  });

  it("400 for field_data over 2000 characters, control characters in it, or an unknown key in a field", async () => {
    const body = (field: Fields) => ({ doctype_name: uniqueWord(), fields: [field] });
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: body({ field_name: "A", field_type: "text", field_data: "x".repeat(2001) }),
      }),
      400,
      /field_data must be at most 2000/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: body({ field_name: "A", field_type: "text", field_data: "a\u0000b" }),
      }),
      400,
      /field_data/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: body({ field_name: "A", field_type: "text", label: "x" }),
      }),
      400,
      /Unknown field: fields\.0\.label/,
    );
    // autonum names an existing field: it has no meaning on create.
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: body({ autonum: 1, field_name: "A", field_type: "text" }),
      }),
      400,
      /autonum/,
    );
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: body({ field_name: "A", field_type: "text", private: 2 }),
      }),
      400,
      /private must be 0 or 1/,
    );
  });

  it("400 naming a field name used twice in one request (case-insensitively); nothing written", async () => {
    const name = uniqueWord("dupfield");
    const res = await call("createDocumentType", "/v1/document-types", {
      token: owner,
      body: {
        doctype_name: name,
        fields: [
          { field_name: "Straße", field_type: "text" },
          { field_name: "Other", field_type: "text" },
          { field_name: "STRASSE", field_type: "number" },
        ],
      },
    });
    expectShapeB(res, 400, /fields\.2\.field_name.*"STRASSE".*more than one/);
    expect(await env.DB.prepare("SELECT id FROM document_types WHERE name = ?").bind(name).first()).toBeNull();
  });

  it("400 for more than 50 fields", async () => {
    const fields = Array.from({ length: 51 }, (_, i) => ({ field_name: `F${i}`, field_type: "text" }));
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: uniqueWord(), fields },
      }),
      400,
      /at most 50/,
    );
  });

  it("409 for a duplicate name in the company, case-insensitively in any script; nothing written", async () => {
    const word = uniqueWord("äpfel");
    const first = await createDocumentType(owner, { doctype_name: `Straße ${word}` });
    const before = await typesOfAccount(1);
    for (const dup of [`Straße ${word}`, `STRASSE ${word.toUpperCase()}`, `  strasse ${word}  `]) {
      const res = await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: dup, fields: [{ field_name: "X", field_type: "text" }] },
      });
      expectShapeB(res, 409, /already exists/);
    }
    expect(await typesOfAccount(1)).toBe(before);
    expect(await fieldRows(first.typeid)).toEqual([]);
  });

  it("names are unique per company, whatever the department; another company may use the same name", async () => {
    const name = uniqueWord("PerCompany");
    await createDocumentType(owner, { doctype_name: name, deptid: 1 });
    const res = await call("createDocumentType", "/v1/document-types", {
      token: owner,
      body: { doctype_name: name, deptid: await createDepartment() },
    });
    expectShapeB(res, 409);
    // ... but another company may use it.
    const elsewhere = await createDocumentType(other, { doctype_name: name });
    expect(elsewhere.deptid).toBe(2);
  });

  it("isdefault 1 makes it the company's only default; a duplicate with isdefault 1 leaves the default alone", async () => {
    const a = await createDocumentType(owner, { isdefault: 1 });
    expect(a.isdefault).toBe(1);
    expect(await defaultsOf(1)).toEqual([a.typeid]);
    const b = await createDocumentType(owner, { isdefault: 1 });
    expect(await defaultsOf(1)).toEqual([b.typeid]);
    expect((await getType(a.typeid)).isdefault).toBe(0);
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: owner,
        body: { doctype_name: a.name, isdefault: 1 },
      }),
      409,
    );
    expect(await defaultsOf(1)).toEqual([b.typeid]);
    await createDocumentType(owner, { isdefault: 0 });
    expect(await defaultsOf(1)).toEqual([b.typeid]);
  });
});

describe("GET /v1/document-types", () => {
  it("lists the company's types ordered by typeid, with their fields and meta {total, max_allowed, limit, offset}", async () => {
    const withFields = await createDocumentType(owner, {
      fields: [
        { field_name: "Number", field_type: "text" },
        { field_name: "Issued", field_type: "date" },
      ],
    });
    const body = await listTypes();
    expect(Object.keys(body.meta)).toEqual(["total", "max_allowed", "limit", "offset"]);
    expect(body.meta).toMatchObject({ max_allowed: 50, limit: 200, offset: 0 });
    const { results } = await env.DB.prepare("SELECT id FROM document_types WHERE company_id = 1 ORDER BY id").all<{
      id: number;
    }>();
    expect(body.meta.total).toBe(results.length);
    expect(body.data.map((t) => t.typeid)).toEqual(results.map((r) => r.id));
    for (const t of body.data) {
      expect(Object.keys(t).sort()).toEqual(TYPE_FIELDS);
      // Each type carries exactly its own fields, as GET by id shows them.
      expect(t).toEqual(await getType(t.typeid));
    }
    expect(body.data.find((t) => t.typeid === withFields.typeid)!.fields).toEqual(withFields.fields);
  });

  it("max_allowed is the account's ceiling", async () => {
    expect((await listTypes("", other)).meta.max_allowed).toBe(
      (await env.DB.prepare("SELECT max_document_types AS m FROM accounts WHERE id = 2").first<{ m: number }>())!.m,
    );
  });

  it("filters by deptid and by q (case-insensitive substring of the name); total counts the matches", async () => {
    const dept = await createDepartment();
    const word = uniqueWord("q");
    const a = await createDocumentType(owner, {
      deptid: dept,
      doctype_name: `Äpfel ${word} one`,
      fields: [{ field_name: "F", field_type: "text" }],
    });
    const b = await createDocumentType(owner, { deptid: dept, doctype_name: `${word.toUpperCase()} two` });
    const c = await createDocumentType(owner, { doctype_name: `x${word}x` });
    const byDept = await listTypes(`deptid=${dept}`);
    expect(byDept.data.map((t) => t.typeid)).toEqual([a.typeid, b.typeid]);
    expect(byDept.meta.total).toBe(2);
    expect(byDept.data[0]!.fields).toEqual(a.fields);
    const byQ = await listTypes(`q=${encodeURIComponent(word)}`);
    expect(byQ.data.map((t) => t.typeid)).toEqual([a.typeid, b.typeid, c.typeid]);
    expect(byQ.meta.total).toBe(3);
    expect((await listTypes(`q=${encodeURIComponent(`äPFEL ${word}`)}`)).data.map((t) => t.typeid)).toEqual([a.typeid]);
    const both = await listTypes(`q=${word}&deptid=${dept}&limit=1&offset=1`);
    expect(both.data.map((t) => t.typeid)).toEqual([b.typeid]);
    expect(both.meta).toMatchObject({ total: 2, limit: 1, offset: 1 });
    const none = await listTypes("deptid=999999");
    expect(none.data).toEqual([]);
    expect(none.meta.total).toBe(0);
  });

  it("pages: the fields belong to the page's types", async () => {
    const all = await listTypes();
    const page = await listTypes("limit=2&offset=1");
    expect(page.data).toEqual(all.data.slice(1, 3));
    expect(page.meta.total).toBe(all.meta.total);
  });

  it("400 for a bad limit, offset or deptid", async () => {
    for (const query of ["limit=0", "limit=201", "offset=-1", "deptid=0", "deptid=abc", "limit=1&limit=2"]) {
      expectShapeB(await call("listDocumentTypes", `/v1/document-types?${query}`, { token: owner }), 400);
    }
  });

  it("shows only the caller's company", async () => {
    const mine = await createDocumentType(other);
    const theirs = await listTypes("", other);
    expect(theirs.data.map((t) => t.typeid)).toContain(mine.typeid);
    expect((await listTypes()).data.map((t) => t.typeid)).not.toContain(mine.typeid);
  });
});

describe("GET /v1/document-types/{type_id}", () => {
  it("404 for an unknown id and for another company's type; 400 for a malformed id", async () => {
    const theirs = await createDocumentType(other);
    expectShapeB(
      await call("getDocumentType", `/v1/document-types/${theirs.typeid}`, { token: owner }),
      404,
      /Document type not found/,
    );
    expectShapeB(await call("getDocumentType", "/v1/document-types/99999999", { token: owner }), 404);
    expectShapeB(await call("getDocumentType", "/v1/document-types/abc", { token: owner }), 400, /type_id/);
  });
});

describe("PATCH /v1/document-types/{type_id}", () => {
  it("400 No updatable fields provided for an empty body; 400 for unknown fields", async () => {
    const t = await createDocumentType(owner);
    expectShapeB(await patchType(t.typeid, {}), 400, /No updatable fields provided/);
    expectShapeB(await patchType(t.typeid, { name: "x" }), 400, /Unknown field: name/);
  });

  it("renames (200 with msg and data); 409 for another type's name, case-insensitively; its own name in another case is fine", async () => {
    const a = await createDocumentType(owner);
    const b = await createDocumentType(owner);
    const renamed = uniqueWord("Renamed");
    const res = await patchType(a.typeid, { doctype_name: renamed });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(typeof res.body.msg).toBe("string");
    expect(res.body.data).toMatchObject({ typeid: a.typeid, name: renamed });
    expectShapeB(await patchType(b.typeid, { doctype_name: renamed.toUpperCase() }), 409, /already exists/);
    expect((await getType(b.typeid)).name).toBe(b.name);
    const self = await patchType(a.typeid, { doctype_name: renamed.toUpperCase() });
    expectStatus(self, 200);
    expect(self.body.data.name).toBe(renamed.toUpperCase());
  });

  it("isdefault 1 moves the default; isdefault 0 on the default leaves the company without one", async () => {
    const a = await createDocumentType(owner);
    const b = await createDocumentType(owner);
    expect(ok(await patchType(a.typeid, { isdefault: 1 })).body.data.isdefault).toBe(1);
    expect(await defaultsOf(1)).toEqual([a.typeid]);
    expect(ok(await patchType(b.typeid, { isdefault: 1 })).body.data.isdefault).toBe(1);
    expect(await defaultsOf(1)).toEqual([b.typeid]);
    expectStatus(await patchType(b.typeid, { isdefault: 1 }), 200);
    expect(await defaultsOf(1)).toEqual([b.typeid]);
    expect(ok(await patchType(b.typeid, { isdefault: 0 })).body.data.isdefault).toBe(0);
    expect(await defaultsOf(1)).toEqual([]);
  });

  it("deptid moves the type to another department of the company; an unknown one is 400", async () => {
    const t = await createDocumentType(owner);
    const dept = await createDepartment();
    expect(ok(await patchType(t.typeid, { deptid: dept })).body.data.deptid).toBe(dept);
    expectShapeB(await patchType(t.typeid, { deptid: 2 }), 400, /deptid/);
    expect((await getType(t.typeid)).deptid).toBe(dept);
  });

  it("fields: updates the ones with autonum, adds the others, removes the left-out ones; kept autonums never change", async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "Alpha", field_type: "text" },
        { field_name: "Beta", field_type: "number" },
        { field_name: "Gamma", field_type: "date" },
      ],
    });
    const [alpha, beta, gamma] = t.fields;
    const res = await patchType(t.typeid, {
      fields: [
        { autonum: gamma!.autonum, field_name: "Gamma", field_type: "date" },
        { autonum: alpha!.autonum, field_name: "Alpha renamed", field_type: "select", field_data: "a\nb", private: 1 },
        { field_name: "Delta", field_type: "email" },
      ],
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    const fields = res.body.data.fields;
    expect(fields.map((f) => [f.autonum, f.field_name, f.field_type, f.field_data, f.private])).toEqual([
      [gamma!.autonum, "Gamma", "date", "", 0],
      [alpha!.autonum, "Alpha renamed", "select", "a\nb", 1],
      [fields[2]!.autonum, "Delta", "email", "", 0],
    ]);
    // The new field gets a new autonum; the removed one's is not reused.
    expect(fields[2]!.autonum).toBeGreaterThan(Math.max(alpha!.autonum, beta!.autonum, gamma!.autonum));
    expect((await fieldRows(t.typeid)).map((r) => r.id)).toEqual(fields.map((f) => f.autonum));
    expect(
      await env.DB.prepare("SELECT id FROM document_type_fields WHERE id = ?").bind(beta!.autonum).first(),
    ).toBeNull();
    expect(await getType(t.typeid)).toEqual(res.body.data);

    // Another round: the kept autonums are still the same.
    const again = ok(
      await patchType(t.typeid, {
        fields: [
          { autonum: fields[2]!.autonum, field_name: "Delta", field_type: "email", field_data: "someone@example.com" },
          { autonum: gamma!.autonum, field_name: "Gamma", field_type: "date" },
        ],
      }),
    );
    expect(again.body.data.fields.map((f) => f.autonum)).toEqual([fields[2]!.autonum, gamma!.autonum]);
    expect(again.body.data.fields[0]!.field_data).toBe("someone@example.com");
  });

  it("fields: two fields may swap names, and a new field may take a removed field's name", async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "One", field_type: "text" },
        { field_name: "Two", field_type: "text" },
        { field_name: "Three", field_type: "text" },
      ],
    });
    const [one, two, three] = t.fields;
    const res = await patchType(t.typeid, {
      fields: [
        { autonum: one!.autonum, field_name: "two", field_type: "text" },
        { autonum: two!.autonum, field_name: "ONE", field_type: "text" },
        { field_name: "Three", field_type: "checkbox" },
      ],
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.fields.map((f) => [f.autonum === three!.autonum, f.field_name])).toEqual([
      [false, "two"],
      [false, "ONE"],
      [false, "Three"],
    ]);
    expect(res.body.data.fields.slice(0, 2).map((f) => f.autonum)).toEqual([one!.autonum, two!.autonum]);
  });

  it("fields: [] removes all; leaving fields out keeps them", async () => {
    const t = await createDocumentType(owner, { fields: [{ field_name: "Keep", field_type: "text" }] });
    const renamed = ok(await patchType(t.typeid, { doctype_name: uniqueWord("Kept") }));
    expect(renamed.body.data.fields).toEqual(t.fields);
    const cleared = ok(await patchType(t.typeid, { fields: [] }));
    expect(cleared.body.data.fields).toEqual([]);
    expect(await fieldRows(t.typeid)).toEqual([]);
  });

  it("400 for an autonum that is not a field of this type (another type's, another company's, unknown); nothing changes", async () => {
    const t = await createDocumentType(owner, { fields: [{ field_name: "Mine", field_type: "text" }] });
    const sibling = await createDocumentType(owner, { fields: [{ field_name: "Sibling", field_type: "text" }] });
    const foreign = await createDocumentType(other, { fields: [{ field_name: "Foreign", field_type: "text" }] });
    for (const autonum of [sibling.fields[0]!.autonum, foreign.fields[0]!.autonum, 99999999]) {
      const res = await patchType(t.typeid, {
        doctype_name: uniqueWord("neverapplied"),
        fields: [
          { field_name: "New", field_type: "text" },
          { autonum, field_name: "Stolen", field_type: "text" },
        ],
      });
      expectShapeB(res, 400, new RegExp(`fields\\.1\\.autonum ${autonum} is not a field of document type ${t.typeid}`));
    }
    expect(await getType(t.typeid)).toEqual(t);
    expect(await getType(sibling.typeid)).toEqual(sibling);
    expect(await getType(foreign.typeid, other)).toEqual(foreign);
  });

  it("400 for a repeated autonum, a repeated field name, an invalid field type or a select without options", async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "A", field_type: "text" },
        { field_name: "B", field_type: "text" },
      ],
    });
    const [a, b] = t.fields;
    const cases: Array<[unknown[], RegExp]> = [
      [
        [
          { autonum: a!.autonum, field_name: "A", field_type: "text" },
          { autonum: a!.autonum, field_name: "B", field_type: "text" },
        ],
        /fields\.1\.autonum.*more than once/,
      ],
      [
        [
          { autonum: a!.autonum, field_name: "Same", field_type: "text" },
          { autonum: b!.autonum, field_name: "same", field_type: "text" },
        ],
        /fields\.1\.field_name.*"same"/,
      ],
      [
        [
          { autonum: a!.autonum, field_name: "A", field_type: "text" },
          { field_name: "a", field_type: "text" },
        ],
        /fields\.1\.field_name.*"a"/,
      ],
      [
        [{ autonum: a!.autonum, field_name: "A", field_type: "radio" }],
        /fields\.0\.field_type.*text, textarea, number, date, select, checkbox, email, url/,
      ],
      [[{ autonum: a!.autonum, field_name: "A", field_type: "select" }], /fields\.0\.field_data/],
      [[{ autonum: 0, field_name: "A", field_type: "text" }], /autonum/],
    ];
    for (const [fields, msg] of cases) expectShapeB(await patchType(t.typeid, { fields }), 400, msg);
    expect(await getType(t.typeid)).toEqual(t);
  });

  it("404 for another company's type or an unknown one; nothing changes", async () => {
    const theirs = await createDocumentType(other);
    expectShapeB(await patchType(theirs.typeid, { doctype_name: uniqueWord() }), 404);
    expectShapeB(await patchType(99999999, { doctype_name: uniqueWord() }), 404);
    expect(await getType(theirs.typeid, other)).toEqual(theirs);
  });
});

describe("DELETE /v1/document-types/{type_id}", () => {
  it("removes the type and its fields; then 404", async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "A", field_type: "text" },
        { field_name: "B", field_type: "url" },
      ],
    });
    const res = await call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body).toEqual({ success: true, msg: expect.any(String) });
    expect(await typeRow(t.typeid)).toBeNull();
    expect(await fieldRows(t.typeid)).toEqual([]);
    expectShapeB(await call("getDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }), 404);
    expectShapeB(await call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }), 404);
  });

  it("400 for a type with associated documents (docs_count > 0); the type and its fields stay", async () => {
    const t = await createDocumentType(owner, { fields: [{ field_name: "A", field_type: "text" }] });
    await env.DB.prepare("UPDATE document_types SET docs_count = 3 WHERE id = ?").bind(t.typeid).run();
    expectShapeB(
      await call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }),
      400,
      /associated documents/,
    );
    expect(await getType(t.typeid)).toEqual({ ...t, docs_count: 3 });
    expect(await fieldRows(t.typeid)).toHaveLength(1);
    await env.DB.prepare("UPDATE document_types SET docs_count = 0 WHERE id = ?").bind(t.typeid).run();
    expectStatus(await call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }), 200);
  });

  it("the default type may be deleted: the company then has no default", async () => {
    const t = await createDocumentType(owner, { isdefault: 1 });
    expectStatus(await call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }), 200);
    expect(await defaultsOf(1)).toEqual([]);
  });

  it("404 for another company's type, which stays", async () => {
    const theirs = await createDocumentType(other, { fields: [{ field_name: "A", field_type: "text" }] });
    expectShapeB(await call("deleteDocumentType", `/v1/document-types/${theirs.typeid}`, { token: owner }), 404);
    expect(await getType(theirs.typeid, other)).toEqual(theirs);
  });
});

describe("owner only, scopes, authentication", () => {
  const endpoints = (id: number): Array<[string, string, unknown?]> => [
    ["GET", "/v1/document-types"],
    ["POST", "/v1/document-types", { doctype_name: uniqueWord() }],
    ["GET", `/v1/document-types/${id}`],
    ["PATCH", `/v1/document-types/${id}`, { doctype_name: uniqueWord() }],
    ["DELETE", `/v1/document-types/${id}`],
  ];

  it("403 Shape B for a non-owner with scope * on every endpoint, reads included; nothing changes", async () => {
    const t = await createDocumentType(owner);
    const before = await typesOfAccount(1);
    for (const [method, path, body] of endpoints(t.typeid)) {
      const res = await callRaw(method, path, { token: member, body });
      expectShapeB(res, 403, /owner/);
    }
    expect(await typesOfAccount(1)).toBe(before);
    expect(await getType(t.typeid)).toEqual(t);
  });

  it("403 Shape A insufficient_scope first, for owner and non-owner tokens lacking the scope", async () => {
    const t = await createDocumentType(owner);
    const contactsOnly = await tokenFor("demo-owner", "contacts:read");
    for (const [method, path, body] of endpoints(t.typeid)) {
      const required = method === "GET" ? "doctypes:read" : "doctypes:write";
      for (const token of [contactsOnly, readonly]) {
        const res = await callRaw(method, path, { token, body });
        expectShapeA(res, 403, "insufficient_scope");
        expect(res.body.required_scope).toBe(required);
      }
    }
  });

  it("doctypes:read reads but does not write; doctypes:write writes but does not read", async () => {
    const t = await createDocumentType(owner);
    const readOnly = await tokenFor("demo-owner", "doctypes:read");
    const writeOnly = await tokenFor("demo-owner", "doctypes:write");
    expectStatus(await call("getDocumentType", `/v1/document-types/${t.typeid}`, { token: readOnly }), 200);
    expectShapeA(await patchType(t.typeid, { isdefault: 0 }, readOnly), 403, "insufficient_scope");
    expectStatus(await patchType(t.typeid, { isdefault: 0 }, writeOnly), 200);
    expectShapeA(
      await call("listDocumentTypes", "/v1/document-types", { token: writeOnly }),
      403,
      "insufficient_scope",
    );
  });

  it("401 without a token", async () => {
    for (const [method, path, body] of endpoints(1))
      expectShapeA(await callRaw(method, path, { body }), 401, "invalid_token");
  });
});

describe("concurrent changes in company 1", () => {
  it("concurrent PATCH isdefault=1 on several types leave exactly one default", async () => {
    const types = await Promise.all(Array.from({ length: 4 }, () => createDocumentType(owner)));
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(types.map((t) => patchType(t.typeid, { isdefault: 1 })));
      noServerError(...results);
      expect(await defaultsOf(1)).toHaveLength(1);
    }
  });

  it("PATCH of the fields racing DELETE of the type: no 5xx, no orphan fields", async () => {
    for (let round = 0; round < 4; round++) {
      const t = await createDocumentType(owner, { fields: [{ field_name: "A", field_type: "text" }] });
      const [patched, deleted] = await Promise.all([
        patchType(t.typeid, {
          fields: [
            { autonum: t.fields[0]!.autonum, field_name: "A2", field_type: "text" },
            { field_name: "B", field_type: "text" },
          ],
        }),
        call("deleteDocumentType", `/v1/document-types/${t.typeid}`, { token: owner }),
      ]);
      noServerError(patched, deleted);
      expectStatus(deleted, 200);
      expect([200, 404]).toContain(patched.status);
      expect(await orphanFields()).toBe(0);
    }
  });

  it("two PATCHes replacing the same type's fields: no 5xx; the list ends as one of them sent it", async () => {
    const t = await createDocumentType(owner, {
      fields: [
        { field_name: "A", field_type: "text" },
        { field_name: "B", field_type: "text" },
      ],
    });
    for (let round = 0; round < 4; round++) {
      const current = (await getType(t.typeid)).fields;
      const keepFirst = current[0]!;
      // One keeps the first field and drops the rest; the other keeps them all and adds one.
      const [one, two] = await Promise.all([
        patchType(t.typeid, {
          fields: [{ autonum: keepFirst.autonum, field_name: keepFirst.field_name, field_type: "text" }],
        }),
        patchType(t.typeid, {
          fields: [
            ...current.map((f) => ({ autonum: f.autonum, field_name: f.field_name, field_type: "text" })),
            { field_name: `C${round}`, field_type: "text" },
          ],
        }),
      ]);
      noServerError(one, two);
      const names = (await getType(t.typeid)).fields.map((f) => f.field_name);
      const okOne = one.status === 200 && names.length === 1;
      const okTwo = two.status === 200 && names.length === current.length + 1;
      expect(okOne || okTwo, `${one.status}/${two.status} ${names}`).toBe(true);
      expect(await orphanFields()).toBe(0);
    }
  });
});

describe("the account's ceiling (account 2)", () => {
  let original: number;

  beforeAll(async () => {
    original = (await env.DB.prepare("SELECT max_document_types AS m FROM accounts WHERE id = 2").first<{
      m: number;
    }>())!.m;
  });

  afterAll(async () => {
    await env.DB.prepare("UPDATE accounts SET max_document_types = ? WHERE id = 2").bind(original).run();
  });

  async function setCeiling(max: number) {
    await env.DB.prepare("UPDATE accounts SET max_document_types = ? WHERE id = 2").bind(max).run();
  }

  it("counts the types of all the account's companies; at the ceiling, 400 naming it, and nothing written", async () => {
    // A second company of account 2 with one type, made directly in D1.
    const company = await env.DB.prepare(
      "INSERT INTO companies (account_id, name, documents_limit, contacts_limit, drive_space_mb) VALUES (2, ?, 10, 10, 10) RETURNING id",
    )
      .bind(uniqueWord("co"))
      .first<{ id: number }>();
    const dept = await createDepartment(company!.id);
    const name = uniqueWord("elsewhere");
    await env.DB.prepare(
      "INSERT INTO document_types (account_id, company_id, dept_id, name, name_key, created_by) VALUES (2, ?, ?, ?, ?, 3)",
    )
      .bind(company!.id, dept, name, name)
      .run();

    const used = await typesOfAccount(2);
    await setCeiling(used + 1);
    const last = await createDocumentType(other, { fields: [{ field_name: "A", field_type: "text" }] });
    const list = await listTypes("", other);
    expect(list.meta.max_allowed).toBe(used + 1);
    // meta.total counts the caller's company only; the ceiling counts the whole account.
    expect(list.meta.total).toBe(used); // used + 1 types in account 2, one of them in the other company
    const res = await call("createDocumentType", "/v1/document-types", {
      token: other,
      body: { doctype_name: uniqueWord(), fields: [{ field_name: "A", field_type: "text" }] },
    });
    expectShapeB(res, 400, new RegExp(`at most ${used + 1} document types`));
    expect(await typesOfAccount(2)).toBe(used + 1);
    expect(await orphanFields()).toBe(0);

    // At the ceiling, a create under an existing name is refused for the ceiling, and the
    // existing type's fields are untouched (the fields insert runs only when the type was inserted).
    const dup = await call("createDocumentType", "/v1/document-types", {
      token: other,
      body: { doctype_name: last.name, isdefault: 1, fields: [{ field_name: "Intruder", field_type: "text" }] },
    });
    expectShapeB(dup, 400, /at most/);
    expect(await getType(last.typeid, other)).toEqual(last);

    // At the ceiling, isdefault 1 does not unset the current default either.
    const def = ok(await patchType(last.typeid, { isdefault: 1 }, other)).body.data;
    expectShapeB(
      await call("createDocumentType", "/v1/document-types", {
        token: other,
        body: { doctype_name: uniqueWord(), isdefault: 1 },
      }),
      400,
      /at most/,
    );
    expect(await defaultsOf(2)).toEqual([def.typeid]);

    // Room again after a delete.
    expectStatus(await call("deleteDocumentType", `/v1/document-types/${last.typeid}`, { token: other }), 200);
    await createDocumentType(other);
  });

  it("concurrent creates at the ceiling: exactly the remaining number succeed, the rest are 400; no stray fields", async () => {
    for (let round = 0; round < 4; round++) {
      const used = await typesOfAccount(2);
      const room = 3;
      await setCeiling(used + room);
      const fieldsBefore = (await env.DB.prepare(
        "SELECT count(*) AS n FROM document_type_fields WHERE company_id = 2",
      ).first<{ n: number }>())!.n;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          call("createDocumentType", "/v1/document-types", {
            token: other,
            body: {
              doctype_name: uniqueWord(`race${round}`),
              isdefault: i % 2,
              fields: [
                { field_name: "A", field_type: "text" },
                { field_name: "B", field_type: "select", field_data: "x\ny" },
              ],
            },
          }),
        ),
      );
      noServerError(...results);
      const createdCount = results.filter((r) => r.status === 201).length;
      expect(createdCount, results.map((r) => r.status).join(",")).toBe(room);
      for (const res of results.filter((r) => r.status !== 201))
        expectShapeB(res, 400, new RegExp(`at most ${used + room}`));
      expect(await typesOfAccount(2)).toBe(used + room);
      const fieldsAfter = (await env.DB.prepare(
        "SELECT count(*) AS n FROM document_type_fields WHERE company_id = 2",
      ).first<{ n: number }>())!.n;
      expect(fieldsAfter - fieldsBefore).toBe(room * 2);
      expect(await orphanFields()).toBe(0);
      expect((await defaultsOf(2)).length).toBeLessThanOrEqual(1);
    }
  });
});

describe("budget", () => {
  it("this file leaves room under account 1's ceiling", async () => {
    expect(await typesOfAccount(1)).toBeLessThan(50);
  });
});
