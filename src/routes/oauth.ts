import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Env } from "../env";
import { shardOfClient } from "../db/directory";
import { database } from "../db/client";
import { bookmarkOnAnswer, openRequestSession } from "../db/session";
import { isShard } from "../db/shards";
import { constantTimeEqual } from "../auth/constant-time";
import { getSigningKeys } from "../auth/keys";
import { MAX_AUTHORIZATION_HEADER_CHARS, authenticate } from "../auth/middleware";
import { isScopeAllowed, parseScopes } from "../auth/scopes";
import { hashClientSecret } from "../auth/secret-hash";
import { clientEventStatement, logTokenRefusal } from "../records/audit-log/client-events";
import {
  TOKEN_FAILURE_LIMIT,
  TOKEN_FAILURE_WINDOW_SECONDS,
  admitTokenAttempt,
  lockedSeconds,
  releaseTokenAttemptStatement,
} from "../auth/token-failures";
import { CLOCK_SKEW_LEEWAY_SECONDS, TOKEN_LIFETIME_SECONDS, signAccessToken } from "../auth/tokens";
import { echo } from "../lib/echo";
import { limitAuthenticated } from "../lib/rate-limit";
import { oauthError } from "../lib/errors";
import {
  ApiErrorSchema,
  OAuthErrorSchema,
  createRouter,
  errorResponses,
  jsonResponse,
  named,
  responseHeaders,
  sharedParameters,
  z,
} from "../lib/openapi";

/**
 * Longest accepted value of each token-endpoint parameter, in characters. Longer is a 400
 * `invalid_request` naming the parameter, answered before the credential store is consulted.
 */
export const TOKEN_PARAM_MAX_CHARS = {
  grant_type: 64,
  client_id: 128,
  client_secret: 256,
  scope: 1024,
} as const;

/**
 * Longest HTTP Basic `Authorization` header the token endpoint decodes (the largest client_id and
 * client_secret, form-encoded and in base64, take about 1,550 characters).
 */
export const MAX_BASIC_AUTHORIZATION_CHARS = 2048;

/** An `invalid_scope` description names at most this many refused scopes, each through `echo()`. */
const MAX_REFUSED_SCOPES_LISTED = 5;

const limit = (field: keyof typeof TOKEN_PARAM_MAX_CHARS) => `At most ${TOKEN_PARAM_MAX_CHARS[field]} characters.`;

/** The published request schema. The handler checks the same rules by hand (`checkTokenParams`). */
export const TokenRequestSchema = z
  .object({
    grant_type: z.enum(["client_credentials"]).openapi({
      example: "client_credentials",
      description:
        "Only `client_credentials`: any other value is 400 `unsupported_grant_type`; a missing, non-string or " +
        `longer than ${TOKEN_PARAM_MAX_CHARS.grant_type} characters one is 400 \`invalid_request\`.`,
    }),
    client_id: z
      .string()
      .max(TOKEN_PARAM_MAX_CHARS.client_id)
      .optional()
      .openapi({
        example: "demo-owner",
        description: `Omit when HTTP Basic client authentication is used. ${limit("client_id")}`,
      }),
    client_secret: z
      .string()
      .max(TOKEN_PARAM_MAX_CHARS.client_secret)
      .optional()
      .openapi({
        example: "demo-owner-secret",
        description: `Omit when HTTP Basic client authentication is used. ${limit("client_secret")}`,
      }),
    scope: z
      .string()
      .max(TOKEN_PARAM_MAX_CHARS.scope)
      .optional()
      .openapi({
        example: "contacts:read contacts:write",
        description: `Space separated. Omitted or blank: every scope the client is allowed. ${limit("scope")}`,
      }),
  })
  .openapi("TokenRequest");

const TokenResponseSchema = z
  .object({
    success: z.literal(true),
    token_type: z.literal("Bearer"),
    access_token: z.string(),
    expires_in: z.number().int().openapi({ example: TOKEN_LIFETIME_SECONDS }),
    scope: z.string().openapi({ example: "*" }),
  })
  .openapi("TokenResponse");

