// A request's D1, with conditions added to what it sends (docs/idempotency.md, docs/api-notes.md
// "Conditional requests"):
// - a prelude: statements that ride on the request's first write, in the same batch (an
//   Idempotency-Key's claim), with a check of their results before the request may go on;
// - on every write (a batch, or a single statement sent as a batch), inside the same transaction:
//   the idempotency fence (the request still holds its key's lease, else the whole batch fails and
//   nothing of it is written; the key counts the write), and on the first write only, an If-Match
//   precondition (the record still has the version its ETag was checked against).
// Guards fail a batch through a named CHECK constraint (of idempotency_keys.fence, of the empty table
// write_guards), so a lost race is a clean 409 or 412 with nothing written.
import { apiError } from "../lib/errors";
import { auditContextStatements, type AuditActor } from "./audit-context";
import { getDb, type Db } from "./client";

export interface IdempotencyFence {
  /** The key's row, by its unique scope (known before the claim inserts it). */
  companyId: number;
  clientId: string;
  keyHash: string;
  lease: string;
  /** How far each committed write pushes the lease on (ms). */
  leaseMs: number;
}

export interface WriteCondition {
  /** SQL table name (a fixed identifier from the record's definition, never client input). */
  table: string;
  id: number;
  version: number;
  /** For the 412 message: "Item". */
  what: string;
  /**
   * The record's ETag as it is now, for the 412 of a write that lost its race (the header every 412
   * carries). Throws the record's 404 when the race was lost to its deletion.
   */
  currentEtag?: () => Promise<string>;
}

/** Statements sent with the request's first write (or alone, by `runPrelude`), and what to do with their results. */
export interface Prelude {
  statements: D1PreparedStatement[];
  /** Checks the prelude's results; throws to stop the request (the call's own results are dropped). */
  accept(results: D1Result[]): void;
  /** The first call was a write refused by the fence: the prelude's claim did not take. Throws. */
  refused(): Promise<never>;
}

/** The state of a request's guarded D1. */
export interface WriteGuards {
  fence?: IdempotencyFence;
  condition?: WriteCondition;
  /** Pending until a call carried it and its check passed. */
  prelude?: Prelude;
  /** Set while a call carries the prelude: other calls of the request wait for it. */
  preludeRun?: Promise<void>;
  /** What the prelude's check threw: the request may send nothing more. */
  stopped?: unknown;
  /** Writes this request committed. */
  committed: number;
  /** Who the request's writes are by: every write batch carries it for the audit triggers (src/db/audit-context.ts). */
  actor?: AuditActor;
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

/** The D1 of one request: writes go through `guardedBatch`; reads too once the prelude has stopped the request. */
export function guardedD1(d1: D1Database, guards: WriteGuards): D1Database {
  const wrap = (sql: string, inner: D1PreparedStatement): GuardedStatement => {
    // A statement that needs guards runs as a one-statement batch; its result is adapted below.
    const run = async () => (needsGuards(guards, isWrite(sql)) ? (await guardedBatch(d1, guards, [inner], isWrite(sql)))[0]! : null);
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
      return needsGuards(guards, writes) ? guardedBatch(d1, guards, inner, writes) : d1.batch(inner);
    },
    exec: (sql: string) => d1.exec(sql),
    dump: () => d1.dump(),
    withSession: (constraint?: string) => d1.withSession(constraint),
  } as D1Database;
}

const needsGuards = (guards: WriteGuards, write: boolean) => write || guards.stopped !== undefined;

/** Runs the prelude now, alone, unless a write carried it already (before a change made outside D1). */
export async function runPrelude(d1: D1Database, guards: WriteGuards): Promise<void> {
  if (guards.prelude || guards.stopped !== undefined) await guardedBatch(d1, guards, [], false);
}

/** The batch failed on the If-Match condition: answered as 412 once the batch's bookkeeping is done. */
class PreconditionLost {
  constructor(readonly condition: WriteCondition) {}
}

