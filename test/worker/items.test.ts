import { beforeAll, describe, expect, it } from "vitest";
import { addDays, todayIn } from "../../src/lib/time";
import {
  call,
  createAccount,
  createContact,
  createItem,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  type DataOf,
  type SuccessBody,
  type TestAccount,
  createDocumentType,
  expectStatus,
  ok,
} from "./helpers";

let owner: string, other: string;

beforeAll(async () => {
  ({ owner, other } = await demoTokens());
});

const ENTRY_FIELDS = [
  "item_id",
  "title",
  "item_type",
  "document_type",
  "document_type_id",
  "deptid",
  "expiry_date",
  "status",
  "folder_id",
  "active",
].sort();

async function counters(companyId: number) {
  return (await env.DB.prepare(
    `SELECT c.documents_used AS company, (SELECT count(*) FROM items WHERE company_id = c.id) AS actual,
       (SELECT json_group_object(id, docs_used) FROM departments WHERE company_id = c.id) AS depts,
       (SELECT json_group_object(id, docs_count) FROM document_types WHERE company_id = c.id) AS types
     FROM companies c WHERE c.id = ?`,
  )
    .bind(companyId)
    .first<{ company: number; actual: number; depts: string; types: string }>())!;
}

const list = async (token: string, query: string) => {
  const res = await call("listItems", `/v1/items?${query}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body;
};
const ids = (body: SuccessBody<"listItems">) => body.data.map((i) => i.item_id);

describe("POST /v1/items", () => {
  it("creates an item and answers the spec's fields", async () => {
    const res = await call("createItem", "/v1/items", {
      token: owner,
      body: { title: "Fire certificate", expiry_date: "2030-05-01" },
    });
    expectStatus(res, 201);
    expect(res.body.msg).toBeTruthy();
    expect(res.body.data).toEqual({
      item_id: expect.any(Number),
      title: "Fire certificate",
      expiry_date: "2030-05-01",
      item_type: "exp",
    });
  });

  it("refuses dates that are not real calendar dates and other bad input, naming the field", async () => {
    for (const [body, msg] of [
      [{ title: "x", expiry_date: "2026-02-30" }, /expiry_date must be a real calendar date/],
      [{ title: "x", expiry_date: "2026-2-3" }, /expiry_date/],
      [{ title: "x" }, /expiry_date is required/],
      [{ expiry_date: "2030-01-01" }, /title is required/],
      [{ title: "x", expiry_date: "2030-01-01", item_type: "foo" }, /item_type must be one of: exp, due, apt, evt/],
      [{ title: "x", expiry_date: "2030-01-01", deptid: 999999 }, /deptid 999999 does not exist/],
      [{ title: "x", expiry_date: "2030-01-01", document_type_id: 999999 }, /document_type_id 999999 does not exist/],
      [
        { title: "x", expiry_date: "2030-01-01", document_type: "No such type" },
        /document_type "No such type" is not a document type/,
      ],
      [{ title: "x", expiry_date: "2030-01-01", folder_id: 999999 }, /folder_id 999999 does not exist/],
      [{ title: "x", expiry_date: "2030-01-01", contact_id: 999999 }, /contact_id 999999 does not exist/],
      [
        { title: "x", expiry_date: "2030-01-01", folder_id: 1, folder_path: "A" },
        /folder_path cannot be combined with folder_id/,
      ],
      [{ title: "x", expiry_date: "2030-01-01", status: "pending" }, /Unknown field: status/],
    ] as const) {
      expectShapeB(await call("createItem", "/v1/items", { token: owner, body }), 400, msg);
    }
  });

  it("resolves document_type by name (case-insensitive) and defaults the department to the type's", async () => {
    const account = await createAccount();
    const dept = ok(
      await call("createDepartment", "/v1/departments", { token: account.ownerToken, body: { dept_name: "Permits" } }),
    );
    const type = ok(
      await call("createDocumentType", "/v1/document-types", {
        token: account.ownerToken,
        body: { doctype_name: "Lizenz Ärztekammer", deptid: dept.body.data.deptid },
      }),
    );
    const item = await createItem(account.ownerToken, { document_type: "LIZENZ ÄRZTEKAMMER" });
    expect(item).toMatchObject({
      document_type: "Lizenz Ärztekammer",
      document_type_id: type.body.data.typeid,
      deptid: dept.body.data.deptid,
    });
  });

  it("takes another company's ids as 400", async () => {
    const foreignType = await createDocumentType(other);
    const foreignContact = await createContact(other);
    expectShapeB(
      await call("createItem", "/v1/items", {
        token: owner,
        body: { title: "x", expiry_date: "2030-01-01", document_type_id: foreignType.typeid },
      }),
      400,
    );
    expectShapeB(
      await call("createItem", "/v1/items", {
        token: owner,
        body: { title: "x", expiry_date: "2030-01-01", contact_id: foreignContact.contact_id },
      }),
      400,
    );
    expectShapeB(
      await call("createItem", "/v1/items", {
        token: owner,
        body: { title: "x", expiry_date: "2030-01-01", deptid: 2 },
      }),
      400,
    );
  });

  it("creates missing folders of folder_path like mkdir -p and reuses existing ones", async () => {
    const word = uniqueWord("Permits");
    const first = await createItem(owner, { folder_path: `${word}/City` });
    const second = await createItem(owner, { folder_path: `${word.toUpperCase()}/city/` });
    expect(first.folder_id).toBeGreaterThan(0);
    expect(second.folder_id).toBe(first.folder_id);
    const city = ok(await call("getFolder", `/v1/folders/${first.folder_id}`, { token: owner }));
    expect(city.body.data.folder_name).toBe("City");
  });

  it("enforces documents_limit, also under concurrent creates", async () => {
    const account = await createAccount({}, { documents: 3 });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call("createItem", "/v1/items", {
          token: account.ownerToken,
          body: { title: `t${i}`, expiry_date: "2030-01-01" },
        }),
      ),
    );
    for (const res of results) expect(res.status).toBeLessThan(500);
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    const refused = results.find((r) => r.status !== 201)!;
    expectShapeB(refused, 400, /Document limit reached: the company may hold at most 3 documents/);
    expect((await counters(account.companyId)).company).toBe(3);
  });

  it("needs items:write (Shape A) and is isolated per company", async () => {
    const res = await call("createItem", "/v1/items", {
      token: await tokenFor("demo-readonly"),
      body: { title: "x", expiry_date: "2030-01-01" },
    });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("items:write");
    const mine = await createItem(owner);
    expectShapeB(await call("getItem", `/v1/items/${mine.item_id}`, { token: other }), 404);
    expectShapeB(await call("updateItem", `/v1/items/${mine.item_id}`, { token: other, body: { title: "y" } }), 404);
    expectShapeB(await call("deleteItem", `/v1/items/${mine.item_id}`, { token: other }), 404);
  });
});

describe("counters stay exact", () => {
  it("documents_used, department docs_used and document type docs_count through create, move and delete", async () => {
    const account = await createAccount();
    const t1 = await createDocumentType(account.ownerToken);
    const t2 = await createDocumentType(account.ownerToken);
    const a = await createItem(account.ownerToken, { document_type_id: t1.typeid });
    await createItem(account.ownerToken, { document_type_id: t1.typeid });
    let c = await counters(account.companyId);
    expect(c.company).toBe(2);
    expect(JSON.parse(c.types)).toEqual({ [t1.typeid]: 2, [t2.typeid]: 0 });
    expect(JSON.parse(c.depts)[account.deptId]).toBe(2);
    await call("updateItem", `/v1/items/${a.item_id}`, {
      token: account.ownerToken,
      body: { document_type_id: t2.typeid },
    });
    c = await counters(account.companyId);
    expect(JSON.parse(c.types)).toEqual({ [t1.typeid]: 1, [t2.typeid]: 1 });
    expectShapeB(
      await call("deleteDocumentType", `/v1/document-types/${t2.typeid}`, { token: account.ownerToken }),
      400,
      /associated documents/,
    );
    expectStatus(await call("deleteItem", `/v1/items/${a.item_id}`, { token: account.ownerToken }), 200);
    c = await counters(account.companyId);
    expect(c.company).toBe(1);
    expect(c.actual).toBe(1);
    expect(JSON.parse(c.types)).toEqual({ [t1.typeid]: 1, [t2.typeid]: 0 });
    expect(JSON.parse(c.depts)[account.deptId]).toBe(1);
    const company = ok(await call("getCompany", `/v1/companies/${account.companyId}`, { token: account.ownerToken }));
    expect(company.body.data.company.documents_used).toBe(1);
  });

  it("a department holding items cannot be deleted", async () => {
    const account = await createAccount();
    const dept = ok(
      await call("createDepartment", "/v1/departments", { token: account.ownerToken, body: { dept_name: "Fleet" } }),
    );
    await createItem(account.ownerToken, { deptid: dept.body.data.deptid });
    expectShapeB(
      await call("deleteDepartment", `/v1/departments/${dept.body.data.deptid}`, { token: account.ownerToken }),
      400,
      /item/,
    );
  });
});

describe("GET /v1/items/{item_id}", () => {
  it("adds tags, reminders and the documented extensions", async () => {
    const contact = await createContact(owner);
    const item = await createItem(owner, {
      notes: "Call the city",
      contact_id: contact.contact_id,
      seqid: 0,
      item_type: "apt",
    });
    expect(Object.keys(item).sort()).toEqual(
      [
        ...ENTRY_FIELDS,
        "tags",
        "reminders",
        "notes",
        "contact_id",
        "seqid",
        "renewals",
        "add_date",
        "external_id",
        "fields",
        "recurrence",
        "next_occurrences",
        "acknowledgement",
        "snoozed_until",
      ].sort(),
    );
    expect(item).toMatchObject({
      tags: [],
      reminders: { queued: [], sent: [] },
      notes: "Call the city",
      contact_id: contact.contact_id,
      seqid: 0,
      item_type: "apt",
      status: "pending",
      active: true,
      folder_id: 0,
      document_type: "",
      document_type_id: 0,
      renewals: [],
    });
  });

  it("is 400 for a malformed id and 404 for an unknown one", async () => {
    expectShapeB(await call("getItem", "/v1/items/abc", { token: owner }), 400);
    expectShapeB(await call("getItem", "/v1/items/99999999", { token: owner }), 404);
  });
});

describe("GET /v1/items", () => {
  let account: TestAccount;
  let token: string;
  let made: Record<string, DataOf<"getItem">>;
  let today: string;
  let typeA: DataOf<"createDocumentType">;

  beforeAll(async () => {
    account = await createAccount();
    token = account.ownerToken;
    today = todayIn("UTC");
    typeA = await createDocumentType(token, { doctype_name: "Permit" });
    const contact = await createContact(token);
    const folder = ok(await call("createFolder", "/v1/folders", { token, body: { folder_name: "Box" } }));
    made = {
      expired: await createItem(token, { title: "Old licence Zürich", expiry_date: addDays(today, -3) }),
      expiredDone: await createItem(token, { title: "Done licence", expiry_date: addDays(today, -2) }),
      today: await createItem(token, { title: "Due today", expiry_date: today, item_type: "due" }),
      soon: await createItem(token, {
        title: "Soon",
        expiry_date: addDays(today, 5),
        document_type_id: typeA.typeid,
        notes: "boiler inspection",
      }),
      later: await createItem(token, {
        title: "Later",
        expiry_date: addDays(today, 45),
        contact_id: contact.contact_id,
        folder_id: folder.body.data.folderid,
      }),
      archived: await createItem(token, { title: "Archived one", expiry_date: addDays(today, 1) }),
      far: await createItem(token, { title: "Far", expiry_date: "2099-12-31", item_type: "evt" }),
    };
    await call("setItemStatus", `/v1/items/${made.expiredDone!.item_id}/status`, {
      token,
      body: { status: "completed" },
    });
    await call("archiveItem", `/v1/items/${made.archived!.item_id}/archive`, { token, body: {} });
  });

  it("lists non-archived items ordered by expiry_date then item_id, with entry fields and totals", async () => {
    const body = await list(token, "");
    for (const entry of body.data) expect(Object.keys(entry).sort()).toEqual(ENTRY_FIELDS);
    expect(ids(body)).toEqual(["expired", "expiredDone", "today", "soon", "later", "far"].map((k) => made[k]!.item_id));
    expect(body.meta).toMatchObject({ total: 6, limit: 50, offset: 0, total_exact: true });
  });

  it("shows archived items only when asked", async () => {
    expect(ids(await list(token, "archived=true"))).toEqual([made.archived!.item_id]);
    expect((await list(token, "archived=any")).meta.total).toBe(7);
    expect((await list(token, "archived=true")).meta.total).toBe(1);
  });

  it("filters by status, item_type, document type, contact and folder", async () => {
    expect(ids(await list(token, "status=completed"))).toEqual([made.expiredDone!.item_id]);
    expect((await list(token, "status=pending")).meta.total).toBe(5);
    expect(ids(await list(token, "item_type=due"))).toEqual([made.today!.item_id]);
    expect((await list(token, "item_type=all")).meta.total).toBe(6);
    expect(ids(await list(token, `document_type_id=${typeA.typeid}`))).toEqual([made.soon!.item_id]);
    expect(ids(await list(token, `contact_id=${made.later!.contact_id}`))).toEqual([made.later!.item_id]);
    expect(ids(await list(token, `folder_id=${made.later!.folder_id}`))).toEqual([made.later!.item_id]);
    expect((await list(token, "folder_id=0")).meta.total).toBe(5);
    expect((await list(token, `deptid=${account.deptId}&status=pending&item_type=exp`)).meta.total).toBe(3);
  });

  it("filters by period in the company's today", async () => {
    expect(ids(await list(token, "period=expired"))).toEqual([made.expired!.item_id]);
    expect(ids(await list(token, "period=today"))).toEqual([made.today!.item_id]);
    expect(ids(await list(token, "period=next_7_days"))).toEqual([made.today!.item_id, made.soon!.item_id]);
    expect(ids(await list(token, "period=next_60_days"))).toEqual([
      made.today!.item_id,
      made.soon!.item_id,
      made.later!.item_id,
    ]);
    expect(ids(await list(token, "period=2099-01-01..2099-12-31"))).toEqual([made.far!.item_id]);
    expect(ids(await list(token, "period=next_7_days&status=completed"))).toEqual([]);
    const bad = await call("listItems", "/v1/items?period=yesterday", { token });
    expectShapeB(bad, 400, /period must be one of: expired, today, next_7_days.*YYYY-MM-DD\.\.YYYY-MM-DD/);
  });

  it("uses the company's time zone for today", async () => {
    const east = await createAccount();
    await call("updateCompanySettings", `/v1/companies/${east.companyId}/settings`, {
      token: east.ownerToken,
      body: { timezone: "Pacific/Kiritimati" },
    });
    const localToday = todayIn("Pacific/Kiritimati");
    const item = await createItem(east.ownerToken, { expiry_date: localToday });
    expect(ids(await list(east.ownerToken, "period=today"))).toEqual([item.item_id]);
    if (localToday !== todayIn("UTC")) expect(ids(await list(east.ownerToken, "period=expired"))).toEqual([]);
  });

  it("searches words of title and notes, case- and accent-insensitively", async () => {
    expect(ids(await list(token, "q=ZURICH"))).toEqual([made.expired!.item_id]);
    expect(ids(await list(token, "q=boil"))).toEqual([made.soon!.item_id]);
    expect(ids(await list(token, "q=licence&status=pending"))).toEqual([made.expired!.item_id]);
    expect((await list(token, "q=%25%25")).data).toEqual([]);
  });

  it("pages stably by offset and by cursor", async () => {
    const first = await list(token, "limit=2");
    const second = await list(token, "limit=2&offset=2");
    expect([...ids(first), ...ids(second)]).toEqual(ids(await list(token, "limit=4")));
    const byCursor = await list(token, `limit=2&cursor=${first.meta.next_cursor}`);
    expect(ids(byCursor)).toEqual(ids(second));
    const last = await list(token, "limit=50");
    expect(last.meta.next_cursor).toBeNull();
    expectShapeB(await call("listItems", "/v1/items?cursor=garbage", { token }), 400, /cursor is invalid/);
    expectShapeB(
      await call("listItems", `/v1/items?cursor=${first.meta.next_cursor}&offset=2`, { token }),
      400,
      /offset must be 0/,
    );
  });

  it("validates limit, offset and enums", async () => {
    for (const query of [
      "limit=0",
      "limit=201",
      "offset=-1",
      "status=done",
      "item_type=foo",
      "archived=maybe",
      "deptid=abc",
    ]) {
      expectShapeB(await call("listItems", `/v1/items?${query}`, { token }), 400);
    }
  });

  it("never shows another company's items", async () => {
    const theirs = await list(other, "archived=any&limit=200");
    expect(ids(theirs)).not.toContain(made.expired!.item_id);
  });
});

describe("changing an item", () => {
  it("PATCH updates fields, refuses an empty body and foreign ids, and clears references with 0", async () => {
    const folder = ok(
      await call("createFolder", "/v1/folders", { token: owner, body: { folder_name: uniqueWord("F") } }),
    );
    const item = await createItem(owner, { folder_id: folder.body.data.folderid });
    const res = await call("updateItem", `/v1/items/${item.item_id}`, {
      token: owner,
      body: { title: "Renamed", notes: "n", expiry_date: "2031-01-01", folder_id: 0 },
    });
    expectStatus(res, 200);
    expect(res.body.data).toMatchObject({ title: "Renamed", notes: "n", expiry_date: "2031-01-01", folder_id: 0 });
    expectShapeB(
      await call("updateItem", `/v1/items/${item.item_id}`, { token: owner, body: {} }),
      400,
      /No updatable fields provided/,
    );
    expectShapeB(
      await call("updateItem", `/v1/items/${item.item_id}`, { token: owner, body: { reschedule_reminders: true } }),
      400,
      /No updatable fields provided/,
    );
    expectShapeB(
      await call("updateItem", `/v1/items/${item.item_id}`, { token: owner, body: { document_type_id: 99999999 } }),
      400,
      /document_type_id/,
    );
    expectShapeB(
      await call("updateItem", `/v1/items/${item.item_id}`, { token: owner, body: { expiry_date: "2031-02-29" } }),
      400,
      /expiry_date/,
    );
    expectShapeB(await call("updateItem", "/v1/items/99999999", { token: owner, body: { title: "x" } }), 404);
  });

  it("moves between pending and completed", async () => {
    const item = await createItem(owner);
    const done = await call("setItemStatus", `/v1/items/${item.item_id}/status`, {
      token: owner,
      body: { status: "completed" },
    });
    expectStatus(done, 200);
    expect(done.body.data.status).toBe("completed");
    const back = ok(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, { token: owner, body: { status: "pending" } }),
    );
    expect(back.body.data.status).toBe("pending");
    expectShapeB(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, { token: owner, body: { status: "archived" } }),
      400,
      /completed or pending/,
    );
    expectShapeB(
      await call("setItemStatus", `/v1/items/${item.item_id}/status`, { token: owner, body: {} }),
      400,
      /status is required/,
    );
  });

  it("archives and restores with the spec's messages; active follows", async () => {
    const item = await createItem(owner);
    const archived = await call("archiveItem", `/v1/items/${item.item_id}/archive`, {
      token: owner,
      body: { archived: true },
    });
    expect(archived.body).toMatchObject({ success: true, msg: "Item archived", data: { active: false } });
    const restored = await call("archiveItem", `/v1/items/${item.item_id}/archive`, {
      token: owner,
      body: { archived: false },
    });
    expect(restored.body).toMatchObject({ msg: "Item restored", data: { active: true } });
    const bare = ok(await call("archiveItem", `/v1/items/${item.item_id}/archive`, { token: owner }));
    expect(bare.body.msg).toBe("Item archived");
    expectShapeB(
      await call("archiveItem", `/v1/items/${item.item_id}/archive`, { token: owner, body: { archived: "yes" } }),
      400,
      /archived must be a boolean/,
    );
  });

  it("renews: later date required, one year by default (Feb 29 -> Feb 28), back to pending, history kept", async () => {
    const item = await createItem(owner, { expiry_date: "2028-02-29" });
    await call("setItemStatus", `/v1/items/${item.item_id}/status`, { token: owner, body: { status: "completed" } });
    const renewed = await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: owner });
    expectStatus(renewed, 200);
    expect(renewed.body.data).toMatchObject({
      expiry_date: "2029-02-28",
      status: "pending",
      renewals: [{ previous_date: "2028-02-29", new_date: "2029-02-28" }],
    });
    expectShapeB(
      await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: owner, body: { expiry_date: "2029-02-28" } }),
      400,
      /later than/,
    );
    const again = ok(
      await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: owner, body: { expiry_date: "2030-06-30" } }),
    );
    expect(again.body.data.renewals.map((r) => r.new_date)).toEqual(["2029-02-28", "2030-06-30"]);
  });

  it("concurrent renewals of one item each apply to a different date, never twice to the same", async () => {
    const item = await createItem(owner, { expiry_date: "2030-01-01" });
    const results = await Promise.all(
      Array.from({ length: 4 }, () => call("renewItem", `/v1/items/${item.item_id}/renew`, { token: owner })),
    );
    for (const res of results) expect(res.status).toBeLessThan(500);
    const detail = ok(await call("getItem", `/v1/items/${item.item_id}`, { token: owner }));
    const renewals = detail.body.data.renewals;
    expect(new Set(renewals.map((r) => r.previous_date)).size).toBe(renewals.length);
    expect(detail.body.data.expiry_date).toBe(renewals[renewals.length - 1]!.new_date);
  });

  it("delete removes the item, its renewals and tag links", async () => {
    const item = await createItem(owner);
    await call("renewItem", `/v1/items/${item.item_id}/renew`, { token: owner });
    await call("setItemTags", `/v1/items/${item.item_id}/tags`, { token: owner, body: { tags: [uniqueWord("tag")] } });
    expectStatus(await call("deleteItem", `/v1/items/${item.item_id}`, { token: owner }), 200);
    expectShapeB(await call("getItem", `/v1/items/${item.item_id}`, { token: owner }), 404);
    for (const table of ["item_renewals", "item_tags"]) {
      const left = await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE item_id = ?`)
        .bind(item.item_id)
        .first<{ n: number }>();
      expect(left?.n, table).toBe(0);
    }
    expectShapeB(await call("deleteItem", `/v1/items/${item.item_id}`, { token: owner }), 404);
  });
});

