import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppBindings } from "../env";
import { findClient } from "../auth/clients";
import { constantTimeEqual } from "../auth/constant-time";
import { getSigningKeys } from "../auth/keys";
import { authenticate } from "../auth/middleware";
import { isScopeAllowed, parseScopes } from "../auth/scopes";
import { hashClientSecret } from "../auth/secret-hash";
import { TOKEN_LIFETIME_SECONDS, signAccessToken } from "../auth/tokens";
import { oauthError } from "../lib/errors";
import { OAuthErrorSchema, createRouter, errorResponses, z } from "../lib/openapi";

export const TokenRequestSchema = z
  .object({
    grant_type: z.string().openapi({ example: "client_credentials", description: "Only `client_credentials`." }),
    client_id: z.string().optional().openapi({ example: "demo-owner" }),
    client_secret: z.string().optional().openapi({ example: "demo-owner-secret" }),
    scope: z
      .string()
      .optional()
      .openapi({ example: "contacts:read contacts:write", description: "Space separated. Omitted: every scope the client is allowed." }),
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
    scope: z.string().openapi({ example: "*" }),
    exp: z.number().int().openapi({ example: 1795000000 }),
    iat: z.number().int().openapi({ example: 1794913600 }),
  })
  .openapi("TokenInfo");

const tokenRoute = createRoute({
  method: "post",
  path: "/v1/oauth/token",
  tags: ["Authentication"],
  summary: "Issue an access token (client credentials)",
  description:
    "RFC 6749 client-credentials grant. Credentials may come in the body (JSON or `application/x-www-form-urlencoded`) " +
    "or as HTTP Basic client authentication in the optional `Authorization` header. All errors use Shape A.",
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
    200: { description: "Token issued", content: { "application/json": { schema: TokenResponseSchema } } },
    400: { description: "invalid_request, unsupported_grant_type or invalid_scope", content: { "application/json": { schema: OAuthErrorSchema } } },
    401: { description: "invalid_client: wrong or inactive client credentials", content: { "application/json": { schema: OAuthErrorSchema } } },
    500: { description: "server_error: signing key not configured", content: { "application/json": { schema: OAuthErrorSchema } } },
    503: { description: "service_unavailable: credential store unreachable", content: { "application/json": { schema: OAuthErrorSchema } } },
  },
});

const meRoute = createRoute({
  method: "get",
  path: "/v1/oauth/me",
  tags: ["Authentication"],
  summary: "Inspect the current access token",
  description: "Any valid token may call this; no scope is needed.",
  security: [{ oauth2: [] }],
  middleware: [authenticate] as const,
  responses: {
    200: { description: "The token's claims", content: { "application/json": { schema: MeResponseSchema } } },
    401: errorResponses.unauthorized,
    500: { description: "server_error: signing key not configured", content: { "application/json": { schema: OAuthErrorSchema } } },
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

/** Client credentials from HTTP Basic (RFC 6749 §2.3.1) when present, else from the body. */
function readClientCredentials(c: Context, params: { client_id?: string; client_secret?: string }) {
  const header = c.req.header("Authorization");
  const basic = header && /^Basic\s+(\S+)$/i.exec(header)?.[1];
  if (basic) {
    let decoded: string;
    try {
      decoded = atob(basic);
    } catch {
      throw basicFailure("Malformed HTTP Basic credentials");
    }
    const colon = decoded.indexOf(":");
    if (colon < 0) throw basicFailure("Malformed HTTP Basic credentials");
    let id: string;
    let secret: string;
    try {
      id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " "));
      secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " "));
    } catch {
      throw basicFailure("Malformed HTTP Basic credentials");
    }
    if (params.client_id !== undefined && params.client_id !== id) {
      throw invalidRequest("client_id in the body does not match the Authorization header");
    }
    return { clientId: id, clientSecret: secret, viaBasic: true };
  }
  return { clientId: params.client_id, clientSecret: params.client_secret, viaBasic: false };
}

function basicFailure(description: string) {
  return oauthError(401, "invalid_client", description, { headers: { "WWW-Authenticate": 'Basic realm="oauth"' } });
}

// Hash of a throwaway secret, so an unknown client_id costs the same work as a known one.
const UNKNOWN_CLIENT_HASH = "0".repeat(64);

export const oauthRouter = createRouter();

oauthRouter.openAPIRegistry.registerPath(tokenRoute);
oauthRouter.post(tokenRoute.path, async (c) => {
  const keys = await getSigningKeys(c.env.JWT_SIGNING_KEYS);
  const raw = await readTokenParams(c);
  const parsed = TokenRequestSchema.safeParse(raw);
  if (!parsed.success) {
    const field = parsed.error.issues[0]?.path.join(".") ?? "body";
    throw invalidRequest(field === "grant_type" && raw.grant_type === undefined ? "grant_type is required" : `${field} must be a string`);
  }
  const params = parsed.data;
  if (params.grant_type !== "client_credentials") {
    throw oauthError(400, "unsupported_grant_type", "Only the client_credentials grant type is supported");
  }
  const { clientId, clientSecret, viaBasic } = readClientCredentials(c, params);
  const fail = () =>
    viaBasic ? basicFailure("Client authentication failed") : oauthError(401, "invalid_client", "Client authentication failed");
  if (!clientId || !clientSecret) throw fail();

  const client = await findClient(c.env.DB, clientId);
  const presented = await hashClientSecret(clientSecret, client?.secretSalt ?? "");
  const matches = constantTimeEqual(presented, client?.secretHash ?? UNKNOWN_CLIENT_HASH);
  if (!client || !matches || !client.active) throw fail();

  const allowed = parseScopes(client.scopes);
  let scope = client.scopes.trim();
  if (params.scope !== undefined && params.scope.trim() !== "") {
    const requested = parseScopes(params.scope);
    const refused = requested.filter((s) => !isScopeAllowed(s, allowed));
    if (refused.length > 0) {
      throw oauthError(400, "invalid_scope", `Scope not allowed for this client: ${refused.join(" ")}`);
    }
    scope = requested.join(" ");
  }
  const accessToken = await signAccessToken(keys, {
    clientId: client.clientId,
    companyId: client.companyId,
    userId: client.userId,
    scope,
  });
  c.header("Cache-Control", "no-store");
  c.header("Pragma", "no-cache");
  return c.json({ success: true as const, token_type: "Bearer" as const, access_token: accessToken, expires_in: TOKEN_LIFETIME_SECONDS, scope }, 200);
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
