// Client-secret hashing, shared by the Worker and the operator scripts (run by Node directly,
// so this module imports nothing).
//
// Secrets are 256-bit random strings issued by the service, so a salted SHA-256 is enough:
// slow password hashes defend low-entropy human passwords, and would cost CPU on every token
// request for no gain here.

const encoder = new TextEncoder();

function toHex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function randomHex(byteCount: number): string {
  return toHex(crypto.getRandomValues(new Uint8Array(byteCount)));
}

/** Hex SHA-256 of `salt:secret`. */
export async function hashClientSecret(secret: string, salt: string): Promise<string> {
  return toHex(await crypto.subtle.digest("SHA-256", encoder.encode(`${salt}:${secret}`)));
}

/** A new client secret as shown to the operator once: `cs_` + 64 hex characters. */
export function generateClientSecret(): string {
  return `cs_${randomHex(32)}`;
}

/** A new client id: `ck_` + 24 hex characters. */
export function generateClientId(): string {
  return `ck_${randomHex(12)}`;
}
