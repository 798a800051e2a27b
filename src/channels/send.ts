// One HTTP send to a channel endpoint (docs/channels.md "Sending"): the URL rules checked again at
// send time, one POST with a timeout, no redirect followed, and at most MAX_READ_BYTES of the answer
// read (the rest cancelled), so a receiver that hangs or answers with megabytes costs this send its
// timeout and nothing more. Never throws; never logs or returns the URL.
import { checkChannelUrl, maskUrl, type ChannelType } from "./urls";
import type { ChannelMessage } from "./test-message";

/** Time allowed to one send: connect, request, response and the bounded read. */
export const SEND_TIMEOUT_MS = 5_000;
/** Most bytes of an answer read. */
export const MAX_READ_BYTES = 16_384;
/** Most characters of an answer kept in `body`. */
export const MAX_EXCERPT_CHARS = 1_000;

export interface SendOutcome {
  /** A 2xx answer. */
  delivered: boolean;
  /** The platform's status; null when no answer came (refused URL, network error, timeout). */
  status: number | null;
  /** The start of the answer (UTF-8), at most MAX_EXCERPT_CHARS characters. */
  body: string;
  /** Whether the answer was longer than `body`. */
  truncated: boolean;
  /** Why it was not delivered; null when it was. */
  error: string | null;
  /** From the start of the send to the end of the read. */
  duration_ms: number;
  /** The platform's Retry-After (a 429 or 503), as sent; null when none. */
  retry_after: string | null;
}

export interface ChannelTarget {
  type: ChannelType;
  url: string;
  /** ntfy: sent as Authorization: Bearer. */
  token: string | null;
}

export interface SendOptions {
  /** The deployment's WEBHOOKS_ALLOW_PRIVATE_URLS. */
  allowPrivate: boolean;
  timeoutMs?: number;
  fetcher?: typeof fetch;
  now?: () => number;
}

/** Sends `message` to `target`. */
export async function sendToChannel(
  target: ChannelTarget,
  message: ChannelMessage,
  { allowPrivate, timeoutMs = SEND_TIMEOUT_MS, fetcher = fetch, now = Date.now }: SendOptions,
): Promise<SendOutcome> {
  const started = now();
  const outcome = (fields: Partial<SendOutcome>): SendOutcome => ({
    delivered: false,
    status: null,
    body: "",
    truncated: false,
    error: null,
    retry_after: null,
    ...fields,
    duration_ms: Math.max(0, Math.round(now() - started)),
  });
  const check = checkChannelUrl(target.type, target.url, allowPrivate);
  if (!check.ok) return outcome({ error: `not sent: url not allowed on this deployment: ${check.msg}` });
  const headers: Record<string, string> = { ...message.headers, "user-agent": "reminder-api-channels/1" };
  if (target.token !== null) headers.authorization = `Bearer ${target.token}`;
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetcher(check.url.href, {
      method: "POST",
      headers,
      body: message.body,
      redirect: "manual",
      signal,
    });
    const { text, truncated } = await readBounded(response);
    const { status } = response;
    const delivered = status >= 200 && status < 300;
    return outcome({
      delivered,
      status,
      body: text,
      truncated,
      retry_after: response.headers.get("retry-after"),
      error: delivered
        ? null
        : status >= 300 && status < 400
          ? `the platform answered HTTP ${status} (a redirect, not followed)`
          : `the platform answered HTTP ${status}`,
    });
  } catch (error) {
    const name = error instanceof Error ? error.name : "";
    if (name === "TimeoutError" || name === "AbortError" || signal.aborted)
      return outcome({ error: `no complete answer within ${timeoutMs / 1000} s` });
    // A runtime's message may quote the URL: its secret part is masked out.
    const text = (error instanceof Error ? error.message : String(error))
      .replaceAll(check.url.href, maskUrl(check.url.href))
      .replaceAll(target.url, maskUrl(check.url.href));
    return outcome({ error: `request failed: ${text}`.slice(0, 300) });
  }
}

/** The answer's first MAX_READ_BYTES, decoded, cut to MAX_EXCERPT_CHARS; the rest is cancelled, not read. */
async function readBounded(response: Response): Promise<{ text: string; truncated: boolean }> {
  if (!response.body) return { text: "", truncated: false };
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let more = false;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size > MAX_READ_BYTES) {
      more = true;
      break;
    }
  }
  if (more) await reader.cancel().catch(() => undefined);
  const bytes = new Uint8Array(Math.min(size, MAX_READ_BYTES));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.byteLength - offset);
    bytes.set(part, offset);
    offset += part.byteLength;
    if (offset >= bytes.byteLength) break;
  }
  // A multi-byte character cut at the end decodes as U+FFFD; `stream: true` leaves it out instead.
  const text = new TextDecoder().decode(bytes, { stream: more });
  const characters = [...text];
  return {
    text: characters.slice(0, MAX_EXCERPT_CHARS).join(""),
    truncated: more || characters.length > MAX_EXCERPT_CHARS,
  };
}
