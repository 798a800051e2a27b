import { createMiddleware } from "hono/factory";
import type { Context } from "hono";
import type { AppBindings } from "../env";
import { shardOfClient } from "../db/directory";
import { database } from "../db/client";
import type { WriteContext } from "../db/commit";
import type { RequestSession } from "../db/request-session";
import { READS, answerBookmark, primarySession, requestSession } from "../db/session";
import { isShard } from "../db/shards";
import { ApiError, apiError, forbidden, invalidToken, oauthError } from "../lib/errors";
import { limitUnauthenticated } from "../lib/rate-limit";
import { findClientCached, type ClientRecord } from "./clients";
import { getSigningKeys } from "./keys";
import { logTokenRefusal } from "../records/audit-log/client-events";
import { effectiveScopes, grants, parseScopes } from "./scopes";
import { verifyAccessToken } from "./tokens";

const MOVE_RETRY_AFTER_SECONDS = 60;

const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** Longest Authorization header the bearer check reads; our tokens are well under 1,000 characters. */
export const MAX_AUTHORIZATION_HEADER_CHARS = 4096;

/**
 * Verifies the bearer token and that its client is still active and has not revoked it since it
 * was issued (token generation); sets `c.var.auth` with the effective scopes: the token's scopes
 * intersected with the client's current allowed scopes.
 */
export const authenticate = createMiddleware<AppBindings>(async (c, next) => {
  let session: RequestSession;
  try {
    session = await authenticateBearer(c);
  } catch (error) {
    // A token that does not authenticate: the request is its address's (429 once that is over).
    if (error instanceof ApiError && error.status === 401) await limitUnauthenticated(c);
    throw error;
  }
  await next();
  answerBookmark(c, session);
});

/** The checks of `authenticate`: sets the request's session, D1 and `auth`, or throws (401 for a token that does not authenticate). */
async function authenticateBearer(c: Context<AppBindings>): Promise<RequestSession> {
  const header = c.req.header("Authorization");
  if (!header) throw invalidToken("Missing bearer token in the Authorization header");
  if (header.length > MAX_AUTHORIZATION_HEADER_CHARS) {
    throw invalidToken(`The Authorization header is longer than ${MAX_AUTHORIZATION_HEADER_CHARS} characters`);
  }
  const token = BEARER.exec(header)?.[1];
  if (!token) throw invalidToken("The Authorization header must be 'Bearer <access_token>'");
  const keys = await getSigningKeys(c.env.JWT_SIGNING_KEYS);
  const claims = await verifyAccessToken(keys, token);
  const configuredTtl = Number(c.env.CLIENT_STATUS_TTL_SECONDS ?? 15);
  const ttl = Number.isFinite(configuredTtl) ? configuredTtl : 15;
  if (!isShard(c.env, claims.shard))
    throw invalidToken("The access token is invalid: it names a database this service does not have");
  const refuses = (record: ClientRecord | null) =>
    !record?.active || record.companyId !== claims.companyId || record.tokenGeneration !== claims.generation;
  const lookUp = async (session: RequestSession) => {
    let record = await findClientCached(session.d1, session.shard, claims.clientId, ttl);
    // A cached record read before this token was issued may be stale for it: the client may have
    // been activated again, or revoked and activated (a newer generation), since. Read it afresh
    // rather than refuse a new token; an old token's refusal costs this read at most once per entry.
    if (refuses(record))
      record = await findClientCached(session.d1, session.shard, claims.clientId, ttl, {
        fetchedSince: (claims.iat + 1) * 1000,
      });
    return record;
  };
  let session = requestSession(c, claims.shard);
  let client = await lookUp(session);
  if (!client || client.shardState === "moved") {
    // Issued before the client's account moved to another shard: the directory says where it is now.
    // Right after a move the old copy still answers 'moved' (until the clean-up): read the directory afresh.
    const now = await shardOfClient(c.env, claims.clientId, { fresh: client !== null });
    if (now !== claims.shard && isShard(c.env, now)) {
      session = requestSession(c, now);
      client = await lookUp(session);
    }
  }
  if (!client || client.shardState === "moved" || client.companyId !== claims.companyId) {
    throw invalidToken("The client of this token is not active");
  }
  if (!client.active) {
    await logRefusal(c, session, client, "client_inactive");
    throw invalidToken("The client of this token is not active");
  }
  if (client.tokenGeneration !== claims.generation) {
    await logRefusal(c, session, client, "token_revoked");
    throw invalidToken("The access token has been revoked");
  }
  if (client.shardState === "read_only" && !READS.has(c.req.method)) {
    throw apiError(
      503,
      `The account is moving to another database and is read-only for a few minutes; retry after ${MOVE_RETRY_AFTER_SECONDS} s`,
      {
        "Retry-After": String(MOVE_RETRY_AFTER_SECONDS),
      },
    );
  }
  c.set("session", session);
  // The request's one handle. A write request's commits name its actor for the audit log, in each
  // write's own batch (src/db/commit.ts); the request id and operationId are set before authentication.
  let context: WriteContext | undefined;
  if (!READS.has(c.req.method)) {
    context = {
      committed: 0,
      actor: {
        accountId: client.accountId,
        companyId: claims.companyId,
        clientId: claims.clientId,
        userId: claims.userId,
        requestId: c.get("requestId") ?? null,
        operationId: c.get("operationId") ?? null,
        via: "api",
      },
    };
    c.set("writes", context);
  }
  const shard = session.shard;
  c.set(
    "db",
    database(session.d1, context, () => primarySession(c.env, shard)),
  );
  const scopes = effectiveScopes(parseScopes(claims.scope), parseScopes(client.scopes));
  c.set("auth", {
    clientId: claims.clientId,
    companyId: claims.companyId,
    userId: claims.userId,
    accountId: client.accountId,
    isOwner: client.isOwner,
    scope: scopes.join(" "),
    scopes: new Set(scopes),
    shard: session.shard,
    iat: claims.iat,
    exp: claims.exp,
  });
  return session;
}

/** 403 Shape A unless the token grants the scope (any one of a list; `required(c)`: the one the request names). */
export function checkScope(required: string | readonly string[] | ((c: Context<AppBindings>) => string)) {
  return createMiddleware<AppBindings>(async (c, next) => {
    const wanted =
      typeof required === "function" ? [required(c)] : typeof required === "string" ? [required] : required;
    if (!wanted.some((s) => grants(c.var.auth.scopes, s))) {
      throw oauthError(403, "insufficient_scope", `This call needs the ${wanted.join(" or ")} scope`, {
        requiredScope: wanted[0]!,
        headers: { "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${wanted.join(" ")}"` },
      });
    }
    await next();
  });
}

/** For company, department and document-type management: the account owner only (Shape B 403). */
export const requireOwner = createMiddleware<AppBindings>(async (c, next) => {
  if (!c.var.auth.isOwner) throw forbidden("Only the account owner can manage this resource");
  await next();
});

/** A revoked or deactivated client's token presented: an audit entry (best effort). */
const logRefusal = (c: Context<AppBindings>, session: RequestSession, client: ClientRecord, reason: string) =>
  logTokenRefusal(database(session.d1), {
    client,
    requestId: c.get("requestId") ?? null,
    operationId: c.get("operationId") ?? null,
    details: { reason },
  });
