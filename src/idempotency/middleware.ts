// Idempotency-Key on writes (docs/idempotency.md): the first request runs, its response is kept
// 24 h, a repeat gets that response back with `Idempotent-Replayed: true` and has no effect.
import type { Context, MiddlewareHandler } from "hono";
import type { AppBindings } from "../env";
import { database, type Db } from "../db/client";
import { writeContext } from "../lib/context";
import { ApiError, apiError, renderError } from "../lib/errors";
import { noteOnLog } from "../lib/request-context";
import { IDEMPOTENCY_KEY_HEADER, keyHash, openBody, parseIdempotencyKey, requestFingerprint, sealBody } from "./key";
import {
  LEASE_LOST,
  claimStatement,
  claimedRow,
  fenceStatement,
  finishKey,
  readKey,
  releaseKey,
  type KeyRow,
  type KeyScope,
} from "./store";

export const REPLAYED_HEADER = "Idempotent-Replayed";

/** Response headers kept with a stored response (the rest are per request: ids, rate limits, dates). */
const KEPT_HEADERS = ["content-type", "cache-control", "pragma", "location", "content-location", "etag"];

/** How long a repeat waits for the first request when both reached the same isolate. */
const LOCAL_WAIT_MS = 5_000;
/** Requests of this isolate still running, by key scope: a repeat arriving here waits for the first to finish. */
const running = new Map<string, Promise<void>>();

export const RESPONSE_LOST =
  "This request was already applied with this Idempotency-Key, but the service " +
  "stopped before its response was recorded, " +
  "so it cannot be replayed; it will not be applied again. Read the affected records to see their state.";

const IN_PROGRESS = `A request with this ${IDEMPOTENCY_KEY_HEADER} is still in progress; retry after a moment to get its response`;

/**
 * Thrown into the operation by its first commit when the key is not this request's. The middleware
 * answers for the key; as an ApiError it renders quietly should anything else see it.
 */
class KeyTaken extends ApiError {
  constructor(readonly row: KeyRow | null) {
    super(409, { success: false, msg: IN_PROGRESS }, { "Retry-After": "1" });
  }
}

/**
 * Route middleware of every keyed write (POST, PATCH, PUT, DELETE of a scoped route), after
 * authentication, rate limiting and the tenant. Without the header it does nothing. With it, the
 * request's write context gets the key (src/db/commit.ts): its claim rides on the operation's
 * commits until one has carried it, in the same batch, so the same transaction, as the change: no
 * round trip nor transaction of its own, and never a change without its key. Every commit carries
 * the fence.
 */
export const idempotency: MiddlewareHandler<AppBindings> = async (c, next) => {
  const header = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (header === undefined) return next();
  const key = parseIdempotencyKey(header);
  const { clientId, companyId } = c.var.auth;
  const scope: KeyScope = { companyId, clientId, keyHash: await keyHash(clientId, key) };
  const fingerprint = await requestFingerprint(c.req.method, c.req.url, await c.req.arrayBuffer());
  const lease = crypto.randomUUID();
  const scopeKey = `${clientId}:${scope.keyHash}`;
  let claimed: KeyRow | undefined;
  let finished: (() => void) | undefined;

  const context = writeContext(c);
  // The request's own bookkeeping of its key goes outside its write context (no fence, no actor).
  const own = database(c.var.session.d1);
  const now = Date.now();
  context.key = {
    claim: (d1) => claimStatement(d1, scope, { fingerprint, operationId: c.var.operationId, lease, now }),
    fence: (d1) => fenceStatement(d1, scope, lease),
    fenced: (message) => message.includes(LEASE_LOST),
    accept: (result) => {
      const row = claimedRow(result);
      if (row.lease !== lease) throw new KeyTaken(row);
      if (claimed) return; // concurrent commits of the request each carried the claim
      claimed = row;
      // The reminder engine records its changes under this: one use of the key (a retry that takes
      // it over keeps it; a use after the 24 h is another).
      c.set("idempotencyKey", `${scopeKey}:${row.created_at}`);
      running.set(scopeKey, new Promise<void>((resolve) => (finished = resolve)));
    },
    refusal: async () => new KeyTaken(await readKey(own.d1, scope)),
    claimed: false,
  };
  try {
    await next();
    const taken = keyTaken(c.error);
    if (taken) throw taken;
    if (!claimed) {
      // The operation wrote nothing, so it has not claimed the key: a success claims it now (an
      // empty commit: the claim alone), to be kept; a failure (not kept) only looks whether the key
      // holds an earlier request's answer.
      if (c.res.status < 300) await c.var.db.commit([]);
      else {
        const earlier = await readKey(own.d1, scope);
        if (earlier) throw new KeyTaken(earlier);
      }
    }
    if (claimed) await record(c, own, claimed.id, lease, key, context.committed > 0);
  } catch (error) {
    const taken = keyTaken(error);
    if (!taken) throw error;
    c.res = await answerExisting(c, scope, taken.row, fingerprint, key);
  } finally {
    if (finished) {
      running.delete(scopeKey);
      finished();
    }
  }
};

