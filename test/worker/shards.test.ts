import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { SHARD_ONE_DEMO } from "../../scripts/seed-data";
import { COMPANY_ID_BLOCK, ROW_ID_BLOCK } from "../../src/db/id-blocks";
import worker from "../../src/index";
import { addDays, todayIn } from "../../src/lib/time";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import type { WebhookRequest } from "../../src/webhooks/delivery";
import { Webhook } from "standardwebhooks";
import {
  BASE,
  call,
  createAccount,
  createContact,
  createItem,
  env,
  expectShapeB,
  readResult,
  signTestToken,
  tokenFor,
  uniqueWord,
  type TestAccount,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

// Two accounts on two D1 databases (docs/scale.md): shard 0 (DB) and shard 1 (DB_1), end to end
// through the HTTP surface, with the rows checked in the database each one lives in.

const BOOKMARK = /^1:[0-9a-f]{8}(-[0-9a-f]{8}){2}-[0-9a-f]{16,64}$/;

let zero: TestAccount;
let one: TestAccount;

beforeAll(async () => {
  zero = await createAccount();
  one = await createAccount({}, {}, { shard: 1 });
});

const rowIn = (db: D1Database, table: string, id: number) =>
  db.prepare(`SELECT id FROM "${table}" WHERE id = ?`).bind(id).first();

async function runCronSweep(at = Date.now()) {
  const log = vi.spyOn(console, "log").mockImplementation(() => {});
  try {
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ scheduledTime: at, cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);
  } finally {
    log.mockRestore();
  }
}