/** `statements` as one batch with the request's prelude (if it waits) and guards (on a write); only their own results are returned. */
async function guardedBatch(d1: D1Database, guards: WriteGuards, statements: D1PreparedStatement[], write: boolean): Promise<D1Result[]> {
  try {
    return await runGuardedBatch(d1, guards, statements, write);
  } catch (error) {
    if (!(error instanceof PreconditionLost)) throw error;
    const { what, id, currentEtag } = error.condition;
    // Read after the write that won: the record's ETag now (a 404 when that write deleted it).
    const etag = currentEtag ? await currentEtag() : undefined;
    throw apiError(
      412,
      `${what} ${id} has changed since the ETag sent in If-Match${etag ? ` (its ETag is now ${etag})` : ""}: read it again (GET) and retry with its new ETag`,
      etag ? { ETag: etag } : undefined,
    );
  }
}

async function runGuardedBatch(d1: D1Database, guards: WriteGuards, statements: D1PreparedStatement[], write: boolean): Promise<D1Result[]> {
  while (guards.preludeRun) await guards.preludeRun; // another call of the request carries the prelude
  if (guards.stopped) throw guards.stopped;
  // The prelude rides on a write (a read needs no claim: it changes nothing), or goes alone.
  const prelude = write || statements.length === 0 ? guards.prelude : undefined;
  let settled!: () => void;
  if (prelude) guards.preludeRun = new Promise<void>((resolve) => (settled = resolve));
  const { fence, condition } = guards;
  const first = prelude?.statements ?? [];
  const before: D1PreparedStatement[] = [];
  const after: D1PreparedStatement[] = [];
  if (write && condition) {
    // The version the ETag was checked against, before this batch's own write bumps it.
    before.push(
      d1
        .prepare(`INSERT INTO write_guards (${PRECONDITION_FAILED}) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM "${condition.table}" WHERE id = ? AND version = ?)`)
        .bind(condition.id, condition.version),
    );
  }
  if (write && fence) {
    // Counts the write and pushes the lease on; `fence` takes "the row holds my lease", and its
    // CHECK (= 1) fails the whole batch when another request holds the key.
    after.push(
      d1
        .prepare(
          "UPDATE idempotency_keys SET applied = applied + 1, lease_until = max(lease_until, ?), fence = (lease = ?) WHERE company_id = ? AND client_id = ? AND key_hash = ?",
        )
        .bind(Date.now() + fence.leaseMs, fence.lease, fence.companyId, fence.clientId, fence.keyHash),
    );
  }
  if (write && guards.actor) {
    const [set, clear] = auditContextStatements(d1, guards.actor);
    before.unshift(set);
    after.push(clear);
  }
  try {
    let results: D1Result[];
    try {
      results = await d1.batch([...first, ...before, ...statements, ...after]);
    } catch (error) {
      const message = String((error as Error)?.message ?? error) + String((error as { cause?: unknown })?.cause ?? "");
      if (message.includes(PRECONDITION_FAILED) && condition) throw new PreconditionLost(condition);
      if (message.includes(LEASE_LOST)) {
        if (prelude) stop(guards, await prelude.refused().catch((refusal: unknown) => refusal));
        throw apiError(409, "A retry with the same Idempotency-Key took this request over; nothing of it was written");
      }
      throw error; // the batch, the prelude with it, did not happen: a later call carries the prelude again
    }
    if (prelude) {
      try {
        prelude.accept(results.slice(0, first.length));
      } catch (refusal) {
        stop(guards, refusal);
      }
      guards.prelude = undefined;
    }
    if (write) {
      guards.committed++;
      guards.condition = undefined; // the record's own write has happened: later writes of the request are not conditional
    }
    const own = first.length + before.length;
    return results.slice(own, own + statements.length);
  } finally {
    if (prelude) {
      guards.preludeRun = undefined;
      settled();
    }
  }
}

/** The prelude refused the request: this call and every later one throw `refusal`. */
function stop(guards: WriteGuards, refusal: unknown): never {
  guards.prelude = undefined;
  guards.stopped = refusal;
  throw refusal;
}

/** A D1 whose every write batch names `actor` for the audit log, outside a request's own guards (jobs, the company clock, uploads). */
export function auditedD1(d1: D1Database, actor: AuditActor): D1Database {
  return guardedD1(d1, { committed: 0, actor });
}

/** A drizzle handle over the request's guarded D1. */
export function guardedDb(d1: D1Database, guards: WriteGuards): Db {
  return getDb(guardedD1(d1, guards));
}