const MeResponseSchema = z
  .object({
    success: z.literal(true),
    client_id: z.string().openapi({ example: "demo-owner" }),
    company_id: z.number().int().openapi({ example: 1 }),
    userid: z.number().int().openapi({ example: 1 }),
    scope: z.string().openapi({
      example: "*",
      description:
        "The effective scope: the token's scope intersected with the scopes the client " +
        "is allowed now. May be empty.",
    }),
    exp: z.number().int().openapi({ example: 1795000000 }),
    iat: z.number().int().openapi({ example: 1794913600 }),
  })
  .openapi("TokenInfo");

const oauthErrorResponse = (
  description: string,
  headers?: Record<string, { description: string; schema: { type: "string" } }>,
) => ({
  description,
  content: { "application/json": { schema: OAuthErrorSchema } },
  ...(headers ? { headers } : {}),
});

export const tokenRoute = createRoute({
  method: "post",
  path: "/v1/oauth/token",
  operationId: "issueToken",
  tags: ["Authentication"],
  summary: "Issue an access token (client credentials)",
  description: [
    "RFC 6749 client-credentials grant. Credentials may come in the body (JSON or " +
      "`application/x-www-form-urlencoded`) " +
      "or as HTTP Basic client authentication in the optional `Authorization` header (Basic wins; a body `client_id` " +
      "that contradicts it is 400 `invalid_request`; any other scheme is ignored). All errors use Shape A.",
    `Limits, checked before the credential store is consulted (longer is 400 \`invalid_request\` naming the field): ` +
      `grant_type ${TOKEN_PARAM_MAX_CHARS.grant_type}, client_id ${TOKEN_PARAM_MAX_CHARS.client_id}, ` +
      `client_secret ${TOKEN_PARAM_MAX_CHARS.client_secret}, scope ${TOKEN_PARAM_MAX_CHARS.scope} characters; an HTTP Basic ` +
      `\`Authorization\` header at most ${MAX_BASIC_AUTHORIZATION_CHARS} characters, its client_id and client_secret as above.`,
    "Errors: missing `grant_type`, a non-string or too long parameter, a malformed body → 400 `invalid_request`; " +
      "another grant type → 400 `unsupported_grant_type`; a requested scope that is " +
      "unknown or not allowed for the client → " +
      `400 \`invalid_scope\` (naming at most ${MAX_REFUSED_SCOPES_LISTED} refused scopes, each shortened); unknown client, ` +
      "wrong secret, missing credentials or inactive client → 401 `invalid_client`.",
    `The token is an HS256 JWT valid for ${TOKEN_LIFETIME_SECONDS} seconds. It carries the client's token generation: ` +
      "revoking the client bumps the generation, so tokens issued before a revocation " +
      "stay invalid even after the client " +
      "is activated again. Its scope is re-checked on every request against the scopes " +
      "the client is allowed at that time.",
  ].join("\n\n"),
  security: [],
  request: {
    body: {
      required: true,
      content: {
        "application/json": { schema: TokenRequestSchema },
        "application/x-www-form-urlencoded": { schema: TokenRequestSchema },
      },
    },
  },
  responses: {
    200: {
      description: "Token issued",
      headers: responseHeaders.noStore,
      content: { "application/json": { schema: TokenResponseSchema } },
    },
    400: oauthErrorResponse("invalid_request, unsupported_grant_type or invalid_scope"),
    401: oauthErrorResponse(
      "invalid_client: unknown client, wrong secret, missing credentials or inactive " +
        'client. Every such 401 carries the challenge `Basic realm="oauth"` (RFC 9110 ' +
        "wants one on every 401; HTTP Basic is the other way to send the credentials), " +
        "whichever way they came.",
      responseHeaders.wwwAuthenticate,
    ),
    413: oauthErrorResponse("invalid_request: body over 8 KiB"),
    429: oauthErrorResponse(
      `too_many_requests: ${TOKEN_FAILURE_LIMIT} wrong secrets for the client_id were checked within ${TOKEN_FAILURE_WINDOW_SECONDS / 60} minutes (every attempt is refused until the window ends, whatever the secret; attempts are counted before the secret is compared, so requests sent at once get no more than ${TOKEN_FAILURE_LIMIT} checked; a right secret is not counted and does not forgive the window's failures), or the anonymous rate limit of the caller's address`,
      responseHeaders.retryAfter,
    ),
    414: oauthErrorResponse("invalid_request: URL over 8,192 characters"),
    415: oauthErrorResponse("invalid_request: a Content-Type charset other than UTF-8"),
    500: oauthErrorResponse("server_error: signing key not configured"),
    503: oauthErrorResponse("service_unavailable: credential store unreachable", responseHeaders.retryAfter),
  },
});

