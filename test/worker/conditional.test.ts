// Conditional requests: strong ETags on single-record reads, If-None-Match → 304, If-Match on PATCH
// and DELETE → 412 when the record changed, checked inside the write (two writers holding one ETag
// never both succeed).
import { beforeAll, describe, expect, it } from "vitest";
import { ifMatchHolds, noneMatch, parseEntityTags } from "../../src/lib/conditional";
import {
  call,
  createAccount,
  expectShapeB,
  noServerError,
  uniqueEmail,
  uniqueWord,
  type CallResult,
  type Operation,
  type TestAccount,
  expectStatus,
  callRaw,
  ok,
  openApiDocument,
} from "./helpers";

let account: TestAccount;

beforeAll(async () => {
  account = await createAccount();
});

const get = (path: string, headers: Record<string, string> = {}) =>
  callRaw("GET", path, { token: account.ownerToken, headers });
const patch = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  callRaw("PATCH", path, { token: account.ownerToken, body, headers });
const del = (path: string, headers: Record<string, string> = {}) =>
  callRaw("DELETE", path, { token: account.ownerToken, headers });
const post = async <O extends Operation>(operation: O, path: string, body: unknown) => {
  const res = await call(operation, path, { token: account.ownerToken, body });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res;
};

function etagOf(res: CallResult): string {
  const etag = res.headers.get("ETag");
  expect(etag, JSON.stringify(res.body)).toMatch(/^"[0-9a-f]{32}"$/);
  return etag!;
}

/** One record of each kind that answers ETags: its path, and a PATCH body that changes it. */
async function records(): Promise<Array<{ what: string; path: string; change: () => unknown }>> {
  const item = await post("createItem", "/v1/items", { title: uniqueWord("Item "), expiry_date: "2032-01-01" });
  const contact = await post("createContact", "/v1/contacts", {
    first_name: "E",
    last_name: "Tag",
    email: uniqueEmail(),
  });
  const group = await post("createContactGroup", "/v1/contact-groups", { group_name: uniqueWord("G") });
  const folder = await post("createFolder", "/v1/folders", { folder_name: uniqueWord("F") });
  const task = await post("createTask", "/v1/tasks", { title: uniqueWord("T"), due_at: "2032-01-01 10:00:00" });
  const dept = await post("createDepartment", "/v1/departments", { dept_name: uniqueWord("D") });
  const type = await post("createDocumentType", "/v1/document-types", { doctype_name: uniqueWord("Type") });
  // Subscribed to an event these tests never cause: nothing is delivered to the closed port.
  const hook = await post("createWebhook", "/v1/webhooks", {
    url: "http://127.0.0.1:9/hook",
    events: ["task.deleted"],
  });
  return [
    { what: "item", path: `/v1/items/${item.body.data.item_id}`, change: () => ({ title: uniqueWord("Renamed ") }) },
    {
      what: "contact",
      path: `/v1/contacts/${contact.body.data.contact_id}`,
      change: () => ({ first_name: uniqueWord("N") }),
    },
    {
      what: "group",
      path: `/v1/contact-groups/${group.body.data.groupid}`,
      change: () => ({ group_name: uniqueWord("G") }),
    },
    {
      what: "folder",
      path: `/v1/folders/${folder.body.data.folderid}`,
      change: () => ({ folder_name: uniqueWord("F") }),
    },
    { what: "task", path: `/v1/tasks/${task.body.data.public_id}`, change: () => ({ title: uniqueWord("T") }) },
    {
      what: "department",
      path: `/v1/departments/${dept.body.data.deptid}`,
      change: () => ({ dept_name: uniqueWord("D") }),
    },
    {
      what: "document type",
      path: `/v1/document-types/${type.body.data.typeid}`,
      change: () => ({ doctype_name: uniqueWord("Type") }),
    },
    {
      what: "webhook",
      path: `/v1/webhooks/${hook.body.data.webhook_id}`,
      change: () => ({ description: uniqueWord("d") }),
    },
    {
      what: "company",
      path: `/v1/companies/${account.companyId}`,
      change: () => ({ company_name: uniqueWord("Co "), documents_limit: 1000, contacts_limit: 1000, drive_space: 1 }),
    },
  ];
}

