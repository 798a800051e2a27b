import { beforeAll, describe, expect, it } from "vitest";
import {
  TIMESTAMP,
  type DataOf,
  call,
  createAccount,
  createContact,
  createDepartment,
  createGroup,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueEmail,
  uniqueWord,
  after,
  noServerError,
  expectStatus,
} from "./helpers";
import { sql } from "drizzle-orm";
import { database } from "../../src/db/client";
import { DEPARTMENT_HOLDINGS, departmentHolds } from "../../src/records/departments";
import { nameKey } from "../../src/lib/text-key";

// Departments: CRUD, the one default per company, unique names, usage counters, delete refusals,
// owner-only access, scopes, tenancy and races. Company 1's default department (1) is never
// moved here: tests that move a default do it in a fresh account of their own (createAccount).

const DEPT_FIELDS = ["deptid", "name", "isdefault", "add_date", "docs_used", "contacts_used", "storage_used_kb"].sort();
const ROUNDS = 10;

let owner: string, member: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, member, other, readonly } = await demoTokens());
});

async function createDept(body: Record<string, unknown> = {}, token = owner): Promise<DataOf<"createDepartment">> {
  const res = await call("createDepartment", "/v1/departments", {
    token,
    body: { dept_name: uniqueWord("Dept "), ...body },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

async function getDept(id: number, token = owner): Promise<DataOf<"getDepartment">> {
  const res = await call("getDepartment", `/v1/departments/${id}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function listDepts(query = "", token = owner) {
  const res = await call("listDepartments", `/v1/departments${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  return res.body;
}

/** The ids of a company's default departments, straight from D1. */
async function defaultDepartments(companyId: number): Promise<number[]> {
  const { results } = await env.DB.prepare(
    "SELECT id FROM departments WHERE company_id = ? AND is_default = 1 ORDER BY id",
  )
    .bind(companyId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

async function groupsOf(deptId: number) {
  const { results } = await env.DB.prepare(
    "SELECT id, name, is_default FROM contact_groups WHERE dept_id = ? ORDER BY id",
  )
    .bind(deptId)
    .all<{ id: number; name: string; is_default: number }>();
  return results;
}

async function defaultGroupOf(deptId: number): Promise<number> {
  const group = (await groupsOf(deptId)).find((g) => g.is_default === 1);
  if (!group) throw new Error(`department ${deptId} has no default group`);
  return group.id;
}

/** A department's contacts_used counter and its real number of contacts. */
async function contactsUsed(deptId: number): Promise<{ used: number; actual: number }> {
  const row = await env.DB.prepare(
    "SELECT contacts_used AS used, (SELECT count(*) FROM contacts WHERE dept_id = departments.id) AS actual FROM departments WHERE id = ?",
  )
    .bind(deptId)
    .first<{ used: number; actual: number }>();
  if (!row) throw new Error(`department ${deptId} not found`);
  return row;
}

async function expectContactsUsed(deptId: number, n: number) {
  expect(await contactsUsed(deptId)).toEqual({ used: n, actual: n });
  expect((await getDept(deptId)).contacts_used).toBe(n);
}

async function insertDocumentType(deptId: number): Promise<number> {
  const name = uniqueWord("Type ");
  const row = await env.DB.prepare(
    "INSERT INTO document_types (account_id, company_id, dept_id, name, name_key, created_by) VALUES (1, 1, ?, ?, ?, 1) RETURNING id",
  )
    .bind(deptId, name, nameKey(name))
    .first<{ id: number }>();
  return row!.id;
}

async function departmentRow(id: number) {
  return env.DB.prepare("SELECT * FROM departments WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

/**
 * Starts `request` after `steps` D1 round trips of its own. The races below stagger the DELETE by
 * 0, 1 or 2 round trips (the grain of the requests' own steps), so that both orders occur: at 0
 * the two interleave (the other request's guarded write finds the department gone), later the
 * other request commits first and the delete's guard refuses.
 */

describe("POST /v1/departments", () => {
  it("201 with msg and the department: exactly the documented fields, isdefault 0, counters 0", async () => {
    const name = uniqueWord("Sales ");
    const res = await call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: name } });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(DEPT_FIELDS);
    expect(data).toMatchObject({ name, isdefault: 0, docs_used: 0, contacts_used: 0, storage_used_kb: 0 });
    expect(Number.isInteger(data.deptid)).toBe(true);
    expect(data.add_date).toMatch(TIMESTAMP);
    expect(await getDept(data.deptid)).toEqual(data);
    expect(await defaultDepartments(1)).toEqual([1]);
  });

  it('gives the new department an empty default contact group "General"', async () => {
    const dept = await createDept();
    const groups = await call("listContactGroups", `/v1/contact-groups?deptid=${dept.deptid}`, { token: owner });
    expectStatus(groups, 200);
    expect(groups.body.data).toHaveLength(1);
    expect(groups.body.data[0]).toMatchObject({
      group_name: "General",
      deptid: dept.deptid,
      isdefault: 1,
      contacts_count: 0,
    });
  });

  it("a contact placed in the new department lands in its default group", async () => {
    const dept = await createDept();
    const contact = await createContact(owner, { deptid: dept.deptid });
    expect(contact.deptid).toBe(dept.deptid);
    expect(contact.groupid).toBe(await defaultGroupOf(dept.deptid));
  });

  it("trims and NFC-normalises dept_name", async () => {
    const word = uniqueWord("Cafe");
    const dept = await createDept({ dept_name: `  ${word}\u0301  ` });
    expect(dept.name).toBe(`${word}\u0301`.normalize("NFC"));
  });

  it("400 naming dept_name when it is missing, empty, blank, too long or not a string", async () => {
    for (const body of [
      {},
      { dept_name: "" },
      { dept_name: "   " },
      { dept_name: "\u200b" },
      { dept_name: "x".repeat(101) },
      { dept_name: 5 },
    ]) {
      const res = await call("createDepartment", "/v1/departments", { token: owner, body });
      expectShapeB(res, 400, /dept_name/);
    }
    const longest = await createDept({ dept_name: uniqueWord().padEnd(100, "x") });
    expect(longest.name).toHaveLength(100);
  });

  it("400 when isdefault is not 0 or 1, and for unknown fields; nothing is written", async () => {
    for (const isdefault of [2, -1, "1", true, null]) {
      const name = uniqueWord("Bad ");
      expectShapeB(
        await call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: name, isdefault } }),
        400,
        /isdefault/,
      );
      expect(await env.DB.prepare("SELECT id FROM departments WHERE name = ?").bind(name).first()).toBeNull();
    }
    expectShapeB(
      await call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: uniqueWord(), name: "x" } }),
      400,
      /name/,
    );
  });

  it("409 for a duplicate name in the company, case-insensitively; nothing else is written", async () => {
    const dept = await createDept();
    for (const dup of [dept.name, dept.name.toUpperCase(), ` ${dept.name.toLowerCase()} `]) {
      expectShapeB(
        await call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: dup } }),
        409,
        /already exists/,
      );
    }
    const { results } = await env.DB.prepare("SELECT id FROM departments WHERE company_id = 1 AND name_key = ?")
      .bind(nameKey(dept.name))
      .all();
    expect(results).toHaveLength(1);
  });

  for (const [first, second] of [
    ["Straße", "STRASSE"],
    ["Äpfel", "äpfel"],
    ["ΟΔΟΣ", "οδος"],
    ["Café", "Cafe\u0301"],
  ]) {
    it(`"${first}" then "${second}" is 409 (case folding in every script)`, async () => {
      const word = uniqueWord();
      await createDept({ dept_name: `${first} ${word}` });
      const res = await call("createDepartment", "/v1/departments", {
        token: owner,
        body: { dept_name: `${second} ${word.toUpperCase()}` },
      });
      expectShapeB(res, 409, /already exists/);
    });
  }

  it("keeps accented and unaccented names apart", async () => {
    const word = uniqueWord();
    await createDept({ dept_name: `Apfel ${word}` });
    await createDept({ dept_name: `Äpfel ${word}` });
  });

  it("allows the same name in another company", async () => {
    const name = uniqueWord("Shared ");
    const a = await createDept({ dept_name: name });
    const b = await createDept({ dept_name: name }, other);
    expect(a.deptid).not.toBe(b.deptid);
    expect((await departmentRow(b.deptid))?.company_id).toBe(2);
  });

  it("isdefault 1 makes it the company's default and unsets the previous one", async () => {
    const acct = await createAccount();
    expect(await defaultDepartments(acct.companyId)).toEqual([acct.deptId]);
    const first = await createDept({ isdefault: 1 }, acct.ownerToken);
    expect(first.isdefault).toBe(1);
    expect(await defaultDepartments(acct.companyId)).toEqual([first.deptid]);
    expect((await getDept(acct.deptId, acct.ownerToken)).isdefault).toBe(0);
    const second = await createDept({ isdefault: 1 }, acct.ownerToken);
    expect(await defaultDepartments(acct.companyId)).toEqual([second.deptid]);
    expect((await getDept(first.deptid, acct.ownerToken)).isdefault).toBe(0);
    expect(await defaultDepartments(1)).toEqual([1]);
  });

  it("409 for a duplicate with isdefault 1 leaves the company's default alone", async () => {
    const acct = await createAccount();
    const dept = await createDept({}, acct.ownerToken);
    const res = await call("createDepartment", "/v1/departments", {
      token: acct.ownerToken,
      body: { dept_name: dept.name.toUpperCase(), isdefault: 1 },
    });
    expectShapeB(res, 409);
    expect(await defaultDepartments(acct.companyId)).toEqual([acct.deptId]);
  });
});

