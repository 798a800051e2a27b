import { createMiddleware } from "hono/factory";
import type { AppBindings } from "../env";
import { forbidden, invalidToken, oauthError } from "../lib/errors";
import { findClientCached } from "./clients";
import { getSigningKeys } from "./keys";
import { grants, parseScopes } from "./scopes";
import { verifyAccessToken } from "./tokens";

const BEARER = /^Bearer\s+(\S+)\s*$/i;

/** Verifies the bearer token and that its client is still active; sets `c.var.auth`. */
export const authenticate = createMiddleware<AppBindings>(async (c, next) => {
  const header = c.req.header("Authorization");
  if (!header) throw invalidToken("Missing bearer token in the Authorization header");
  const token = BEARER.exec(header)?.[1];
  if (!token) throw invalidToken("The Authorization header must be 'Bearer <access_token>'");
  const keys = await getSigningKeys(c.env.JWT_SIGNING_KEYS);
  const claims = await verifyAccessToken(keys, token);
  const ttl = Number(c.env.CLIENT_STATUS_TTL_SECONDS ?? 15);
  const client = await findClientCached(c.env.DB, claims.clientId, Number.isFinite(ttl) ? ttl : 15);
  if (!client || !client.active || client.companyId !== claims.companyId) {
    throw invalidToken("The client of this token is not active");
  }
  c.set("auth", {
    clientId: claims.clientId,
    companyId: claims.companyId,
    userId: claims.userId,
    accountId: client.accountId,
    isOwner: client.isOwner,
    scope: claims.scope,
    scopes: new Set(parseScopes(claims.scope)),
    iat: claims.iat,
    exp: claims.exp,
  });
  await next();
});

/** Authenticates, then requires `scope` (or `*`); a missing scope is a Shape A 403. */
export function requireScope(scope: string) {
  return createMiddleware<AppBindings>(async (c, next) => {
    await authenticate(c, async () => {
      if (!grants(c.var.auth.scopes, scope)) {
        throw oauthError(403, "insufficient_scope", `This call needs the ${scope} scope`, {
          requiredScope: scope,
          headers: { "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}"` },
        });
      }
      await next();
    });
  });
}

/** For company, department and document-type management: the account owner only (Shape B 403). */
export const requireOwner = createMiddleware<AppBindings>(async (c, next) => {
  if (!c.var.auth.isOwner) throw forbidden("Only the account owner can manage this resource");
  await next();
});
