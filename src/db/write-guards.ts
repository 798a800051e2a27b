// A request's D1, with conditions added to every write it commits (docs/idempotency.md,
// docs/api-notes.md "Conditional requests"). Each write (a batch, or a single statement run as a
// batch) gets, inside the same transaction:
// - the idempotency fence: the request still holds its Idempotency-Key's lease (else the whole
//   batch fails and nothing of it is written), and the key records that the request changed data;
// - an If-Match precondition, on the first write only: the record still has the version the
//   request's ETag was checked against.
// Both fail the batch through a CHECK constraint of the empty table write_guards, so a lost race
// is a clean 409 or 412 with nothing written.
import { drizzle } from "drizzle-orm/d1";
import { apiError } from "../lib/errors";
import type { Db } from "./client";
import * as schema from "./schema";

export interface IdempotencyFence {
  keyId: number;
  lease: string;
  /** How far each committed write pushes the lease on (ms). */
  leaseMs: number;
}

export interface WriteCondition {
  /** SQL table name (a fixed identifier from the resource definition, never client input). */
  table: string;
  id: number;
  version: number;
  /** For the 412 message: "Item". */
  what: string;
}

/** The state of a request's guarded writes. */
export interface WriteGuards {
  fence?: IdempotencyFence;
  condition?: WriteCondition;
  /** Writes this request committed. */
  committed: number;
}

const WRITE = /^\s*(insert|update|delete|replace)\b/i;
const CTE_WRITE = /^\s*with\b[\s\S]*\b(insert\s+into|update\s+\S+\s+set|delete\s+from)\b/i;
const isWrite = (sql: string) => WRITE.test(sql) || CTE_WRITE.test(sql);

const PRECONDITION_FAILED = "precondition_failed";
const LEASE_LOST = "idempotency_lease_lost";

interface GuardedStatement extends D1PreparedStatement {
  readonly sql: string;
  readonly inner: D1PreparedStatement;
}

/** The D1 of one request: every write goes through `guardedBatch`. */
export function guardedD1(d1: D1Database, guards: WriteGuards): D1Database {
  const wrap = (sql: string, inner: D1PreparedStatement): GuardedStatement => {
    const run = async () => (isWrite(sql) ? (await guardedBatch(d1, guards, [inner]))[0]! : null);
    return {
      sql,
      inner,
      bind: (...values: unknown[]) => wrap(sql, inner.bind(...values)),
      first: (async (column?: string) => {
        const result = await run();
        if (!result) return column === undefined ? inner.first() : inner.first(column);
        const row = (result.results[0] ?? null) as Record<string, unknown> | null;
        return column === undefined ? row : (row?.[column] ?? null);
      }) as D1PreparedStatement["first"],
      all: (async () => (await run()) ?? inner.all()) as D1PreparedStatement["all"],
      run: (async () => (await run()) ?? inner.run()) as D1PreparedStatement["run"],
      raw: (async (options?: { columnNames?: boolean }) => {
        const result = await run();
        if (!result) return options?.columnNames ? inner.raw({ columnNames: true }) : inner.raw();
        const rows = (result.results as Record<string, unknown>[]).map((row) => Object.values(row));
        return options?.columnNames ? [Object.keys(result.results[0] ?? {}), ...rows] : rows;
      }) as D1PreparedStatement["raw"],
    };
  };
  return {
    prepare: (sql: string) => wrap(sql, d1.prepare(sql)),
    batch: (statements: D1PreparedStatement[]) => {
      const inner = statements.map((s) => (s as GuardedStatement).inner ?? s);
      const writes = statements.some((s) => isWrite((s as GuardedStatement).sql ?? ""));
      return writes ? guardedBatch(d1, guards, inner) : d1.batch(inner);
    },
    exec: (sql: string) => d1.exec(sql),
    dump: () => d1.dump(),
    withSession: (constraint?: string) => d1.withSession(constraint),
  } as D1Database;
}

/** `statements` as one batch with the request's guards; the guards' own results are dropped. */
async function guardedBatch(d1: D1Database, guards: WriteGuards, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  const { fence, condition } = guards;
  const before: D1PreparedStatement[] = [];
  const after: D1PreparedStatement[] = [];
  if (condition) {
    // First: the version the ETag was checked against, before this batch's own write bumps it.
    before.push(
      d1
        .prepare(`INSERT INTO write_guards (${PRECONDITION_FAILED}) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM "${condition.table}" WHERE id = ? AND version = ?)`)
        .bind(condition.id, condition.version),
    );
  }
  if (fence) {
    after.push(
      d1.prepare(`INSERT INTO write_guards (${LEASE_LOST}) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE id = ? AND lease = ?)`).bind(fence.keyId, fence.lease),
      d1.prepare("UPDATE idempotency_keys SET applied = applied + 1, lease_until = max(lease_until, ?) WHERE id = ?").bind(Date.now() + fence.leaseMs, fence.keyId),
    );
  }
  let results: D1Result[];
  try {
    results = await d1.batch([...before, ...statements, ...after]);
  } catch (error) {
    const message = String((error as Error)?.message ?? error) + String((error as { cause?: unknown })?.cause ?? "");
    if (message.includes(PRECONDITION_FAILED) && condition) {
      throw apiError(412, `${condition.what} ${condition.id} has changed since the ETag sent in If-Match: read it again (GET) and retry with its new ETag`);
    }
    if (message.includes(LEASE_LOST)) {
      throw apiError(409, "A retry with the same Idempotency-Key took this request over; nothing of it was written");
    }
    throw error;
  }
  guards.committed++;
  guards.condition = undefined; // the record's own write has happened: later writes of the request are not conditional
  return results.slice(before.length, before.length + statements.length);
}

/** A drizzle handle over the request's guarded D1. */
export function guardedDb(d1: D1Database, guards: WriteGuards): Db {
  return drizzle(guardedD1(d1, guards), { schema });
}
