// The Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header): parsing, the request's
// fingerprint, and the sealing of stored responses (docs/idempotency.md).
import { fromBase64, sha256Hex, toBase64 } from "../lib/bytes";
import { badRequest } from "../lib/errors";

export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";
export const MAX_KEY_CHARS = 255;

/**
 * The key's value: 1–255 printable ASCII characters, sent bare (`abc-123`, as Stripe's clients do)
 * or as the draft's Structured Field string (`"abc-123"`, quotes and backslash escapes removed).
 */
export function parseIdempotencyKey(header: string): string {
  let value = header.trim();
  if (value.startsWith('"')) {
    // A Structured Field string: the whole value, with only \" and \\ escaped inside.
    const quoted = /^"((?:[^"\\]|\\["\\])*)"$/.exec(value);
    if (!quoted) throw malformed();
    value = quoted[1]!.replace(/\\(["\\])/g, "$1");
  }
  if (value.length < 1 || value.length > MAX_KEY_CHARS || !/^[\x20-\x7e]+$/.test(value)) throw malformed();
  return value;
}

const malformed = () =>
  badRequest(
    `${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_KEY_CHARS} printable ASCII characters (e.g. a UUID), bare or as a quoted string`,
  );

/** Hex SHA-256 of what identifies "the same request": method, path with query, and the body bytes. */
export async function requestFingerprint(method: string, url: string, body: ArrayBuffer): Promise<string> {
  const target = new URL(url);
  const head = new TextEncoder().encode(`${method}\n${target.pathname}${target.search}\n`);
  const bytes = new Uint8Array(head.byteLength + body.byteLength);
  bytes.set(head, 0);
  bytes.set(new Uint8Array(body), head.byteLength);
  return sha256Hex(bytes);
}

/** What the database keeps of the key: a hash bound to the client, never the key itself. */
export const keyHash = (clientId: string, key: string) => sha256Hex(`idempotency-key\n${clientId}\n${key}`);

/**
 * Stored response bodies are sealed with AES-256-GCM under a key derived from the Idempotency-Key
 * itself (which the database never holds): a replayed body can carry a secret shown once (an upload
 * token, a webhook signing secret), and only a client presenting the key can have it back.
 */
async function sealingKey(clientId: string, key: string): Promise<CryptoKey> {
  const material = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(`idempotency-body\n${clientId}\n${key}`),
  );
  return crypto.subtle.importKey("raw", material, "AES-GCM", false, ["encrypt", "decrypt"]);
}

export async function sealBody(clientId: string, key: string, body: string): Promise<string> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    await sealingKey(clientId, key),
    new TextEncoder().encode(body),
  );
  return `v1.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

export async function openBody(clientId: string, key: string, stored: string): Promise<string> {
  const [version, iv, sealed] = stored.split(".");
  if (version !== "v1" || !iv || sealed === undefined) throw new Error("unreadable stored idempotent response");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: fromBase64(iv) },
    await sealingKey(clientId, key),
    fromBase64(sealed),
  );
  return new TextDecoder().decode(plain);
}
