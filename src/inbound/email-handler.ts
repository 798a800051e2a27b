// The Worker's email() handler (Email Routing; docs/bounces.md): delivery status notifications and
// complaint reports about reminder emails. Everything is bounded and nothing throws: a message
// that is too large, not a report, unsigned, forged, or about a delivery that is not there is
// refused with setReject and changes nothing. A verified report goes to the company's clock, which
// keeps the deliveries (bounces.ts).

import type { BounceResult } from "../company-clock/api";
import { clockFor } from "../company-clock/handoff/worker";
import type { Env } from "../env";
import { tokenOfAddress, verifyBounceToken } from "../lib/bounce-address";
import { readReport } from "./report";

/** The largest message read; a larger one is refused before any of it is read. */
export const MAX_INBOUND_BYTES = 256 * 1024;

/** What the handler did with one message (for logs and tests). */
export type InboundOutcome =
  | { action: "rejected"; reason: string }
  | { action: "ignored"; reason: string }
  | { action: "recorded" | "duplicate"; companyId: number; result: BounceResult };

/** At most `limit` bytes of a stream; null when it holds more. */
async function readBounded(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) return null;
      chunks.push(value);
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** Decides what one inbound message is and does it; never throws. */
export async function handleInbound(
  message: Pick<ForwardableEmailMessage, "to" | "raw" | "rawSize">,
  env: Env,
): Promise<InboundOutcome> {
  try {
    if (!(message.rawSize <= MAX_INBOUND_BYTES))
      return { action: "rejected", reason: `message larger than ${MAX_INBOUND_BYTES} bytes` };
    const raw = await readBounded(message.raw, MAX_INBOUND_BYTES);
    if (!raw) return { action: "rejected", reason: `message larger than ${MAX_INBOUND_BYTES} bytes` };
    const report = readReport(new TextDecoder().decode(raw));
    if (!report) return { action: "rejected", reason: "not a delivery status notification or complaint report" };
    // The envelope's bounce address first; else the one the returned original carried.
    const token = tokenOfAddress(message.to) ?? report.originalToken;
    if (!token) return { action: "rejected", reason: "no bounce address" };
    const claims = await verifyBounceToken(env.LINK_SIGNING_KEYS, token);
    if (!claims) return { action: "rejected", reason: "unknown bounce address" };
    const result = await clockFor(env, claims.companyId).recordBounce(claims.companyId, {
      reminderId: claims.reminderId,
      contactId: claims.contactId,
      kind: report.kind,
      status: report.status,
      reason: report.reason,
      recipients: report.recipients,
    });
    if (result.outcome === "refused") return { action: "rejected", reason: result.reason };
    return { action: result.outcome, companyId: claims.companyId, result };
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "inbound email not processed", error: String(error) }));
    return { action: "rejected", reason: "not processed" };
  }
}

/** The entry point: the outcome as Email Routing sees it (a refusal is setReject with its reason). */
export async function email(message: ForwardableEmailMessage, env: Env): Promise<void> {
  const outcome = await handleInbound(message, env);
  if (outcome.action === "rejected") {
    try {
      message.setReject(outcome.reason);
    } catch {
      // Nothing to do: the message is dropped either way.
    }
  }
}
