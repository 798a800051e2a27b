import { beforeAll, describe, expect, it } from "vitest";
import {
  GROUP_FIELDS,
  TIMESTAMP,
  type DataOf,
  call,
  contactCounts,
  createContact,
  createDepartment,
  createGroup,
  env,
  expectShapeA,
  expectShapeB,
  demoTokens,
  uniqueWord,
  defaultGroupsOf,
  expectStatus,
  ok,
} from "./helpers";

// Contact groups: CRUD, defaults, moves, deletes, contacts_count, tenancy and scopes.

let owner: string, member: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, member, other, readonly } = await demoTokens());
});

async function getGroup(id: number, token = owner): Promise<DataOf<"getContactGroup">> {
  const res = await call("getContactGroup", `/v1/contact-groups/${id}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function getContact(id: number): Promise<DataOf<"getContact">> {
  const res = await call("getContact", `/v1/contacts/${id}`, { token: owner });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

async function listGroups(query = "", token = owner) {
  const res = await call("listContactGroups", `/v1/contact-groups${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  return res.body;
}

/** The ids of a department's default groups, straight from D1. */

async function rawGroup(id: number) {
  return env.DB.prepare("SELECT * FROM contact_groups WHERE id = ?").bind(id).first<Record<string, unknown>>();
}

/** A group row of company 1 whose dept_id is company 2's department: an invalid state made directly in D1. */
async function insertGroupInForeignDept(): Promise<number> {
  const row = await env.DB.prepare(
    "INSERT INTO contact_groups (company_id, dept_id, name, name_key, is_default) VALUES (1, 2, ?1, ?1, 0) RETURNING id",
  )
    .bind(uniqueWord("stray"))
    .first<{ id: number }>();
  return row!.id;
}

describe("POST /v1/contact-groups", () => {
  it("201 with msg and the group; defaults to the default department, isdefault 0, contacts_count 0", async () => {
    const name = uniqueWord("Suppliers");
    const res = await call("createContactGroup", "/v1/contact-groups", { token: owner, body: { group_name: name } });
    expectStatus(res, 201, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(GROUP_FIELDS);
    expect(data).toMatchObject({ group_name: name, deptid: 1, isdefault: 0, contacts_count: 0 });
    expect(Number.isInteger(data.groupid)).toBe(true);
    expect(data.add_date).toMatch(TIMESTAMP);
    expect(await getGroup(data.groupid)).toEqual(data);
  });

  it("creates in the given department", async () => {
    const dept = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    expect(g.deptid).toBe(dept);
  });

  it("trims group_name", async () => {
    const name = uniqueWord("Trim");
    const g = await createGroup(owner, { group_name: `  ${name}  ` });
    expect(g.group_name).toBe(name);
  });

  it("400 naming group_name when it is missing, empty, blank or too long", async () => {
    for (const body of [
      {},
      { group_name: "" },
      { group_name: "   " },
      { group_name: "x".repeat(101) },
      { group_name: 5 },
    ]) {
      const res = await call("createContactGroup", "/v1/contact-groups", { token: owner, body });
      expectShapeB(res, 400, /group_name/);
    }
  });

  it("400 for a deptid that does not exist, another company's department, or a non-integer", async () => {
    for (const deptid of [999999, 2, "1", 0, 1.5]) {
      const name = uniqueWord("nodept");
      const res = await call("createContactGroup", "/v1/contact-groups", {
        token: owner,
        body: { group_name: name, deptid },
      });
      expectShapeB(res, 400, /deptid/);
      const row = await env.DB.prepare("SELECT id FROM contact_groups WHERE name = ?").bind(name).first();
      expect(row).toBeNull();
    }
  });

  it("400 when isdefault is not 0 or 1", async () => {
    for (const isdefault of [2, -1, "1", true, null]) {
      const res = await call("createContactGroup", "/v1/contact-groups", {
        token: owner,
        body: { group_name: uniqueWord(), isdefault },
      });
      expectShapeB(res, 400, /isdefault/);
    }
  });

  it("400 for unknown fields", async () => {
    const res = await call("createContactGroup", "/v1/contact-groups", {
      token: owner,
      body: { group_name: uniqueWord(), name: "x" },
    });
    expectShapeB(res, 400, /name/);
  });

  it("isdefault 1 makes it the default and unsets the previous default of the department", async () => {
    const dept = await createDepartment();
    const first = await createGroup(owner, { deptid: dept, isdefault: 1 });
    expect(first.isdefault).toBe(1);
    const second = await createGroup(owner, { deptid: dept, isdefault: 1 });
    expect(second.isdefault).toBe(1);
    expect((await getGroup(first.groupid)).isdefault).toBe(0);
    expect(await defaultGroupsOf(dept)).toEqual([second.groupid]);
  });

  it("isdefault 0 leaves the existing default alone", async () => {
    const dept = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    await createGroup(owner, { deptid: dept, isdefault: 0 });
    expect(await defaultGroupsOf(dept)).toEqual([def.groupid]);
  });

  it("409 for a duplicate name in the same department, case-insensitively", async () => {
    const dept = await createDepartment();
    const name = uniqueWord("Dup");
    await createGroup(owner, { deptid: dept, group_name: name });
    for (const dup of [name, name.toUpperCase(), ` ${name.toLowerCase()} `]) {
      const res = await call("createContactGroup", "/v1/contact-groups", {
        token: member,
        body: { group_name: dup, deptid: dept },
      });
      expectShapeB(res, 409, /already exists|duplicate/i);
    }
    const { results } = await env.DB.prepare("SELECT id FROM contact_groups WHERE dept_id = ? ").bind(dept).all();
    expect(results).toHaveLength(1);
  });

  it("409 for a duplicate with isdefault 1 does not unset the existing default", async () => {
    const dept = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const other_ = await createGroup(owner, { deptid: dept });
    const res = await call("createContactGroup", "/v1/contact-groups", {
      token: owner,
      body: { group_name: other_.group_name, deptid: dept, isdefault: 1 },
    });
    expectShapeB(res, 409);
    expect(await defaultGroupsOf(dept)).toEqual([def.groupid]);
  });

  it("allows the same name in another department and in another company", async () => {
    const name = uniqueWord("Same");
    const a = await createGroup(owner, { group_name: name, deptid: await createDepartment() });
    const b = await createGroup(owner, { group_name: name, deptid: await createDepartment() });
    const c = await createGroup(other, { group_name: name });
    expect(new Set([a.groupid, b.groupid, c.groupid]).size).toBe(3);
    expect(c.deptid).toBe(2);
  });
});

describe("GET /v1/contact-groups", () => {
  it("lists the company's groups ordered by groupid with meta", async () => {
    await createGroup(owner);
    const body = await listGroups();
    expect(Object.keys(body.meta).sort()).toEqual(["limit", "offset", "total", "total_exact"]);
    expect(body.meta.offset).toBe(0);
    const { results } = await env.DB.prepare("SELECT id FROM contact_groups WHERE company_id = 1 ORDER BY id").all<{
      id: number;
    }>();
    expect(body.meta.total).toBe(results.length);
    expect(body.data.map((g) => g.groupid)).toEqual(results.map((r) => r.id).slice(0, body.meta.limit));
    for (const g of body.data) expect(Object.keys(g).sort()).toEqual(GROUP_FIELDS);
  });

  it("filters by deptid", async () => {
    const dept = await createDepartment();
    const a = await createGroup(owner, { deptid: dept });
    const b = await createGroup(owner, { deptid: dept, isdefault: 1 });
    await createGroup(owner, { deptid: 1 });
    const body = await listGroups(`deptid=${dept}`);
    expect(body.data.map((g) => g.groupid)).toEqual([a.groupid, b.groupid]);
    expect(body.meta.total).toBe(2);
    expect(body.data.every((g) => g.deptid === dept)).toBe(true);
    const none = await listGroups("deptid=999999");
    expect(none.data).toEqual([]);
    expect(none.meta.total).toBe(0);
  });

  it("filters by q: case-insensitive substring of group_name", async () => {
    const word = uniqueWord("q");
    const a = await createGroup(owner, { group_name: `Alpha ${word} one` });
    const b = await createGroup(owner, { group_name: `${word.toUpperCase()}-two` });
    await createGroup(owner, { group_name: uniqueWord("unrelated") });
    const body = await listGroups(`q=${encodeURIComponent(word.slice(2, 9).toUpperCase())}`);
    expect(body.data.map((g) => g.groupid)).toEqual([a.groupid, b.groupid]);
    expect(body.meta.total).toBe(2);
    const none = await listGroups(`q=${uniqueWord("nothing")}`);
    expect(none.data).toEqual([]);
    expect(none.meta.total).toBe(0);
  });

  it("q treats % and _ literally", async () => {
    const word = uniqueWord("lit");
    const pct = await createGroup(owner, { group_name: `${word} 50% off` });
    const und = await createGroup(owner, { group_name: `${word} a_b` });
    await createGroup(owner, { group_name: `${word} plain ab` });
    expect((await listGroups(`q=${encodeURIComponent("%")}&deptid=1`)).data.map((g) => g.groupid)).toContain(
      pct.groupid,
    );
    const percent = await listGroups(`q=${encodeURIComponent(`${word} 50%`)}`);
    expect(percent.data.map((g) => g.groupid)).toEqual([pct.groupid]);
    const underscore = await listGroups(`q=${encodeURIComponent("a_b")}`);
    expect(underscore.data.map((g) => g.groupid)).toEqual([und.groupid]);
  });

  it("combines deptid and q", async () => {
    const word = uniqueWord("combo");
    const dept = await createDepartment();
    const inDept = await createGroup(owner, { group_name: word, deptid: dept });
    await createGroup(owner, { group_name: word, deptid: 1 });
    const body = await listGroups(`deptid=${dept}&q=${word}`);
    expect(body.data.map((g) => g.groupid)).toEqual([inDept.groupid]);
    expect(body.meta.total).toBe(1);
  });

  it("400 for a non-integer deptid", async () => {
    expectShapeB(await call("listContactGroups", "/v1/contact-groups?deptid=abc", { token: owner }), 400, /deptid/);
  });

  it("reports contacts_count per group, in the list and on GET", async () => {
    const dept = await createDepartment();
    const g1 = await createGroup(owner, { deptid: dept });
    const g2 = await createGroup(owner, { deptid: dept });
    const g3 = await createGroup(owner, { deptid: dept });
    for (let i = 0; i < 3; i++) await createContact(owner, { groupid: g1.groupid });
    await createContact(owner, { groupid: g2.groupid });
    await createContact(owner, { deptid: dept, groupid: 0 });
    // Another company's contacts never count.
    await createContact(other);

    const counts = Object.fromEntries(
      (await listGroups(`deptid=${dept}`)).data.map((g) => [g.groupid, g.contacts_count]),
    );
    expect(counts).toEqual({ [g1.groupid]: 3, [g2.groupid]: 1, [g3.groupid]: 0 });
    expect((await getGroup(g1.groupid)).contacts_count).toBe(3);
    expect((await getGroup(g3.groupid)).contacts_count).toBe(0);

    // Counts follow moves and deletes of contacts.
    const moved = await createContact(owner, { groupid: g1.groupid });
    await call("updateContact", `/v1/contacts/${moved.contact_id}`, { token: owner, body: { groupid: g3.groupid } });
    await call("deleteContact", `/v1/contacts/${(await createContact(owner, { groupid: g2.groupid })).contact_id}`, {
      token: owner,
    });
    expect((await getGroup(g1.groupid)).contacts_count).toBe(3);
    expect((await getGroup(g2.groupid)).contacts_count).toBe(1);
    expect((await getGroup(g3.groupid)).contacts_count).toBe(1);
  });

  it("never shows another company's groups", async () => {
    const mine = await createGroup(owner);
    const theirs = await createGroup(other);
    const theirList = await listGroups("", other);
    const ids = theirList.data.map((g) => g.groupid);
    expect(ids).toContain(theirs.groupid);
    expect(ids).not.toContain(mine.groupid);
    expect(theirList.data.every((g) => g.deptid === 2)).toBe(true);
    const { results } = await env.DB.prepare("SELECT id FROM contact_groups WHERE company_id = 2").all();
    expect(theirList.meta.total).toBe(results.length);
    expect((await listGroups(`q=${mine.group_name}`, other)).data).toEqual([]);
    expect((await listGroups("deptid=1", other)).data).toEqual([]);
  });
});

describe("GET /v1/contact-groups/{group_id}", () => {
  it("404 Shape B for an unknown group and for another company's group", async () => {
    const theirs = await createGroup(other);
    expectShapeB(await call("getContactGroup", "/v1/contact-groups/999999999", { token: owner }), 404, /not found/i);
    expectShapeB(
      await call("getContactGroup", `/v1/contact-groups/${theirs.groupid}`, { token: owner }),
      404,
      /not found/i,
    );
  });

  it("400 for an id that is not a positive integer", async () => {
    for (const id of ["abc", "0", "-2"]) {
      expectShapeB(await call("getContactGroup", `/v1/contact-groups/${id}`, { token: owner }), 400, /group_id/);
    }
  });
});

describe("PATCH /v1/contact-groups/{group_id}", () => {
  it("400 'No updatable fields provided' for an empty body", async () => {
    const g = await createGroup(owner);
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner, body: {} }),
      400,
      /No updatable fields provided/,
    );
  });

  it("renames; 200 with msg and the group", async () => {
    const g = await createGroup(owner);
    const name = uniqueWord("Renamed");
    const res = await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, {
      token: owner,
      body: { group_name: name },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(typeof res.body.msg).toBe("string");
    expect(res.body.data).toEqual({ ...g, group_name: name });
    expect(await getGroup(g.groupid)).toEqual({ ...g, group_name: name });
  });

  it("400 for an empty group_name or an invalid isdefault", async () => {
    const g = await createGroup(owner);
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner, body: { group_name: " " } }),
      400,
      /group_name/,
    );
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner, body: { isdefault: 3 } }),
      400,
      /isdefault/,
    );
    expect(await getGroup(g.groupid)).toEqual(g);
  });

  it("409 when renaming to another group's name in the department (case-insensitive); its own name in another case is fine", async () => {
    const dept = await createDepartment();
    const a = await createGroup(owner, { deptid: dept });
    const b = await createGroup(owner, { deptid: dept });
    const res = await call("updateContactGroup", `/v1/contact-groups/${b.groupid}`, {
      token: owner,
      body: { group_name: a.group_name.toUpperCase() },
    });
    expectShapeB(res, 409);
    expect(await getGroup(b.groupid)).toEqual(b);
    const self = await call("updateContactGroup", `/v1/contact-groups/${b.groupid}`, {
      token: owner,
      body: { group_name: b.group_name.toUpperCase() },
    });
    expectStatus(self, 200, JSON.stringify(self.body));
    expect(self.body.data.group_name).toBe(b.group_name.toUpperCase());
  });

  it("isdefault 1 makes it the default and unsets the previous one: exactly one default per department", async () => {
    const dept = await createDepartment();
    const a = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const b = await createGroup(owner, { deptid: dept });
    const other1 = await createGroup(owner, { deptid: 1, isdefault: 1 });
    const res = await call("updateContactGroup", `/v1/contact-groups/${b.groupid}`, {
      token: owner,
      body: { isdefault: 1 },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data.isdefault).toBe(1);
    expect((await getGroup(a.groupid)).isdefault).toBe(0);
    expect(await defaultGroupsOf(dept)).toEqual([b.groupid]);
    // Other departments keep their default.
    expect(await defaultGroupsOf(1)).toEqual([other1.groupid]);
    // Again on the default: still exactly one.
    expectStatus(
      await call("updateContactGroup", `/v1/contact-groups/${b.groupid}`, { token: owner, body: { isdefault: 1 } }),
      200,
    );
    expect(await defaultGroupsOf(dept)).toEqual([b.groupid]);
  });

  it("isdefault 1 in a department without a default makes it the first default", async () => {
    const dept = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    expect(await defaultGroupsOf(dept)).toEqual([]);
    const res = await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, {
      token: owner,
      body: { isdefault: 1 },
    });
    expectStatus(res, 200);
    expect(await defaultGroupsOf(dept)).toEqual([g.groupid]);
  });

  it("400 for isdefault 0 on the default group; isdefault 0 on a non-default group is a no-op", async () => {
    const dept = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const plain = await createGroup(owner, { deptid: dept });
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${def.groupid}`, { token: owner, body: { isdefault: 0 } }),
      400,
      /default/,
    );
    expect(await defaultGroupsOf(dept)).toEqual([def.groupid]);
    const res = await call("updateContactGroup", `/v1/contact-groups/${plain.groupid}`, {
      token: owner,
      body: { isdefault: 0 },
    });
    expectStatus(res, 200);
    expect(res.body.data).toEqual(plain);
  });

  it("400 for moving the default group to another department; nothing changes", async () => {
    const dept = await createDepartment();
    const target = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const c = await createContact(owner, { groupid: def.groupid });
    const res = await call("updateContactGroup", `/v1/contact-groups/${def.groupid}`, {
      token: owner,
      body: { deptid: target, group_name: uniqueWord() },
    });
    expectShapeB(res, 400, /default/);
    expect(await getGroup(def.groupid)).toEqual({ ...def, contacts_count: 1 });
    expect((await getContact(c.contact_id)).deptid).toBe(dept);
  });

  it("moving a non-default group moves its contacts' deptid (and only theirs)", async () => {
    const dept = await createDepartment();
    const target = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    const stay = await createGroup(owner, { deptid: dept });
    const c1 = await createContact(owner, { groupid: g.groupid });
    const c2 = await createContact(owner, { groupid: g.groupid });
    const c3 = await createContact(owner, { groupid: stay.groupid });
    const c4 = await createContact(owner, { deptid: dept, groupid: 0 });
    const res = await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, {
      token: owner,
      body: { deptid: target },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ groupid: g.groupid, deptid: target, isdefault: 0, contacts_count: 2 });
    for (const c of [c1, c2])
      expect(await getContact(c.contact_id)).toMatchObject({ deptid: target, groupid: g.groupid });
    expect(await getContact(c3.contact_id)).toMatchObject({ deptid: dept, groupid: stay.groupid });
    expect(await getContact(c4.contact_id)).toMatchObject({ deptid: dept, groupid: 0 });
    const byDept = ok(await call("listContacts", `/v1/contacts?deptid=${target}`, { token: owner }));
    expect(byDept.body.data.map((c) => c.contact_id)).toEqual([c1.contact_id, c2.contact_id]);
  });

  it("moving with isdefault 1 makes it the new department's default and leaves the old department's default", async () => {
    const dept = await createDepartment();
    const target = await createDepartment();
    const oldDef = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const targetDef = await createGroup(owner, { deptid: target, isdefault: 1 });
    const g = await createGroup(owner, { deptid: dept });
    const res = await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, {
      token: owner,
      body: { deptid: target, isdefault: 1 },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.data).toMatchObject({ deptid: target, isdefault: 1 });
    expect(await defaultGroupsOf(target)).toEqual([g.groupid]);
    expect(await defaultGroupsOf(dept)).toEqual([oldDef.groupid]);
    expect((await getGroup(targetDef.groupid)).isdefault).toBe(0);
  });

  it("409 when moving into a department that has a group of the same name; nothing moves", async () => {
    const dept = await createDepartment();
    const target = await createDepartment();
    const name = uniqueWord("Clash");
    await createGroup(owner, { deptid: target, group_name: name.toUpperCase() });
    const g = await createGroup(owner, { deptid: dept, group_name: name });
    const c = await createContact(owner, { groupid: g.groupid });
    expectShapeB(
      await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner, body: { deptid: target } }),
      409,
    );
    expect((await getGroup(g.groupid)).deptid).toBe(dept);
    expect((await getContact(c.contact_id)).deptid).toBe(dept);
  });

  it("400 for moving to an unknown department or another company's department", async () => {
    const g = await createGroup(owner);
    for (const deptid of [999999, 2]) {
      expectShapeB(
        await call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner, body: { deptid } }),
        400,
        /deptid/,
      );
    }
    expect(await getGroup(g.groupid)).toEqual(g);
  });

  it("404 for an unknown group and for another company's group, which stays untouched", async () => {
    const theirs = await createGroup(other);
    const before = await rawGroup(theirs.groupid);
    expectShapeB(
      await call("updateContactGroup", "/v1/contact-groups/999999999", { token: owner, body: { group_name: "x" } }),
      404,
    );
    for (const body of [{ group_name: uniqueWord() }, { isdefault: 1 }, { deptid: 1 }]) {
      expectShapeB(
        await call("updateContactGroup", `/v1/contact-groups/${theirs.groupid}`, { token: owner, body }),
        404,
      );
    }
    expect(await rawGroup(theirs.groupid)).toEqual(before);
  });

  it("400 for isdefault 1 on a group whose department is not valid for the company", async () => {
    // Company 2's department already has a default group.
    await createGroup(other, { isdefault: 1 });
    const defaultsBefore = await defaultGroupsOf(2);
    const stray = await insertGroupInForeignDept();
    const res = await call("updateContactGroup", `/v1/contact-groups/${stray}`, {
      token: owner,
      body: { isdefault: 1 },
    });
    expectShapeB(res, 400, /department/);
    expect((await rawGroup(stray))?.is_default).toBe(0);
    expect(await defaultGroupsOf(2)).toEqual(defaultsBefore);
  });
});

describe("PATCH /v1/contact-groups/{group_id}/default", () => {
  it("makes it the default (200, msg, isdefault 1) and unsets the previous default", async () => {
    const dept = await createDepartment();
    const a = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const b = await createGroup(owner, { deptid: dept });
    const res = await call("setDefaultContactGroup", `/v1/contact-groups/${b.groupid}/default`, { token: owner });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    expect(res.body.data).toEqual({ ...b, isdefault: 1 });
    expect((await getGroup(a.groupid)).isdefault).toBe(0);
    expect(await defaultGroupsOf(dept)).toEqual([b.groupid]);
  });

  it("is idempotent on the default group", async () => {
    const dept = await createDepartment();
    const a = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const res = await call("setDefaultContactGroup", `/v1/contact-groups/${a.groupid}/default`, { token: owner });
    expectStatus(res, 200);
    expect(res.body.data.isdefault).toBe(1);
    expect(await defaultGroupsOf(dept)).toEqual([a.groupid]);
  });

  it("new contacts of the department then join the new default group", async () => {
    const dept = await createDepartment();
    await createGroup(owner, { deptid: dept, isdefault: 1 });
    const b = await createGroup(owner, { deptid: dept });
    await call("setDefaultContactGroup", `/v1/contact-groups/${b.groupid}/default`, { token: owner });
    expect((await createContact(owner, { deptid: dept })).groupid).toBe(b.groupid);
  });

  it("404 for an unknown group and for another company's group", async () => {
    const theirs = await createGroup(other);
    expectShapeB(await call("setDefaultContactGroup", "/v1/contact-groups/999999999/default", { token: owner }), 404);
    expectShapeB(
      await call("setDefaultContactGroup", `/v1/contact-groups/${theirs.groupid}/default`, { token: owner }),
      404,
    );
    expect((await rawGroup(theirs.groupid))?.is_default).toBe(0);
  });

  it("400 when the group's department is not a valid department of the company", async () => {
    const stray = await insertGroupInForeignDept();
    const defaultsBefore = await defaultGroupsOf(2);
    const res = await call("setDefaultContactGroup", `/v1/contact-groups/${stray}/default`, { token: owner });
    expectShapeB(res, 400, /department/);
    expect((await rawGroup(stray))?.is_default).toBe(0);
    expect(await defaultGroupsOf(2)).toEqual(defaultsBefore);
  });
});

describe("DELETE /v1/contact-groups/{group_id}", () => {
  it("400 for the default group, which stays", async () => {
    const dept = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    expectShapeB(
      await call("deleteContactGroup", `/v1/contact-groups/${def.groupid}`, { token: owner }),
      400,
      /default/,
    );
    expect(await getGroup(def.groupid)).toEqual(def);
  });

  it("deletes a non-default group; its contacts are kept and move to the department's default group", async () => {
    const dept = await createDepartment();
    const def = await createGroup(owner, { deptid: dept, isdefault: 1 });
    const g = await createGroup(owner, { deptid: dept });
    const c1 = await createContact(owner, { groupid: g.groupid, first_name: "Kept" });
    const c2 = await createContact(owner, { groupid: g.groupid });
    const usedBefore = await contactCounts(1);
    const res = await call("deleteContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.success).toBe(true);
    expect(typeof res.body.msg).toBe("string");
    expectShapeB(await call("getContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner }), 404);
    for (const c of [c1, c2]) {
      expect(await getContact(c.contact_id)).toEqual({ ...c, groupid: def.groupid });
    }
    expect((await getGroup(def.groupid)).contacts_count).toBe(2);
    expect(await contactCounts(1)).toEqual(usedBefore);
  });

  it("moves the contacts to groupid 0 when the department has no default group", async () => {
    const dept = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    const c = await createContact(owner, { groupid: g.groupid });
    expectStatus(await call("deleteContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner }), 200);
    expect(await getContact(c.contact_id)).toEqual({ ...c, groupid: 0, deptid: dept });
  });

  it("does not hand a company's contacts to another company's default group", async () => {
    // A group of company 1 pointing at company 2's department (invalid state made in D1),
    // while company 2 has a default group in that department.
    await createGroup(other, { isdefault: 1 });
    const stray = await insertGroupInForeignDept();
    const contact = await env.DB.prepare(
      "INSERT INTO contacts (company_id, dept_id, group_id, first_name, last_name, email, email_key) VALUES (1, 1, ?1, 'Stray', 'Contact', ?2, ?2) RETURNING id",
    )
      .bind(stray, `${uniqueWord()}@example.test`)
      .first<{ id: number }>();
    expectStatus(await call("deleteContactGroup", `/v1/contact-groups/${stray}`, { token: owner }), 200);
    const row = await env.DB.prepare(
      "SELECT c.group_id, g.company_id AS group_company FROM contacts c LEFT JOIN contact_groups g ON g.id = c.group_id WHERE c.id = ?",
    )
      .bind(contact!.id)
      .first<{ group_id: number | null; group_company: number | null }>();
    expect(row?.group_company ?? 1).toBe(1);
    expect((await getContact(contact!.id)).groupid).toBe(0);
  });

  it("a deleted group's name can be reused", async () => {
    const dept = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    await call("deleteContactGroup", `/v1/contact-groups/${g.groupid}`, { token: owner });
    expect((await createGroup(owner, { deptid: dept, group_name: g.group_name })).group_name).toBe(g.group_name);
  });

  it("404 for an unknown group and for another company's group, which stays with its contacts", async () => {
    const theirs = await createGroup(other);
    const theirContact = await createContact(other, { groupid: theirs.groupid });
    expectShapeB(await call("deleteContactGroup", "/v1/contact-groups/999999999", { token: owner }), 404);
    expectShapeB(await call("deleteContactGroup", `/v1/contact-groups/${theirs.groupid}`, { token: owner }), 404);
    expect((await getGroup(theirs.groupid, other)).contacts_count).toBe(1);
    const c = ok(await call("getContact", `/v1/contacts/${theirContact.contact_id}`, { token: other }));
    expect(c.body.data.groupid).toBe(theirs.groupid);
  });
});

describe("contact group scopes", () => {
  it("contacts:read may list and get groups", async () => {
    const g = await createGroup(owner);
    expect((await listGroups("", readonly)).data.map((x) => x.groupid)).toContain(g.groupid);
    expect(await getGroup(g.groupid, readonly)).toEqual(g);
  });

  it("contacts:read gets 403 insufficient_scope (required_scope contacts:write) on every write", async () => {
    const dept = await createDepartment();
    const g = await createGroup(owner, { deptid: dept });
    const writes = await Promise.all([
      call("createContactGroup", "/v1/contact-groups", { token: readonly, body: { group_name: uniqueWord() } }),
      call("updateContactGroup", `/v1/contact-groups/${g.groupid}`, {
        token: readonly,
        body: { group_name: uniqueWord() },
      }),
      call("setDefaultContactGroup", `/v1/contact-groups/${g.groupid}/default`, { token: readonly }),
      call("deleteContactGroup", `/v1/contact-groups/${g.groupid}`, { token: readonly }),
    ]);
    for (const res of writes) {
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("contacts:write");
      expect(res.body).not.toHaveProperty("success");
    }
    expect(await getGroup(g.groupid)).toEqual(g);
    expect(await defaultGroupsOf(dept)).toEqual([]);
  });

  it("401 without a token", async () => {
    expectShapeA(await call("listContactGroups", "/v1/contact-groups"), 401, "invalid_token");
    expectShapeA(
      await call("createContactGroup", "/v1/contact-groups", { body: { group_name: "x" } }),
      401,
      "invalid_token",
    );
  });
});
