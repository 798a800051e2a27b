import { beforeAll, describe, expect, it } from "vitest";
import {
  call,
  createAccount,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  noServerError,
  expectStatus,
} from "./helpers";
import { database } from "../../src/db/client";
import { items } from "../../src/db/schema";
import { and, eq } from "drizzle-orm";
import { nameKey } from "../../src/lib/text-key";
import { deleteItemTags, groupTagNames, tagsOfItems } from "../../src/records/tags";

// Tags: PUT /v1/items/{item_id}/tags (replace an item's whole tag list) and GET /v1/tags. Items
// are made directly in D1 (the items routes are separate work). Tag names here carry a unique
// word, so tests in company 1 do not see each other's tags; tests that need a company's exact
// list use a fresh account.

const ROUNDS = 10;
const TAG_FIELDS = ["tag_id", "name", "items_count"].sort();

let owner: string, other: string, readonly: string;

beforeAll(async () => {
  ({ owner, other, readonly } = await demoTokens());
});

/** Inserts an item directly in D1; company 1's default department is 1, company 2's is 2. */
async function createItem(companyId = 1, deptId = companyId): Promise<number> {
  const row = await env.DB.prepare(
    "INSERT INTO items (company_id, dept_id, title, expiry_date, created_by) VALUES (?, ?, ?, '2030-01-01', 1) RETURNING id",
  )
    .bind(companyId, deptId, uniqueWord("Item "))
    .first<{ id: number }>();
  return row!.id;
}

const putTags = (itemId: number | string, tags: unknown, token = owner) =>
  call("setItemTags", `/v1/items/${itemId}/tags`, { token, body: { tags } });

/** PUT that must succeed; returns data (the tag names). */
async function setTags(itemId: number, tags: string[], token = owner): Promise<string[]> {
  const res = await putTags(itemId, tags, token);
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  expect(res.body.msg).toEqual(expect.any(String));
  return res.body.data;
}

/** The item's tag names straight from D1, in position order. */
async function tagsInDb(itemId: number): Promise<string[]> {
  const { results } = await env.DB.prepare(
    "SELECT t.name FROM item_tags AS it JOIN tags AS t ON t.id = it.tag_id WHERE it.item_id = ? ORDER BY it.position",
  )
    .bind(itemId)
    .all<{ name: string }>();
  return results.map((r) => r.name);
}

/** A tag of the company by name (case-insensitively), or null. */
function tagRow(companyId: number, name: string) {
  return env.DB.prepare("SELECT id, name, items_count FROM tags WHERE company_id = ? AND name_key = ?")
    .bind(companyId, nameKey(name))
    .first<{ id: number; name: string; items_count: number }>();
}

/** Every tag of the company: its items_count equals its item_tags rows, and no tag is unused. */
async function expectCountsExact(companyId: number) {
  const { results } = await env.DB.prepare(
    `SELECT t.name, t.items_count AS counted, (SELECT count(*) FROM item_tags AS it WHERE it.tag_id = t.id) AS actual
     FROM tags AS t WHERE t.company_id = ?`,
  )
    .bind(companyId)
    .all<{ name: string; counted: number; actual: number }>();
  for (const row of results) {
    expect(row.counted, `items_count of ${row.name}`).toBe(row.actual);
    expect(row.actual, `unused tag ${row.name} still exists`).toBeGreaterThan(0);
  }
}

