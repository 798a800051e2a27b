// The write pipeline itself (src/db/commit.ts, docs/data-layer.md "The write pipeline"): what a
// commit sends, in which order, and what it answers, against real local D1. The guarantees it
// carries are tested through HTTP in idempotency.test.ts, conditional.test.ts and audit-log.test.ts.
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import type { KeyClaim, WriteContext } from "../../src/db/commit";
import { departments, tags } from "../../src/db/schema";
import { LEASE_LOST, claimStatement, claimedRow, fenceStatement, type KeyScope } from "../../src/idempotency/store";
import { createAccount, env, uniqueWord } from "./helpers";

/** env.DB, recording the SQL of every batch it is sent (statements' text by their first words). */
function recordingD1(): { d1: D1Database; batches: string[][] } {
  const batches: string[][] = [];
  const texts = new WeakMap<D1PreparedStatement, string>();
  const wrap = (sql: string, statement: D1PreparedStatement): D1PreparedStatement => {
    texts.set(statement, sql);
    const bind = statement.bind.bind(statement);
    return Object.assign(statement, { bind: (...values: unknown[]) => wrap(sql, bind(...values)) });
  };
  const d1 = {
    prepare: (sql: string) => wrap(sql, env.DB.prepare(sql)),
    batch: (statements: D1PreparedStatement[]) => {
      batches.push(
        statements.map((s) => (texts.get(s) ?? "?").replace(/\s+/g, " ").trim().split(" ").slice(0, 3).join(" ")),
      );
      return env.DB.batch(statements);
    },
  } as unknown as D1Database;
  return { d1, batches };
}

/** A request's key in its write context, as the Idempotency-Key middleware makes it (refusal: the key's row). */
function keyOf(scope: KeyScope, lease: string): KeyClaim {
  return {
    claim: (d1) => claimStatement(d1, scope, { fingerprint: "f", operationId: "test", lease, now: Date.now() }),
    fence: (d1) => fenceStatement(d1, scope, lease),
    fenced: (message) => message.includes(LEASE_LOST),
    accept: (result) => {
      if (claimedRow(result).lease !== lease) throw new Error("key taken");
    },
    refusal: async () => new Error("key taken"),
    claimed: false,
  };
}

const keyRow = (scope: KeyScope) =>
  env.DB.prepare("SELECT lease, applied FROM idempotency_keys WHERE company_id = ? AND client_id = ? AND key_hash = ?")
    .bind(scope.companyId, scope.clientId, scope.keyHash)
    .first<{ lease: string; applied: number }>();

