// The idempotency_keys rows (docs/idempotency.md): claimed with the request's first commit, fenced by
// every commit it makes (src/db/commit.ts), and finished with its response.
import type { Db } from "../db/client";

/** How long a response is kept, and a key stays bound to its request. */
export const KEY_TTL_MS = 24 * 3600 * 1000;
/** How long a running request holds its key before a retry may take over (extended by every write it commits). */
export const LEASE_MS = 10_000;

export interface KeyRow {
  id: number;
  fingerprint: string;
  operation_id: string;
  state: "running" | "done";
  lease: string;
  lease_until: number;
  applied: number;
  status: number | null;
  headers: string | null;
  body: string | null;
  /** When this use of the key began (a key reused after its 24 h starts a new use). */
  created_at: number;
  expires_at: number;
}

export interface KeyScope {
  companyId: number;
  clientId: string;
  keyHash: string;
}

const COLUMNS =
  "id, fingerprint, operation_id, state, lease, lease_until, applied, status, " +
  "headers, body, created_at, expires_at";

/** What a request claims its key with. */
export interface ClaimAttempt {
  fingerprint: string;
  operationId: string;
  /** This request's lease: the claim writes it, the fence requires it. */
  lease: string;
  now: number;
}

/**
 * The claim, one statement: insert the key as running under the request's lease, or take an
 * existing row over when it has expired or its request died before changing anything (lease run
 * out, nothing applied, same request), and answer the row either way (an existing row not taken
 * over is "updated" to itself, so RETURNING has it). It is ours when it carries our lease. A row
 * that already holds our lease is left as it is (it has applied writes, or its lease runs), so the
 * claim may ride on every commit until one has carried it. `claimedRow` reads the result.
 */
export function claimStatement(d1: D1Database, scope: KeyScope, attempt: ClaimAttempt): D1PreparedStatement {
  const { now } = attempt;
  const expired = "idempotency_keys.expires_at <= ?8";
  const takeOver = `(${expired} OR (idempotency_keys.state = 'running' AND idempotency_keys.applied = 0 AND idempotency_keys.lease_until <= ?8
    AND idempotency_keys.fingerprint = excluded.fingerprint))`;
  const taken = (column: string, value: string) =>
    `${column} = CASE WHEN ${takeOver} THEN ${value} ELSE idempotency_keys.${column} END`;
  return d1
    .prepare(
      `INSERT INTO idempotency_keys (company_id, client_id, key_hash, fingerprint, operation_id, state, lease, lease_until, applied, created_at, expires_at)
       VALUES (?1, ?2, ?3, ?4, ?5, 'running', ?6, ?7, 0, ?8, ?9)
       ON CONFLICT (company_id, client_id, key_hash) DO UPDATE SET
         ${[
           taken("fingerprint", "excluded.fingerprint"),
           taken("operation_id", "excluded.operation_id"),
           taken("state", "'running'"),
           taken("lease", "excluded.lease"),
           taken("lease_until", "excluded.lease_until"),
           taken("applied", "0"),
           taken("status", "NULL"),
           taken("headers", "NULL"),
           taken("body", "NULL"),
           `created_at = CASE WHEN ${expired} THEN excluded.created_at ELSE idempotency_keys.created_at END`,
           `expires_at = CASE WHEN ${expired} THEN excluded.expires_at ELSE idempotency_keys.expires_at END`,
         ].join(",\n         ")}
       RETURNING ${COLUMNS}`,
    )
    .bind(
      scope.companyId,
      scope.clientId,
      scope.keyHash,
      attempt.fingerprint,
      attempt.operationId,
      attempt.lease,
      now + LEASE_MS,
      now,
      now + KEY_TTL_MS,
    );
}

/** The CHECK the fence fails a batch with (idempotency_keys.fence). */
export const LEASE_LOST = "idempotency_lease_lost";

/**
 * The fence, in every commit of a keyed request: counts the write and pushes the lease on;
 * `fence` takes "the row holds my lease", and its CHECK (= 1) fails the whole batch when another
 * request holds the key.
 */
export function fenceStatement(d1: D1Database, scope: KeyScope, lease: string): D1PreparedStatement {
  return d1
    .prepare(
      "UPDATE idempotency_keys SET applied = applied + 1, lease_until = " +
        "max(lease_until, ?), fence = (lease = ?) WHERE company_id = ? AND client_id = ? " +
        "AND key_hash = ?",
    )
    .bind(Date.now() + LEASE_MS, lease, scope.companyId, scope.clientId, scope.keyHash);
}

/** The key's row as the claim left it. */
export const claimedRow = (result: D1Result) => result.results[0] as KeyRow;

const readStatement = (db: D1Database, scope: KeyScope) =>
  db
    .prepare(`SELECT ${COLUMNS} FROM idempotency_keys WHERE company_id = ? AND client_id = ? AND key_hash = ?`)
    .bind(scope.companyId, scope.clientId, scope.keyHash);

export async function readKey(db: D1Database, scope: KeyScope): Promise<KeyRow | null> {
  return readStatement(db, scope).first<KeyRow>();
}

/** The answer of the request holding `lease`: kept until the key expires. `db`: a handle without the request's context (this is its bookkeeping). */
export async function finishKey(
  db: Db,
  id: number,
  lease: string,
  response: { status: number; headers: string; body: string },
): Promise<void> {
  await db.commit([
    db.d1
      .prepare(
        "UPDATE idempotency_keys SET state = 'done', status = ?, headers = ?, body = ? " +
          "WHERE id = ? AND lease = ? AND state = 'running'",
      )
      .bind(response.status, response.headers, response.body, id, lease),
  ]);
}

/** Frees the key of a request that changed nothing and failed: a retry runs afresh. */
export async function releaseKey(db: Db, id: number, lease: string): Promise<void> {
  await db.commit([
    db.d1
      .prepare("DELETE FROM idempotency_keys WHERE id = ? AND lease = ? AND state = 'running' " + "AND applied = 0")
      .bind(id, lease),
  ]);
}

/** The cron's clean-up: expired keys, a bounded number per run (idempotency_keys_expires_idx). */
export async function pruneKeys(db: Db, now: number, limit = 5000): Promise<number> {
  const [result] = await db.commit([
    db.d1
      .prepare(
        "DELETE FROM idempotency_keys WHERE id IN (SELECT id FROM idempotency_keys WHERE " +
          "expires_at <= ? ORDER BY expires_at LIMIT ?)",
      )
      .bind(now, limit),
  ]);
  return result.meta.changes ?? 0;
}
