// Sending one webhook delivery (Standard Webhooks): the payload body, the signature headers
// (src/webhooks/signing.ts), one POST with a 5 s timeout, and what came of it. The retry schedule
// lives here too; the company clock (src/company-clock/webhook-deliveries.ts) keeps the state.

import { webhookHeaders } from "./signing";

/** Time allowed to one attempt (connect, send, response status). */
export const ATTEMPT_TIMEOUT_MS = 5_000;
/** Delays before attempts 2..8 after the previous one failed: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 14 h (about 31.6 h in all). */
export const RETRY_DELAYS_MS = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 50_400_000];
export const MAX_WEBHOOK_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** Delay after failed attempt `attempt` (1-based), ±10 % jitter; null after the last. */
export function webhookRetryDelay(attempt: number, random = Math.random()): number | null {
  const base = RETRY_DELAYS_MS[attempt - 1];
  if (base === undefined) return null;
  return Math.round(base * (0.9 + 0.2 * random));
}

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}
/** Sends one request; resolves with the response status, rejects on network failure or timeout. */
export type WebhookTransport = (request: WebhookRequest) => Promise<{ status: number }>;

export const fetchTransport: WebhookTransport = async ({ url, headers, body }) => {
  const response = await fetch(url, {
    method: "POST",
    headers: { ...headers, "user-agent": "reminder-api-webhooks/1" },
    body,
    redirect: "manual",
    signal: AbortSignal.timeout(ATTEMPT_TIMEOUT_MS),
  });
  // Only the status matters; the body is not read (it is cancelled so the connection is freed).
  await response.body?.cancel().catch(() => undefined);
  return { status: response.status };
};

/** The payload `{type, timestamp, data}` as sent: `data` is stored JSON text, inserted verbatim so every attempt sends the same bytes. */
export function payloadBody(type: string, createdAt: number, data: string): string {
  return `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(new Date(createdAt).toISOString())},"data":${data}}`;
}

export type AttemptOutcome = { ok: true; status: number } | { ok: false; status: number | null; error: string };

/** One attempt: signs with every active secret (timestamp: now) and posts. Never throws. */
export async function attemptDelivery(
  transport: WebhookTransport,
  endpoint: { url: string; secrets: string[] },
  messageId: string,
  body: string,
  now = Date.now(),
): Promise<AttemptOutcome> {
  if (endpoint.secrets.length === 0)
    return { ok: false, status: null, error: "the endpoint's signing secret could not be read" };
  try {
    const headers = await webhookHeaders(endpoint.secrets, messageId, Math.floor(now / 1000), body);
    const { status } = await transport({ url: endpoint.url, headers, body });
    if (status >= 200 && status < 300) return { ok: true, status };
    return { ok: false, status, error: `the endpoint answered HTTP ${status}` };
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError")
      return { ok: false, status: null, error: `no response within ${ATTEMPT_TIMEOUT_MS / 1000} s` };
    return {
      ok: false,
      status: null,
      error: `request failed: ${error instanceof Error ? error.message : String(error)}`.slice(0, 300),
    };
  }
}

/** A new message id (`webhook-id`): `msg_` and 22 base64url characters; stored with the delivery, so retries repeat it. */
export function newMessageId(): string {
  const raw = crypto.getRandomValues(new Uint8Array(16));
  return `msg_${btoa(String.fromCharCode(...raw))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")}`;
}
