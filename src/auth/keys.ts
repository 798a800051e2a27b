import { oauthError } from "../lib/errors";

export interface SigningKeys {
  /** The key that signs new tokens. */
  current: { kid: string; key: CryptoKey };
  /** Every key that may verify a token, by `kid` (includes the current one). */
  byKid: Map<string, CryptoKey>;
}

const MIN_SECRET_LENGTH = 32;

// Imported once per isolate and per configuration value; rotation changes the value.
let cached: { source: string; keys: Promise<SigningKeys> } | undefined;

function parseKeyList(source: string): Array<{ kid: string; secret: string }> {
  return source
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(":");
      return colon > 0 ? { kid: entry.slice(0, colon), secret: entry.slice(colon + 1) } : { kid: "", secret: "" };
    });
}

async function importKeys(source: string): Promise<SigningKeys> {
  const entries = parseKeyList(source);
  if (entries.length === 0 || entries.some((e) => !e.kid || e.secret.length < MIN_SECRET_LENGTH)) {
    throw new Error("JWT_SIGNING_KEYS must hold space-separated kid:secret pairs with secrets of at least 32 characters");
  }
  if (new Set(entries.map((e) => e.kid)).size !== entries.length) {
    throw new Error("JWT_SIGNING_KEYS lists the same kid twice");
  }
  const byKid = new Map<string, CryptoKey>();
  for (const { kid, secret } of entries) {
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
    byKid.set(kid, key);
  }
  const first = entries[0]!;
  return { current: { kid: first.kid, key: byKid.get(first.kid)! }, byKid };
}

/** The configured keys, or a Shape A 500 `server_error` when the secret is missing or unusable. */
export async function getSigningKeys(source: string | undefined): Promise<SigningKeys> {
  if (!source || !source.trim()) {
    throw oauthError(500, "server_error", "Token signing key is not configured");
  }
  if (cached?.source !== source) {
    const keys = importKeys(source);
    cached = { source, keys };
    keys.catch(() => {
      if (cached?.keys === keys) cached = undefined;
    });
  }
  try {
    return await cached.keys;
  } catch (err) {
    console.error(JSON.stringify({ level: "error", msg: "unusable JWT_SIGNING_KEYS", error: String(err) }));
    throw oauthError(500, "server_error", "Token signing key is not configured correctly");
  }
}