async function listTags(query = "", token = owner) {
  const res = await call("listTags", `/v1/tags${query ? `?${query}` : ""}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.success).toBe(true);
  return res.body;
}

describe("PUT /v1/items/{item_id}/tags", () => {
  it("sets the tags in the order given and answers them as data", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    const res = await putTags(item, [`${w}-b`, `${w}-a`, `${w}-c`]);
    expectStatus(res, 200);
    expect(res.body).toEqual({ success: true, msg: "Item tags updated", data: [`${w}-b`, `${w}-a`, `${w}-c`] });
    expect(await tagsInDb(item)).toEqual([`${w}-b`, `${w}-a`, `${w}-c`]);
    for (const name of [`${w}-a`, `${w}-b`, `${w}-c`]) expect((await tagRow(1, name))!.items_count).toBe(1);
  });

  it("replaces ALL tags: removed ones go, kept ones stay (same tag id), new ones come, in the new order", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    await setTags(item, [`${w}-a`, `${w}-b`, `${w}-c`]);
    const keptId = (await tagRow(1, `${w}-c`))!.id;
    expect(await setTags(item, [`${w}-d`, `${w}-c`])).toEqual([`${w}-d`, `${w}-c`]);
    expect(await tagsInDb(item)).toEqual([`${w}-d`, `${w}-c`]);
    expect((await tagRow(1, `${w}-c`))!.id).toBe(keptId);
    // Reordering only.
    expect(await setTags(item, [`${w}-c`, `${w}-d`])).toEqual([`${w}-c`, `${w}-d`]);
    expect(await tagsInDb(item)).toEqual([`${w}-c`, `${w}-d`]);
    // The same list again changes nothing.
    expect(await setTags(item, [`${w}-c`, `${w}-d`])).toEqual([`${w}-c`, `${w}-d`]);
    expect((await tagRow(1, `${w}-c`))!.items_count).toBe(1);
    await expectCountsExact(1);
  });

  it("touches the item's updated_at", async () => {
    const item = await createItem();
    await env.DB.prepare("UPDATE items SET updated_at = '2000-01-01 00:00:00' WHERE id = ?").bind(item).run();
    await setTags(item, [uniqueWord("t")]);
    const row = await env.DB.prepare("SELECT updated_at FROM items WHERE id = ?")
      .bind(item)
      .first<{ updated_at: string }>();
    expect(row!.updated_at).not.toBe("2000-01-01 00:00:00");
  });

  it("[] removes every tag, and tags no item uses any more are deleted", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    await setTags(item, [`${w}-a`, `${w}-b`]);
    expect(await setTags(item, [])).toEqual([]);
    expect(await tagsInDb(item)).toEqual([]);
    expect(await tagRow(1, `${w}-a`)).toBeNull();
    expect(await tagRow(1, `${w}-b`)).toBeNull();
    expect((await listTags(`q=${w}`)).data).toEqual([]);
    // [] on an item without tags is fine too.
    expect(await setTags(item, [])).toEqual([]);
  });

  it("reuses the company's tag across items in its stored spelling: the first spelling wins", async () => {
    const [first, second] = [await createItem(), await createItem()];
    const w = uniqueWord("Tag");
    expect(await setTags(first, [w])).toEqual([w]);
    const tag = (await tagRow(1, w))!;
    expect(await setTags(second, [w.toUpperCase(), `${w}-x`])).toEqual([w, `${w}-x`]);
    expect(await tagsInDb(second)).toEqual([w, `${w}-x`]);
    expect(await tagRow(1, w)).toEqual({ id: tag.id, name: w, items_count: 2 });
    // The first item re-sent in another case keeps the stored spelling too.
    expect(await setTags(first, [w.toLowerCase()])).toEqual([w]);
    await expectCountsExact(1);
  });

  it("a tag that disappeared is created again in the spelling of its next use", async () => {
    const item = await createItem();
    const w = uniqueWord("Tag");
    await setTags(item, [w]);
    const oldId = (await tagRow(1, w))!.id;
    await setTags(item, []);
    expect(await setTags(item, [w.toUpperCase()])).toEqual([w.toUpperCase()]);
    const again = (await tagRow(1, w))!;
    expect(again.name).toBe(w.toUpperCase());
    expect(again.id).toBeGreaterThan(oldId);
  });

  it("collapses entries equal case-insensitively (Unicode folding, NFC) to the first spelling", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    const data = await setTags(item, [
      `${w} Straße`,
      `${w.toUpperCase()} STRASSE`,
      `${w} strasse`,
      `${w} Cafe\u0301`,
      `${w} CAFÉ`,
      `  ${w} Äpfel  `,
      `${w} Apfel`,
    ]);
    expect(data).toEqual([`${w} Straße`, `${w} Café`, `${w} Äpfel`, `${w} Apfel`]);
    expect(await tagsInDb(item)).toEqual(data);
    expect((await tagRow(1, `${w} straße`))!.items_count).toBe(1);
  });

  it("accepts 1 and 50 characters, and 20 tags", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    const long = `${w}${"x".repeat(50 - w.length)}`;
    expect(await setTags(item, [long, "x"])).toEqual([long, "x"]);
    const twenty = Array.from({ length: 20 }, (_, i) => `${w}-${i}`);
    expect(await setTags(item, twenty)).toEqual(twenty);
    expect(await tagsInDb(item)).toEqual(twenty);
    await expectCountsExact(1);
  });

  it("refuses invalid lists with 400 naming the problem, and writes nothing", async () => {
    const item = await createItem();
    const w = uniqueWord("t");
    await setTags(item, [`${w}-kept`]);
    const cases: Array<[unknown, RegExp]> = [
      [[`${w}${"x".repeat(51 - w.length)}`], /tags\.0.*at most 50 characters/],
      [["ok", "é".repeat(51)], /tags\.1.*at most 50 characters/],
      [[""], /tags\.0.*must not be empty/],
      [["   "], /tags\.0.*must not be empty/],
      [["\u200b"], /tags\.0.*must not be empty/],
      [["a\u0007b"], /tags\.0.*control characters/],
      [["a\nb"], /tags\.0.*control characters/],
      [["a\u0085b"], /tags\.0.*control characters/],
      [["\ud800"], /tags\.0.*well-formed/],
      [[1], /tags\.0 must be a string/],
      [["ok", null], /tags\.1 must be a string/],
      [[["nested"]], /tags\.0 must be a string/],
      [[{ name: "x" }], /tags\.0 must be a string/],
      [Array.from({ length: 21 }, (_, i) => `${w}-${i}`), /at most 20/],
      // The limit counts entries, duplicates included.
      [Array.from({ length: 21 }, () => w), /at most 20/],
      ["a,b", /tags must be an array/],
      [{ a: 1 }, /tags must be an array/],
    ];
    for (const [tags, msg] of cases) expectShapeB(await putTags(item, tags), 400, msg);
    expectShapeB(
      await call("setItemTags", `/v1/items/${item}/tags`, { token: owner, body: {} }),
      400,
      /tags is required/,
    );
    expectShapeB(
      await call("setItemTags", `/v1/items/${item}/tags`, { token: owner, body: { tags: null } }),
      400,
      /tags/,
    );
    expectShapeB(
      await call("setItemTags", `/v1/items/${item}/tags`, { token: owner, body: { tags: [], extra: 1 } }),
      400,
      /Unknown field: extra/,
    );
    expectShapeB(
      await call("setItemTags", `/v1/items/${item}/tags`, { token: owner, body: ["a"] }),
      400,
      /JSON object/,
    );
    expect(await tagsInDb(item)).toEqual([`${w}-kept`]);
  });

  it("is 404 for an item that does not exist and 400 for a malformed id", async () => {
    expectShapeB(await putTags(987654321, ["x"]), 404, /Item not found/);
    expectShapeB(await putTags("abc", ["x"]), 400, /item_id must be a positive integer/);
    expectShapeB(await putTags(0, ["x"]), 400, /item_id must be a positive integer/);
    // Nothing was written for the missing item, not even the tag.
    const w = uniqueWord("t");
    expectShapeB(await putTags(987654321, [w]), 404);
    expect(await tagRow(1, w)).toBeNull();
  });

  it("tenancy: another company's item is 404 and stays untouched", async () => {
    const item = await createItem(1);
    const w = uniqueWord("t");
    await setTags(item, [w]);
    expectShapeB(await putTags(item, [`${w}-other`], other), 404, /Item not found/);
    expectShapeB(await putTags(item, [], other), 404);
    expect(await tagsInDb(item)).toEqual([w]);
    expect(await tagRow(2, `${w}-other`)).toBeNull();
    expect(await tagRow(1, `${w}-other`)).toBeNull();
  });

  it("scopes: needs items:write (not tags:write), Shape A with required_scope", async () => {
    const item = await createItem();
    for (const token of [
      await tokenFor("demo-owner", "tags:read"),
      await tokenFor("demo-owner", "tags:write items:read"),
      readonly,
    ]) {
      const res = await putTags(item, ["x"], token);
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("items:write");
    }
    expect(await setTags(item, [uniqueWord("t")], await tokenFor("demo-owner", "items:write"))).toHaveLength(1);
    const res = await call("setItemTags", `/v1/items/${item}/tags`, { body: { tags: [] } });
    expectShapeA(res, 401, "invalid_token");
  });
});

describe("items_count and deleted items", () => {
  it("is exact after add, remove and replace across items", async () => {
    const [a, b, c] = [await createItem(), await createItem(), await createItem()];
    const w = uniqueWord("t");
    const count = async (suffix: string) => (await tagRow(1, `${w}-${suffix}`))?.items_count ?? 0;
    await setTags(a, [`${w}-x`, `${w}-y`]);
    await setTags(b, [`${w}-x`]);
    await setTags(c, [`${w}-x`, `${w}-y`, `${w}-z`]);
    expect([await count("x"), await count("y"), await count("z")]).toEqual([3, 2, 1]);
    await setTags(c, [`${w}-z`]);
    expect([await count("x"), await count("y"), await count("z")]).toEqual([2, 1, 1]);
    await setTags(a, [`${w}-z`, `${w}-y`]);
    expect([await count("x"), await count("y"), await count("z")]).toEqual([1, 1, 2]);
    await setTags(b, []);
    expect([await count("x"), await count("y"), await count("z")]).toEqual([0, 1, 2]);
    expect(await tagRow(1, `${w}-x`)).toBeNull();
    const listed = (await listTags(`q=${w}`)).data;
    expect(listed.map((t) => [t.name, t.items_count])).toEqual([
      [`${w}-y`, 1],
      [`${w}-z`, 2],
    ]);
    await expectCountsExact(1);
  });

  it("deleting an item in D1 removes its item_tags rows by cascade, and the count triggers fire for them", async () => {
    const [kept, gone] = [await createItem(), await createItem()];
    const w = uniqueWord("t");
    await setTags(kept, [`${w}-shared`]);
    await setTags(gone, [`${w}-shared`, `${w}-only`]);
    await env.DB.prepare("DELETE FROM items WHERE id = ?").bind(gone).run();
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM item_tags WHERE item_id = ?")
      .bind(gone)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
    expect((await tagRow(1, `${w}-shared`))!.items_count).toBe(1);
    // The cascade cannot delete the tag it left unused: its count is 0 and the list hides it ...
    expect((await tagRow(1, `${w}-only`))!.items_count).toBe(0);
    expect((await listTags(`q=${w}`)).data.map((t) => t.name)).toEqual([`${w}-shared`]);
    // ... and the company's next tag write removes it.
    await setTags(kept, [`${w}-shared`]);
    expect(await tagRow(1, `${w}-only`)).toBeNull();
  });

  it("deleteItemTags, batched after the item's delete, also removes the tags left unused", async () => {
    const db = database(env.DB);
    const [kept, gone] = [await createItem(), await createItem()];
    const w = uniqueWord("t");
    await setTags(kept, [`${w}-shared`]);
    await setTags(gone, [`${w}-shared`, `${w}-only`]);
    await db.batch([
      db.delete(items).where(and(eq(items.id, gone), eq(items.companyId, 1))),
      ...deleteItemTags(db, 1, gone),
    ]);
    expect(await tagsInDb(gone)).toEqual([]);
    expect(await tagRow(1, `${w}-only`)).toBeNull();
    expect((await tagRow(1, `${w}-shared`))!.items_count).toBe(1);
    await expectCountsExact(1);
  });

  it("deleteItemTags leaves the item's tags alone when the item was not deleted", async () => {
    const db = database(env.DB);
    const item = await createItem();
    const w = uniqueWord("t");
    await setTags(item, [w]);
    // The item's delete refused by its guard (here: another company), then the tag statements.
    await db.batch([
      db.delete(items).where(and(eq(items.id, item), eq(items.companyId, 2))),
      ...deleteItemTags(db, 1, item),
    ]);
    expect(await tagsInDb(item)).toEqual([w]);
    expect((await tagRow(1, w))!.items_count).toBe(1);
  });
});

describe("tagsOfItems", () => {
  it("loads the tag names of several items in one query, in position order", async () => {
    const db = database(env.DB);
    const [a, b, none] = [await createItem(), await createItem(), await createItem()];
    const w = uniqueWord("t");
    await setTags(a, [`${w}-z`, `${w}-a`, `${w}-m`]);
    await setTags(b, [`${w}-a`]);
    const rows = await tagsOfItems(db, 1, [a, b, none]);
    expect(rows).toEqual([
      { itemId: a, name: `${w}-z` },
      { itemId: a, name: `${w}-a` },
      { itemId: a, name: `${w}-m` },
      { itemId: b, name: `${w}-a` },
    ]);
    const grouped = groupTagNames(rows);
    expect(grouped.get(a)).toEqual([`${w}-z`, `${w}-a`, `${w}-m`]);
    expect(grouped.get(b)).toEqual([`${w}-a`]);
    expect(grouped.get(none)).toBeUndefined();
    // Batchable, takes more than 100 ids (one JSON parameter), and stays in the company.
    const many = [a, ...Array.from({ length: 300 }, (_, i) => 900000000 + i)];
    const [batched, otherCompany] = await db.batch([tagsOfItems(db, 1, many), tagsOfItems(db, 2, [a])]);
    expect(batched.map((r) => r.name)).toEqual([`${w}-z`, `${w}-a`, `${w}-m`]);
    expect(otherCompany).toEqual([]);
    expect(await tagsOfItems(db, 1, [])).toEqual([]);
  });
});

describe("GET /v1/tags", () => {
  it("lists the company's tags in use with exactly tag_id, name, items_count, by name case-insensitively then id", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    const [a, b] = [
      await createItem(account.companyId, account.deptId),
      await createItem(account.companyId, account.deptId),
    ];
    await setTags(a, ["banana", "Apple", "cherry", "Éclair"], token);
    await setTags(b, ["apple", "Zebra"], token);
    const list = await listTags("", token);
    expect(list.meta).toEqual({ total: 5, limit: 200, offset: 0, total_exact: true });
    for (const tag of list.data) {
      expect(Object.keys(tag).sort()).toEqual(TAG_FIELDS);
      expect(tag.tag_id).toEqual(expect.any(Number));
    }
    expect(list.data.map((t) => [t.name, t.items_count])).toEqual([
      ["Apple", 2],
      ["banana", 1],
      ["cherry", 1],
      ["Zebra", 1],
      ["Éclair", 1],
    ]);
    expect(list.data.map((t) => t.tag_id)).toEqual(
      await Promise.all(
        ["Apple", "banana", "cherry", "Zebra", "Éclair"].map(async (n) => (await tagRow(account.companyId, n))!.id),
      ),
    );
  });

  it("is empty for a company without tags", async () => {
    const account = await createAccount();
    expect(await listTags("", account.ownerToken)).toEqual({
      success: true,
      data: [],
      meta: { total: 0, limit: 200, offset: 0, total_exact: true },
    });
  });

  it("q: case-insensitive substring in every script, % and _ taken literally", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    const item = await createItem(account.companyId, account.deptId);
    await setTags(item, ["Straße", "Apple pie", "100%", "100x", "a_b", "axb", "ΣΟΦΊΑ"], token);
    const names = async (q: string) => (await listTags(`q=${encodeURIComponent(q)}`, token)).data.map((t) => t.name);
    expect(await names("APP")).toEqual(["Apple pie"]);
    expect(await names("le P")).toEqual(["Apple pie"]);
    expect(await names("STRASSE")).toEqual(["Straße"]);
    expect(await names("ss")).toEqual(["Straße"]);
    expect(await names("ß")).toEqual(["Straße"]);
    expect(await names("σοφία")).toEqual(["ΣΟΦΊΑ"]);
    expect(await names("%")).toEqual(["100%"]);
    expect(await names("_")).toEqual(["a_b"]);
    expect(await names("100")).toEqual(["100%", "100x"]);
    expect(await names("nothing")).toEqual([]);
    expect((await listTags("q=100", token)).meta.total).toBe(2);
    expectShapeB(
      await call("listTags", `/v1/tags?q=${"x".repeat(201)}`, { token }),
      400,
      /q must be at most 200 characters/,
    );
    expectShapeB(await call("listTags", "/v1/tags?q=a%07", { token }), 400, /q must not contain control characters/);
  });

  it("paginates with limit and offset; total counts the whole filtered list", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    const item = await createItem(account.companyId, account.deptId);
    await setTags(item, ["e", "d", "c", "b", "a"], token);
    const second = await listTags("limit=2&offset=2", token);
    expect(second.meta).toEqual({ total: 5, limit: 2, offset: 2, total_exact: true });
    expect(second.data.map((t) => t.name)).toEqual(["c", "d"]);
    expect((await listTags("limit=2&offset=4", token)).data.map((t) => t.name)).toEqual(["e"]);
    expect((await listTags("offset=5", token)).data).toEqual([]);
    expect((await listTags("limit=200", token)).data).toHaveLength(5);
    for (const query of ["limit=0", "limit=201", "limit=abc", "offset=-1", "offset=1.5", "limit=1&limit=2"]) {
      expectShapeB(await call("listTags", `/v1/tags?${query}`, { token }), 400, /limit|offset/);
    }
  });

  it("tenancy: another company's tags never appear, and the same name is a separate tag per company", async () => {
    const w = uniqueWord("t");
    const mine = await createItem(1);
    const theirs = await createItem(2);
    await setTags(theirs, [`${w}-theirs`, `${w}-both`], other);
    await setTags(mine, [`${w}-both`.toUpperCase()]);
    expect((await listTags(`q=${w}`)).data.map((t) => [t.name, t.items_count])).toEqual([
      [`${w}-both`.toUpperCase(), 1],
    ]);
    expect((await listTags(`q=${w}`, other)).data.map((t) => [t.name, t.items_count])).toEqual([
      [`${w}-both`, 1],
      [`${w}-theirs`, 1],
    ]);
    expect((await tagRow(1, `${w}-both`))!.id).not.toBe((await tagRow(2, `${w}-both`))!.id);
  });

  it("scopes: needs tags:read, Shape A with required_scope", async () => {
    for (const token of [readonly, await tokenFor("demo-owner", "items:write tags:write")]) {
      const res = await call("listTags", "/v1/tags", { token });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope).toBe("tags:read");
    }
    await listTags("", await tokenFor("demo-owner", "tags:read"));
    expectShapeA(await call("listTags", "/v1/tags"), 401, "invalid_token");
  });
});

describe("races", () => {
  it("two concurrent PUTs on one item end with exactly one of the two lists, never a mix, never a 500", async () => {
    const outcomes = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const item = await createItem();
      const w = uniqueWord("t");
      await setTags(item, [`${w}-old`, `${w}-shared`]);
      const first = [`${w}-a1`, `${w}-shared`, `${w}-a2`];
      const second = [`${w}-SHARED`, `${w}-b1`];
      // Fired in both orders over the rounds.
      const [r1, r2] =
        round % 2 === 0
          ? await Promise.all([putTags(item, first), putTags(item, second)])
          : await Promise.all([putTags(item, second), putTags(item, first)]).then(([b, a]) => [a, b] as const);
      noServerError(r1, r2);
      expectStatus(r1, 200);
      expectStatus(r2, 200);
      // Each answer is its own list (one transaction each) ...
      expect(r1.body.data).toEqual(first);
      expect(r2.body.data).toEqual([`${w}-shared`, `${w}-b1`]);
      // ... and the item holds exactly one of them.
      const now = await tagsInDb(item);
      expect([JSON.stringify(first), JSON.stringify(r2.body.data)]).toContain(JSON.stringify(now));
      outcomes.add(now.length === 3 ? "first" : "second");
      expect(await tagRow(1, `${w}-old`)).toBeNull();
      await expectCountsExact(1);
    }
    expect(outcomes.size).toBeGreaterThan(0);
  });

  it("concurrent PUTs creating the same new tag on different items share one tag", async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b] = [await createItem(), await createItem()];
      const w = uniqueWord("t");
      const [r1, r2] = await Promise.all([putTags(a, [w]), putTags(b, [w.toUpperCase()])]);
      noServerError(r1, r2);
      expectStatus(r1, 200);
      expectStatus(r2, 200);
      // Whoever came first set the spelling; both answer it.
      expect(r1.body.data).toEqual(r2.body.data);
      expect((await tagRow(1, w))!.items_count).toBe(2);
    }
    await expectCountsExact(1);
  });

  it("a PUT racing the item's deletion leaves no item_tags rows for the missing item", async () => {
    const statuses = new Set<number>();
    for (let round = 0; round < ROUNDS; round++) {
      const item = await createItem();
      const w = uniqueWord("t");
      await setTags(item, [`${w}-old`]);
      const put = () => putTags(item, [`${w}-new1`, `${w}-new2`]);
      // Every other round the delete waits a little longer, so it lands before and after the PUT's batch.
      const remove = async () => {
        if (round % 2 === 1) await new Promise((resolve) => setTimeout(resolve, round));
        await env.DB.prepare("DELETE FROM items WHERE id = ?").bind(item).run();
      };
      const [res] = await Promise.all([put(), remove()]);
      noServerError(res);
      expect([200, 404]).toContain(res.status);
      statuses.add(res.status);
      const rows = await env.DB.prepare("SELECT count(*) AS n FROM item_tags WHERE item_id = ?")
        .bind(item)
        .first<{ n: number }>();
      expect(rows!.n).toBe(0);
      // Counters exact, and nothing of the item is listed.
      const { results } = await env.DB.prepare(
        "SELECT name, items_count FROM tags WHERE company_id = 1 AND name_key LIKE ? AND items_count <> (SELECT count(*) FROM item_tags WHERE tag_id = tags.id)",
      )
        .bind(`${w}%`)
        .all();
      expect(results).toEqual([]);
      expect((await listTags(`q=${w}`)).data).toEqual([]);
      expectShapeB(await putTags(item, ["x"]), 404);
    }
    expect(statuses.size).toBeGreaterThan(0);
  });
});
