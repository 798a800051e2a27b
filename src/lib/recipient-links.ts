// The links in a reminder email to its recipient's page for the item (docs/recipient-journey.md).
//
// A link's token is the credential: no account, no cookie. It is signed, never stored: HMAC-SHA-256
// with the first key of LINK_SIGNING_KEYS over what it is bound to (the company, the item, the
// recipient contact, the item's occurrence, schedule_epoch, and the last day it works), and every
// key of the set verifies it, so keys rotate like JWT_SIGNING_KEYS. The token is those claims and
// the full 256-bit tag, base64url. Deleting the item or the contact kills its links at once: the
// page reads both on every request. Verification does the same work whatever the token is
// (malformed, forged, signed by a dropped key, expired), so time tells nothing about it.
import type { Env } from "../env";
import { fromBase64, toBase64Url } from "./bytes";
import { keyRing } from "./key-ring";
import { addDays, daysBetween } from "./time";

/** The secret holding the link keys (`kid:secret` pairs; the first signs). */
export const LINK_KEYS_VARIABLE = "LINK_SIGNING_KEYS";
/** Where the pages are: `/r/{token}`, and `/r/{token}/{action}` for an action's confirmation. */
export const RECIPIENT_PREFIX = "/r/";
/** A link works until the end (UTC) of this many days after the item's date, or after the day it was sent when that is later. */
export const LINK_LIFETIME_DAYS = 60;

export const RECIPIENT_ACTIONS = ["acknowledge", "complete", "renew", "snooze"] as const;
export type RecipientAction = (typeof RECIPIENT_ACTIONS)[number];
export const isRecipientAction = (value: string): value is RecipientAction => (RECIPIENT_ACTIONS as readonly string[]).includes(value);

/** What a token says. `expiresOn`: the last day (UTC, YYYY-MM-DD) it works. */
export interface LinkClaims {
  companyId: number;
  itemId: number;
  contactId: number;
  /** The item's schedule_epoch when the link was made: its occurrence. */
  epoch: number;
  expiresOn: string;
}

/** Absolute URLs on PUBLIC_BASE_URL: the page, and each action's confirmation. */
export type RecipientLinks = { page: string } & Record<RecipientAction, string>;

const VERSION = 1;
const TAG_BYTES = 32;
const CLAIM_FIELDS = 5;
/** A safe integer takes at most 8 bytes of 7 bits. */
const MAX_VARINT_BYTES = 8;
const MAX_TOKEN_BYTES = 1 + CLAIM_FIELDS * MAX_VARINT_BYTES + TAG_BYTES;
/** The longest token text: base64url of MAX_TOKEN_BYTES. */
export const MAX_TOKEN_CHARS = Math.ceil((MAX_TOKEN_BYTES * 4) / 3);
const TOKEN_TEXT = /^[A-Za-z0-9_-]+$/;
/** Keeps a tag of these links from ever verifying as anything else signed with the same secret. */
const DOMAIN = new TextEncoder().encode("expiry-reminder recipient link\u0000");
const EPOCH_DAY = "1970-01-01";

// ---- encoding ----

function writeVarint(out: number[], value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`recipient link: ${value} is not a non-negative safe integer`);
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
}

/** The claims' bytes: the version, then company, item, contact, epoch and expiry day as unsigned LEB128 varints. */
function encodeClaims(claims: LinkClaims): Uint8Array {
  const out = [VERSION];
  for (const value of [claims.companyId, claims.itemId, claims.contactId, claims.epoch, daysBetween(EPOCH_DAY, claims.expiresOn)]) writeVarint(out, value);
  return Uint8Array.from(out);
}

/** The claims at the start of `bytes` and where they end; null when they are not well formed. */
function decodeClaims(bytes: Uint8Array): { claims: LinkClaims; length: number } | null {
  if (bytes[0] !== VERSION) return null;
  const values: number[] = [];
  let at = 1;
  for (let field = 0; field < CLAIM_FIELDS; field++) {
    let value = 0;
    let scale = 1;
    for (let n = 0; ; n++) {
      if (n >= MAX_VARINT_BYTES || at >= bytes.length) return null;
      const byte = bytes[at++]!;
      value += (byte & 0x7f) * scale;
      scale *= 0x80;
      if (byte < 0x80) break;
    }
    if (!Number.isSafeInteger(value)) return null;
    values.push(value);
  }
  const [companyId, itemId, contactId, epoch, day] = values as [number, number, number, number, number];
  return { claims: { companyId, itemId, contactId, epoch, expiresOn: addDays(EPOCH_DAY, day) }, length: at };
}

function fromBase64Url(text: string): Uint8Array | null {
  if (text.length > MAX_TOKEN_CHARS || !TOKEN_TEXT.test(text) || text.length % 4 === 1) return null;
  try {
    return fromBase64(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  } catch {
    return null;
  }
}

async function tagOf(key: CryptoKey, claims: Uint8Array): Promise<Uint8Array> {
  const input = new Uint8Array(DOMAIN.length + claims.length);
  input.set(DOMAIN);
  input.set(claims, DOMAIN.length);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, input));
}

