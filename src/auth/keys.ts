import { oauthError } from "../lib/errors";
import { keyRing, type KeyRing } from "../lib/key-ring";

/** The token signing keys: the first of JWT_SIGNING_KEYS signs, all of them verify. */
export type SigningKeys = KeyRing;

/** The configured keys, or a Shape A 500 `server_error` when the secret is missing or unusable. */
export async function getSigningKeys(source: string | undefined): Promise<SigningKeys> {
  if (!source?.trim()) {
    throw oauthError(500, "server_error", "Token signing key is not configured");
  }
  try {
    return await keyRing("JWT_SIGNING_KEYS", source);
  } catch (err) {
    console.error(JSON.stringify({ level: "error", msg: "unusable JWT_SIGNING_KEYS", error: String(err) }));
    throw oauthError(500, "server_error", "Token signing key is not configured correctly");
  }
}
