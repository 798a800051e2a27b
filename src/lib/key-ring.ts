// Rotatable HMAC-SHA-256 key sets, configured as one secret of space-separated `kid:secret` pairs
// (JWT_SIGNING_KEYS, LINK_SIGNING_KEYS): the first pair signs, every pair verifies. Keys are
// imported once per isolate and per configuration value (rotation changes the value).

export interface KeyRing {
  /** The key that signs. */
  current: { kid: string; key: CryptoKey };
  /** Every key that may verify, by `kid` (the current one included), in configured order. */
  byKid: Map<string, CryptoKey>;
}

export const MIN_SECRET_LENGTH = 32;

function parseKeyList(source: string): Array<{ kid: string; secret: string }> {
  return source
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((entry) => {
      const colon = entry.indexOf(":");
      return colon > 0 ? { kid: entry.slice(0, colon), secret: entry.slice(colon + 1) } : { kid: "", secret: "" };
    });
}

async function importKeys(source: string, variable: string): Promise<KeyRing> {
  const entries = parseKeyList(source);
  if (entries.length === 0 || entries.some((e) => !e.kid || e.secret.length < MIN_SECRET_LENGTH)) {
    throw new Error(
      `${variable} must hold space-separated kid:secret pairs with secrets of at least ${MIN_SECRET_LENGTH} characters`,
    );
  }
  if (new Set(entries.map((e) => e.kid)).size !== entries.length) {
    throw new Error(`${variable} lists the same kid twice`);
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

const cache = new Map<string, { source: string; keys: Promise<KeyRing> }>();

/**
 * The key ring configured in `variable` (its value `source`), imported once per isolate and value.
 * Rejects (with a message naming the variable, never a secret) when the value is unusable; a
 * failed import is not cached, so a corrected value is picked up.
 */
export function keyRing(variable: string, source: string): Promise<KeyRing> {
  const cached = cache.get(variable);
  if (cached?.source === source) return cached.keys;
  const keys = importKeys(source, variable);
  cache.set(variable, { source, keys });
  keys.catch(() => {
    if (cache.get(variable)?.keys === keys) cache.delete(variable);
  });
  return keys;
}