/** Equal without an early exit (both are TAG_BYTES long). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < a.length && i < b.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

// ---- minting and verifying ----

/** The link keys, or a rejection naming the variable (missing or unusable). */
function linkKeys(source: string | undefined) {
  if (!source?.trim()) return Promise.reject(new Error(`${LINK_KEYS_VARIABLE} is not configured`));
  return keyRing(LINK_KEYS_VARIABLE, source);
}

/** A token for `claims`, signed with the current key of `keys` (LINK_SIGNING_KEYS). */
export async function mintLinkToken(keys: string | undefined, claims: LinkClaims): Promise<string> {
  const ring = await linkKeys(keys);
  const bytes = encodeClaims(claims);
  const tag = await tagOf(ring.current.key, bytes);
  const token = new Uint8Array(bytes.length + tag.length);
  token.set(bytes);
  token.set(tag, bytes.length);
  return toBase64Url(token);
}

/**
 * What a token is. `valid`: signed by a key of the set and not past its last day (`today`, UTC);
 * `expired`: signed, but past it; `forged`: anything else (malformed, altered, another secret, a
 * dropped key). `claims` is what the token says, or, for a token that says nothing readable, claims
 * of no record (ids 0): the caller reads with them all the same, so every kind of token costs the
 * same work. Throws only when LINK_SIGNING_KEYS itself is unusable.
 */
export async function verifyLinkToken(
  keys: string | undefined,
  token: string,
  today: string,
): Promise<{ state: "valid" | "expired" | "forged"; claims: LinkClaims }> {
  const ring = await linkKeys(keys);
  const bytes = fromBase64Url(token);
  const decoded = bytes ? decodeClaims(bytes) : null;
  const readable = decoded !== null && bytes!.length === decoded.length + TAG_BYTES;
  const claims: LinkClaims = readable ? decoded.claims : { companyId: 0, itemId: 0, contactId: 0, epoch: 0, expiresOn: EPOCH_DAY };
  const signed = readable ? bytes!.subarray(0, decoded.length) : encodeClaims(claims);
  const tag = readable ? bytes!.subarray(decoded.length) : new Uint8Array(TAG_BYTES);
  // Every key is tried, whichever matches: the work does not depend on the token.
  let matches = false;
  for (const key of ring.byKid.values()) {
    if (sameBytes(await tagOf(key, signed), tag)) matches = true;
  }
  if (!readable || !matches) return { state: "forged", claims };
  return { state: claims.expiresOn < today ? "expired" : "valid", claims };
}

/** The last day a link minted on `today` for an occurrence dated `itemDate` works. */
export function linkExpiry(itemDate: string, today: string): string {
  return addDays(itemDate > today ? itemDate : today, LINK_LIFETIME_DAYS);
}

/** PUBLIC_BASE_URL as an origin (and path prefix) without a trailing slash; null when it is not an http(s) URL. */
export function publicBase(value: string | undefined): string | null {
  if (!value?.trim()) return null;
  try {
    const url = new URL(value.trim());
    if (url.protocol !== "https:" && url.protocol !== "http:") return null;
    if (url.search || url.hash || url.username || url.password) return null;
    return `${url.origin}${url.pathname}`.replace(/\/+$/, "");
  } catch {
    return null;
  }
}

/** Once per isolate and problem: a deployment without links in its emails says so in its logs. */
const reported = new Set<string>();

/**
 * The links of one recipient of one item's reminder (what the email shows): absolute URLs on
 * PUBLIC_BASE_URL, bound to the item's current occurrence (`epoch`, its schedule_epoch) and
 * working until LINK_LIFETIME_DAYS after `itemDate` (or after today, when later). Null, with an
 * error logged once, when PUBLIC_BASE_URL or LINK_SIGNING_KEYS is missing or unusable: the email
 * then goes out without links rather than not at all.
 */
export async function recipientLinks(
  env: Pick<Env, "PUBLIC_BASE_URL" | "LINK_SIGNING_KEYS">,
  target: { companyId: number; itemId: number; contactId: number; epoch: number; itemDate: string; today?: string },
): Promise<RecipientLinks | null> {
  const base = publicBase(env.PUBLIC_BASE_URL);
  const report = (problem: string) => {
    if (reported.has(problem)) return;
    reported.add(problem);
    console.error(JSON.stringify({ level: "error", msg: `reminder emails go out without action links: ${problem}` }));
  };
  if (!base) {
    report("PUBLIC_BASE_URL is not an http(s) URL");
    return null;
  }
  const today = target.today ?? new Date().toISOString().slice(0, 10);
  let token: string;
  try {
    token = await mintLinkToken(env.LINK_SIGNING_KEYS, {
      companyId: target.companyId,
      itemId: target.itemId,
      contactId: target.contactId,
      epoch: target.epoch,
      expiresOn: linkExpiry(target.itemDate, today),
    });
  } catch (error) {
    report(String((error as Error).message ?? error));
    return null;
  }
  const page = `${base}${RECIPIENT_PREFIX}${token}`;
  return { page, ...(Object.fromEntries(RECIPIENT_ACTIONS.map((action) => [action, `${page}/${action}`])) as Record<RecipientAction, string>) };
}
