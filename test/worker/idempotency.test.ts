// Idempotency-Key on writes (docs/idempotency.md): a repeat replays the stored answer and changes
// nothing, also after the Worker died between the change and the response (simulated in D1: a
// request cannot be killed in here; test/e2e/crash-retry.test.ts kills a real server).
import { createScheduledController, runInDurableObject } from "cloudflare:test";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { LEASE_LOST, claimStatement, fenceStatement } from "../../src/idempotency/store";
import { items } from "../../src/db/schema";
import { RESPONSE_LOST } from "../../src/idempotency/middleware";
import { clockFor } from "../../src/company-clock/handoff/worker";
import worker from "../../src/index";
import {
  call,
  createAccount,
  env,
  expectShapeB,
  noServerError,
  uniqueWord,
  type Answer,
  type Operation,
  expectStatus,
  ok,
  openApiDocument,
  type OpenApiJson,
} from "./helpers";

const key = () => crypto.randomUUID();

function post<O extends Operation>(
  token: string,
  operation: O,
  path: string,
  body: unknown,
  idempotencyKey?: string,
): Promise<Answer<O>> {
  return call(operation, path, {
    token,
    body,
    headers: idempotencyKey === undefined ? {} : { "Idempotency-Key": idempotencyKey },
  });
}

async function itemsTitled(companyId: number, title: string): Promise<number> {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM items WHERE company_id = ? AND title = ?")
    .bind(companyId, title)
    .first<{ n: number }>();
  return row!.n;
}

/** The key's row, found through its operation (the key itself is stored only as a hash). */
async function keyRows(companyId: number) {
  const { results } = await env.DB.prepare("SELECT * FROM idempotency_keys WHERE company_id = ? ORDER BY id")
    .bind(companyId)
    .all<Record<string, unknown>>();
  return results;
}