const meRoute = createRoute({
  method: "get",
  path: "/v1/oauth/me",
  operationId: "getTokenInfo",
  tags: ["Authentication"],
  summary: "Inspect the current access token",
  description: [
    "Any valid token may call this; no scope is needed.",
    "`scope` is the effective scope of the token: its granted scope intersected with " +
      "the scopes the client is allowed " +
      "now (`*` on either side stands for every scope), so narrowing a client narrows its existing tokens. It may be " +
      "empty; such a token still authenticates but every scoped operation answers 403 `insufficient_scope`.",
    `401 \`invalid_token\`: a missing or malformed \`Authorization\` header (longer than ${MAX_AUTHORIZATION_HEADER_CHARS} ` +
      "characters included), a bad signature, an unknown `kid`, an expired token, a token whose `iat` lies more than " +
      `${CLOCK_SKEW_LEEWAY_SECONDS} seconds in the future or whose lifetime exceeds ${TOKEN_LIFETIME_SECONDS} seconds, ` +
      "an inactive client, or a token issued before the client's last revocation.",
  ].join("\n\n"),
  security: [{ oauth2: [] }],
  middleware: [named("getTokenInfo"), authenticate, limitAuthenticated] as const,
  // Authentication reads the client in the request's D1 session, which a sent X-D1-Bookmark constrains.
  parameters: [sharedParameters.d1Bookmark],
  responses: {
    200: { description: "The token's claims", content: { "application/json": { schema: MeResponseSchema } } },
    400: jsonResponse(ApiErrorSchema, "A malformed X-D1-Bookmark (Shape B, naming the header)"),
    401: { ...errorResponses.unauthorized, headers: responseHeaders.wwwAuthenticate },
    414: errorResponses.uriTooLong,
    429: errorResponses.tooManyRequests,
    500: oauthErrorResponse("server_error: signing key not configured"),
    503: oauthErrorResponse("service_unavailable: credential store unreachable", responseHeaders.retryAfter),
  },
});

const invalidRequest = (description: string) => oauthError(400, "invalid_request", description);

async function readTokenParams(c: Context): Promise<Record<string, unknown>> {
  const type = (c.req.header("Content-Type") ?? "").split(";")[0]!.trim().toLowerCase();
  try {
    if (type === "application/x-www-form-urlencoded") {
      // Decoded by hand: workerd warns when .text() reads a body whose type is not textual.
      return Object.fromEntries(new URLSearchParams(new TextDecoder().decode(await c.req.arrayBuffer())));
    }
    if (type === "application/json" || type === "") {
      const text = await c.req.text();
      if (!text.trim()) return {};
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw invalidRequest("The request body must be a JSON object");
      }
      return parsed as Record<string, unknown>;
    }
  } catch (err) {
    if (err instanceof SyntaxError) throw invalidRequest("Malformed JSON in request body");
    throw err;
  }
  throw invalidRequest("Content-Type must be application/json or application/x-www-form-urlencoded");
}

interface TokenParams {
  grant_type: string;
  client_id?: string;
  client_secret?: string;
  scope?: string;
}

/**
 * The token parameters, checked by hand rather than by zod so that each failure keeps the error
 * the contract gives it (a wrong grant_type is `unsupported_grant_type`, not a validation error):
 * types and lengths first, all before any D1 access. Unknown parameters are ignored (RFC 6749).
 */