describe("commit: one D1 batch, with what the write context adds", () => {
  it("sends claim, audit context, precondition, the statements, fence, audit delete, in that order; then only what is due", async () => {
    const { companyId } = await createAccount();
    const dept = await env.DB.prepare("SELECT id, version FROM departments WHERE company_id = ?")
      .bind(companyId)
      .first<{ id: number; version: number }>();
    const scope = { companyId, clientId: "commit-test", keyHash: uniqueWord("key") };
    const context: WriteContext = {
      committed: 0,
      actor: {
        accountId: null,
        companyId,
        clientId: "commit-test",
        userId: null,
        requestId: "r-1",
        operationId: "test",
      },
      condition: { table: "departments", id: dept!.id, version: dept!.version, what: "Department" },
      key: keyOf(scope, "lease-1"),
    };
    const { d1, batches } = recordingD1();
    const db = database(d1, context);
    const [rows, raw] = await db.commit([
      db
        .update(departments)
        .set({ name: "Renamed" })
        .where(eq(departments.id, dept!.id))
        .returning({ id: departments.id, name: departments.name }),
      db.d1.prepare("SELECT count(*) AS n FROM departments WHERE company_id = ?").bind(companyId),
    ]);
    // Each statement's own result: drizzle's rows for its query, the D1Result for a prepared one.
    expect(rows).toEqual([{ id: dept!.id, name: "Renamed" }]);
    expect(raw.results).toEqual([{ n: 1 }]);
    expect(batches[0]).toEqual([
      "INSERT INTO idempotency_keys",
      "INSERT OR REPLACE",
      "INSERT INTO write_guards",
      'update "departments" set',
      "SELECT count(*) AS",
      "UPDATE idempotency_keys SET",
      "DELETE FROM audit_context",
    ]);
    expect(context).toMatchObject({ committed: 1, condition: undefined, key: { claimed: true } });
    // A later commit: the fence and the audit context only. An empty one sends nothing.
    await db.commit([db.update(departments).set({ name: "Again" }).where(eq(departments.id, dept!.id))]);
    await db.commit([]);
    expect(batches.slice(1)).toEqual([
      ["INSERT OR REPLACE", 'update "departments" set', "UPDATE idempotency_keys SET", "DELETE FROM audit_context"],
    ]);
    expect(await keyRow(scope)).toEqual({ lease: "lease-1", applied: 2 });
    expect(context.committed).toBe(2);
  });

  it("an empty commit sends the claim alone while it is due; a handle without context sends the statements alone", async () => {
    const { companyId } = await createAccount();
    const scope = { companyId, clientId: "commit-test", keyHash: uniqueWord("key") };
    const context: WriteContext = { committed: 0, key: keyOf(scope, "lease-2") };
    const { d1, batches } = recordingD1();
    await database(d1, context).commit([]);
    expect(batches).toEqual([["INSERT INTO idempotency_keys"]]);
    expect(context).toMatchObject({ committed: 0, key: { claimed: true } });
    expect(await keyRow(scope)).toEqual({ lease: "lease-2", applied: 0 });
    const bare = database(d1);
    await bare.commit([bare.d1.prepare("DELETE FROM tags WHERE company_id = ?").bind(companyId)]);
    expect(batches[1]).toEqual(["DELETE FROM tags"]);
  });

  it("needs no lock: two commits of one request sent at once both carry the claim and both go through", async () => {
    const { companyId } = await createAccount();
    const scope = { companyId, clientId: "commit-test", keyHash: uniqueWord("key") };
    const context: WriteContext = { committed: 0, key: keyOf(scope, "lease-3") };
    const { d1, batches } = recordingD1();
    const db = database(d1, context);
    const insert = (name: string) => db.insert(tags).values({ companyId, name, nameKey: uniqueWord(name) });
    await Promise.all([db.commit([insert("a")]), db.commit([insert("b")])]);
    expect(batches.map((b) => b[0])).toEqual(["INSERT INTO idempotency_keys", "INSERT INTO idempotency_keys"]);
    expect(await keyRow(scope)).toEqual({ lease: "lease-3", applied: 2 });
    expect(context.committed).toBe(2);
  });

  it("a key another request holds: the fence fails the batch, nothing is written, and every later commit throws without sending", async () => {
    const { companyId } = await createAccount();
    const scope = { companyId, clientId: "commit-test", keyHash: uniqueWord("key") };
    await database(env.DB, { committed: 0, key: keyOf(scope, "the-first-request") }).commit([]);
    const context: WriteContext = { committed: 0, key: keyOf(scope, "a-second-request") };
    const { d1, batches } = recordingD1();
    const db = database(d1, context);
    const name = uniqueWord("never");
    await expect(db.commit([db.insert(tags).values({ companyId, name, nameKey: name })])).rejects.toThrow("key taken");
    await expect(db.commit([db.insert(tags).values({ companyId, name, nameKey: name })])).rejects.toThrow("key taken");
    expect(batches).toHaveLength(1);
    expect(await env.DB.prepare("SELECT count(*) AS n FROM tags WHERE name = ?").bind(name).first("n")).toBe(0);
    expect(await keyRow(scope)).toEqual({ lease: "the-first-request", applied: 0 });
    expect(context.committed).toBe(0);
  });
});