describe("GET /v1/departments", () => {
  it("lists the company's departments ordered by deptid, with meta and the documented fields", async () => {
    await createDept();
    const body = await listDepts();
    expect(Object.keys(body.meta).sort()).toEqual(["limit", "offset", "total"]);
    expect(body.meta).toMatchObject({ limit: 200, offset: 0 });
    const { results } = await env.DB.prepare("SELECT id FROM departments WHERE company_id = 1 ORDER BY id").all<{
      id: number;
    }>();
    expect(body.meta.total).toBe(results.length);
    expect(body.data.map((d) => d.deptid)).toEqual(results.map((r) => r.id).slice(0, 200));
    for (const d of body.data) expect(Object.keys(d).sort()).toEqual(DEPT_FIELDS);
    expect(body.data.find((d) => d.deptid === 1)).toMatchObject({ name: "General", isdefault: 1 });
  });

  it("pages with limit and offset; total counts every match", async () => {
    const word = uniqueWord("page");
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await createDept({ dept_name: `${word} ${i}` })).deptid);
    const first = await listDepts(`q=${word}&limit=2`);
    expect(first.data.map((d) => d.deptid)).toEqual(made.slice(0, 2));
    expect(first.meta).toEqual({ total: 3, limit: 2, offset: 0 });
    const second = await listDepts(`q=${word}&limit=2&offset=2`);
    expect(second.data.map((d) => d.deptid)).toEqual(made.slice(2));
    expect(second.meta).toEqual({ total: 3, limit: 2, offset: 2 });
  });

  it("filters by q: case-insensitive substring of the name in every script; % and _ are plain characters", async () => {
    const word = uniqueWord("grün");
    const a = await createDept({ dept_name: `Einkauf ${word} Nord` });
    const b = await createDept({ dept_name: `${word.toUpperCase()} Süd` });
    await createDept({ dept_name: uniqueWord("unrelated") });
    expect((await listDepts(`q=${encodeURIComponent(word.toUpperCase())}`)).data.map((d) => d.deptid)).toEqual([
      a.deptid,
      b.deptid,
    ]);
    expect((await listDepts(`q=${encodeURIComponent(`${word} süd`.toUpperCase())}`)).data.map((d) => d.deptid)).toEqual(
      [b.deptid],
    );
    const pct = await createDept({ dept_name: `${word} 100%_x` });
    expect((await listDepts(`q=${encodeURIComponent("100%_")}`)).data.map((d) => d.deptid)).toEqual([pct.deptid]);
    const none = await listDepts(`q=${uniqueWord("nothing")}`);
    expect(none.data).toEqual([]);
    expect(none.meta.total).toBe(0);
  });

  it("400 for a limit outside 1..200 or a negative offset", async () => {
    for (const query of ["limit=0", "limit=201", "limit=x", "offset=-1"]) {
      expectShapeB(await call("listDepartments", `/v1/departments?${query}`, { token: owner }), 400, /limit|offset/);
    }
  });

  it("never shows another company's departments", async () => {
    const mine = await createDept();
    const theirs = await createDept({}, other);
    const ids = (await listDepts()).data.map((d) => d.deptid);
    expect(ids).toContain(mine.deptid);
    expect(ids).not.toContain(theirs.deptid);
    expect(ids).not.toContain(2);
    const otherIds = (await listDepts("", other)).data.map((d) => d.deptid);
    expect(otherIds).toContain(theirs.deptid);
    expect(otherIds).not.toContain(mine.deptid);
  });
});

