import { beforeAll, describe, expect, it } from "vitest";
import {
  CONTACT_FIELDS,
  type DataOf,
  call,
  contactCounts,
  createContact,
  createDepartment,
  createGroup,
  env,
  expectShapeB,
  demoTokens,
  uniqueWord,
  expectStatus,
} from "./helpers";

// GET /v1/contacts: pagination, filters, search, meta.total and tenancy.

let owner: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, other, readonly } = await demoTokens());
});

async function list(query: string, token = owner) {
  const res = await call("listContacts", `/v1/contacts${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  expect(Array.isArray(res.body.data)).toBe(true);
  return res.body;
}

const ids = (rows: DataOf<"listContacts">) => rows.map((r) => r.contact_id);

async function search(q: string, token = owner, extra = "") {
  return list(`q=${encodeURIComponent(q)}${extra}`, token);
}

async function companyContactIds(companyId: number): Promise<number[]> {
  const { results } = await env.DB.prepare("SELECT id FROM contacts WHERE company_id = ? ORDER BY id")
    .bind(companyId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}

describe("GET /v1/contacts: envelope and pagination parameters", () => {
  it("returns data and meta {total, limit, offset} with limit 50 by default", async () => {
    await createContact(owner);
    const body = await list("");
    expect(Object.keys(body.meta).sort()).toEqual(["limit", "offset", "total", "total_exact"]);
    expect(body.meta).toMatchObject({ limit: 50, offset: 0 });
    expect(body.meta.total).toBeGreaterThan(0);
    expect(body.data.length).toBeLessThanOrEqual(50);
    for (const row of body.data) expect(Object.keys(row).sort()).toEqual(CONTACT_FIELDS);
  });

  it("caps the default page at 50 rows", async () => {
    const dept = await createDepartment();
    await Promise.all(Array.from({ length: 55 }, () => createContact(owner, { deptid: dept })));
    const body = await list(`deptid=${dept}`);
    expect(body.data).toHaveLength(50);
    expect(body.meta).toEqual({ total: 55, limit: 50, offset: 0, total_exact: true });
    const rest = await list(`deptid=${dept}&offset=50`);
    expect(rest.data).toHaveLength(5);
    expect(rest.meta).toEqual({ total: 55, limit: 50, offset: 50, total_exact: true });
  });

  for (const query of ["limit=0", "limit=201", "limit=abc", "limit=-1", "limit=1.5", "limit="]) {
    it(`400 for ${query}`, async () => {
      expectShapeB(await call("listContacts", `/v1/contacts?${query}`, { token: owner }), 400, /limit/);
    });
  }

  for (const query of ["offset=-1", "offset=abc", "offset=0.5"]) {
    it(`400 for ${query}`, async () => {
      expectShapeB(await call("listContacts", `/v1/contacts?${query}`, { token: owner }), 400, /offset/);
    });
  }

  for (const query of ["groupid=abc", "deptid=-3", "deptid=0"]) {
    it(`400 for ${query}`, async () => {
      expectShapeB(await call("listContacts", `/v1/contacts?${query}`, { token: owner }), 400, /groupid|deptid/);
    });
  }

  it("accepts limit 1 and limit 200", async () => {
    expect((await list("limit=1")).meta.limit).toBe(1);
    expect((await list("limit=1")).data.length).toBeLessThanOrEqual(1);
    expect((await list("limit=200")).meta.limit).toBe(200);
  });

  it("returns consecutive pages ordered by contact_id (filtered)", async () => {
    const dept = await createDepartment();
    const created: number[] = [];
    for (let i = 0; i < 7; i++) created.push((await createContact(owner, { deptid: dept })).contact_id);
    const seen: number[] = [];
    for (const offset of [0, 3, 6]) {
      const page = await list(`deptid=${dept}&limit=3&offset=${offset}`);
      expect(page.meta).toEqual({ total: 7, limit: 3, offset, total_exact: true });
      seen.push(...ids(page.data));
    }
    expect(seen).toEqual([...created].sort((a, b) => a - b));
    const beyond = await list(`deptid=${dept}&limit=3&offset=7`);
    expect(beyond.data).toEqual([]);
    expect(beyond.meta.total).toBe(7);
  });

  it("pages through the whole unfiltered list in contact_id order without gaps or repeats", async () => {
    for (let i = 0; i < 5; i++) await createContact(owner);
    const expected = await companyContactIds(1);
    const seen: number[] = [];
    for (let offset = 0; offset < expected.length; offset += 4) {
      const page = await list(`limit=4&offset=${offset}`);
      expect(page.meta.total).toBe(expected.length);
      seen.push(...ids(page.data));
    }
    expect(seen).toEqual(expected);
  });
});

describe("GET /v1/contacts: filters", () => {
  it("filters by groupid and by deptid, alone and together", async () => {
    const dept = await createDepartment();
    const g1 = await createGroup(owner, { deptid: dept });
    const g2 = await createGroup(owner, { deptid: dept });
    const a = await createContact(owner, { groupid: g1.groupid });
    const b = await createContact(owner, { groupid: g1.groupid });
    const c = await createContact(owner, { groupid: g2.groupid });
    const d = await createContact(owner, { deptid: dept, groupid: 0 });
    await createContact(owner, { deptid: 1 });

    const byGroup = await list(`groupid=${g1.groupid}`);
    expect(ids(byGroup.data)).toEqual([a.contact_id, b.contact_id]);
    expect(byGroup.meta.total).toBe(2);
    expect(byGroup.data.every((r) => r.groupid === g1.groupid)).toBe(true);

    const byDept = await list(`deptid=${dept}`);
    expect(ids(byDept.data)).toEqual([a.contact_id, b.contact_id, c.contact_id, d.contact_id]);
    expect(byDept.meta.total).toBe(4);

    const both = await list(`deptid=${dept}&groupid=${g2.groupid}`);
    expect(ids(both.data)).toEqual([c.contact_id]);
    expect(both.meta.total).toBe(1);

    const mismatch = await list(`deptid=1&groupid=${g2.groupid}`);
    expect(mismatch.data).toEqual([]);
    expect(mismatch.meta.total).toBe(0);

    // groupid=0 selects the contacts in no group.
    const ungrouped = await list(`deptid=${dept}&groupid=0`);
    expect(ids(ungrouped.data)).toEqual([d.contact_id]);
    expect(ungrouped.meta.total).toBe(1);
  });

  it("an unknown groupid or deptid gives an empty list with total 0", async () => {
    for (const query of ["groupid=999999", "deptid=999999"]) {
      const body = await list(query);
      expect(body.data).toEqual([]);
      expect(body.meta.total).toBe(0);
    }
  });
});

describe("GET /v1/contacts: q search", () => {
  it("matches word prefixes of first name, last name, email parts and phone number", async () => {
    const first = uniqueWord("f");
    const last = uniqueWord("l");
    const local = uniqueWord("m");
    const domain = uniqueWord("d");
    const phone = `9${Math.floor(Math.random() * 1e11)}`.padEnd(12, "7");
    const c = await createContact(owner, {
      first_name: first,
      last_name: last,
      email: `${local}.${first}@${domain}.test`,
      phone_number: phone,
    });
    for (const q of [first, first.slice(0, 6), last, last.slice(0, 5), local, domain, phone, phone.slice(0, 8)]) {
      const body = await search(q);
      expect(ids(body.data), `q=${q}`).toEqual([c.contact_id]);
      expect(body.meta.total, `q=${q}`).toBe(1);
    }
  });

  it("does not match inside a word (prefix, not substring)", async () => {
    const word = uniqueWord("x");
    await createContact(owner, { first_name: word });
    const body = await search(word.slice(3));
    expect(body.data).toEqual([]);
    expect(body.meta.total).toBe(0);
  });

  it("requires every word to match", async () => {
    const shared = uniqueWord("s");
    const w2 = uniqueWord("t");
    const w3 = uniqueWord("u");
    const a = await createContact(owner, { first_name: shared, last_name: w2 });
    const b = await createContact(owner, { first_name: shared, last_name: w3 });
    expect(ids((await search(shared)).data)).toEqual([a.contact_id, b.contact_id]);
    expect(ids((await search(`${shared} ${w2}`)).data)).toEqual([a.contact_id]);
    expect(ids((await search(`${w3.slice(0, 6)}   ${shared.slice(0, 6)}`)).data)).toEqual([b.contact_id]);
    const none = await search(`${w2} ${w3}`);
    expect(none.data).toEqual([]);
    expect(none.meta.total).toBe(0);
  });

  it("is case-insensitive and accent-insensitive", async () => {
    const word = uniqueWord("k");
    const c = await createContact(owner, { first_name: `Zoë${word}`, last_name: word.toUpperCase() });
    for (const q of [word.toUpperCase(), `zoe${word}`, `ZOË${word.slice(0, 4)}`, `zoë${word}`]) {
      expect(ids((await search(q)).data), `q=${q}`).toEqual([c.contact_id]);
    }
  });

  it("a term matching nothing gives an empty list with total 0", async () => {
    const body = await search(uniqueWord("nomatch"));
    expect(body.data).toEqual([]);
    expect(body.meta).toEqual({ total: 0, limit: 50, offset: 0, total_exact: true });
  });

  for (const q of ["!!!", "...", "@", "-", '"*"', "( )"]) {
    it(`punctuation-only q ${JSON.stringify(q)} gives an empty list`, async () => {
      await createContact(owner);
      const body = await search(q);
      expect(body.data).toEqual([]);
      expect(body.meta.total).toBe(0);
    });
  }

  it("treats FTS syntax in q as plain words (no 500)", async () => {
    const word = uniqueWord("o");
    const c = await createContact(owner, { first_name: word, last_name: "Plain" });
    for (const q of [
      `"${word}"`,
      `${word}*`,
      `${word} OR zzzzzz`,
      `NOT ${word}`,
      `${word}:`,
      `${word} NEAR(x)`,
      `^${word}`,
    ]) {
      const res = await call("listContacts", `/v1/contacts?q=${encodeURIComponent(q)}`, { token: owner });
      expectStatus(res, 200, `q=${q}: ${JSON.stringify(res.body)}`);
    }
    expect(ids((await search(`"${word}"`)).data)).toEqual([c.contact_id]);
    expect(ids((await search(`${word}*`)).data)).toEqual([c.contact_id]);
    // Every word must match, so OR/NOT are words too.
    expect((await search(`${word} OR zzzzzz`)).data).toEqual([]);
  });

  it("a blank q is no filter", async () => {
    const all = await list("");
    const blank = await list("q=%20%20");
    expect(blank.meta.total).toBe(all.meta.total);
    expect(ids(blank.data)).toEqual(ids(all.data));
  });

  it("meta.total counts every match, not just the page", async () => {
    const word = uniqueWord("p");
    const created: number[] = [];
    for (let i = 0; i < 3; i++) created.push((await createContact(owner, { last_name: word })).contact_id);
    const first = await search(word, owner, "&limit=2");
    expect(ids(first.data)).toEqual(created.slice(0, 2));
    expect(first.meta).toEqual({ total: 3, limit: 2, offset: 0, total_exact: true });
    const second = await search(word, owner, "&limit=2&offset=2");
    expect(ids(second.data)).toEqual(created.slice(2));
    expect(second.meta).toEqual({ total: 3, limit: 2, offset: 2, total_exact: true });
  });

  it("combines q with deptid and groupid", async () => {
    const word = uniqueWord("c");
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const inGroup = await createContact(owner, { last_name: word, groupid: group.groupid });
    const inDept = await createContact(owner, { last_name: word, deptid: dept, groupid: 0 });
    await createContact(owner, { last_name: word, deptid: 1 });
    expect((await search(word)).meta.total).toBe(3);
    const byDept = await search(word, owner, `&deptid=${dept}`);
    expect(ids(byDept.data)).toEqual([inGroup.contact_id, inDept.contact_id]);
    expect(byDept.meta.total).toBe(2);
    const byGroup = await search(word, owner, `&groupid=${group.groupid}`);
    expect(ids(byGroup.data)).toEqual([inGroup.contact_id]);
    expect(byGroup.meta.total).toBe(1);
  });

  it("follows updates and deletes", async () => {
    const before = uniqueWord("b");
    const after = uniqueWord("a");
    const phone = `8${Math.floor(Math.random() * 1e9)}`;
    const c = await createContact(owner, { first_name: before });
    expect(ids((await search(before)).data)).toEqual([c.contact_id]);

    const patched = await call("updateContact", `/v1/contacts/${c.contact_id}`, {
      token: owner,
      body: { first_name: after, phone_number: phone },
    });
    expectStatus(patched, 200);
    expect((await search(before)).meta.total).toBe(0);
    expect(ids((await search(after)).data)).toEqual([c.contact_id]);
    expect(ids((await search(phone)).data)).toEqual([c.contact_id]);

    const newEmail = `${uniqueWord("n")}@example.test`;
    await call("updateContact", `/v1/contacts/${c.contact_id}`, { token: owner, body: { email: newEmail } });
    expect(ids((await search(newEmail.split("@")[0]!)).data)).toEqual([c.contact_id]);

    await call("deleteContact", `/v1/contacts/${c.contact_id}`, { token: owner });
    const gone = await search(after);
    expect(gone.data).toEqual([]);
    expect(gone.meta.total).toBe(0);
  });
});

describe("GET /v1/contacts: meta.total", () => {
  it("unfiltered total equals the trigger-maintained contacts_used and the real count, through creates and deletes", async () => {
    const start = await list("");
    const counts = await contactCounts(1);
    expect(counts.used).toBe(counts.actual);
    expect(start.meta.total).toBe(counts.actual);

    const made: number[] = [];
    for (let i = 0; i < 4; i++) made.push((await createContact(owner)).contact_id);
    expect((await list("")).meta.total).toBe(start.meta.total + 4);

    for (const id of made.slice(0, 3)) {
      expectStatus(await call("deleteContact", `/v1/contacts/${id}`, { token: owner }), 200);
    }
    const end = await list("limit=1");
    expect(end.meta.total).toBe(start.meta.total + 1);
    const after = await contactCounts(1);
    expect(after).toEqual({ used: end.meta.total, actual: end.meta.total });
  });

  it("failed creates (duplicates, validation) do not change the total", async () => {
    const c = await createContact(owner);
    const before = (await list("")).meta.total;
    await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: c.email },
    });
    await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: "bad" },
    });
    await call("createContact", "/v1/contacts", {
      token: owner,
      body: { first_name: "A", last_name: "B", email: `${uniqueWord()}@x.test`, deptid: 999999 },
    });
    expect((await list("")).meta.total).toBe(before);
    const counts = await contactCounts(1);
    expect(counts.used).toBe(counts.actual);
  });

  it("filtered totals are exact counts", async () => {
    const dept = await createDepartment();
    for (let i = 0; i < 3; i++) await createContact(owner, { deptid: dept });
    const body = await list(`deptid=${dept}&limit=1`);
    expect(body.meta.total).toBe(3);
    expect(body.data).toHaveLength(1);
  });
});

describe("GET /v1/contacts: tenancy", () => {
  it("company 2 never sees company 1's contacts in its list, filters or search", async () => {
    const word = uniqueWord("ten");
    const dept = await createDepartment();
    const group = await createGroup(owner, { deptid: dept });
    const mine = await createContact(owner, { first_name: word, groupid: group.groupid });
    const theirs = await createContact(other, { first_name: word });

    const theirList = await list("limit=200", other);
    const company2 = await companyContactIds(2);
    expect(ids(theirList.data)).toEqual(company2);
    expect(theirList.meta.total).toBe(company2.length);
    expect(ids(theirList.data)).not.toContain(mine.contact_id);

    expect(ids((await search(word, other)).data)).toEqual([theirs.contact_id]);
    expect((await search(word, other)).meta.total).toBe(1);
    expect(ids((await search(word, owner)).data)).toEqual([mine.contact_id]);

    for (const query of [`groupid=${group.groupid}`, `deptid=${dept}`, "deptid=1"]) {
      const body = await list(query, other);
      expect(body.data, query).toEqual([]);
      expect(body.meta.total, query).toBe(0);
    }
    const counts = await contactCounts(2);
    expect(counts.used).toBe(counts.actual);
  });

  it("contacts:read is enough to list and search", async () => {
    const word = uniqueWord("r");
    const c = await createContact(owner, { first_name: word });
    expect(ids((await search(word, readonly)).data)).toEqual([c.contact_id]);
  });
});
