import { SignJWT, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { invalidToken } from "../lib/errors";
import type { SigningKeys } from "./keys";

export const TOKEN_ISSUER = "expiry-reminder-api";
export const TOKEN_LIFETIME_SECONDS = 86400;
/**
 * How far in the future a token's `iat` may lie: tokens are issued and checked by different
 * machines, whose clocks may differ by a little. Beyond that the token is refused.
 */
export const CLOCK_SKEW_LEEWAY_SECONDS = 5;

export interface TokenClaims {
  clientId: string;
  companyId: number;
  userId: number;
  scope: string;
  /** The client's token generation when the token was issued (0 for tokens without `gen`). */
  generation: number;
  /** The shard of the client's account when the token was issued (0 for tokens without `shd`). */
  shard: number;
  iat: number;
  exp: number;
}

interface Payload extends JWTPayload {
  company_id: number;
  userid: number;
  scope: string;
  gen?: number;
  shd?: number;
}

export async function signAccessToken(
  keys: SigningKeys,
  claims: { clientId: string; companyId: number; userId: number; scope: string; generation: number; shard: number },
): Promise<string> {
  const issuedAt = Math.floor(Date.now() / 1000);
  return (
    new SignJWT({
      company_id: claims.companyId,
      userid: claims.userId,
      scope: claims.scope,
      gen: claims.generation,
      shd: claims.shard,
    })
      .setProtectedHeader({ alg: "HS256", kid: keys.current.kid, typ: "JWT" })
      .setIssuer(TOKEN_ISSUER)
      .setSubject(claims.clientId)
      // One reading of the clock for both: jose reads it again for a relative expiry, and a second
      // boundary in between gave exp - iat = lifetime + 1, which verification refuses.
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + TOKEN_LIFETIME_SECONDS)
      .setJti(crypto.randomUUID())
      .sign(keys.current.key)
  );
}

/**
 * Verifies signature, issuer, expiry, that `iat` is not in the future (beyond
 * CLOCK_SKEW_LEEWAY_SECONDS) and that the token lives no longer than the service issues tokens
 * for; any failure is a Shape A 401 `invalid_token`.
 */
export async function verifyAccessToken(keys: SigningKeys, token: string): Promise<TokenClaims> {
  let payload: Payload;
  try {
    ({ payload } = await jwtVerify<Payload>(
      token,
      (header) => {
        const key = header.kid ? keys.byKid.get(header.kid) : undefined;
        if (!key) throw new joseErrors.JWKSNoMatchingKey();
        return key;
      },
      { algorithms: ["HS256"], issuer: TOKEN_ISSUER, requiredClaims: ["sub", "exp", "iat"] },
    ));
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw invalidToken("The access token has expired");
    throw invalidToken("The access token is invalid");
  }
  // Tokens issued before generations existed carry no `gen`: generation 0, the column's default.
  const gen = payload.gen === undefined ? 0 : payload.gen;
  // Tokens issued before shards existed carry no `shd`: shard 0, where every account then lived.
  const shard = payload.shd === undefined ? 0 : payload.shd;
  if (
    typeof payload.sub !== "string" ||
    !Number.isSafeInteger(payload.company_id) ||
    !Number.isSafeInteger(payload.userid) ||
    typeof payload.scope !== "string" ||
    !Number.isSafeInteger(gen) ||
    gen < 0 ||
    !Number.isSafeInteger(shard) ||
    shard < 0
  ) {
    throw invalidToken("The access token is invalid");
  }
  // jose has checked that both are numbers.
  const iat = payload.iat!;
  const exp = payload.exp!;
  if (iat > Date.now() / 1000 + CLOCK_SKEW_LEEWAY_SECONDS) {
    throw invalidToken("The access token is invalid: it is issued in the future");
  }
  if (exp - iat > TOKEN_LIFETIME_SECONDS) {
    throw invalidToken("The access token is invalid: its lifetime exceeds the issued lifetime");
  }
  return {
    clientId: payload.sub,
    companyId: payload.company_id,
    userId: payload.userid,
    scope: payload.scope,
    generation: gen,
    shard,
    iat,
    exp,
  };
}
