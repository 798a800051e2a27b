// A recipient's side of the service in the e2e tests: the emails wrangler's local email simulation
// holds (as the explorer lists them), their links, and link tokens minted the way the Worker mints
// them (src/lib/link-token.ts, with the key in the repository's .dev.vars that `npm start` reads).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../../../scripts/lib/local.ts";
import { signClaims, type ClaimsToSign, type LinkKey } from "../../../src/lib/link-token.ts";
import { callApi, sleep } from "./service.ts";

export interface SentEmail {
  messageId: string;
  to: string[];
  subject: string;
  text: string;
  html: string;
}

type Listed = { messageId: string; to: string[]; subject: string };

/** Every message the local email simulation holds (pages of 100). */
export async function listEmails(base: string): Promise<Listed[]> {
  const all: Listed[] = [];
  let cursor = "";
  for (;;) {
    const page = await callApi(
      base,
      "GET",
      `/cdn-cgi/explorer/api/local/email/sending?per_page=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
    );
    if (page.status !== 200) throw new Error(`email explorer: ${page.status} ${JSON.stringify(page.body)}`);
    all.push(...page.body.result);
    if (!page.body.result_info?.has_more) return all;
    cursor = page.body.result_info.cursor;
  }
}

/** One message with its text and HTML parts. */
export async function readEmail(base: string, messageId: string): Promise<SentEmail> {
  const res = await callApi(
    base,
    "GET",
    `/cdn-cgi/explorer/api/local/email/sending?email_id=${encodeURIComponent(messageId)}`,
  );
  if (res.status !== 200) throw new Error(`email ${messageId}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.result as SentEmail;
}

/** Waits (up to `timeoutMs`) until `count` messages to `address` are out; answers them, read whole. */
export async function emailsTo(
  base: string,
  address: string,
  count: number,
  timeoutMs = 150_000,
): Promise<SentEmail[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const listed = (await listEmails(base)).filter((m) => m.to.includes(address));
    if (listed.length >= count) return Promise.all(listed.map((m) => readEmail(base, m.messageId)));
    if (Date.now() > deadline)
      throw new Error(`${listed.length} of ${count} emails to ${address} after ${timeoutMs} ms`);
    await sleep(1000);
  }
}

/** The links of an HTML part (its hrefs), in order. */
export const hrefsOf = (html: string) => [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));

/** The links of a text part that lead to a recipient page, in order. */
export const pageLinksOf = (text: string) =>
  [...text.matchAll(/https?:\/\/\S+?\/r\/[A-Za-z0-9_-]+(?:\/[a-z]+)?(?=\s|$)/g)].map((m) => m[0]);

/** The reminder's minute: the coming one, at least 10 s away, as POST …/reminders takes it. */
export function comingMinute(): { date: string; hour: string } {
  const at = new Date(Math.ceil((Date.now() + 10_000) / 60_000) * 60_000).toISOString();
  return { date: at.slice(0, 10), hour: at.slice(11, 16) };
}

/** The first key of LINK_SIGNING_KEYS in the repository's .dev.vars (the one the Worker signs with). */
export async function linkSigningKey(): Promise<LinkKey> {
  const line = readFileSync(join(ROOT, ".dev.vars"), "utf8")
    .split(/\r?\n/)
    .find((l) => /^\s*LINK_SIGNING_KEYS\s*=/.test(l));
  if (!line) throw new Error(".dev.vars has no LINK_SIGNING_KEYS");
  const value = line
    .slice(line.indexOf("=") + 1)
    .trim()
    .replace(/^"|"$/g, "");
  const first = value.split(/[\s,]+/)[0]!;
  const secret = first.slice(first.indexOf(":") + 1);
  return crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
}

/** A token for `claims`, signed with the first key of LINK_SIGNING_KEYS in the repository's .dev.vars. */
export async function mintToken(claims: ClaimsToSign): Promise<string> {
  return signClaims(await linkSigningKey(), claims);
}

/** Median of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A token's own text in a link (`…/r/{token}` or `…/r/{token}/{action}`). */
export const tokenOf = (link: string) => new URL(link).pathname.split("/")[2]!;
