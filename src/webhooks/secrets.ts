import { fromBase64, toBase64 } from "../lib/bytes";

// Webhook signing secrets: generated here, shown to the client once, stored only encrypted
// (AES-256-GCM with a key derived from the WEBHOOK_SECRETS_KEY secret; a random IV per value).

const PREFIX = "whsec_";

/** A new signing secret: `whsec_` + base64 of 32 random bytes (Standard Webhooks format). */
export function generateSecret(): string {
  return PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(32)));
}

/** The raw key bytes of a `whsec_` secret (what HMAC signs with). */
export function secretBytes(secret: string): Uint8Array {
  return fromBase64(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret);
}

const keys = new Map<string, Promise<CryptoKey>>();

function encryptionKey(material: string | undefined): Promise<CryptoKey> {
  if (!material || material.length < 32)
    throw new Error("WEBHOOK_SECRETS_KEY is not configured (at least 32 characters)");
  let key = keys.get(material);
  if (!key) {
    key = crypto.subtle
      .digest("SHA-256", new TextEncoder().encode(material))
      .then((digest) => crypto.subtle.importKey("raw", digest, "AES-GCM", false, ["encrypt", "decrypt"]));
    keys.set(material, key);
  }
  return key;
}

/** `v1.<iv>.<ciphertext>` (base64), for the database. */
export async function encryptSecret(secret: string, material: string | undefined): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await encryptionKey(material),
    new TextEncoder().encode(secret),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function decryptSecret(stored: string, material: string | undefined): Promise<string> {
  const [version, iv, sealed] = stored.split(".");
  if (version !== "v1" || !iv || !sealed) throw new Error("unreadable stored webhook secret");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv) },
    await encryptionKey(material),
    fromBase64(sealed),
  );
  return new TextDecoder().decode(plain);
}

export { fromBase64, toBase64 } from "../lib/bytes";
