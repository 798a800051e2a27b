// The audit log (docs/audit-log.md): every write names its actor, request and operation, with the
// fields before and after; failed writes leave nothing; owner only; filters and keyset pages.
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { handOffAudit, forgetEmptyOutboxes, recordAudit } from "../../src/company-clock/audit-outbox";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { database } from "../../src/db/client";
import {
  call,
  createAccount,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  uniqueWord,
  type Answer,
  type DataOf,
  type Operation,
  type TestAccount,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

let account: TestAccount;

beforeAll(async () => {
  account = await createAccount();
});

type AuditEntry = DataOf<"listAuditLog">[number];

async function entries(query: string, token = account.ownerToken): Promise<AuditEntry[]> {
  const res = await call("listAuditLog", `/v1/audit-log?${query}`, { token });
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.data;
}

describe("GET /v1/audit-log", () => {
  it("records an item's create, update and delete with actor, request id, operation and the changed fields", async () => {
    const created = await call("createItem", "/v1/items", {
      token: account.ownerToken,
      headers: { "X-Request-Id": "req-audit-create-1" },
      body: { title: "Boiler", expiry_date: "2030-01-31", notes: "first" },
    });
    expectStatus(created, 201);
    const id = String(created.body.data.item_id);
    const patched = await call("updateItem", `/v1/items/${id}`, {
      token: account.memberToken,
      headers: { "X-Request-Id": "req-audit-patch-1" },
      body: { notes: "second" },
    });
    expectStatus(patched, 200);
    expectStatus(await call("deleteItem", `/v1/items/${id}`, { token: account.ownerToken }), 200);

    const log = await entries(`resource_type=item&resource_id=${id}`);
    expect(log.map((e) => e.action)).toEqual(["deleted", "updated", "created"]);
    const [deleted, updated, create] = log as [AuditEntry, AuditEntry, AuditEntry];
    expect(create).toMatchObject({
      actor: {
        client_id: expect.stringMatching(/-owner$/),
        user_id: expect.any(Number),
        company_id: account.companyId,
      },
      company_id: account.companyId,
      request_id: "req-audit-create-1",
      operation_id: "createItem",
      resource_type: "item",
      resource_id: id,
      before: null,
    });
    expect(create.after).toMatchObject({
      title: "Boiler",
      expiry_date: "2030-01-31",
      notes: "first",
      status: "pending",
    });
    expect(updated).toMatchObject({
      request_id: "req-audit-patch-1",
      operation_id: "updateItem",
      before: { notes: "first" },
      after: { notes: "second" },
    });
    expect(updated.actor.client_id).toMatch(/-member$/);
    expect(deleted).toMatchObject({ operation_id: "deleteItem", after: null });
    expect(deleted.before).toMatchObject({ title: "Boiler", notes: "second" });
    expect(Date.parse(create.at)).toBeLessThanOrEqual(Date.parse(deleted.at));
  });
});

/** The entries of one request (by its X-Request-Id), oldest first. */
async function entriesOf(requestId: string, token = account.ownerToken): Promise<AuditEntry[]> {
  const all: AuditEntry[] = [];
  let cursor: string | null = null;
  do {
    const res: Answer<"listAuditLog"> = await call(
      "listAuditLog",
      `/v1/audit-log?limit=200${cursor ? `&cursor=${cursor}` : ""}`,
      { token },
    );
    expectStatus(res, 200, JSON.stringify(res.body));
    all.push(...res.body.data);
    cursor = res.body.meta.next_cursor;
  } while (cursor);
  return all.filter((e) => e.request_id === requestId).reverse();
}

let requests = 0;
/** A write with its own X-Request-Id: the response and the id. */
async function write<O extends Operation>(operation: O, path: string, body?: unknown, token = account.ownerToken) {
  const requestId = `audit-${uniqueWord("r")}-${++requests}`;
  const res = await call(operation, path, {
    token,
    headers: { "X-Request-Id": requestId },
    ...(body !== undefined && { body }),
  });
  expect(res.status, `${operation} ${path}: ${JSON.stringify(res.body)}`).toBeLessThan(300);
  return { res: ok(res), requestId };
}

describe("every write is an entry", () => {
  it("names the actor, request and operation of each resource's writes, and shows no secret", async () => {
    const item = (await write("createItem", "/v1/items", { title: "Permit", expiry_date: "2031-05-01" })).res.body.data
      .item_id as number;
    const file = (async () => {
      const session = (await write("createUploadSession", "/v1/uploads", { filename: "scan.pdf" })).res.body.data;
      const bytes = new TextEncoder().encode("%PDF-1.4 BYTESMARKER");
      const put = await call("uploadFileBytes", "/v1/uploads", {
        rawBody: "%PDF-1.4 BYTESMARKER",
        headers: {
          "X-Upload-Token": session.upload_token,
          "Content-Type": "application/octet-stream",
          "Content-Length": String(bytes.byteLength),
          "X-Request-Id": "audit-upload-put",
        },
      });
      expectStatus(put, 200, JSON.stringify(put.body));
      return put.body.data.file_id as string;
    })();
    const fileId = await file;
    const cases: Array<[Operation, string, unknown, string, string]> = [
      [
        "createContact",
        "/v1/contacts",
        { first_name: "Grace", last_name: "Hopper", email: `${uniqueWord("g")}@example.com` },
        "contact",
        "created",
      ],
      ["createContactGroup", "/v1/contact-groups", { group_name: uniqueWord("Group ") }, "contact_group", "created"],
      ["createDepartment", "/v1/departments", { dept_name: uniqueWord("Dept ") }, "department", "created"],
      [
        "createDocumentType",
        "/v1/document-types",
        { doctype_name: uniqueWord("Type "), fields: [{ field_name: "Inspector", field_type: "text" }] },
        "document_type",
        "created",
      ],
      ["createFolder", "/v1/folders", { folder_name: uniqueWord("Folder ") }, "folder", "created"],
      ["setItemTags", `/v1/items/${item}/tags`, { tags: ["audit-a", "audit-b"] }, "item", "updated"],
      ["setItemStatus", `/v1/items/${item}/status`, { status: "completed" }, "item", "updated"],
      ["renewItem", `/v1/items/${item}/renew`, undefined, "item", "updated"],
      ["archiveItem", `/v1/items/${item}/archive`, { archived: true }, "item", "updated"],
      ["attachFile", `/v1/items/${item}/attachments`, { file_id: fileId }, "item", "updated"],
      ["createTask", "/v1/tasks", { title: "Call the inspector", due_at: "2031-04-01 09:00:00" }, "task", "created"],
      [
        "createReminderSequence",
        "/v1/reminder-sequences",
        { name: uniqueWord("Seq "), reminders: [{ period: 2, unit: "week", type: 1, hour: "09:00" }] },
        "reminder_sequence",
        "created",
      ],
      [
        "createWebhook",
        "/v1/webhooks",
        { url: "http://127.0.0.1:9/hook", events: ["item.created"] },
        "webhook",
        "created",
      ],
      ["createCalendarFeed", "/v1/calendar-feeds", {}, "calendar_feed", "created"],
      [
        "createCompany",
        "/v1/companies",
        { company_name: uniqueWord("Co "), documents_limit: 10, contacts_limit: 10, drive_space: 0.1 },
        "company",
        "created",
      ],
    ];
    for (const [method, path, body, type, action] of cases) {
      const { requestId } = await write(method, path, body);
      const log = await entriesOf(requestId);
      expect(log.length, `${method} ${path}`).toBeGreaterThan(0);
      expect(
        log.find((e) => e.resource_type === type && e.action === action),
        `${method} ${path}: ${JSON.stringify(log)}`,
      ).toBeDefined();
      for (const entry of log) {
        expect(entry.actor.client_id).toMatch(/-owner$/);
        expect(entry.operation_id).toEqual(expect.any(String));
      }
      const text = JSON.stringify(log);
      expect(text).not.toMatch(/whsec_|"secret"|secret_ciphertext|token_hash|\.ics/);
    }
    // The upload (no bearer token) is logged as the client that opened its session.
    const uploaded = await entriesOf("audit-upload-put");
    expect(uploaded).toEqual([
      expect.objectContaining({
        resource_type: "file",
        resource_id: fileId,
        action: "created",
        operation_id: "uploadFileBytes",
      }),
    ]);
    expect(uploaded[0]!.actor.client_id).toMatch(/-owner$/);
    expect(JSON.stringify(uploaded)).not.toContain("BYTESMARKER");
  });

  it("shows an item's tags and a document type's fields as dotted fields of the parent", async () => {
    const created = await write("createDocumentType", "/v1/document-types", {
      doctype_name: uniqueWord("Type "),
      fields: [{ field_name: "Inspector", field_type: "text" }],
    });
    const type = created.res.body.data;
    const fieldId = type.fields[0]!.autonum;
    expect(
      (await entriesOf(created.requestId)).map((e) => [e.resource_type, e.resource_id, e.action, e.after]),
    ).toEqual([
      ["document_type", String(type.typeid), "created", expect.objectContaining({ name: type.name })],
      [
        "document_type",
        String(type.typeid),
        "updated",
        { [`fields.${fieldId}`]: expect.objectContaining({ field_name: "Inspector", field_type: "text" }) },
      ],
    ]);
    const item = (await write("createItem", "/v1/items", { title: "Lift", expiry_date: "2031-02-01" })).res.body.data
      .item_id;
    const { requestId } = await write("setItemTags", `/v1/items/${item}/tags`, { tags: ["lift"] });
    const [newTag, ...tagged] = await entriesOf(requestId);
    expect(newTag).toMatchObject({ resource_type: "tag", action: "created", after: { name: "lift" } });
    expect(tagged).toHaveLength(1);
    expect(tagged[0]).toMatchObject({ resource_type: "item", resource_id: String(item), action: "updated" });
    const [key] = Object.keys(tagged[0]!.after!);
    expect(key).toMatch(/^tags\.\d+$/);
    expect(tagged[0]!.before).toEqual({ [key!]: null });
    expect(tagged[0]!.after).toEqual({ [key!]: "lift" });
    const untagged = (
      await entriesOf((await write("setItemTags", `/v1/items/${item}/tags`, { tags: [] })).requestId)
    ).filter((e) => e.resource_type === "item");
    expect(untagged.map((e) => [e.before, e.after])).toEqual([[{ [key!]: "lift" }, { [key!]: null }]]);
  });

  it("logs item reminders (the company clock) with the request that changed them", async () => {
    const item = (await write("createItem", "/v1/items", { title: "Reminded", expiry_date: "2031-03-01" })).res.body
      .data.item_id;
    const added = await write("createItemReminder", `/v1/items/${item}/reminders`, {
      date: "2031-02-20",
      hour: "10:00",
    });
    const reminderId = added.res.body.data.reminder_id;
    expect(await entriesOf(added.requestId)).toEqual([
      expect.objectContaining({
        resource_type: "reminder",
        resource_id: String(reminderId),
        action: "created",
        operation_id: "createItemReminder",
        before: null,
      }),
    ]);
    const moved = await write("updateItemReminder", `/v1/items/${item}/reminders/${reminderId}`, { hour: "11:30" });
    expect(await entriesOf(moved.requestId)).toEqual([
      expect.objectContaining({ action: "updated", before: { hour: "10:00" }, after: { hour: "11:30" } }),
    ]);
    const removed = await write("deleteItemReminder", `/v1/items/${item}/reminders/${reminderId}`);
    expect(await entriesOf(removed.requestId)).toEqual([expect.objectContaining({ action: "deleted", after: null })]);
  });
});

describe("nothing is logged for a write that did not happen", () => {
  it("leaves no entry after a 400, a 412 or an idempotent replay", async () => {
    const item = (await write("createItem", "/v1/items", { title: "Guarded", expiry_date: "2031-01-01" })).res.body.data
      .item_id;
    const bad = await call("updateItem", `/v1/items/${item}`, {
      token: account.ownerToken,
      headers: { "X-Request-Id": "audit-bad-1" },
      body: { expiry_date: "2031-02-30" },
    });
    expectShapeB(bad, 400);
    expect(await entriesOf("audit-bad-1")).toEqual([]);
    const stale = await call("updateItem", `/v1/items/${item}`, {
      token: account.ownerToken,
      headers: { "X-Request-Id": "audit-stale-1", "If-Match": '"0"' },
      body: { notes: "x" },
    });
    expectStatus(stale, 412);
    expect(await entriesOf("audit-stale-1")).toEqual([]);
    const key = crypto.randomUUID();
    for (const id of ["audit-idem-1", "audit-idem-2"]) {
      const res = await call("createItem", "/v1/items", {
        token: account.ownerToken,
        headers: { "X-Request-Id": id, "Idempotency-Key": key },
        body: { title: "Once", expiry_date: "2031-01-02" },
      });
      expectStatus(res, 201);
    }
    expect(await entriesOf("audit-idem-1")).toHaveLength(1);
    expect(await entriesOf("audit-idem-2")).toEqual([]);
  });

  it("has one entry per change that happened when writes race", async () => {
    const item = (await write("createItem", "/v1/items", { title: "Raced", expiry_date: "2031-01-03" })).res.body.data
      .item_id;
    const detail = await call("getItem", `/v1/items/${item}`, { token: account.ownerToken });
    const etag = detail.headers.get("ETag")!;
    const results = await Promise.all(
      [1, 2, 3, 4].map((n) =>
        call("updateItem", `/v1/items/${item}`, {
          token: account.ownerToken,
          headers: { "If-Match": etag },
          body: { notes: `writer ${n}` },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const log = await entries(`resource_type=item&resource_id=${item}&action=updated`);
    expect(log).toHaveLength(1);
  });
});

describe("tokens", () => {
  it("logs every token issued, and refusals of a deactivated or revoked client", async () => {
    const other = await createAccount();
    const ownerClient = (await entries("resource_type=api_client&action=token_issued", other.ownerToken))[0]!;
    expect(ownerClient).toMatchObject({
      resource_type: "api_client",
      action: "token_issued",
      operation_id: "issueToken",
      before: null,
    });
    expect(ownerClient.after).toMatchObject({ scope: "*", expires_in: expect.any(Number) });
    expect(JSON.stringify(ownerClient)).not.toMatch(/secret|eyJ/);
    const memberId = `${ok(await call("getTokenInfo", "/v1/oauth/me", { token: other.memberToken })).body.client_id}`;
    await env.DB.prepare("UPDATE api_clients SET token_generation = token_generation + 1 WHERE client_id = ?")
      .bind(memberId)
      .run();
    expectShapeA(
      await call("listItems", "/v1/items", {
        token: other.memberToken,
        headers: { "X-Request-Id": "audit-revoked-1" },
      }),
      401,
      "invalid_token",
    );
    await env.DB.prepare("UPDATE api_clients SET active = 0 WHERE client_id = ?").bind(memberId).run();
    const refused = await call("issueToken", "/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: memberId, client_secret: `${memberId}-secret` },
    });
    expectStatus(refused, 401);
    const log = await entries(`resource_type=api_client&resource_id=${memberId}`, other.ownerToken);
    expect(
      log.map((e) => [e.action, e.after]),
      JSON.stringify(log),
    ).toEqual([
      ["token_refused", { reason: "client_inactive" }],
      ["updated", { active: 0 }],
      ["token_refused", { reason: "token_revoked" }],
      ["updated", { token_generation: 1 }],
      ["token_issued", expect.objectContaining({ scope: "*" })],
      ["created", expect.objectContaining({ scopes: "*", active: 1 })],
    ]);
    expect(log[2]).toMatchObject({
      request_id: "audit-revoked-1",
      operation_id: "listItems",
      actor: { client_id: memberId },
    });
    // The operator's own changes (the CLI writes D1 directly) name no client.
    expect(log[1]!.actor).toEqual({
      client_id: null,
      user_id: null,
      company_id: null,
      contact_id: null,
      channel_id: null,
      via: null,
    });
  });
});

describe("reading the log", () => {
  it("is for the account owner with audit:read, and shows only the caller's account", async () => {
    expectShapeB(await call("listAuditLog", "/v1/audit-log", { token: account.memberToken }), 403);
    const readonly = await call("listAuditLog", "/v1/audit-log", { token: await tokenFor("demo-readonly") });
    expectShapeA(readonly, 403, "insufficient_scope");
    const other = await createAccount();
    const theirs = await entries("limit=200", other.ownerToken);
    expect(theirs.every((e) => e.company_id === other.companyId)).toBe(true);
    expectStatus(await callRaw("POST", "/v1/audit-log", { token: account.ownerToken, body: {} }), 405);
    expectStatus(await callRaw("DELETE", "/v1/audit-log", { token: account.ownerToken }), 405);
  });

  it("filters by client, action and time, and pages newest first without gaps", async () => {
    const from = new Date().toISOString();
    for (let i = 0; i < 5; i++)
      await write("createContact", "/v1/contacts", {
        first_name: "Page",
        last_name: `N${i}`,
        email: `${uniqueWord("p")}@example.com`,
      });
    const all = await entries(`resource_type=contact&action=created&since=${from}`);
    expect(all).toHaveLength(5);
    const seen: number[] = [];
    let cursor = "";
    for (;;) {
      const res = ok(
        await call(
          "listAuditLog",
          `/v1/audit-log?resource_type=contact&action=created&since=${from}&limit=2${cursor}`,
          { token: account.ownerToken },
        ),
      );
      seen.push(...res.body.data.map((e) => e.audit_id));
      if (!res.body.meta.next_cursor) break;
      cursor = `&cursor=${res.body.meta.next_cursor}`;
    }
    expect(seen).toEqual(all.map((e) => e.audit_id));
    expect([...seen].sort((a, b) => b - a)).toEqual(seen);
    expect(await entries(`since=${from}&until=${from}`)).toEqual([]);
    const mine = await entries(`client_id=${all[0]!.actor.client_id}&since=${from}`);
    expect(mine.length).toBeGreaterThanOrEqual(5);
    expect(await entries(`client_id=nobody&since=${from}`)).toEqual([]);
  });

  it.each([
    ["resource_type=widget", /resource_type must be one of/],
    ["action=sneezed", /action must be one of/],
    ["resource_id=4", /resource_id needs resource_type/],
    ["since=yesterday", /since must be a date/],
    ["until=2026-02-30T00:00:00Z", /until must be a date/],
    ["limit=0", /limit must be an integer from 1 to 200/],
    ["cursor=zzz", /cursor is invalid/],
  ])("answers 400 naming the parameter: %s", async (query, message) => {
    expectShapeB(await call("listAuditLog", `/v1/audit-log?${query}`, { token: account.ownerToken }), 400, message);
  });
});

describe("the service's own writes and the log's upkeep", () => {
  it("logs an automatic renewal as the service's, with the fields it changed", async () => {
    const created = await write("createItem", "/v1/items", {
      title: "Monthly",
      expiry_date: "2020-01-15",
      recurrence: { every: 1, unit: "month", renew_on: "expired" },
    });
    const item = created.res.body.data.item_id;
    const log = await entries(`resource_type=item&resource_id=${item}`);
    const renewal = log.find((e) => e.operation_id === "automaticRenewal");
    expect(renewal, JSON.stringify(log)).toMatchObject({
      actor: { client_id: null, user_id: null },
      request_id: null,
      action: "updated",
      before: { expiry_date: "2020-01-15" },
    });
    expect(renewal!.after!.expiry_date).toBe(created.res.body.data.expiry_date);
  });

  it("hands a clock entry to D1 once, even when the handoff is repeated after a crash", async () => {
    const item = (await write("createItem", "/v1/items", { title: "Handoff", expiry_date: "2031-06-01" })).res.body.data
      .item_id;
    const stub = clockFor(env, account.companyId);
    const actor = {
      accountId: account.accountId,
      companyId: account.companyId,
      clientId: "crash-test",
      userId: 1,
      requestId: "audit-crash-1",
      operationId: "createItemReminder",
    };
    await runInDurableObject(stub, async (_i, state) => {
      const sql = state.storage.sql;
      const clock = { sql, companyId: account.companyId, db: async () => database(env.DB) };
      state.storage.transactionSync(() =>
        recordAudit(
          sql,
          actor,
          { resourceType: "reminder", resourceId: 999_001, action: "created", before: null, after: { item_id: item } },
          Date.now(),
        ),
      );
      const waiting = sql
        .exec<{ seq: number; source_key: string; entry: string }>("SELECT * FROM audit_outbox")
        .toArray();
      expect(waiting).toHaveLength(1);
      await handOffAudit(clock);
      expect(sql.exec("SELECT * FROM audit_outbox").toArray()).toHaveLength(0);
      // The object died after D1 took the entry but before it forgot it: the row is back.
      sql.exec(
        "INSERT INTO audit_outbox (seq, source_key, entry) VALUES (?, ?, ?)",
        waiting[0]!.seq,
        waiting[0]!.source_key,
        waiting[0]!.entry,
      );
      forgetEmptyOutboxes(); // the object restarts with it
      await handOffAudit(clock);
      expect(sql.exec("SELECT * FROM audit_outbox").toArray()).toHaveLength(0);
    });
    expect(await entriesOf("audit-crash-1")).toEqual([
      expect.objectContaining({
        resource_type: "reminder",
        resource_id: "999001",
        actor: {
          client_id: "crash-test",
          user_id: 1,
          company_id: account.companyId,
          contact_id: null,
          channel_id: null,
          via: null,
        },
      }),
    ]);
  });

  it("keeps a year: the cron job deletes older entries", async () => {
    const old = Date.now() - 366 * 86_400_000;
    const young = Date.now() - 364 * 86_400_000;
    for (const [at, id] of [
      [old, "audit-old"],
      [young, "audit-young"],
    ] as const) {
      await env.DB.prepare(
        "INSERT INTO audit_log (account_id, company_id, at, request_id, resource_type, resource_id, action) VALUES (?, ?, ?, ?, 'item', '1', 'updated')",
      )
        .bind(account.accountId, account.companyId, at, id)
        .run();
    }
    const { handleScheduled } = await import("../../src/scheduled");
    await handleScheduled(
      { scheduledTime: Date.now(), cron: "* * * * *", noRetry() {} } as ScheduledController,
      env,
      {} as ExecutionContext,
    );
    expect(await entriesOf("audit-old")).toEqual([]);
    expect(await entriesOf("audit-young")).toHaveLength(1);
  });
});
