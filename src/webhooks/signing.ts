// Standard Webhooks signatures (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md):
// `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, one
// entry per active secret, space-separated.

import { secretBytes, toBase64 } from "./secrets";

const hmacKeys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  let key = hmacKeys.get(secret);
  if (!key) {
    key = crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
    if (hmacKeys.size > 1000) hmacKeys.clear();
    hmacKeys.set(secret, key);
  }
  return key;
}

/** `v1,<base64>` for one secret. */
export async function signature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const mac = await crypto.subtle.sign(
    "HMAC",
    await hmacKey(secret),
    new TextEncoder().encode(`${id}.${timestamp}.${body}`),
  );
  return `v1,${toBase64(new Uint8Array(mac))}`;
}

/** The three Standard Webhooks headers for a delivery signed with every given secret. */
export async function webhookHeaders(
  secrets: string[],
  id: string,
  timestamp: number,
  body: string,
): Promise<Record<string, string>> {
  const signatures = await Promise.all(secrets.map((s) => signature(s, id, timestamp, body)));
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signatures.join(" "),
    "content-type": "application/json",
  };
}