describe("ETag and If-None-Match on single-record reads", () => {
  it("answers a strong ETag, 304 without a body for a matching If-None-Match (weak or in a list, and HEAD), 200 otherwise", async () => {
    for (const { what, path } of await records()) {
      const first = await get(path);
      expectStatus(first, 200, what);
      const etag = etagOf(first);
      expect(etagOf(await get(path)), `${what}: stable`).toBe(etag);
      for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
        const res = await get(path, { "If-None-Match": header });
        expectStatus(res, 304, `${what} If-None-Match: ${header}`);
        expect(res.body, what).toEqual({});
        expect(res.headers.get("ETag")).toBe(etag);
      }
      const head = await callRaw("HEAD", path, { token: account.ownerToken, headers: { "If-None-Match": etag } });
      expectStatus(head, 304, `${what} HEAD`);
      expectStatus(await get(path, { "If-None-Match": '"0123456789abcdef0123456789abcdef"' }), 200, what);
    }
  });

  it("changes the ETag when the record changes", async () => {
    for (const { what, path, change } of await records()) {
      const before = etagOf(await get(path));
      const res = await patch(path, change());
      expectStatus(res, 200, `${what}: ${JSON.stringify(res.body)}`);
      expect(etagOf(await get(path)), what).not.toBe(before);
    }
  });
});

describe("If-Match on PATCH and DELETE", () => {
  it("applies a PATCH whose If-Match is current (or *), refuses a stale or weak one with 412 and the current ETag, changing nothing", async () => {
    for (const { what, path, change } of await records()) {
      const etag = etagOf(await get(path));
      const ok = await patch(path, change(), { "If-Match": etag });
      expectStatus(ok, 200, `${what}: ${JSON.stringify(ok.body)}`);
      const current = etagOf(await get(path));
      for (const stale of [etag, `W/${current}`, '"not-an-etag"']) {
        const refused = await patch(path, change(), { "If-Match": stale });
        expectShapeB(refused, 412, /has changed since the ETag/);
        expect(refused.headers.get("ETag"), what).toBe(current);
      }
      expect(etagOf(await get(path)), `${what}: unchanged by the 412s`).toBe(current);
      expectStatus(await patch(path, change(), { "If-Match": `"x", ${current}` }), 200, what);
      expectStatus(await patch(path, change(), { "If-Match": "*" }), 200, what);
    }
  });

  it("deletes only with a current If-Match", async () => {
    const contact = await post("createContact", "/v1/contacts", {
      first_name: "Del",
      last_name: "Me",
      email: uniqueEmail(),
    });
    const path = `/v1/contacts/${contact.body.data.contact_id}`;
    const etag = etagOf(await get(path));
    await patch(path, { last_name: "Changed" });
    expectShapeB(await del(path, { "If-Match": etag }), 412);
    expectStatus(await get(path), 200);
    expectStatus(await del(path, { "If-Match": etagOf(await get(path)) }), 200);
    expectStatus(await get(path), 404);
  });

  it("answers 404, not 412, for a record that does not exist; a malformed id stays 400", async () => {
    expectShapeB(await patch("/v1/items/999999999", { title: "x" }, { "If-Match": '"x"' }), 404);
    expectShapeB(await patch("/v1/items/abc", { title: "x" }, { "If-Match": '"x"' }), 400);
  });

  it("treats a change to the item's tags as a change: the earlier ETag is refused", async () => {
    const item = await post("createItem", "/v1/items", { title: uniqueWord("Tagged "), expiry_date: "2032-02-01" });
    const path = `/v1/items/${item.body.data.item_id}`;
    const etag = etagOf(await get(path));
    expectStatus(
      await call("setItemTags", `${path}/tags`, { token: account.ownerToken, body: { tags: ["boiler"] } }),
      200,
    );
    expectShapeB(await patch(path, { notes: "x" }, { "If-Match": etag }), 412);
  });

  it("lets exactly one of two concurrent writers holding the same ETag succeed; the other is 412", async () => {
    for (let round = 0; round < 10; round++) {
      const item = await post("createItem", "/v1/items", { title: uniqueWord("Race "), expiry_date: "2032-03-01" });
      const path = `/v1/items/${item.body.data.item_id}`;
      const etag = etagOf(await get(path));
      const results = await Promise.all(
        ["A", "B", "C"].map((who) =>
          call("updateItem", path, { token: account.ownerToken, body: { notes: who }, headers: { "If-Match": etag } }),
        ),
      );
      noServerError(...results);
      expect(
        results.filter((r) => r.status === 200),
        `round ${round}`,
      ).toHaveLength(1);
      for (const r of results.filter((r) => r.status !== 200)) expectShapeB(r, 412);
      const winner = ok(results.find((r) => r.status === 200)!);
      expect(ok(await call("getItem", path, { token: account.ownerToken })).body.data.notes).toBe(
        winner.body.data.notes,
      );
    }
  });

  it("answers every 412 of ten concurrent writers with the record's current ETag, also those refused inside the write (issue 31.4)", async () => {
    for (const record of await records()) {
      const etag = etagOf(await get(record.path));
      const results = await Promise.all(
        Array.from({ length: 10 }, () => patch(record.path, record.change(), { "If-Match": etag })),
      );
      noServerError(...results);
      expect(
        results.filter((r) => r.status === 200),
        record.what,
      ).toHaveLength(1);
      const current = etagOf(await get(record.path));
      for (const refused of results.filter((r) => r.status !== 200)) {
        expectShapeB(refused, 412, /has changed since the ETag/);
        expect(refused.headers.get("ETag"), `${record.what}: ${refused.body.msg}`).toBe(current);
      }
    }
  });

  it("answers 404 to a writer whose record was deleted by the writer it raced", async () => {
    for (let round = 0; round < 5; round++) {
      const contact = await post("createContact", "/v1/contacts", {
        first_name: "Race",
        last_name: "G",
        email: uniqueEmail(),
      });
      const path = `/v1/contacts/${contact.body.data.contact_id}`;
      const etag = etagOf(await get(path));
      const results = await Promise.all([
        del(path, { "If-Match": etag }),
        ...Array.from({ length: 5 }, () => patch(path, { last_name: "P" }, { "If-Match": etag })),
      ]);
      noServerError(...results);
      expect(
        results.filter((r) => r.status === 200),
        `round ${round}`,
      ).toHaveLength(1);
      for (const r of results.filter((r) => r.status === 412))
        expect(r.headers.get("ETag"), `round ${round}: ${JSON.stringify(r.body)}`).toMatch(/^"[0-9a-f]{32}"$/);
      if (results[0]!.status === 200)
        for (const r of results.slice(1)) expect([404, 412], `round ${round}`).toContain(r.status);
    }
  });

  it("also guards a concurrent PATCH and DELETE holding one ETag: never both", async () => {
    for (let round = 0; round < 10; round++) {
      const contact = await post("createContact", "/v1/contacts", {
        first_name: "Race",
        last_name: "D",
        email: uniqueEmail(),
      });
      const path = `/v1/contacts/${contact.body.data.contact_id}`;
      const etag = etagOf(await get(path));
      const [p, d] = await Promise.all([
        patch(path, { last_name: "P" }, { "If-Match": etag }),
        del(path, { "If-Match": etag }),
      ]);
      noServerError(p, d);
      expect(
        [p.status, d.status].filter((s) => s === 200),
        `round ${round}: ${p.status} ${d.status}`,
      ).toHaveLength(1);
    }
  });

  it("publishes If-None-Match and ETag on the reads, If-Match and 412 on the writes", async () => {
    const doc = await openApiDocument();
    const op = (path: string, method: string) => doc.paths[path][method];
    const refs = (o: { parameters?: Array<{ $ref?: string }> }) => (o.parameters ?? []).map((p) => p.$ref);
    for (const path of [
      "/v1/items/{item_id}",
      "/v1/contacts/{contact_id}",
      "/v1/tasks/{task_id}",
      "/v1/companies/{company_id}",
      "/v1/webhooks/{webhook_id}",
    ]) {
      expect(refs(op(path, "get")), path).toContain("#/components/parameters/IfNoneMatch");
      expect(Object.keys(op(path, "get").responses), path).toContain("304");
      expect(op(path, "get").responses["200"].headers.ETag, path).toBeTruthy();
      for (const method of ["patch", "delete"]) {
        expect(refs(op(path, method)), `${method} ${path}`).toContain("#/components/parameters/IfMatch");
        expect(Object.keys(op(path, method).responses), `${method} ${path}`).toContain("412");
      }
    }
  });
});

