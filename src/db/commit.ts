// The write pipeline (docs/data-layer.md, "The write pipeline"). Every write of the service is one
// call, `commit(statements)` on a database handle (src/db/client.ts): one D1 batch, so one
// transaction, all of it or nothing. What travels with the caller's statements is decided by the
// handle's write context, and always sits in this order in the batch:
//
//   1. the Idempotency-Key's claim   until a commit of the request has carried it (docs/idempotency.md)
//   2. the audit context's row       who the write is by, for the audit triggers (docs/audit-log.md)
//   3. the If-Match precondition     the record still has the version its ETag was checked against:
//                                    the request's first commit only (docs/api-notes.md)
//   4. ...the caller's statements
//   5. the Idempotency-Key's fence   the request still holds its key's lease: counts the write
//   6. the audit context's delete
//
// 2 to 6 come only with statements of the caller (an empty commit sends the claim alone, if one is
// due). A request's handle has the context authentication, the Idempotency-Key and If-Match
// middleware gave it; a handle outside a request has only an actor (import jobs, the clock's
// renewals, uploads) or nothing (bookkeeping tables: the clock's handoff, the cron's clean-ups).
// Guards fail the whole batch through a named CHECK constraint (idempotency_keys.fence, the empty
// table write_guards), so a lost race is a clean 409 or 412 with nothing written.
import type { BatchItem } from "drizzle-orm/batch";
import type { Via } from "../lib/actors";
import { apiError } from "../lib/errors";

/** A statement a commit takes: a drizzle query (its result is drizzle's) or a prepared D1 statement (its D1Result). */
export type Statement = BatchItem<"sqlite"> | D1PreparedStatement;

/** The results of a commit's statements, in their order. */
export type Committed<T extends readonly Statement[]> = {
  -readonly [K in keyof T]: T[K] extends BatchItem<"sqlite"> ? T[K]["_"]["result"] : D1Result<Record<string, unknown>>;
};

/** The actor of a write. A null client and user: the service itself (the company clock, an import job's own bookkeeping). */
export interface AuditActor {
  accountId: number | null;
  /** The company of the actor's token. */
  companyId: number | null;
  clientId: string | null;
  userId: number | null;
  requestId: string | null;
  operationId: string | null;
  /** A recipient acting from a reminder email's page (no API client): the contact. */
  contactId?: number | null;
  /**
   * Someone in a channel acting from the links of a reminder posted there (no API client): the
   * channel endpoint. It is kept in the recipient's column, `contact_id`, which `via` (the channel's
   * type) tells apart: no migration for it (the audit log's reader and the item actions' webhook
   * events read it so: src/records/audit-log/queries.ts, src/records/items/actions.ts).
   */
  channelId?: number | null;
  /** How the actor acted (src/lib/actors.ts); absent or null: the service itself. */
  via?: Via | null;
}

/** An If-Match precondition: the version of the record the request's ETag was checked against. */
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

/** A request's Idempotency-Key (src/idempotency/): its claim and its fence, as statements of a commit. */
export interface KeyClaim {
  /** The claim: an upsert that answers the key's row, ours when it carries our lease. */
  claim(d1: D1Database): D1PreparedStatement;
  /** Counts a write and pushes the lease on; its CHECK fails the whole batch when the key's row holds another lease. */
  fence(d1: D1Database): D1PreparedStatement;
  /** Whether a failed batch's message is the fence's. */
  fenced(message: string): boolean;
  /** The claim's row, from a commit that carried it and went through; throws when the row is not this request's. */
  accept(result: D1Result): void;
  /** The key is another request's: the error to answer with (the middleware answers for the key). */
  refusal(): Promise<unknown>;
  /** Set once a commit's claim was accepted: later commits carry only the fence. */
  claimed: boolean;
  /** Set once the key was found to be another request's: every later commit throws it, sending nothing. */
  refused?: unknown;
}

/** What a handle's commits carry. The middleware of a request fill it in; the handle reads it at each commit. */
export interface WriteContext {
  actor?: AuditActor;
  condition?: WriteCondition;
  key?: KeyClaim;
  /** Commits that went through with statements of the caller: whether the request changed data. */
  committed: number;
}

const PRECONDITION_FAILED = "precondition_failed";

/**
 * Sends `statements` as one D1 batch on `d1`, with what `context` adds (the order above), and
 * answers their own results. Throws 412 when the If-Match precondition failed (with the record's
 * current ETag), 409 (or the key's stored answer) when the Idempotency-Key's fence did, and the
 * D1 error otherwise: nothing of the batch was written.
 */
