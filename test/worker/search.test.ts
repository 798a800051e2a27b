// Company-scoped search (docs/search.md): the same matching rules as before (word prefixes, every
// word, case and accents folded as SQLite's unicode61 folds them, every script), postings per
// company, and list order, paging and totals unchanged.
import { describe, expect, it } from "vitest";
import { companyMark, searchWords, tokenize } from "../../src/lib/search";
import { database } from "../../src/db/client";
import { groupListQueries } from "../../src/records/contact-groups";
import { ListGroupsQuery } from "../../src/schemas/contact-groups";
import { folderListQueries } from "../../src/records/folders";
import { ListFoldersQuery } from "../../src/schemas/folders";
import { tagListQueries } from "../../src/records/tags";
import { ListTagsQuery } from "../../src/schemas/tags";
import {
  call,
  createAccount,
  createContact,
  createItem,
  env,
  queryPlan,
  uniqueWord,
  type DataOf,
  type Fields,
  type Operation,
  type SuccessBody,
  expectStatus,
} from "./helpers";

type Plannable = Parameters<typeof queryPlan>[0];

const get = async <O extends Operation>(token: string, operation: O, path: string): Promise<SuccessBody<O>> => {
  const res = await call(operation, path, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body as SuccessBody<O>;
};
const itemIds = (body: { data: Array<{ item_id: number }> }) => body.data.map((i) => i.item_id);

describe("tokenize: the words unicode61 (remove_diacritics 2) makes", () => {
  it("folds case and Latin accents, keeps what unicode61 keeps, splits where it splits", () => {
    expect(tokenize("Ölprüfung, Café-Bar")).toEqual(["olprufung", "cafe", "bar"]);
    expect(tokenize("cafe\u0301 naïve")).toEqual(["cafe", "naive"]);
    expect(tokenize("Άδεια ЙОД")).toEqual(["άδεια", "йод"]);
    expect(tokenize("東京タワー点検、年次")).toEqual(["東京タワー点検", "年次"]);
    expect(tokenize("निरीक्षण")).toEqual(["न", "र", "क", "षण"]);
    expect(tokenize("ada@example.com +44 20")).toEqual(["ada", "example", "com", "44", "20"]);
    // Private-use characters are reserved for the company marks: never part of a word.
    expect(tokenize("a\ue000b")).toEqual(["a", "b"]);
  });

  it("search_words is the distinct words of every text, in order", () => {
    expect(JSON.parse(searchWords("Boiler boiler", null, "Annual BOILER check"))).toEqual([
      "boiler",
      "annual",
      "check",
    ]);
    expect(companyMark(1)).toHaveLength(2);
    expect(companyMark(6_401)).not.toBe(companyMark(1));
  });
});

describe("GET /v1/items?q=", () => {
  it("finds word prefixes of any length, every word, accent- and case-insensitively, and in every script", async () => {
    const a = await createAccount();
    const w = uniqueWord("zq");
    const boiler = await createItem(a.ownerToken, {
      title: `Kesselprüfung ${w}`,
      notes: "Jährliche Wartung",
      expiry_date: "2031-03-01",
    });
    const tokyo = await createItem(a.ownerToken, { title: `東京タワー点検 ${w}`, expiry_date: "2031-01-01" });
    const greek = await createItem(a.ownerToken, { title: `Άδεια ${w}`, expiry_date: "2031-02-01" });
    for (const [q, expected] of [
      [`${w} kess`, [boiler.item_id]],
      [`${w} KESSELPRUF`, [boiler.item_id]],
      [`${w} kesselprüfung`, [boiler.item_id]],
      [`${w} jahrl wart`, [boiler.item_id]],
      [`${w} jahrliche`, [boiler.item_id]],
      [`${w} kesselprufungx`, []],
      [`${w} 東京`, [tokyo.item_id]],
      [`${w} άδ`, [greek.item_id]],
      [`${w.slice(0, 3)}`, [tokyo.item_id, greek.item_id, boiler.item_id]],
      [w, [tokyo.item_id, greek.item_id, boiler.item_id]],
    ] as const) {
      expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${encodeURIComponent(q)}`)), q).toEqual(
        expected,
      );
    }
  });

  it("never returns another company's items, for short and long terms alike", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const w = uniqueWord("tenant");
    await createItem(b.ownerToken, { title: `${w} inspection` });
    const mine = await createItem(a.ownerToken, { title: `${w}` });
    for (const q of [w.slice(0, 2), w.slice(0, 4), w, `${w} insp`, "inspection"]) {
      const found = itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${q}&archived=any`));
      expect(found, q).toEqual(q.startsWith("insp") || q.includes("insp") ? [] : [mine.item_id]);
    }
  });

  it("follows title, notes, date, archive and delete; keeps list order and pages by cursor", async () => {
    const a = await createAccount();
    const w = uniqueWord("flow");
    const made: DataOf<"getItem">[] = [];
    for (let i = 0; i < 7; i++)
      made.push(
        await createItem(a.ownerToken, { title: `${w} number${i}`, expiry_date: `2031-0${(i % 3) + 1}-1${i}` }),
      );
    const all = itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}`));
    expect(all).toEqual(
      itemIds(await get(a.ownerToken, "listItems", `/v1/items?limit=200`)).filter((id: number) =>
        made.some((m) => m.item_id === id),
      ),
    );
    // Cursor pages of 3 walk the same order.
    const paged: number[] = [];
    let cursor = "";
    for (let page = 0; page < 4; page++) {
      const body = await get(a.ownerToken, "listItems", `/v1/items?q=${w}&limit=3${cursor ? `&cursor=${cursor}` : ""}`);
      paged.push(...itemIds(body));
      if (!body.meta.next_cursor) break;
      cursor = body.meta.next_cursor;
    }
    expect(paged).toEqual(all);
    // A new title is found by its words, not the old ones; notes alone keep the title's words.
    const first = made[0]!.item_id;
    expectStatus(
      await call("updateItem", `/v1/items/${first}`, { token: a.ownerToken, body: { title: `${w} renamed` } }),
      200,
    );
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w} number0`))).toEqual([]);
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w} renamed`))).toEqual([first]);
    expectStatus(
      await call("updateItem", `/v1/items/${first}`, { token: a.ownerToken, body: { notes: "extraordinarily" } }),
      200,
    );
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w} renamed extraord`))).toEqual([first]);
    // A new date moves the item in the search's order as in the list's.
    expectStatus(
      await call("updateItem", `/v1/items/${first}`, { token: a.ownerToken, body: { expiry_date: "2039-12-31" } }),
      200,
    );
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}`)).at(-1)).toBe(first);
    // Archived items: only with archived=true|any.
    expectStatus(
      await call("archiveItem", `/v1/items/${first}/archive`, { token: a.ownerToken, body: { archived: true } }),
      200,
    );
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}`))).not.toContain(first);
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}&archived=true`))).toEqual([first]);
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}&archived=any`))).toContain(first);
    expectStatus(await call("deleteItem", `/v1/items/${made[1]!.item_id}`, { token: a.ownerToken }), 200);
    expect(itemIds(await get(a.ownerToken, "listItems", `/v1/items?q=${w}&archived=any`))).not.toContain(
      made[1]!.item_id,
    );
  });

  it("a long term that starts more than 64 different words still finds every one of them", async () => {
    const a = await createAccount();
    const w = uniqueWord("ser");
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 80)
       INSERT INTO items (company_id, dept_id, title, expiry_date, created_by, search_words)
       SELECT ?1, ?2, ?3 || printf('%03d', i), '2031-01-01', 1, json_array(?3 || printf('%03d', i)) FROM n`,
    )
      .bind(a.companyId, a.deptId, w)
      .run();
    const body = await get(a.ownerToken, "listItems", `/v1/items?q=${w}0&limit=200`);
    expect(body.meta).toMatchObject({ total: 80, total_exact: true });
    expect((await get(a.ownerToken, "listItems", `/v1/items?q=${w}07`)).meta.total).toBe(10);
    expect((await get(a.ownerToken, "listItems", `/v1/items?q=${w}080`)).meta.total).toBe(1);
  });
});

describe("GET /v1/contacts?q=", () => {
  it("finds names, email and phone by word prefix in contact order, follows updates, and stays in the company", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const w = uniqueWord("ct");
    const ada = await createContact(a.ownerToken, {
      first_name: "Ada",
      last_name: `Lovelace${w}`,
      email: `${w}@analytical.example`,
    });
    const bob = await createContact(a.ownerToken, { first_name: "Bob", last_name: w, phone_number: "7946 0958" });
    await createContact(b.ownerToken, { first_name: "Ada", last_name: `Lovelace${w}` });
    const found = async (q: string) =>
      (await get(a.ownerToken, "listContacts", `/v1/contacts?q=${encodeURIComponent(q)}`)).data.map(
        (c) => c.contact_id,
      );
    expect(await found(`lovelace${w}`)).toEqual([ada.contact_id]);
    expect(await found(`ada love`)).toEqual([ada.contact_id]);
    expect(await found(`analytical ${w}`)).toEqual([ada.contact_id]);
    expect(await found(w)).toEqual([ada.contact_id, bob.contact_id]);
    expect(await found(`7946 ${w}`)).toEqual([bob.contact_id]);
    expectStatus(
      await call("updateContact", `/v1/contacts/${bob.contact_id}`, {
        token: a.ownerToken,
        body: { first_name: "Robert" },
      }),
      200,
    );
    expect(await found(`robert ${w}`)).toEqual([bob.contact_id]);
    expect(await found(`bob ${w}`)).toEqual([]);
    expect(await found(`7946 ${w}`)).toEqual([bob.contact_id]);
    const meta = (await get(a.ownerToken, "listContacts", `/v1/contacts?q=${w}&limit=1`)).meta;
    expect(meta).toEqual({ total: 2, limit: 1, offset: 0, total_exact: true });
  });
});

describe("GET /v1/tasks?q=", () => {
  const createTask = async (token: string, body: Fields) => {
    const res = await call("createTask", "/v1/tasks", { token, body });
    expectStatus(res, 201, JSON.stringify(res.body));
    return res.body.data;
  };

  it("keeps (due_at, task_id) order when a page ends inside a minute, at every offset", async () => {
    const a = await createAccount();
    const w = uniqueWord("tk");
    // Created in this order: ids rise while the seconds fall within 09:00, so rowid order (minute, id) differs from list order.
    const dues = [
      "2031-01-01 09:00:59",
      "2031-01-01 09:00:30",
      "2031-01-01 09:00:00",
      "2031-01-01 08:59:59",
      "2031-01-01 09:01:00",
      "2031-01-01 09:00:30",
    ];
    const made: DataOf<"createTask">[] = [];
    for (const [i, due_at] of dues.entries()) made.push(await createTask(a.ownerToken, { title: `${w} ${i}`, due_at }));
    const expected = made
      .map((t) => ({ id: t.task_id as number, due: t.due_at as string }))
      .sort((x, y) => x.due.localeCompare(y.due) || x.id - y.id)
      .map((t) => t.id);
    const unfiltered = (await get(a.ownerToken, "listTasks", `/v1/tasks?limit=100`)).data.map((t) => t.task_id);
    expect(unfiltered).toEqual(expected);
    for (const limit of [1, 2, 3, 4]) {
      for (let offset = 0; offset < dues.length; offset += 1) {
        const body = await get(a.ownerToken, "listTasks", `/v1/tasks?q=${w}&limit=${limit}&offset=${offset}`);
        expect(
          body.data.map((t) => t.task_id),
          `limit ${limit} offset ${offset}`,
        ).toEqual(expected.slice(offset, offset + limit));
        expect(body.meta).toEqual({ total: dues.length, limit, offset, total_exact: true });
      }
    }
    // With another filter, the page's minute is found among the filtered matches.
    await call("updateTask", `/v1/tasks/${made[2]!.task_id}`, { token: a.ownerToken, body: { status: "in_progress" } });
    await call("updateTask", `/v1/tasks/${made[1]!.task_id}`, { token: a.ownerToken, body: { status: "in_progress" } });
    const open = expected.filter((id) => id !== made[2]!.task_id && id !== made[1]!.task_id);
    for (let offset = 0; offset < open.length; offset += 1) {
      const body = await get(a.ownerToken, "listTasks", `/v1/tasks?q=${w}&status=open&limit=2&offset=${offset}`);
      expect(
        body.data.map((t) => t.task_id),
        `status=open offset ${offset}`,
      ).toEqual(open.slice(offset, offset + 2));
    }
  });

  it("follows title, description, due_at and delete, and never finds another company's tasks", async () => {
    const a = await createAccount();
    const b = await createAccount();
    const w = uniqueWord("tq");
    const long = `${w}verylongword`;
    const task = await createTask(a.ownerToken, {
      title: `Renew ${long}`,
      description: "Stadtwerke Zürich",
      due_at: "2032-02-29 12:00:00",
    });
    await createTask(b.ownerToken, {
      title: `Renew ${long}`,
      description: "Stadtwerke Zürich",
      due_at: "2032-02-29 12:00:00",
    });
    const found = async (q: string) =>
      (await get(a.ownerToken, "listTasks", `/v1/tasks?q=${encodeURIComponent(q)}`)).data.map((t) => t.task_id);
    expect(await found(long)).toEqual([task.task_id]);
    expect(await found(`${w} zuri`)).toEqual([task.task_id]);
    const patch = async (body: Fields) =>
      expectStatus(await call("updateTask", `/v1/tasks/${task.task_id}`, { token: a.ownerToken, body }), 200);
    // A title change keeps the description's words, and a description change keeps the title's.
    await patch({ title: `Replace ${w}` });
    expect(await found(`replace ${w} stadtwerke`)).toEqual([task.task_id]);
    expect(await found(long)).toEqual([]);
    await patch({ description: "Genève" });
    expect(await found(`replace ${w} geneve`)).toEqual([task.task_id]);
    expect(await found(`${w} stadtwerke`)).toEqual([]);
    await patch({ due_at: "1900-01-01 00:00:00" });
    expect(await found(w)).toEqual([task.task_id]);
    expectStatus(await call("deleteTask", `/v1/tasks/${task.task_id}`, { token: a.ownerToken }), 200);
    expect(await found(w)).toEqual([]);
    expect((await get(b.ownerToken, "listTasks", `/v1/tasks?q=${long}`)).meta.total).toBe(1);
  });
});

describe("name search (q) on contact groups, folders and tags", () => {
  it("streams a page in list order and counts from the index alone, up to the cap", async () => {
    const db = database(env.DB);
    const cases: Array<[string, { page: Plannable; total: Plannable }, string, string]> = [
      [
        "contact_groups",
        groupListQueries(db, 1, ListGroupsQuery.parse({ q: "ops" })),
        "contact_groups_company_id_name_idx",
        "contact_groups_company_id_name_idx",
      ],
      [
        "folders",
        folderListQueries(db, 1, ListFoldersQuery.parse({ q: "permits" })),
        "folders_company_id_name_idx",
        "folders_company_id_name_idx",
      ],
      [
        "tags",
        tagListQueries(db, 1, ListTagsQuery.parse({ q: "urgent" })),
        "tags_company_name_key_uq",
        "tags_company_name_count_idx",
      ],
    ];
    for (const [table, built, pageIndex, totalIndex] of cases) {
      const page = await queryPlan(built.page);
      expect(page, page).toMatch(
        new RegExp(`SEARCH ${table} USING (COVERING )?INDEX ${pageIndex} \\(company_id=\\?\\)`),
      );
      expect(page, page).not.toMatch(/TEMP B-TREE/);
      const total = await queryPlan(built.total);
      expect(total, total).toMatch(
        new RegExp(`SEARCH ${table} USING COVERING INDEX ${totalIndex} \\(company_id=\\?\\)`),
      );
    }
  });

  it("reports a total of 1,000 with total_exact false past 1,000 matches, and exact ones below", async () => {
    const a = await createAccount();
    const w = uniqueWord("nm");
    const values = Array.from({ length: 1_005 }, (_, i) => `(${a.companyId}, '${w}-${i}', '${w}-${i}', 1)`).join(", ");
    await env.DB.prepare(`INSERT INTO tags (company_id, name, name_key, items_count) VALUES ${values}`).run();
    const many = await get(a.ownerToken, "listTags", `/v1/tags?q=${w}&limit=2`);
    expect(many.meta).toEqual({ total: 1_000, limit: 2, offset: 0, total_exact: false });
    expect(many.data.map((t) => t.name)).toEqual([`${w}-0`, `${w}-1`]);
    const few = await get(a.ownerToken, "listTags", `/v1/tags?q=${w}-100&limit=2`);
    expect(few.meta).toEqual({ total: 6, limit: 2, offset: 0, total_exact: true }); // -100, -1000 .. -1004
    expect((await get(a.ownerToken, "listTags", `/v1/tags?limit=1`)).meta).toEqual({
      total: 1_005,
      limit: 1,
      offset: 0,
      total_exact: true,
    });
  });
});