// RFC 9110 §13.1.1-2 and §8.8.3: `*` stands alone; otherwise a list of "…" / W/"…" with empty elements
// allowed. A malformed header is 400 naming it, never read as `*` or as a partial list.
const MALFORMED = [
  '*, "x"x',
  '*, "x"',
  '"x", *',
  '"x"x',
  "x",
  '"x',
  "W/x",
  'w/"x"',
  '"x" "y"',
  '"x";"y"',
  "**",
  "W/*",
  '"x",W/',
];

describe("the entity-tag grammar of If-Match and If-None-Match", () => {
  it("refuses a malformed If-Match on PATCH and DELETE with 400 naming the header, writing nothing", async () => {
    const item = await post("createItem", "/v1/items", { title: uniqueWord("Strict "), expiry_date: "2032-04-01" });
    const path = `/v1/items/${item.body.data.item_id}`;
    const etag = etagOf(await get(path));
    for (const header of [...MALFORMED, `*, ${etag}`, `${etag}x`]) {
      expectShapeB(
        await patch(path, { notes: "must not be written" }, { "If-Match": header }),
        400,
        /^If-Match must be \* alone or a comma-separated list of entity tags/,
      );
      expectShapeB(await del(path, { "If-Match": header }), 400, /^If-Match must be/);
    }
    const after = ok(await call("getItem", path, { token: account.ownerToken }));
    expect(etagOf(after)).toBe(etag);
    expect(after.body.data.notes).toBe("");
  });

  it("reads lists with white space, empty elements and commas inside a tag; a weak tag or an empty list never satisfies If-Match", async () => {
    const contact = await post("createContact", "/v1/contacts", {
      first_name: "List",
      last_name: "Rule",
      email: uniqueEmail(),
    });
    const path = `/v1/contacts/${contact.body.data.contact_id}`;
    const forms = [
      (e: string) => ` ${e} `,
      (e: string) => `,${e}`,
      (e: string) => `"a,b" , , ${e},`,
      (e: string) => `W/"x",\t${e}`,
      () => "\t*\t",
    ];
    for (const form of forms) {
      const header = form(etagOf(await get(path)));
      const res = await patch(path, { last_name: uniqueWord("L") }, { "If-Match": header });
      expectStatus(res, 200, `If-Match: ${JSON.stringify(header)} ${JSON.stringify(res.body)}`);
    }
    const current = etagOf(await get(path));
    for (const header of [`W/${current}`, ",", " , ,", '"a,b"']) {
      const res = await patch(path, { last_name: "Refused" }, { "If-Match": header });
      expectStatus(res, 412, `If-Match: ${JSON.stringify(header)}`);
      expectShapeB(res, 412, /has changed since the ETag/);
    }
    expect(etagOf(await get(path))).toBe(current);
    // An empty field value never reaches the Worker (workerd drops empty header fields): as if absent.
    expectStatus(await patch(path, { last_name: uniqueWord("L") }, { "If-Match": "" }), 200);
  });

  it("answers If-None-Match by the same grammar on single-record reads: 304 for a listed tag (weak or strong), 200 for an empty list, 400 when malformed", async () => {
    const folder = await post("createFolder", "/v1/folders", { folder_name: uniqueWord("F") });
    const path = `/v1/folders/${folder.body.data.folderid}`;
    const etag = etagOf(await get(path));
    for (const header of [`"x", ,W/${etag}`, ` ${etag}`, `"a,b",${etag}`, " * "]) {
      expectStatus(await get(path, { "If-None-Match": header }), 304, header);
    }
    for (const header of [",", '"a,b"', ""])
      expectStatus(await get(path, { "If-None-Match": header }), 200, JSON.stringify(header));
    for (const header of [...MALFORMED, `*, ${etag}`]) {
      expectShapeB(
        await get(path, { "If-None-Match": header }),
        400,
        /^If-None-Match must be \* alone or a comma-separated list of entity tags/,
      );
      const head = await callRaw("HEAD", path, { token: account.ownerToken, headers: { "If-None-Match": header } });
      expectStatus(head, 400, `HEAD ${header}`);
    }
  });
});