/** A KeyTaken the operation let through (drizzle wraps what the D1 layer throws). */
function keyTaken(error: unknown): KeyTaken | undefined {
  if (error instanceof KeyTaken) return error;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause instanceof KeyTaken ? cause : undefined;
}

/**
 * For an operation whose change is made outside D1 (by the reminder engine): claims the key now
 * (an empty commit) unless a commit has already, and answers what the change is recorded under
 * there (undefined without a key). Throws, for the middleware to answer, when the key is another
 * request's.
 */
export async function idempotencyKeyFor(c: Context<AppBindings>): Promise<string | undefined> {
  await c.var.db.commit([]);
  return c.get("idempotencyKey");
}

/**
 * What the request leaves behind, recorded before its response goes out: a success, or any answer
 * after it changed data, is kept (a 5xx after a change is kept as the "response lost" answer: the
 * change happened, the 500 would say otherwise); a failure that changed nothing frees the key, so
 * a retry runs afresh.
 */
async function record(
  c: Context<AppBindings>,
  own: Db,
  id: number,
  lease: string,
  key: string,
  changedData: boolean,
): Promise<void> {
  const res = c.res;
  try {
    if (res.status >= 300 && !changedData) {
      await releaseKey(own, id, lease);
      return;
    }
    const response =
      res.status >= 500
        ? lostResponse(c.var.requestId)
        : { status: res.status, body: await res.clone().text(), headers: keptHeaders(res.headers) };
    await finishKey(own, id, lease, {
      status: response.status,
      headers: JSON.stringify(response.headers),
      body: await sealBody(c.var.auth.clientId, key, response.body),
    });
  } catch (error) {
    // The response still goes out. The key stays running: once its lease runs out, a retry takes it
    // over when nothing was changed, and is told the response was lost otherwise.
    console.error(
      JSON.stringify({
        level: "error",
        msg: "idempotent response not recorded",
        request_id: c.var.requestId,
        error: String(error),
      }),
    );
  }
}

function keptHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of KEPT_HEADERS) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  return kept;
}

function lostResponse(requestId: string) {
  return {
    status: 409,
    body: JSON.stringify({ success: false, msg: RESPONSE_LOST, request_id: requestId }),
    headers: { "content-type": "application/json" },
  };
}

/** A repeat: the stored response, or 422 (another request), or 409 (still running, or its response lost). */
async function answerExisting(
  c: Context<AppBindings>,
  scope: KeyScope,
  first: KeyRow | null,
  fingerprint: string,
  key: string,
): Promise<Response> {
  let row = first;
  const local = running.get(`${scope.clientId}:${scope.keyHash}`);
  if (row?.state === "running" && local && row.fingerprint === fingerprint) {
    await Promise.race([local, new Promise((resolve) => setTimeout(resolve, LOCAL_WAIT_MS))]);
    row = (await readKey(c.var.session.d1, scope)) ?? row;
  }
  if (!row) return stillRunning(c); // freed meanwhile by a first request that failed: the client retries
  if (row.fingerprint !== fingerprint) {
    const msg = `This ${IDEMPOTENCY_KEY_HEADER} was already used for a different request (${row.operation_id}, or another body): use a new key for a new request`;
    return renderError(apiError(422, msg), c);
  }
  if (row.state === "running") {
    if (row.applied > 0 && row.lease_until <= Date.now()) return replay(c, lostResponse(c.var.requestId));
    return stillRunning(c);
  }
  let body: string;
  try {
    body = await openBody(c.var.auth.clientId, key, row.body ?? "");
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "stored idempotent response unreadable",
        request_id: c.var.requestId,
        error: String(error),
      }),
    );
    return replay(c, lostResponse(c.var.requestId));
  }
  return replay(c, {
    status: row.status ?? 200,
    body,
    headers: JSON.parse(row.headers ?? "{}") as Record<string, string>,
  });
}

function stillRunning(c: Context<AppBindings>): Response {
  noteOnLog(c, { idempotency: "in_progress" });
  return renderError(apiError(409, IN_PROGRESS, { "Retry-After": "1" }), c);
}

function replay(
  c: Context<AppBindings>,
  response: { status: number; body: string; headers: Record<string, string> },
): Response {
  noteOnLog(c, { idempotency: "replayed" });
  return new Response(response.body, {
    status: response.status,
    headers: { ...response.headers, [REPLAYED_HEADER]: "true" },
  });
}