describe("accounts on two shards", () => {
  it("allocates shard 1's ids from its own blocks", () => {
    expect(one.accountId).toBeGreaterThan(COMPANY_ID_BLOCK);
    expect(one.companyId).toBeGreaterThan(COMPANY_ID_BLOCK);
    expect(one.companyId).toBeLessThan(2 * COMPANY_ID_BLOCK);
    expect(one.deptId).toBeGreaterThan(ROW_ID_BLOCK);
    expect(zero.companyId).toBeLessThan(COMPANY_ID_BLOCK);
  });

  it("issues the shard-1 demo client a token for its own company, whose writes land in DB_1 only", async () => {
    const token = await tokenFor(SHARD_ONE_DEMO.clientId);
    const me = await call("getTokenInfo", "/v1/oauth/me", { token });
    expectStatus(me, 200);
    expect(me.body.company_id).toBe(SHARD_ONE_DEMO.companyId);
    const item = await createItem(token, { title: uniqueWord("shard1") });
    expect(item.item_id).toBeGreaterThan(ROW_ID_BLOCK);
    expect(await rowIn(env.DB_1, "items", item.item_id)).not.toBeNull();
    expect(await rowIn(env.DB, "items", item.item_id)).toBeNull();
  });

  it("keeps each account's lists, items and contacts to itself; another shard's id is 404", async () => {
    const a = await createItem(zero.ownerToken, { title: uniqueWord("zero") });
    const b = await createItem(one.ownerToken, { title: uniqueWord("one") });
    const contact = await createContact(one.ownerToken);
    expect(await rowIn(env.DB, "items", a.item_id)).not.toBeNull();
    expect(await rowIn(env.DB_1, "items", b.item_id)).not.toBeNull();
    expect(await rowIn(env.DB_1, "contacts", contact.contact_id)).not.toBeNull();

    const listZero = ok(await call("listItems", "/v1/items?limit=100", { token: zero.ownerToken }));
    const listOne = ok(await call("listItems", "/v1/items?limit=100", { token: one.ownerToken }));
    expect(listZero.body.data.map((i: { item_id: number }) => i.item_id)).toEqual([a.item_id]);
    expect(listOne.body.data.map((i: { item_id: number }) => i.item_id)).toEqual([b.item_id]);

    expectShapeB(await call("getItem", `/v1/items/${b.item_id}`, { token: zero.ownerToken }), 404);
    expectShapeB(await call("getItem", `/v1/items/${a.item_id}`, { token: one.ownerToken }), 404);
    expectShapeB(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: zero.ownerToken }), 404);
    expectShapeB(await call("deleteItem", `/v1/items/${a.item_id}`, { token: one.ownerToken }), 404);
    expectStatus(await call("getItem", `/v1/items/${a.item_id}`, { token: zero.ownerToken }), 200);
  });

  it("fires a shard-1 item's reminder from its Durable Object, reading DB_1", async () => {
    const contact = await createContact(one.ownerToken);
    const item = await createItem(one.ownerToken, {
      expiry_date: addDays(todayIn("UTC"), 20),
      seqid: 0,
      contact_id: contact.contact_id,
    });
    const at = new Date(Date.now() + 2 * 60_000);
    const hour = `${String(at.getUTCHours()).padStart(2, "0")}:${String(at.getUTCMinutes()).padStart(2, "0")}`;
    const created = await call("createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      token: one.ownerToken,
      body: { date: at.toISOString().slice(0, 10), hour },
    });
    expectStatus(created, 201);
    const stub = clockFor(env, one.companyId);
    await runInDurableObject(stub, (_i, state) => {
      state.storage.sql.exec(
        "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
        Date.now() - 1000,
        created.body.data.reminder_id,
      );
    });
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const after = ok(await call("listItemReminders", `/v1/items/${item.item_id}/reminders`, { token: one.ownerToken }));
    expect(after.body.data.sent).toEqual([
      expect.objectContaining({
        reminder_id: created.body.data.reminder_id,
        deliveries: [expect.objectContaining({ channel: "email", state: "sent", recipient: contact.email })],
      }),
    ]);
  });

  it("sweeps every shard: a shard-1 item whose sync never reached its Durable Object is queued by the cron", async () => {
    const account = await createAccount({}, {}, { shard: 1 });
    // The request wrote D1 and failed before calling the object: the trigger left the change in the outbox.
    const date = addDays(todayIn("UTC"), 60);
    const row = await env.DB_1.prepare(
      `INSERT INTO items (company_id, dept_id, title, expiry_date, reminder_anchor, seq_id, created_by)
       VALUES (?, ?, 'Crashed write', ?, ?, (SELECT id FROM reminder_sequences WHERE company_id = ? AND is_default = 1), 1) RETURNING id`,
    )
      .bind(account.companyId, account.deptId, date, date, account.companyId)
      .first<{ id: number }>();
    const stub = clockFor(env, account.companyId);
    expect(await stub.status(account.companyId)).toMatchObject({ queued: 0 });
    await runCronSweep(Date.now() + 60_000);
    expect(await stub.status(account.companyId)).toMatchObject({ queued: 5 });
    expect(
      await env.DB_1.prepare("SELECT version, synced_version FROM reminder_sync WHERE item_id = ?")
        .bind(row!.id)
        .first(),
    ).toEqual({ version: 1, synced_version: 1 });
    const detail = ok(await call("listItemReminders", `/v1/items/${row!.id}/reminders`, { token: account.ownerToken }));
    expect(detail.body.data.queued).toHaveLength(5);
  });

  it("delivers a shard-1 company's webhook, signed, from the endpoint and item it reads in DB_1", async () => {
    const account = await createAccount({}, {}, { shard: 1 });
    const endpoint = await call("createWebhook", "/v1/webhooks", {
      token: account.ownerToken,
      body: { url: "http://127.0.0.1:9/hook", events: ["item.created"] },
    });
    expectStatus(endpoint, 201, JSON.stringify(endpoint.body));
    expect(
      await env.DB_1.prepare("SELECT company_id FROM webhook_endpoints WHERE id = ?")
        .bind(endpoint.body.data.webhook_id)
        .first<number>("company_id"),
    ).toBe(account.companyId);
    const stub = clockFor(env, account.companyId);
    const received: WebhookRequest[] = [];
    await runInDurableObject(stub, (instance: CompanyClock) => {
      instance.webhookTransport = async (request) => (received.push(request), { status: 200 });
    });
    const item = await createItem(account.ownerToken, { expiry_date: addDays(todayIn("UTC"), 30), seqid: 0 });
    for (let i = 0; i < 10 && received.length === 0; i++) await runDurableObjectAlarm(stub);
    expect(received).toHaveLength(1);
    const payload = new Webhook(endpoint.body.data.secret).verify(received[0]!.body, received[0]!.headers) as {
      type: string;
      data: { item_id: number };
    };
    expect(payload).toMatchObject({ type: "item.created", data: { item_id: item.item_id } });
  });

  it("uploads a file on shard 1 through an upload token that names the shard", async () => {
    const session = await call("createUploadSession", "/v1/uploads", {
      token: one.ownerToken,
      body: { filename: `${uniqueWord("f")}.txt` },
    });
    expectStatus(session, 201);
    expect(session.body.data.upload_token).toMatch(/^upt1_[A-Za-z0-9_-]{43}$/);
    const bytes = new TextEncoder().encode("shard one bytes");
    const put = await readResult(
      await exports.default.fetch(
        new Request(`${BASE}/v1/uploads`, {
          method: "PUT",
          headers: { "X-Upload-Token": session.body.data.upload_token, "Content-Length": String(bytes.byteLength) },
          body: bytes,
        }),
      ),
      "uploadFileBytes",
    );
    expectStatus(put, 200, JSON.stringify(put.body));
    expect(put.headers.get("X-D1-Bookmark")).toMatch(BOOKMARK);
    const fileRow = await env.DB_1.prepare("SELECT company_id FROM files WHERE public_id = ?")
      .bind(put.body.data.file_id)
      .first<number>("company_id");
    expect(fileRow).toBe(one.companyId);
    const got = await exports.default.fetch(
      new Request(`${BASE}/v1/files/${put.body.data.file_id}`, {
        headers: { Authorization: `Bearer ${one.ownerToken}` },
      }),
    );
    expect(await got.text()).toBe("shard one bytes");
    expectStatus(await call("downloadFile", `/v1/files/${put.body.data.file_id}`, { token: zero.ownerToken }), 404);
    // A shard-0 style token for a session that lives on shard 1 is unknown there: 401.
    const wrong = session.body.data.upload_token.replace(/^upt1_/, "upt_");
    const refused = await readResult(
      await exports.default.fetch(
        new Request(`${BASE}/v1/uploads`, {
          method: "PUT",
          headers: { "X-Upload-Token": wrong, "Content-Length": "1" },
          body: "x",
        }),
      ),
      "uploadFileBytes",
    );
    expectStatus(refused, 401);
  });

  it("serves a shard-1 calendar feed from its token, without a bearer token", async () => {
    await createItem(one.ownerToken, { title: uniqueWord("feeditem"), expiry_date: addDays(todayIn("UTC"), 10) });
    const feed = await call("createCalendarFeed", "/v1/calendar-feeds", { token: one.ownerToken, body: {} });
    expectStatus(feed, 201);
    expect(feed.body.data.url).toMatch(
      new RegExp(`/v1/calendar/c${one.companyId.toString(36)}_[A-Za-z0-9_-]{43}\\.ics$`),
    );
    const ics = await exports.default.fetch(new Request(feed.body.data.url));
    expectStatus(ics, 200);
    expect(await ics.text()).toContain("BEGIN:VCALENDAR");
    // The company part pointing elsewhere finds no feed.
    const other = feed.body.data.url.replace(`/c${one.companyId.toString(36)}_`, `/c${zero.companyId.toString(36)}_`);
    expectStatus(await exports.default.fetch(new Request(other)), 404);
  });
});

