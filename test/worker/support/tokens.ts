// Access tokens: the demo clients' real tokens, and forged ones signed outside the Worker.
import { env } from "cloudflare:workers";
import { SignJWT, type JWTPayload, type ProtectedHeaderParameters } from "jose";
import { call } from "./http";

/** Tokens of the four demo clients, for a file's `beforeAll`. */
export async function demoTokens() {
  const [owner, member, readonly, other] = await Promise.all(
    ["demo-owner", "demo-member", "demo-readonly", "demo-other"].map((id) => tokenFor(id)),
  );
  return { owner: owner!, member: member!, readonly: readonly!, other: other! };
}

const tokens = new Map<string, string>();

/** A token for a demo client (cached per test file). */
export async function tokenFor(clientId: string, scope?: string): Promise<string> {
  const key = `${clientId} ${scope ?? ""}`;
  const cached = tokens.get(key);
  if (cached) return cached;
  const res = await call("issueToken", "/v1/oauth/token", {
    body: {
      grant_type: "client_credentials",
      client_id: clientId,
      client_secret: `${clientId}-secret`,
      ...(scope ? { scope } : {}),
    },
  });
  if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${JSON.stringify(res.body)}`);
  tokens.set(key, res.body.access_token);
  return res.body.access_token;
}

/** The `kid:secret` pairs the tests run with (vitest.config.ts), in order: current first. */
export function testSigningKeys(): Array<{ kid: string; secret: string }> {
  return (env.JWT_SIGNING_KEYS ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => {
      const colon = pair.indexOf(":");
      return { kid: pair.slice(0, colon), secret: pair.slice(colon + 1) };
    });
}

/**
 * Signs an access token outside the Worker, shaped like the ones it issues (demo-owner by
 * default). Every part can be overridden to forge a bad one.
 */
export async function signTestToken(
  options: {
    kid?: string;
    secret?: string;
    alg?: string;
    issuer?: string;
    sub?: string;
    claims?: Record<string, unknown>;
    iat?: number;
    exp?: number;
  } = {},
): Promise<string> {
  const current = testSigningKeys()[0]!;
  const now = Math.floor(Date.now() / 1000);
  const key = new TextEncoder().encode(options.secret ?? current.secret);
  return new SignJWT({ company_id: 1, userid: 1, scope: "*", ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? "HS256", kid: options.kid ?? current.kid, typ: "JWT" })
    .setIssuer(options.issuer ?? "expiry-reminder-api")
    .setSubject(options.sub ?? "demo-owner")
    .setIssuedAt(options.iat ?? now)
    .setExpirationTime(options.exp ?? now + 3600)
    .setJti(crypto.randomUUID())
    .sign(key);
}

/** The decoded (unverified) protected header and payload of a JWT. */
export function decodeJwt(token: string): { header: ProtectedHeaderParameters; payload: JWTPayload } {
  const [h, p] = token.split(".");
  const decode = (part: string) => JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/")));
  return { header: decode(h!), payload: decode(p!) };
}