describe("Idempotency-Key: a repeat replays the first answer", () => {
  it("creates one item for two identical POSTs; the second answers the stored 201 with Idempotent-Replayed", async () => {
    const account = await createAccount();
    const title = uniqueWord("Boiler ");
    const body = { title, expiry_date: "2031-01-31" };
    const k = key();
    const first = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectStatus(first, 201, JSON.stringify(first.body));
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const second = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectStatus(second, 201);
    expect(second.headers.get("Idempotent-Replayed")).toBe("true");
    expect(second.body).toEqual(first.body);
    expect(second.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await itemsTitled(account.companyId, title)).toBe(1);
    // Without the key, the same body is a new item (the control).
    expectStatus(await post(account.ownerToken, "createItem", "/v1/items", body), 201);
    expect(await itemsTitled(account.companyId, title)).toBe(2);
  });

  it("queues the item's reminders once: the replay does not reach the reminder engine", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Cert "), expiry_date: "2031-06-30" };
    const first = ok(await post(account.ownerToken, "createItem", "/v1/items", body, k));
    const before = ok(
      await call("listItemReminders", `/v1/items/${first.body.data.item_id}/reminders`, { token: account.ownerToken }),
    );
    await post(account.ownerToken, "createItem", "/v1/items", body, k);
    const after = ok(
      await call("listItemReminders", `/v1/items/${first.body.data.item_id}/reminders`, { token: account.ownerToken }),
    );
    expect(after.body.data.queued.length).toBe(before.body.data.queued.length);
    expect(before.body.data.queued.length).toBeGreaterThan(0);
  });

  it("replays a DELETE's 200 rather than answering the 404 the record's absence would give now", async () => {
    const account = await createAccount();
    const contact = ok(
      await post(account.ownerToken, "createContact", "/v1/contacts", {
        first_name: "Del",
        last_name: "Once",
        email: `${uniqueWord("e")}@example.test`,
      }),
    );
    const k = key();
    const del = () =>
      call("deleteContact", `/v1/contacts/${contact.body.data.contact_id}`, {
        token: account.ownerToken,
        headers: { "Idempotency-Key": k },
      });
    const first = await del();
    expectStatus(first, 200);
    const again = await del();
    expectStatus(again, 200);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("accepts the key bare or as a Structured Field string: both name the same key", async () => {
    const account = await createAccount();
    const body = { title: uniqueWord("Quoted "), expiry_date: "2031-02-01" };
    const first = await post(account.ownerToken, "createItem", "/v1/items", body, "order-4711");
    const second = await post(account.ownerToken, "createItem", "/v1/items", body, '"order-4711"');
    expectStatus(first, 201);
    expect(second.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await itemsTitled(account.companyId, body.title)).toBe(1);
  });

  it("answers 422 for the same key on another body, path or method, and changes nothing", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("First "), expiry_date: "2031-03-01" };
    expectStatus(await post(account.ownerToken, "createItem", "/v1/items", body, k), 201);
    const otherBody = await post(
      account.ownerToken,
      "createItem",
      "/v1/items",
      { ...body, title: uniqueWord("Second ") },
      k,
    );
    expectShapeB(otherBody, 422, /Idempotency-Key was already used for a different request/);
    const otherPath = await post(
      account.ownerToken,
      "createContact",
      "/v1/contacts",
      { first_name: "A", last_name: "B", email: `${uniqueWord("e")}@example.test` },
      k,
    );
    expectShapeB(otherPath, 422, /createItem/);
    const reordered = await call("createItem", "/v1/items", {
      token: account.ownerToken,
      rawBody: JSON.stringify(body, null, 1),
      headers: { "Idempotency-Key": k, "Content-Type": "application/json" },
    });
    expectShapeB(reordered, 422); // the body's bytes, not its meaning, identify the request
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM contacts WHERE company_id = ?")
      .bind(account.companyId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("answers 400 naming the header for a malformed key", async () => {
    const account = await createAccount();
    for (const bad of ["a".repeat(256), "caf\u00e9", '"unterminated', '"a"b"', "tab\there"]) {
      const res = await post(
        account.ownerToken,
        "createItem",
        "/v1/items",
        { title: "x", expiry_date: "2031-01-01" },
        bad,
      );
      expectShapeB(res, 400, /Idempotency-Key must be 1 to 255 printable ASCII characters/);
    }
    expectStatus(
      await post(
        account.ownerToken,
        "createItem",
        "/v1/items",
        { title: "x", expiry_date: "2031-01-01" },
        "a".repeat(255),
      ),
      201,
    );
    expect(await itemsTitled(account.companyId, "x")).toBe(1);
  });

  it("scopes keys to the API client: the same key from two clients is two requests", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Shared "), expiry_date: "2031-04-01" };
    expectStatus(await post(account.ownerToken, "createItem", "/v1/items", body, k), 201);
    const other = await post(account.memberToken, "createItem", "/v1/items", body, k);
    expectStatus(other, 201);
    expect(other.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await itemsTitled(account.companyId, body.title)).toBe(2);
  });

  it("keeps no answer for a request that failed without changing anything: the key can be used again", async () => {
    const account = await createAccount();
    const k = key();
    const bad = await post(account.ownerToken, "createItem", "/v1/items", { title: "no date" }, k);
    expectShapeB(bad, 400, /expiry_date/);
    expect(await keyRows(account.companyId)).toHaveLength(0);
    const fixed = await post(
      account.ownerToken,
      "createItem",
      "/v1/items",
      { title: uniqueWord("Fixed "), expiry_date: "2031-05-01" },
      k,
    );
    expectStatus(fixed, 201);
  });

  it("keeps the answer of a request that changed data before it failed, and replays it", async () => {
    const account = await createAccount({}, { documents: 0 });
    const k = key();
    const body = { title: uniqueWord("Over "), expiry_date: "2031-05-01", folder_path: `${uniqueWord("F")}/Sub` };
    const first = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectShapeB(first, 400, /Document limit reached/);
    const [row] = await keyRows(account.companyId);
    expect(row).toMatchObject({ state: "done", status: 400 }); // the folders were created: a change
    const again = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectStatus(again, 400);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("creates folder_path's folders and the item in one write, so no crash can leave one without the other", async () => {
    const account = await createAccount();
    const k = key();
    const folder = uniqueWord("F");
    const created = await post(
      account.ownerToken,
      "createItem",
      "/v1/items",
      { title: uniqueWord("Filed "), expiry_date: "2031-05-01", folder_path: `${folder}/Sub/Deep` },
      k,
    );
    expectStatus(created, 201);
    // Every committed write counts itself on the key's row: one transaction held folders and item.
    const [row] = (
      await env.DB.prepare("SELECT applied FROM idempotency_keys WHERE company_id = ?")
        .bind(account.companyId)
        .all<{ applied: number }>()
    ).results;
    expect(row!.applied).toBe(1);
    const item = ok(await call("getItem", `/v1/items/${created.body.data.item_id}`, { token: account.ownerToken }));
    const deep = await env.DB.prepare("SELECT id FROM folders WHERE company_id = ? AND name = 'Deep'")
      .bind(account.companyId)
      .first<{ id: number }>();
    expect(item.body.data.folder_id).toBe(deep!.id);
  });

  it("runs the request afresh once the key's 24 hours are over", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Expired "), expiry_date: "2031-07-01" };
    await post(account.ownerToken, "createItem", "/v1/items", body, k);
    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = ? WHERE company_id = ?")
      .bind(Date.now() - 1, account.companyId)
      .run();
    const later = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectStatus(later, 201);
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await itemsTitled(account.companyId, body.title)).toBe(2);
  });

  it("stores a response that carries a secret only sealed: the webhook secret comes back on replay, never in D1 in clear", async () => {
    const account = await createAccount();
    const k = key();
    const body = { url: "http://127.0.0.1:9/hook", events: ["task.deleted"] };
    const first = await post(account.ownerToken, "createWebhook", "/v1/webhooks", body, k);
    expectStatus(first, 201, JSON.stringify(first.body));
    const replay = ok(await post(account.ownerToken, "createWebhook", "/v1/webhooks", body, k));
    expect(replay.body.data.secret).toBe(first.body.data.secret);
    const [row] = await keyRows(account.companyId);
    expect(JSON.stringify(row)).not.toContain(first.body.data.secret);
    expect(JSON.stringify(row)).not.toContain(k);
  });
});

describe("Idempotency-Key: concurrent repeats", () => {
  it("leaves exactly one item whatever the interleaving; every answer is the stored 201 or 409", async () => {
    for (let round = 0; round < 5; round++) {
      const account = await createAccount();
      const k = key();
      const body = { title: uniqueWord("Race "), expiry_date: "2031-08-01" };
      const results = await Promise.all(
        Array.from({ length: 8 }, () => post(account.ownerToken, "createItem", "/v1/items", body, k)),
      );
      noServerError(...results);
      const created = results.filter((r) => r.status === 201);
      expect(created.length).toBeGreaterThanOrEqual(1);
      for (const r of created) expect(r.body).toEqual(created[0]!.body);
      for (const r of results.filter((r) => r.status !== 201)) expectShapeB(r, 409, /still in progress/);
      expect(await itemsTitled(account.companyId, body.title)).toBe(1);
    }
  });
});

describe("Idempotency-Key: the Worker dying between the change and the response", () => {
  /** The state a Worker leaves when it dies at `stage`: the key claimed, its lease run out. */
  async function dieAfter(companyId: number, applied: 0 | 1) {
    await env.DB.prepare(
      "UPDATE idempotency_keys SET state = 'running', status = NULL, headers = NULL, body = NULL, lease_until = ?, applied = ? WHERE company_id = ?",
    )
      .bind(Date.now() - 1, applied, companyId)
      .run();
  }

  it("after the change: a repeat changes nothing more and answers 409 saying the response was lost", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Crash "), expiry_date: "2031-09-01" };
    expectStatus(await post(account.ownerToken, "createItem", "/v1/items", body, k), 201);
    await dieAfter(account.companyId, 1);
    const retry = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectShapeB(retry, 409);
    expect(retry.body.msg).toBe(RESPONSE_LOST);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await itemsTitled(account.companyId, body.title)).toBe(1);
  });

  it("before any change: a repeat after the lease ran out takes the key over and runs once", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Early "), expiry_date: "2031-09-02" };
    // A first attempt that claimed the key and died before writing: its row, with no item.
    await post(account.ownerToken, "createItem", "/v1/items", body, k);
    await env.DB.prepare("DELETE FROM items WHERE company_id = ? AND title = ?")
      .bind(account.companyId, body.title)
      .run();
    await dieAfter(account.companyId, 0);
    const retry = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectStatus(retry, 201);
    expect(retry.headers.get("Idempotent-Replayed")).toBeNull();
    expect(await itemsTitled(account.companyId, body.title)).toBe(1);
  });

  it("while the first attempt still holds its lease: 409 with Retry-After, nothing written", async () => {
    const account = await createAccount();
    const k = key();
    const body = { title: uniqueWord("Held "), expiry_date: "2031-09-03" };
    await post(account.ownerToken, "createItem", "/v1/items", body, k);
    await env.DB.prepare("DELETE FROM items WHERE company_id = ? AND title = ?")
      .bind(account.companyId, body.title)
      .run();
    await env.DB.prepare(
      "UPDATE idempotency_keys SET state = 'running', applied = 0, lease_until = ? WHERE company_id = ?",
    )
      .bind(Date.now() + 60_000, account.companyId)
      .run();
    const retry = await post(account.ownerToken, "createItem", "/v1/items", body, k);
    expectShapeB(retry, 409, /still in progress/);
    expect(retry.headers.get("Retry-After")).toBe("1");
    expect(await itemsTitled(account.companyId, body.title)).toBe(0);
  });

  it("a first attempt whose key was taken over cannot write afterwards (the lease fence fails its batch)", async () => {
    const account = await createAccount();
    await post(
      account.ownerToken,
      "createItem",
      "/v1/items",
      { title: uniqueWord("Fence "), expiry_date: "2031-09-04" },
      key(),
    );
    const [row] = await keyRows(account.companyId);
    // The slow first attempt still holds its old lease; a retry has since taken a new one.
    const fence = {
      companyId: account.companyId,
      clientId: row!.client_id as string,
      keyHash: row!.key_hash as string,
    };
    const lease = "lease-of-a-slow-first-attempt";
    // The slow attempt's key, as its request's write context holds it after its claim was accepted.
    const stale = database(env.DB, {
      committed: 0,
      key: {
        claim: (d1) =>
          claimStatement(d1, fence, { fingerprint: "", operationId: "createItem", lease, now: Date.now() }),
        fence: (d1) => fenceStatement(d1, fence, lease),
        fenced: (message) => message.includes(LEASE_LOST),
        accept: () => {},
        refusal: async () => new Error("not claimed here"),
        claimed: true,
      },
    });
    const before = await env.DB.prepare("SELECT count(*) AS n FROM items").first<{ n: number }>();
    await expect(
      stale.commit([stale.update(items).set({ title: "late write" }).where(eq(items.companyId, account.companyId))]),
    ).rejects.toMatchObject({ status: 409 });
    const changed = await env.DB.prepare("SELECT count(*) AS n FROM items WHERE title = 'late write'").first<{
      n: number;
    }>();
    expect(changed!.n).toBe(0);
    expect((await env.DB.prepare("SELECT count(*) AS n FROM items").first<{ n: number }>())!.n).toBe(before!.n);
  });

  it("for a change the reminder engine makes (a manual reminder): the retry gets the same reminder, no second one", async () => {
    const account = await createAccount();
    const item = ok(
      await post(account.ownerToken, "createItem", "/v1/items", {
        title: uniqueWord("Rem "),
        expiry_date: "2031-10-01",
      }),
    );
    const itemId = item.body.data.item_id;
    const k = key();
    const body = { date: "2031-09-15", hour: "10:30" };
    const first = await post(account.ownerToken, "createItemReminder", `/v1/items/${itemId}/reminders`, body, k);
    expectStatus(first, 201, JSON.stringify(first.body));
    // The Worker died after the Durable Object applied it, before D1 recorded the response.
    await dieAfter(account.companyId, 0);
    const retry = await post(account.ownerToken, "createItemReminder", `/v1/items/${itemId}/reminders`, body, k);
    expectStatus(retry, 201);
    expect(retry.body.data).toEqual(first.body.data);
    const manual = await runInDurableObject(
      clockFor(env, account.companyId),
      (_i, state) =>
        state.storage.sql
          .exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE item_id = ? AND origin = 'manual'", itemId)
          .one().n,
    );
    expect(manual).toBe(1);
  });
});