function checkTokenParams(raw: Record<string, unknown>): TokenParams {
  const params: Record<string, string> = {};
  for (const [field, max] of Object.entries(TOKEN_PARAM_MAX_CHARS)) {
    const value = Object.hasOwn(raw, field) ? raw[field] : undefined;
    if (value === undefined) {
      if (field === "grant_type") throw invalidRequest("grant_type is required");
      continue;
    }
    if (typeof value !== "string") throw invalidRequest(`${field} must be a string`);
    if (value.length > max) throw invalidRequest(`${field} must be at most ${max} characters`);
    params[field] = value;
  }
  return params as unknown as TokenParams;
}

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1) when present, else from the body. */
function readClientCredentials(c: Context, params: TokenParams) {
  const header = c.req.header("Authorization");
  if (header && /^Basic\s/i.test(header) && header.length > MAX_BASIC_AUTHORIZATION_CHARS) {
    throw invalidRequest(
      `The HTTP Basic Authorization header must be at most ${MAX_BASIC_AUTHORIZATION_CHARS} characters`,
    );
  }
  const basic = header && /^Basic\s+(\S+)$/i.exec(header)?.[1];
  if (basic) {
    let decoded: string;
    try {
      decoded = atob(basic);
    } catch {
      throw clientFailure("Malformed HTTP Basic credentials");
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) throw clientFailure("Malformed HTTP Basic credentials");
    let id: string;
    let secret: string;
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " "));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "));
    } catch {
      throw clientFailure("Malformed HTTP Basic credentials");
    }
    if (id.length > TOKEN_PARAM_MAX_CHARS.client_id) {
      throw invalidRequest(
        `client_id in the HTTP Basic credentials must be at most ${TOKEN_PARAM_MAX_CHARS.client_id} characters`,
      );
    }
    if (secret.length > TOKEN_PARAM_MAX_CHARS.client_secret) {
      throw invalidRequest(
        `client_secret in the HTTP Basic credentials must be at most ${TOKEN_PARAM_MAX_CHARS.client_secret} characters`,
      );
    }
    if (params.client_id !== undefined && params.client_id !== id) {
      throw invalidRequest("client_id in the body does not match the Authorization header");
    }
    return { clientId: id, clientSecret: secret };
  }
  return { clientId: params.client_id, clientSecret: params.client_secret };
}

/** The refused scopes for an `invalid_scope` description: a few, each shortened by `echo()`. */
function describeRefused(refused: readonly string[]): string {
  const listed = refused.slice(0, MAX_REFUSED_SCOPES_LISTED).map((s) => echo(s));
  const more = refused.length - listed.length;
  return listed.join(" ") + (more > 0 ? ` (and ${more} more)` : "");
}

/** 401 invalid_client with the Basic challenge, also when the credentials came in the body (RFC 9110: every 401 has one). */
function clientFailure(description: string) {
  return oauthError(401, "invalid_client", description, { headers: { "WWW-Authenticate": 'Basic realm="oauth"' } });
}

/** Bookkeeping that must not turn a token request into a 5xx when D1 refuses it. */
async function bestEffort(write: Promise<unknown>, msg: string): Promise<void> {
  try {
    await write;
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg, error: String(error) }));
  }
}

/** The shard of a client's account, from the directory; a shard this deployment lacks or an unreachable directory is 503. */
async function clientShard(env: Env, clientId: string): Promise<number> {
  let shard: number;
  try {
    shard = await shardOfClient(env, clientId, { fresh: true });
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "directory unavailable", error: String(error) }));
    shard = -1;
  }
  if (!isShard(env, shard)) {
    throw oauthError(503, "service_unavailable", "The credential store is unavailable; try again shortly", {
      headers: { "Retry-After": "5" },
    });
  }
  return shard;
}

// Hash of a throwaway secret, so an unknown client_id costs the same work as a known one.
const UNKNOWN_CLIENT_HASH = "0".repeat(64);

export const oauthRouter = createRouter();