describe("X-D1-Bookmark", () => {
  it("answers every call that touched D1 with a bookmark of the caller's shard, and reads what was written when sent back", async () => {
    const created = await call("createContact", "/v1/contacts", {
      token: one.ownerToken,
      body: { first_name: "Bookmarked", last_name: "Contact", email: `${uniqueWord("b")}@example.test` },
    });
    expectStatus(created, 201);
    const bookmark = created.headers.get("X-D1-Bookmark");
    expect(bookmark).toMatch(BOOKMARK);
    const read = await call("getContact", `/v1/contacts/${created.body.data.contact_id}`, {
      token: one.ownerToken,
      headers: { "X-D1-Bookmark": bookmark! },
    });
    expectStatus(read, 200);
    expect(read.body.data.firstname).toBe("Bookmarked");
    const later = read.headers.get("X-D1-Bookmark")!;
    expect(later).toMatch(BOOKMARK);
    expect(later >= bookmark!).toBe(true); // D1 bookmarks sort oldest to newest
    const zeroRead = await call("listItems", "/v1/items", { token: zero.ownerToken });
    expect(zeroRead.headers.get("X-D1-Bookmark")).toMatch(/^0:/);
  });

  it("ignores a bookmark of another shard (the account moved since): the session starts on the primary", async () => {
    const res = await call("listItems", "/v1/items", {
      token: zero.ownerToken,
      headers: { "X-D1-Bookmark": "1:00000001-00000002-00000003-0123456789abcdef0123456789abcdef" },
    });
    expectStatus(res, 200);
  });

  it("refuses a malformed bookmark with 400 naming the header, never 500", async () => {
    for (const value of [
      "garbage",
      "1:",
      "0:zzzzzzzz-00000000-00000000-00",
      "9".repeat(300),
      "1:00000001-00000002-00000003-0123456789abcdef0123456789abcdef; drop table",
    ]) {
      for (const [method, path, body] of [
        ["GET", "/v1/items", undefined],
        ["POST", "/v1/contacts", { first_name: "x", last_name: "y", email: "x@example.test" }],
      ] as const) {
        const res = await callRaw(method, path, {
          token: one.ownerToken,
          headers: { "X-D1-Bookmark": value },
          ...(body && { body }),
        });
        expectShapeB(res, 400, /X-D1-Bookmark/);
      }
    }
    const feed = ok(await call("createCalendarFeed", "/v1/calendar-feeds", { token: one.ownerToken, body: {} }));
    const ics = await exports.default.fetch(new Request(feed.body.data.url, { headers: { "X-D1-Bookmark": "nope" } }));
    expectStatus(ics, 400);
  });
});