export async function commit<const T extends readonly Statement[]>(
  d1: D1Database,
  statements: T,
  context?: WriteContext,
): Promise<Committed<T>> {
  const key = context?.key;
  if (key?.refused !== undefined) throw key.refused;
  const own = statements.map(toD1);
  const writes = own.length > 0;
  const claim = key && !key.claimed ? [key.claim(d1)] : [];
  if (!writes && claim.length === 0) return [] as unknown as Committed<T>;
  const condition = writes ? context?.condition : undefined;
  const actor = writes ? context?.actor : undefined;
  const head = [
    ...claim,
    ...(actor ? [auditContext(d1, actor)] : []),
    ...(condition ? [precondition(d1, condition)] : []),
  ];
  const tail = [...(writes && key ? [key.fence(d1)] : []), ...(actor ? [d1.prepare("DELETE FROM audit_context")] : [])];
  let results: D1Result[];
  try {
    results = await d1.batch([...head, ...own.map((s) => s.statement), ...tail]);
  } catch (error) {
    const message = messagesOf(error);
    if (condition && message.includes(PRECONDITION_FAILED)) throw await preconditionFailed(condition);
    if (key && writes && key.fenced(message)) {
      // Not claimed yet: the key is another request's. Claimed before: a retry took it over since.
      if (claim.length > 0) throw (key.refused = await key.refusal());
      throw apiError(409, "A retry with the same Idempotency-Key took this request over; nothing of it was written");
    }
    throw error;
  }
  if (key && claim.length > 0) {
    try {
      key.accept(results[0]!);
    } catch (refusal) {
      throw (key.refused = refusal);
    }
    key.claimed = true;
  }
  if (writes && context) {
    context.committed++;
    context.condition = undefined; // the record's own write has happened: later commits are not conditional
  }
  return own.map((s, i) => s.result(results[head.length + i]!)) as unknown as Committed<T>;
}

/** The audit context row of `actor` (docs/audit-log.md): first in the batch, deleted last. */
function auditContext(d1: D1Database, actor: AuditActor): D1PreparedStatement {
  return d1
    .prepare(
      "INSERT OR REPLACE INTO audit_context (slot, account_id, company_id, at, " +
        "client_id, user_id, request_id, operation_id, contact_id, via) VALUES (1, ?, ?, " +
        "?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(
      actor.accountId,
      actor.companyId,
      Date.now(),
      actor.clientId,
      actor.userId,
      actor.requestId,
      actor.operationId,
      actor.contactId ?? actor.channelId ?? null,
      actor.via ?? null,
    );
}

/** Fails the batch (CHECK of write_guards) unless the record still has the version the ETag was checked against. */
function precondition(d1: D1Database, condition: WriteCondition): D1PreparedStatement {
  return d1
    .prepare(
      `INSERT INTO write_guards (${PRECONDITION_FAILED}) SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM "${condition.table}" WHERE id = ? AND version = ?)`,
    )
    .bind(condition.id, condition.version);
}

/** The 412 of a write whose record changed since its ETag was checked: read after the write that won (a 404 when it deleted the record). */
async function preconditionFailed({ what, id, currentEtag }: WriteCondition) {
  const etag = currentEtag ? await currentEtag() : undefined;
  return apiError(
    412,
    `${what} ${id} has changed since the ETag sent in If-Match${etag ? ` (its ETag is now ${etag})` : ""}: read it again (GET) and retry with its new ETag`,
    etag ? { ETag: etag } : undefined,
  );
}

/** A drizzle query as drizzle's own batch sends it (its statement bound to its parameters) and reads its result. */
interface DrizzlePrepared {
  stmt: D1PreparedStatement;
  getQuery(): { params: unknown[] };
  mapResult(result: unknown, isFromBatch?: boolean): unknown;
}

function toD1(statement: Statement): { statement: D1PreparedStatement; result(raw: D1Result): unknown } {
  const query = statement as { _prepare?: () => DrizzlePrepared };
  if (typeof query._prepare !== "function")
    return { statement: statement as D1PreparedStatement, result: (raw) => raw };
  const prepared = query._prepare();
  const { params } = prepared.getQuery();
  return {
    statement: params.length > 0 ? prepared.stmt.bind(...params) : prepared.stmt,
    result: (raw) => prepared.mapResult(raw, true),
  };
}

/** The message of an error and its causes (D1 puts the SQLite error in the cause). */
export function messagesOf(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    parts.push(String((current as Error).message ?? current));
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(" | ");
}