describe("totals past the counting cap", () => {
  it("stay exact unfiltered (counters) and become a lower bound filtered", async () => {
    const account = await createAccount({ documents: 20000 }, { documents: 20000 });
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10300)
       INSERT INTO items (company_id, dept_id, title, expiry_date, status, created_by, search_words)
       SELECT ?1, ?2, 'Bulk ' || i, '2031-01-01', CASE WHEN i % 100 = 0 THEN 'completed' ELSE 'pending' END, 1, json_array('bulk', CAST(i AS TEXT)) FROM n`,
    )
      .bind(account.companyId, account.deptId)
      .run();
    const all = await list(account.ownerToken, "limit=1");
    expect(all.meta).toMatchObject({ total: 10300, total_exact: true });
    const pending = await list(account.ownerToken, "limit=1&status=pending");
    expect(pending.meta).toMatchObject({ total: 10000, total_exact: false });
    const done = await list(account.ownerToken, "limit=1&status=completed");
    expect(done.meta).toMatchObject({ total: 103, total_exact: true });
    const search = await list(account.ownerToken, "limit=1&q=bulk");
    expect(search.meta).toMatchObject({ total: 1000, total_exact: false });
    // A term this common is searched along the date index: the same order as the plain list.
    expect(ids(await list(account.ownerToken, "limit=5&offset=3&q=bulk"))).toEqual(
      ids(await list(account.ownerToken, "limit=5&offset=3")),
    );
    const deep = await list(account.ownerToken, "limit=2&offset=10290");
    expect(deep.data).toHaveLength(2);
  });
});