describe("moving accounts", () => {
  it("keeps a token minted before its account moved working: the directory says where the client is now", async () => {
    // A token that says shard 0 for a client that lives on shard 1 (as after a move from 0 to 1).
    const moved = await createAccount({}, {}, { shard: 1 });
    const clientId = (await env.DB_1.prepare(
      "SELECT client_id FROM api_clients WHERE company_id = ? AND user_id = (SELECT owner_user_id FROM accounts WHERE id = ?)",
    )
      .bind(moved.companyId, moved.accountId)
      .first<string>("client_id"))!;
    const stale = await signTestToken({
      sub: clientId,
      claims: { company_id: moved.companyId, userid: await ownerOf(moved), gen: 0, shd: 0 },
    });
    const res = await call("listItems", "/v1/items", { token: stale });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.headers.get("X-D1-Bookmark")).toMatch(/^1:/);
  });

  it("serves a moved account's token from its new shard while the old copy, marked moved, awaits its clean-up", async () => {
    const moved = await createAccount({}, {}, { shard: 1 });
    const owner = await ownerOf(moved);
    const clientId = (await env.DB_1.prepare("SELECT client_id FROM api_clients WHERE company_id = ? AND user_id = ?")
      .bind(moved.companyId, owner)
      .first<string>("client_id"))!;
    // On shard 0, the copy `account move` leaves between the flip and the clean-up (migration 0021's marker keeps its triggers quiet).
    const copy = async (table: string, where: string, id: number) => {
      const { results } = await env.DB_1.prepare(`SELECT * FROM ${table} WHERE ${where} = ?`)
        .bind(id)
        .all<Record<string, unknown>>();
      return results.map((row) => {
        const columns = Object.keys(row);
        return env.DB.prepare(
          `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
        ).bind(...columns.map((c) => row[c]));
      });
    };
    await env.DB.batch([
      env.DB.prepare("INSERT INTO shard_moves (company_id, account_id, started_at) VALUES (?, ?, 0)").bind(
        moved.companyId,
        moved.accountId,
      ),
      ...(await copy("accounts", "id", moved.accountId)),
      ...(await copy("users", "account_id", moved.accountId)),
      ...(await copy("companies", "account_id", moved.accountId)),
      ...(await copy("api_clients", "account_id", moved.accountId)),
      env.DB.prepare("UPDATE accounts SET shard_state = 'moved' WHERE id = ?").bind(moved.accountId),
      env.DB.prepare("DELETE FROM shard_moves WHERE company_id = ?").bind(moved.companyId),
    ]);
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM reminder_sequences WHERE company_id = ?")
        .bind(moved.companyId)
        .first("n"),
    ).toBe(0);
    const stale = await signTestToken({
      sub: clientId,
      claims: { company_id: moved.companyId, userid: owner, gen: 0, shd: 0 },
    });
    const read = await call("listItems", "/v1/items", { token: stale });
    expectStatus(read, 200, JSON.stringify(read.body));
    expect(read.headers.get("X-D1-Bookmark")).toMatch(/^1:/);
    const write = await call("createContact", "/v1/contacts", {
      token: stale,
      body: { first_name: "Moved", last_name: "Along", email: `${uniqueWord("m")}@example.test` },
    });
    expectStatus(write, 201, JSON.stringify(write.body));
    expect(await rowIn(env.DB_1, "contacts", write.body.data.contact_id)).not.toBeNull();
    expect(await rowIn(env.DB, "contacts", write.body.data.contact_id)).toBeNull();
  });

  it("refuses a token naming a shard this deployment lacks", async () => {
    const token = await signTestToken({ claims: { shd: 7 } });
    const res = await call("listItems", "/v1/items", { token });
    expectStatus(res, 401);
  });

  it("answers reads and refuses writes with 503 and Retry-After while the account is read-only (moving)", async () => {
    const account = await createAccount({}, {}, { shard: 1 });
    await env.DB_1.prepare("UPDATE accounts SET shard_state = 'read_only' WHERE id = ?").bind(account.accountId).run();
    try {
      expectStatus(await call("listItems", "/v1/items", { token: account.ownerToken }), 200);
      const write = await call("createContact", "/v1/contacts", {
        token: account.ownerToken,
        body: { first_name: "Nope", last_name: "Contact", email: `${uniqueWord("n")}@example.test` },
      });
      expectShapeB(write, 503, /read-only/);
      expect(write.headers.get("Retry-After")).toBe("60");
      const count = await env.DB_1.prepare("SELECT count(*) AS n FROM contacts WHERE company_id = ?")
        .bind(account.companyId)
        .first<number>("n");
      expect(count).toBe(0);
    } finally {
      await env.DB_1.prepare("UPDATE accounts SET shard_state = 'active' WHERE id = ?").bind(account.accountId).run();
    }
    expectStatus(
      await call("createContact", "/v1/contacts", {
        token: account.ownerToken,
        body: { first_name: "Now", last_name: "Contact", email: `${uniqueWord("w")}@example.test` },
      }),
      201,
    );
  });
});

async function ownerOf(account: TestAccount): Promise<number> {
  return (await env.DB_1.prepare("SELECT owner_user_id FROM accounts WHERE id = ?")
    .bind(account.accountId)
    .first<number>("owner_user_id"))!;
}