describe("Idempotency-Key: a key used again after its 24 hours", () => {
  it("is a new request for the reminder engine too: a second reminder, not the first one's answer", async () => {
    const account = await createAccount();
    const item = ok(
      await post(account.ownerToken, "createItem", "/v1/items", {
        title: uniqueWord("Again "),
        expiry_date: "2031-10-01",
      }),
    );
    const itemId = item.body.data.item_id;
    const k = key();
    const body = { date: "2031-09-20", hour: "08:00" };
    const first = ok(await post(account.ownerToken, "createItemReminder", `/v1/items/${itemId}/reminders`, body, k));
    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = ? WHERE company_id = ?")
      .bind(Date.now() - 1, account.companyId)
      .run();
    const later = await post(account.ownerToken, "createItemReminder", `/v1/items/${itemId}/reminders`, body, k);
    expectStatus(later, 201);
    expect(later.headers.get("Idempotent-Replayed")).toBeNull();
    expect(later.body.data.reminder_id).not.toBe(first.body.data.reminder_id);
  });
});

describe("Idempotency-Key: housekeeping and the published contract", () => {
  it("the cron deletes keys past their 24 hours", async () => {
    const account = await createAccount();
    await post(
      account.ownerToken,
      "createItem",
      "/v1/items",
      { title: uniqueWord("Old "), expiry_date: "2031-11-01" },
      key(),
    );
    await env.DB.prepare("UPDATE idempotency_keys SET expires_at = ? WHERE company_id = ?")
      .bind(Date.now() - 1000, account.companyId)
      .run();
    const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} } as unknown as ExecutionContext;
    await worker.scheduled(createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" }), env, ctx);
    expect(await keyRows(account.companyId)).toHaveLength(0);
  });

  it("publishes the header on every POST, PATCH, PUT and DELETE but the token endpoint and the upload PUT", async () => {
    const doc = await openApiDocument();
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, OpenApiJson>>)) {
      for (const [method, op] of Object.entries(item)) {
        const keyed = (op.parameters ?? []).some(
          (p: { $ref?: string }) => p.$ref === "#/components/parameters/IdempotencyKey",
        );
        const excluded = path === "/v1/oauth/token" || (path === "/v1/uploads" && method === "put");
        expect(keyed, `${method} ${path}`).toBe(["post", "patch", "put", "delete"].includes(method) && !excluded);
        if (keyed)
          expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(["409", "422"]));
      }
    }
    expect(doc.components.parameters.IdempotencyKey).toMatchObject({
      name: "Idempotency-Key",
      in: "header",
      schema: { maxLength: 255 },
    });
  });
});