describe("parseEntityTags", () => {
  it("returns * alone, the tags of a list as sent, and throws 400 for anything else", () => {
    expect(parseEntityTags(" * ", "If-Match")).toBe("*");
    expect(parseEntityTags('"a", W/"b" ,, "c,d",', "If-Match")).toEqual(['"a"', 'W/"b"', '"c,d"']);
    expect(parseEntityTags('""', "If-Match")).toEqual(['""']);
    expect(parseEntityTags('"é€"', "If-None-Match")).toEqual(['"é€"']);
    expect(parseEntityTags(" , ", "If-Match")).toEqual([]);
    for (const value of [...MALFORMED, '"a\u0020b"', '"a"b"']) {
      expect(() => parseEntityTags(value, "If-None-Match"), value).toThrow(/If-None-Match must be/);
    }
  });

  it("compares strongly for If-Match and weakly for If-None-Match", () => {
    expect(ifMatchHolds(['"a"'], '"a"')).toBe(true);
    expect(ifMatchHolds(['W/"a"'], '"a"')).toBe(false);
    expect(ifMatchHolds([], '"a"')).toBe(false);
    expect(ifMatchHolds("*", '"a"')).toBe(true);
    expect(noneMatch(['W/"a"'], '"a"')).toBe(true);
    expect(noneMatch(['"b"'], '"a"')).toBe(false);
    expect(noneMatch([], '"a"')).toBe(false);
    expect(noneMatch("*", '"a"')).toBe(true);
  });
});