describe("GET /v1/departments/{dept_id}", () => {
  it("404 Shape B for an unknown department and for another company's department", async () => {
    expectShapeB(await call("getDepartment", "/v1/departments/999999", { token: owner }), 404, /Department not found/);
    expectShapeB(await call("getDepartment", "/v1/departments/2", { token: owner }), 404, /Department not found/);
    expectShapeB(await call("getDepartment", "/v1/departments/1", { token: other }), 404, /Department not found/);
  });

  it("400 for an id that is not a positive integer", async () => {
    for (const id of ["abc", "0", "-1", "1.5", "1e3"]) {
      expectShapeB(await call("getDepartment", `/v1/departments/${id}`, { token: owner }), 400, /dept_id/);
    }
  });
});

describe("PATCH /v1/departments/{dept_id}", () => {
  it("400 'No updatable fields provided' for an empty body", async () => {
    const dept = await createDept();
    expectShapeB(
      await call("updateDepartment", `/v1/departments/${dept.deptid}`, { token: owner, body: {} }),
      400,
      /No updatable fields provided/,
    );
  });

  it("renames; 200 with msg and the department", async () => {
    const dept = await createDept();
    const name = uniqueWord("Renamed ");
    const res = await call("updateDepartment", `/v1/departments/${dept.deptid}`, {
      token: owner,
      body: { dept_name: name },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    expect(res.body.data).toEqual({ ...dept, name });
    expect(await getDept(dept.deptid)).toEqual({ ...dept, name });
    expect((await departmentRow(dept.deptid))?.name_key).toBe(nameKey(name));
  });

  it("400 for an invalid dept_name or isdefault, and for unknown fields", async () => {
    const dept = await createDept();
    for (const body of [
      { dept_name: "" },
      { dept_name: " " },
      { dept_name: "x".repeat(101) },
      { isdefault: 2 },
      { isdefault: "0" },
      { name: "x" },
    ]) {
      expectShapeB(await call("updateDepartment", `/v1/departments/${dept.deptid}`, { token: owner, body }), 400);
    }
    expect(await getDept(dept.deptid)).toEqual(dept);
  });

  it("409 when renaming to another department's name in another case or script; a case-only rename of itself is fine", async () => {
    const word = uniqueWord();
    const a = await createDept({ dept_name: `Straße ${word}` });
    const b = await createDept();
    const dup = await call("updateDepartment", `/v1/departments/${b.deptid}`, {
      token: owner,
      body: { dept_name: `STRASSE ${word.toUpperCase()}` },
    });
    expectShapeB(dup, 409, /already exists/);
    expect(await getDept(b.deptid)).toEqual(b);
    const self = await call("updateDepartment", `/v1/departments/${a.deptid}`, {
      token: owner,
      body: { dept_name: `STRASSE ${word.toUpperCase()}` },
    });
    expectStatus(self, 200, JSON.stringify(self.body));
    expect(self.body.data.name).toBe(`STRASSE ${word.toUpperCase()}`);
  });

  it("isdefault 1 moves the company's default: exactly one default", async () => {
    const { companyId, deptId, ownerToken: token } = await createAccount();
    const a = await createDept({}, token);
    const b = await createDept({}, token);
    const res = await call("updateDepartment", `/v1/departments/${a.deptid}`, { token, body: { isdefault: 1 } });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toEqual({ ...a, isdefault: 1 });
    expect(await defaultDepartments(companyId)).toEqual([a.deptid]);
    expect((await getDept(deptId, token)).isdefault).toBe(0);
    // A rename together with isdefault 1 does both; isdefault 1 on the default changes nothing.
    const name = uniqueWord("Head office ");
    const both = await call("updateDepartment", `/v1/departments/${b.deptid}`, {
      token,
      body: { dept_name: name, isdefault: 1 },
    });
    expectStatus(both, 200);
    expect(both.body.data).toMatchObject({ name, isdefault: 1 });
    const again = await call("updateDepartment", `/v1/departments/${b.deptid}`, { token, body: { isdefault: 1 } });
    expectStatus(again, 200);
    expect(again.body.data).toEqual(both.body.data);
    expect(await defaultDepartments(companyId)).toEqual([b.deptid]);
    // The former default department is an ordinary one now: it can be deleted.
    expectStatus(await call("deleteDepartment", `/v1/departments/${deptId}`, { token }), 200);
    expect(await defaultDepartments(1)).toEqual([1]);
  });

  it("400 for isdefault 0 on the default department, even with a rename; isdefault 0 on another department is a no-op", async () => {
    const res = await call("updateDepartment", "/v1/departments/1", { token: owner, body: { isdefault: 0 } });
    expectShapeB(res, 400, /exactly one default department/);
    const renamed = await call("updateDepartment", "/v1/departments/1", {
      token: owner,
      body: { isdefault: 0, dept_name: uniqueWord() },
    });
    expectShapeB(renamed, 400, /default/);
    expect(await getDept(1)).toMatchObject({ name: "General", isdefault: 1 });
    const dept = await createDept();
    const noop = await call("updateDepartment", `/v1/departments/${dept.deptid}`, {
      token: owner,
      body: { isdefault: 0 },
    });
    expectStatus(noop, 200);
    expect(noop.body.data).toEqual(dept);
    expect(await defaultDepartments(1)).toEqual([1]);
  });

  it("404 for an unknown department and for another company's department, which stays untouched", async () => {
    expectShapeB(
      await call("updateDepartment", "/v1/departments/999999", { token: owner, body: { dept_name: uniqueWord() } }),
      404,
    );
    const before = await departmentRow(2);
    expectShapeB(
      await call("updateDepartment", "/v1/departments/2", { token: owner, body: { dept_name: uniqueWord() } }),
      404,
    );
    expectShapeB(await call("updateDepartment", "/v1/departments/2", { token: owner, body: { isdefault: 1 } }), 404);
    expect(await departmentRow(2)).toEqual(before);
    expect(await defaultDepartments(1)).toEqual([1]);
  });
});

describe("contacts_used follows contacts exactly", () => {
  it("after create, delete and moves between departments (of a contact and of a contact group)", async () => {
    const a = await createDept();
    const b = await createDept();
    const c1 = await createContact(owner, { deptid: a.deptid });
    const c2 = await createContact(owner, { deptid: a.deptid });
    const c3 = await createContact(owner, { deptid: a.deptid });
    await expectContactsUsed(a.deptid, 3);
    await expectContactsUsed(b.deptid, 0);

    expectStatus(await call("deleteContact", `/v1/contacts/${c1.contact_id}`, { token: owner }), 200);
    await expectContactsUsed(a.deptid, 2);

    // A contact moved into a group of another department.
    const moved = await call("updateContact", `/v1/contacts/${c2.contact_id}`, {
      token: owner,
      body: { groupid: await defaultGroupOf(b.deptid) },
    });
    expectStatus(moved, 200, JSON.stringify(moved.body));
    await expectContactsUsed(a.deptid, 1);
    await expectContactsUsed(b.deptid, 1);

    // A group moved to another department takes its contacts along.
    const group = await createGroup(owner, { deptid: a.deptid });
    await createContact(owner, { groupid: group.groupid });
    await createContact(owner, { groupid: group.groupid });
    await expectContactsUsed(a.deptid, 3);
    const groupMoved = await call("updateContactGroup", `/v1/contact-groups/${group.groupid}`, {
      token: owner,
      body: { deptid: b.deptid },
    });
    expectStatus(groupMoved, 200, JSON.stringify(groupMoved.body));
    await expectContactsUsed(a.deptid, 1);
    await expectContactsUsed(b.deptid, 3);

    // Taking a contact out of its group keeps it in its department.
    expectStatus(
      await call("updateContact", `/v1/contacts/${c3.contact_id}`, { token: owner, body: { groupid: 0 } }),
      200,
    );
    await expectContactsUsed(a.deptid, 1);

    // In the list too.
    const listed = (await listDepts()).data.filter((d) => d.deptid === a.deptid || d.deptid === b.deptid);
    expect(listed.map((d) => d.contacts_used)).toEqual([1, 3]);
  });
});

describe("DELETE /v1/departments/{dept_id}", () => {
  it("deletes an empty department together with its empty default group", async () => {
    const dept = await createDept();
    expect(await groupsOf(dept.deptid)).toHaveLength(1);
    const res = await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body).toEqual({ success: true, msg: expect.any(String) });
    expect(await departmentRow(dept.deptid)).toBeNull();
    expect(await groupsOf(dept.deptid)).toEqual([]);
    expectShapeB(await call("getDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 404);
    expectShapeB(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 404);
  });

  it("deletes a department that has no groups at all; its name can be reused", async () => {
    const name = uniqueWord("Bare ");
    const id = await createDepartment(1, name);
    expectStatus(await call("deleteDepartment", `/v1/departments/${id}`, { token: owner }), 200);
    expect(await departmentRow(id)).toBeNull();
    const again = await createDept({ dept_name: name.toUpperCase() });
    expect(again.deptid).toBeGreaterThan(id);
  });

  it("400 for the default department, which stays", async () => {
    expectShapeB(
      await call("deleteDepartment", "/v1/departments/1", { token: owner }),
      400,
      /default department cannot be deleted/,
    );
    expect(await getDept(1)).toMatchObject({ isdefault: 1 });
  });

  it("400 naming every kind of record it still holds; nothing is deleted", async () => {
    const dept = await createDept();
    const group = await createGroup(owner, { deptid: dept.deptid });
    await createContact(owner, { deptid: dept.deptid });
    await createContact(owner, { deptid: dept.deptid });
    await createContact(owner, { groupid: group.groupid });
    await insertDocumentType(dept.deptid);
    const res = await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner });
    expectShapeB(res, 400);
    expect(res.body.msg).toBe(
      `Department ${dept.deptid} still holds 3 contacts, 2 contact groups and 1 document type: move or delete them first`,
    );
    expect(await departmentRow(dept.deptid)).not.toBeNull();
    expect(await groupsOf(dept.deptid)).toHaveLength(2);
  });

  it("400 for a department with only contacts (in its default group): the contacts and the non-empty default group", async () => {
    const dept = await createDept();
    const contact = await createContact(owner, { deptid: dept.deptid });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      new RegExp(`^Department ${dept.deptid} still holds 1 contact and 1 contact group: move or delete them first$`),
    );
    // Once the contact is gone the default group is empty again, and the delete goes through.
    expectStatus(await call("deleteContact", `/v1/contacts/${contact.contact_id}`, { token: owner }), 200);
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 200);
    expect(await groupsOf(dept.deptid)).toEqual([]);
  });

  it("400 for a contact in no group (department without a default group)", async () => {
    const id = await createDepartment(1);
    await createContact(owner, { deptid: id });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${id}`, { token: owner }),
      400,
      /still holds 1 contact: move or delete/,
    );
  });

  it("400 for an empty non-default group; deleting the group makes the department deletable", async () => {
    const dept = await createDept();
    const group = await createGroup(owner, { deptid: dept.deptid });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      /still holds 1 contact group: move or delete/,
    );
    expectStatus(await call("deleteContactGroup", `/v1/contact-groups/${group.groupid}`, { token: owner }), 200);
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 200);
  });

  it("400 for an empty default group that is not the one it was created with", async () => {
    // The empty default group is only spared when it is the default: a group made the default
    // leaves "General" as an ordinary (empty) group, which counts.
    const dept = await createDept();
    const group = await createGroup(owner, { deptid: dept.deptid, isdefault: 1 });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      /still holds 1 contact group:/,
    );
    const general = (await groupsOf(dept.deptid)).find((g) => g.id !== group.groupid)!;
    expectStatus(await call("deleteContactGroup", `/v1/contact-groups/${general.id}`, { token: owner }), 200);
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 200);
    expect(await groupsOf(dept.deptid)).toEqual([]);
  });

  it("400 for a document type in the department", async () => {
    const dept = await createDept();
    const typeId = await insertDocumentType(dept.deptid);
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      /still holds 1 document type: move or delete/,
    );
    await env.DB.prepare("DELETE FROM document_types WHERE id = ?").bind(typeId).run();
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 200);
  });

  it("400 for items (docs_used) and files (storage_used_kb), read from the counters", async () => {
    const dept = await createDept();
    await env.DB.prepare("UPDATE departments SET docs_used = 2, storage_used_kb = 120 WHERE id = ?")
      .bind(dept.deptid)
      .run();
    expect(await getDept(dept.deptid)).toMatchObject({ docs_used: 2, storage_used_kb: 120 });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      /still holds 2 items and 120 KB of files: move or delete them first/,
    );
    await env.DB.prepare("UPDATE departments SET docs_used = 1, storage_used_kb = 0 WHERE id = ?")
      .bind(dept.deptid)
      .run();
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }),
      400,
      /still holds 1 item:/,
    );
    await env.DB.prepare("UPDATE departments SET docs_used = 0 WHERE id = ?").bind(dept.deptid).run();
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner }), 200);
  });

  it("404 for an unknown department and for another company's department, which stays", async () => {
    expectShapeB(await call("deleteDepartment", "/v1/departments/999999", { token: owner }), 404);
    const theirs = await createDept({}, other);
    expectShapeB(await call("deleteDepartment", `/v1/departments/${theirs.deptid}`, { token: owner }), 404);
    expect(await departmentRow(theirs.deptid)).not.toBeNull();
    expect(await groupsOf(theirs.deptid)).toHaveLength(1);
  });
});

describe("departmentHolds: the one SQL condition that guards the delete", () => {
  // The delete's statements run only `WHERE NOT departmentHolds(...)`; a record added between the
  // delete's read and its write therefore stops the write itself. Checked here statement-level,
  // for each kind of record, since an HTTP race rarely lands in that window.
  async function holds(deptId: number, companyId = 1): Promise<boolean> {
    const row = await database(env.DB).get<{ holds: number }>(
      sql`SELECT ${departmentHolds(companyId, deptId)} AS holds`,
    );
    return row.holds === 1;
  }

  it("is false for a new department (only its empty default group) and for one without groups", async () => {
    expect(await holds((await createDept()).deptid)).toBe(false);
    expect(await holds(await createDepartment(1))).toBe(false);
  });

  it("is true for each kind of record, and counts nothing of another company", async () => {
    const contact = await createDept();
    await createContact(owner, { deptid: contact.deptid });
    expect(await holds(contact.deptid)).toBe(true);
    expect(await holds(contact.deptid, 2)).toBe(false);

    const group = await createDept();
    await createGroup(owner, { deptid: group.deptid });
    expect(await holds(group.deptid)).toBe(true);

    const type = await createDept();
    await insertDocumentType(type.deptid);
    expect(await holds(type.deptid)).toBe(true);

    for (const column of ["docs_used", "storage_used_kb", "contacts_used"]) {
      const dept = await createDept();
      await env.DB.prepare(`UPDATE departments SET ${column} = 1 WHERE id = ?`).bind(dept.deptid).run();
      expect(await holds(dept.deptid), column).toBe(true);
    }
  });

  it("a guarded delete does nothing while the department holds a record", async () => {
    const dept = await createDept();
    await createContact(owner, { deptid: dept.deptid });
    const db = database(env.DB);
    await db.run(
      sql`DELETE FROM contact_groups WHERE dept_id = ${dept.deptid} AND is_default = 1 AND NOT ${departmentHolds(1, dept.deptid)}`,
    );
    await db.run(sql`DELETE FROM departments WHERE id = ${dept.deptid} AND NOT ${departmentHolds(1, dept.deptid)}`);
    expect(await departmentRow(dept.deptid)).not.toBeNull();
    expect(await groupsOf(dept.deptid)).toHaveLength(1);
  });

  it("lists every kind it checks, each with a message", () => {
    expect(DEPARTMENT_HOLDINGS.map((h) => h.key)).toEqual([
      "contacts",
      "contactGroups",
      "documentTypes",
      "folders",
      "items",
      "files",
    ]);
    expect(DEPARTMENT_HOLDINGS.map((h) => h.describe(2))).toEqual([
      "2 contacts",
      "2 contact groups",
      "2 document types",
      "2 folders",
      "2 items",
      "2 KB of files",
    ]);
  });
});

describe("owner only, scopes and authentication", () => {
  /** One request per endpoint, on department `id`. */
  const everyEndpoint = (token: string, id: number) => [
    call("listDepartments", "/v1/departments", { token }),
    call("createDepartment", "/v1/departments", { token, body: { dept_name: uniqueWord() } }),
    call("getDepartment", `/v1/departments/${id}`, { token }),
    call("updateDepartment", `/v1/departments/${id}`, { token, body: { dept_name: uniqueWord() } }),
    call("deleteDepartment", `/v1/departments/${id}`, { token }),
  ];
  const requiredScopes = [
    "departments:read",
    "departments:write",
    "departments:read",
    "departments:write",
    "departments:write",
  ];

  it("a non-owner (demo-member, scope *) gets 403 Shape B on every endpoint, reads included; nothing changes", async () => {
    const dept = await createDept();
    const results = await Promise.all(everyEndpoint(member, dept.deptid));
    for (const res of results) expectShapeB(res, 403, /owner/);
    expect(await getDept(dept.deptid)).toEqual(dept);
  });

  it("a token without the scope gets 403 Shape A insufficient_scope with required_scope, before the owner check", async () => {
    const dept = await createDept();
    const tokens = [
      await tokenFor("demo-owner", "contacts:read"),
      await tokenFor("demo-member", "contacts:read"),
      readonly,
    ];
    for (const token of tokens) {
      const results = await Promise.all(everyEndpoint(token, dept.deptid));
      results.forEach((res, i) => {
        expectShapeA(res, 403, "insufficient_scope");
        expect(res.body.required_scope).toBe(requiredScopes[i]);
      });
    }
    expect(await getDept(dept.deptid)).toEqual(dept);
  });

  it("departments:read may read but not write; departments:write may write but not read", async () => {
    const dept = await createDept();
    const reader = await tokenFor("demo-owner", "departments:read");
    expectStatus(await call("listDepartments", "/v1/departments", { token: reader }), 200);
    expect(await getDept(dept.deptid, reader)).toEqual(dept);
    const refused = await call("updateDepartment", `/v1/departments/${dept.deptid}`, {
      token: reader,
      body: { dept_name: uniqueWord() },
    });
    expectShapeA(refused, 403, "insufficient_scope");
    expect(refused.body.required_scope).toBe("departments:write");

    const writer = await tokenFor("demo-owner", "departments:write");
    expectShapeA(
      await call("getDepartment", `/v1/departments/${dept.deptid}`, { token: writer }),
      403,
      "insufficient_scope",
    );
    expectStatus(
      await call("createDepartment", "/v1/departments", { token: writer, body: { dept_name: uniqueWord() } }),
      201,
    );
    expectStatus(await call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: writer }), 200);
  });

  it("another company's owner can neither see nor touch company 1's departments (404)", async () => {
    const dept = await createDept();
    const results = await Promise.all(everyEndpoint(other, dept.deptid).slice(2));
    for (const res of results) expectShapeB(res, 404, /Department not found/);
    expect(await getDept(dept.deptid)).toEqual(dept);
  });

  it("401 without a token", async () => {
    expectShapeA(await call("listDepartments", "/v1/departments"), 401, "invalid_token");
    expectShapeA(await call("createDepartment", "/v1/departments", { body: { dept_name: "x" } }), 401, "invalid_token");
    expectShapeA(await call("deleteDepartment", "/v1/departments/1"), 401, "invalid_token");
  });
});

describe("departments under concurrent requests", () => {
  it("isdefault 1 on two departments at once: exactly one default, one of the two", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    for (let round = 0; round < ROUNDS; round++) {
      const a = await createDept({}, token);
      const b = await createDept({}, token);
      const results = await Promise.all([
        call("updateDepartment", `/v1/departments/${a.deptid}`, { token, body: { isdefault: 1 } }),
        call("updateDepartment", `/v1/departments/${b.deptid}`, { token, body: { isdefault: 1 } }),
      ]);
      noServerError(...results);
      const defaults = await defaultDepartments(companyId);
      expect(defaults).toHaveLength(1);
      expect([a.deptid, b.deptid]).toContain(defaults[0]);
      for (const res of results) expect([200, 409]).toContain(res.status);
    }
  });

  it("creating with isdefault 1 racing PATCH isdefault 1: exactly one default", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    for (let round = 0; round < ROUNDS; round++) {
      const a = await createDept({}, token);
      const results = await Promise.all([
        call("createDepartment", "/v1/departments", { token, body: { dept_name: uniqueWord("Race "), isdefault: 1 } }),
        call("updateDepartment", `/v1/departments/${a.deptid}`, { token, body: { isdefault: 1 } }),
      ]);
      noServerError(...results);
      expect(await defaultDepartments(companyId)).toHaveLength(1);
    }
  });

  it("DELETE racing PATCH isdefault 1 on the same department: it is either deleted or the default, never both", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    for (let round = 0; round < ROUNDS; round++) {
      const before = await defaultDepartments(companyId);
      const dept = await createDept({}, token);
      const [deleted, made] = await Promise.all([
        after(round % 3, () => call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token })),
        call("updateDepartment", `/v1/departments/${dept.deptid}`, { token, body: { isdefault: 1 } }),
      ]);
      noServerError(deleted, made);
      const defaults = await defaultDepartments(companyId);
      if (deleted.status === 200) {
        // Deleted first: it never became the default, the company keeps the one it had.
        expectStatus(made, 404);
        expect(await departmentRow(dept.deptid)).toBeNull();
        expect(defaults).toEqual(before);
      } else {
        expectShapeB(deleted, 400, /default department/);
        expectStatus(made, 200);
        expect(defaults).toEqual([dept.deptid]);
      }
    }
  });

  it("DELETE racing a contact create into the department: never both succeed, never a 500, no half-deleted state", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const dept = await createDept();
      const [deleted, createdRes] = await Promise.all([
        after(round % 3, () => call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner })),
        call("createContact", "/v1/contacts", {
          token: owner,
          body: { first_name: "Race", last_name: "Case", email: uniqueEmail(), deptid: dept.deptid },
        }),
      ]);
      noServerError(deleted, createdRes);
      outcomes.add(`${deleted.status}/${createdRes.status}`);
      if (deleted.status === 200) {
        expectShapeB(createdRes, 400, /deptid/);
        expect(await departmentRow(dept.deptid)).toBeNull();
        expect(await groupsOf(dept.deptid)).toEqual([]);
        const { results } = await env.DB.prepare("SELECT id FROM contacts WHERE dept_id = ?").bind(dept.deptid).all();
        expect(results).toEqual([]);
      } else {
        expectShapeB(
          deleted,
          400,
          new RegExp(
            `^Department ${dept.deptid} still holds 1 contact and 1 contact group: move or delete them first$`,
          ),
        );
        expectStatus(createdRes, 201);
        expect(createdRes.body.data).toMatchObject({ deptid: dept.deptid, groupid: await defaultGroupOf(dept.deptid) });
        expect(await contactsUsed(dept.deptid)).toEqual({ used: 1, actual: 1 });
      }
    }
    expect([...outcomes].every((o) => o === "200/400" || o === "400/201")).toBe(true);
  });

  it("DELETE racing a contact create into a department without groups: the same, through the foreign key", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const id = await createDepartment(1);
      const [deleted, createdRes] = await Promise.all([
        after(round % 3, () => call("deleteDepartment", `/v1/departments/${id}`, { token: owner })),
        call("createContact", "/v1/contacts", {
          token: owner,
          body: { first_name: "Race", last_name: "Bare", email: uniqueEmail(), deptid: id },
        }),
      ]);
      noServerError(deleted, createdRes);
      if (deleted.status === 200) {
        expectShapeB(createdRes, 400, /deptid/);
        expect(await departmentRow(id)).toBeNull();
      } else {
        expectShapeB(deleted, 400, /still holds 1 contact:/);
        expectStatus(createdRes, 201);
      }
    }
  });

  it("DELETE racing a contact group create in the department: never a group in a deleted department", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const dept = await createDept();
      const [deleted, group] = await Promise.all([
        after(round % 3, () => call("deleteDepartment", `/v1/departments/${dept.deptid}`, { token: owner })),
        call("createContactGroup", "/v1/contact-groups", {
          token: owner,
          body: { group_name: uniqueWord("g"), deptid: dept.deptid },
        }),
      ]);
      noServerError(deleted, group);
      if (deleted.status === 200) {
        expect(group.status).not.toBe(201);
        expect(await groupsOf(dept.deptid)).toEqual([]);
      } else {
        expectShapeB(deleted, 400, /still holds 1 contact group:/);
        expectStatus(group, 201);
      }
    }
  });

  it("two creates with the same name in other case: one 201, one 409", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const name = uniqueWord("Twin ");
      const results = await Promise.all([
        call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: name } }),
        call("createDepartment", "/v1/departments", { token: owner, body: { dept_name: name.toUpperCase() } }),
      ]);
      noServerError(...results);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      const { results: rows } = await env.DB.prepare("SELECT id FROM departments WHERE name_key = ?")
        .bind(nameKey(name))
        .all<{ id: number }>();
      expect(rows).toHaveLength(1);
      expect(await groupsOf(rows[0]!.id)).toHaveLength(1);
    }
  });
});
