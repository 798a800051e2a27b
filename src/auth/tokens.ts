import { SignJWT, errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import { invalidToken } from "../lib/errors";
import type { SigningKeys } from "./keys";

export const TOKEN_ISSUER = "expiry-reminder-api";
export const TOKEN_LIFETIME_SECONDS = 86400;

export interface TokenClaims {
  clientId: string;
  companyId: number;
  userId: number;
  scope: string;
  iat: number;
  exp: number;
}

interface Payload extends JWTPayload {
  company_id: number;
  userid: number;
  scope: string;
}

export async function signAccessToken(
  keys: SigningKeys,
  claims: { clientId: string; companyId: number; userId: number; scope: string },
): Promise<string> {
  return new SignJWT({ company_id: claims.companyId, userid: claims.userId, scope: claims.scope })
    .setProtectedHeader({ alg: "HS256", kid: keys.current.kid, typ: "JWT" })
    .setIssuer(TOKEN_ISSUER)
    .setSubject(claims.clientId)
    .setIssuedAt()
    .setExpirationTime(`${TOKEN_LIFETIME_SECONDS}s`)
    .setJti(crypto.randomUUID())
    .sign(keys.current.key);
}

/** Verifies signature, issuer and expiry; any failure is a Shape A 401 `invalid_token`. */
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
  if (
    typeof payload.sub !== "string" ||
    !Number.isSafeInteger(payload.company_id) ||
    !Number.isSafeInteger(payload.userid) ||
    typeof payload.scope !== "string"
  ) {
    throw invalidToken("The access token is invalid");
  }
  return {
    clientId: payload.sub,
    companyId: payload.company_id,
    userId: payload.userid,
    scope: payload.scope,
    iat: payload.iat!,
    exp: payload.exp!,
  };
}
