// Reading inbound reports (docs/bounces.md): RFC 3464 delivery status notifications
// (`multipart/report; report-type=delivery-status`) and RFC 5965 ARF complaints
// (`multipart/report; report-type=feedback-report`). Pure, bounded, never throws: a message
// that is not one of them, or says nothing usable, reads as null.

import { BOUNCE_HEADER, tokenOfAddress } from "../lib/bounce-address";
import { allParts, contentType, decodedBody, header, parseHeaderBlock, parsePart, type Part } from "./mime";

export type BounceKind = "hard" | "soft" | "complaint";

/** What a report says happened to the delivery it returns. */
export interface Bounce {
  kind: BounceKind;
  /** The enhanced status code (`5.1.1`), or for a complaint its Feedback-Type (`abuse`). */
  status: string;
  /** A bounded, printable reason: the Diagnostic-Code, or the complaint's type and agent. */
  reason: string;
  /** The addresses the report names as the failed recipients (lowercased); empty when it names none. */
  recipients: string[];
  /** The bounce token found in the returned original message's headers, if any. */
  originalToken: string | null;
}

export interface DsnRecipient {
  action: string;
  status: string;
  diagnostic: string;
  finalRecipient: string;
  originalRecipient: string;
}

export const MAX_REASON_CHARS = 300;

/** `rfc822; Ada@Example.com` → `ada@example.com`. */
export function addressOf(field: string | undefined): string {
  if (!field) return "";
  const value = field.includes(";") ? field.slice(field.indexOf(";") + 1) : field;
  const match = /<?([^\s<>;]+@[^\s<>;]+)>?/.exec(value);
  return match ? match[1]!.toLowerCase() : "";
}

const printable = (text: string) =>
  text
    .replace(/[\u0000-\u001f\u007f]+/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .slice(0, MAX_REASON_CHARS);

/** The per-recipient groups of a message/delivery-status body (the first group is per-message). */
export function dsnRecipients(body: string): DsnRecipient[] {
  const groups = body
    .replace(/\r\n/g, "\n")
    .split(/\n[ \t]*\n/)
    .map((g) => parseHeaderBlock(g))
    .filter((g) => g.length > 0);
  const out: DsnRecipient[] = [];
  for (const fields of groups) {
    const get = (name: string) => fields.find(([n]) => n === name)?.[1] ?? "";
    if (!get("action") && !get("status")) continue;
    out.push({
      action: get("action").toLowerCase().split(/\s/)[0] ?? "",
      status: /\d\.\d{1,3}\.\d{1,3}/.exec(get("status"))?.[0] ?? "",
      diagnostic: get("diagnostic-code"),
      finalRecipient: addressOf(get("final-recipient")),
      originalRecipient: addressOf(get("original-recipient")),
    });
    if (out.length >= 50) break;
  }
  return out;
}

/** The bounce token in returned original headers: X-Bounce-Address first, then Return-Path. */
function tokenInHeaders(fields: Array<[string, string]>): string | null {
  for (const name of [BOUNCE_HEADER.toLowerCase(), "return-path"]) {
    for (const [n, v] of fields)
      if (n === name) {
        const token = tokenOfAddress(v);
        if (token) return token;
      }
  }
  return null;
}

/** The headers of the returned original message (message/rfc822 or text/rfc822-headers), if any. */
function originalHeaders(parts: Part[]): Array<[string, string]> {
  for (const part of parts) {
    const { type } = contentType(part);
    if (type === "message/rfc822" || type === "text/rfc822-headers" || type === "message/rfc822-headers")
      return parsePart(decodedBody(part)).headers;
  }
  return [];
}

/**
 * The bounce or complaint a message reports; null when it is not a DSN or ARF report, when it
 * reports no failure (delivered, relayed, expanded), or when it cannot be read.
 */
export function readReport(raw: string): Bounce | null {
  try {
    const root = parsePart(raw);
    const { type, params } = contentType(root);
    if (type !== "multipart/report") return null;
    const reportType = (params["report-type"] ?? "").toLowerCase();
    const parts = allParts(root).slice(1);
    const original = originalHeaders(parts);
    const originalToken = tokenInHeaders(original);
    if (reportType === "delivery-status") {
      const statusPart = parts.find((p) => {
        const t = contentType(p).type;
        return t === "message/delivery-status" || t === "message/global-delivery-status";
      });
      if (!statusPart) return null;
      const failed = dsnRecipients(decodedBody(statusPart)).filter(
        (r) => (r.action === "failed" || r.action === "delayed") && /^[45]\./.test(r.status),
      );
      if (failed.length === 0) return null;
      // A hard failure wins over soft ones in the same report.
      const worst = failed.find((r) => r.action === "failed" && r.status.startsWith("5.")) ?? failed[0]!;
      const hard = worst.action === "failed" && worst.status.startsWith("5.");
      return {
        kind: hard ? "hard" : "soft",
        status: worst.status,
        reason: printable(worst.diagnostic || `${worst.action} ${worst.status}`),
        recipients: [...new Set(failed.flatMap((r) => [r.finalRecipient, r.originalRecipient]).filter(Boolean))],
        originalToken,
      };
    }
    if (reportType === "feedback-report") {
      const feedback = parts.find((p) => contentType(p).type === "message/feedback-report");
      if (!feedback) return null;
      const fields = parseHeaderBlock(decodedBody(feedback));
      const get = (name: string) => fields.find(([n]) => n === name)?.[1] ?? "";
      const feedbackType = printable(get("feedback-type").toLowerCase()).split(/\s/)[0] ?? "";
      if (!feedbackType) return null;
      const recipients = fields
        .filter(([n]) => n === "original-rcpt-to")
        .map(([, v]) => addressOf(v))
        .filter(Boolean);
      // Not the original's To: providers redact it (AOL), so only Original-Rcpt-To names the recipient.
      const agent = get("user-agent");
      return {
        kind: "complaint",
        status: feedbackType.slice(0, 40),
        reason: printable(`complaint (${feedbackType})${agent ? ` from ${agent}` : ""}`),
        recipients: [...new Set(recipients)],
        originalToken,
      };
    }
    return null;
  } catch {
    return null;
  }
}

export { header };