oauthRouter.openAPIRegistry.registerPath(tokenRoute);
oauthRouter.post(tokenRoute.path, named("issueToken"), async (c) => {
  const keys = await getSigningKeys(c.env.JWT_SIGNING_KEYS);
  const params = checkTokenParams(await readTokenParams(c));
  if (params.grant_type !== "client_credentials") {
    throw oauthError(400, "unsupported_grant_type", "Only the client_credentials grant type is supported");
  }
  const { clientId, clientSecret } = readClientCredentials(c, params);
  const fail = () => clientFailure("Client authentication failed");
  if (!clientId || !clientSecret) throw fail();

  const session = openRequestSession(c.env, await clientShard(c.env, clientId), { write: true, bookmark: null });
  // The endpoint's writes are its own bookkeeping and entries that name their actor: no write context.
  const db = database(session.d1);
  const now = Math.floor(Date.now() / 1000);
  // The attempt is counted before the secret is compared, in the statement that admits it: of any
  // number of requests at once, at most TOKEN_FAILURE_LIMIT per window get this far.
  const { client, admitted } = await admitTokenAttempt(db, clientId, now);
  if (client && !admitted) {
    const locked = lockedSeconds(client.tokenFailuresSince, now);
    throw oauthError(
      429,
      "too_many_requests",
      `Too many failed attempts for this client_id: at most ${TOKEN_FAILURE_LIMIT} per ${TOKEN_FAILURE_WINDOW_SECONDS / 60} minutes; retry after ${locked} s`,
      { headers: { "Retry-After": String(locked) } },
    );
  }
  const presented = await hashClientSecret(clientSecret, client?.secretSalt ?? "");
  const matches = constantTimeEqual(presented, client?.secretHash ?? UNKNOWN_CLIENT_HASH);
  // A wrong secret keeps its attempt: it is the failure. (An unknown client_id has nothing counted.)
  if (!client || !matches) throw fail();
  // The right secret: its attempt is handed back whatever comes next (in the issue's own batch below).
  const release = releaseTokenAttemptStatement(session.d1, client.clientId);
  const event = { client, requestId: c.get("requestId") ?? null, operationId: "issueToken" };
  if (!client.active) {
    // The right secret of a deactivated client: someone still uses it, which its owner wants to know.
    await bestEffort(db.commit([release]), "token attempt not released");
    await logTokenRefusal(db, { ...event, details: { reason: "client_inactive" } });
    throw fail();
  }

  const allowed = parseScopes(client.scopes);
  let scope = allowed.join(" ");
  if (params.scope !== undefined && params.scope.trim() !== "") {
    const requested = parseScopes(params.scope);
    const refused = requested.filter((s) => !isScopeAllowed(s, allowed));
    if (refused.length > 0) {
      await bestEffort(db.commit([release]), "token attempt not released");
      throw oauthError(400, "invalid_scope", `Scope not allowed for this client: ${describeRefused(refused)}`);
    }
    scope = requested.join(" ");
  }
  // The issue is logged before the token exists: no token without its entry (a refused write is a 503).
  try {
    await db.commit([
      clientEventStatement(session.d1, {
        ...event,
        action: "token_issued",
        details: { scope, expires_in: TOKEN_LIFETIME_SECONDS },
      }),
      release,
    ]);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "token issue not logged", error: String(error) }));
    throw oauthError(503, "service_unavailable", "The credential store is unavailable; try again shortly", {
      headers: { "Retry-After": "5" },
    });
  }
  const accessToken = await signAccessToken(keys, {
    clientId: client.clientId,
    companyId: client.companyId,
    userId: client.userId,
    scope,
    generation: client.tokenGeneration,
    shard: session.shard,
  });
  bookmarkOnAnswer(c, session);
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
  return c.json(
    {
      success: true as const,
      token_type: "Bearer" as const,
      access_token: accessToken,
      expires_in: TOKEN_LIFETIME_SECONDS,
      scope,
    },
    200,
  );
});

// `authenticate` already answers 500 server_error when no signing key is configured.
oauthRouter.openapi(meRoute, (c) => {
  const auth = c.var.auth;
  return c.json(
    {
      success: true as const,
      client_id: auth.clientId,
      company_id: auth.companyId,
      userid: auth.userId,
      scope: auth.scope,
      exp: auth.exp,
      iat: auth.iat,
    },
    200,
  );
});
