// The token of a recipient link (src/lib/recipient-links.ts, docs/recipient-journey.md): its
// claims, its HMAC-SHA-256 tag, and the check. Imports only with their .ts extension, so that Node
// code (the e2e tests, the benchmark) mints tokens the way the Worker does, from the same module.
//
// Bytes: a version, then company, item, contact, epoch and the last day (days since 1970-01-01) as
// unsigned LEB128 varints, then the 32-byte tag over a domain label and those bytes; the whole as
// unpadded base64url (54 characters for small ids). Version 1 is a contact's link; version 2 adds a
// sixth varint, the channel endpoint a channel message's link names (its contact then 0): one
// encoding per claims, so a contact's token is the version 1 it always was.
import { MAX_VARINT_BYTES, readVarints, sameBytes, writeVarint } from "./varint.ts";

/** What a token says. `expiresOn`: the last day (UTC, YYYY-MM-DD) it works. */
export interface LinkClaims {
  companyId: number;
  itemId: number;
  /** The recipient contact; 0 in a channel's link. */
  contactId: number;
  /** The channel endpoint (`channel_endpoints.id`) whose message carries the link; 0: a contact's link. */
  channelId: number;
  /** The item's schedule_epoch when the link was made: its occurrence. */
  epoch: number;
  expiresOn: string;
}

/**
 * `valid`: signed by a key given and not past its last day; `expired`: signed, but past it;
 * `forged`: anything else (malformed, altered, another secret, a dropped key). `claims`: what the
 * token says, or claims of no record (ids 0) for a token that says nothing readable.
 */
export interface TokenVerdict {
  state: "valid" | "expired" | "forged";
  claims: LinkClaims;
}

/** What a token is minted from: a contact's link may leave `channelId` out (0). */
export type ClaimsToSign = Omit<LinkClaims, "channelId"> & { channelId?: number };

/** An HMAC-SHA-256 key, named so that both the Worker's and Node's type declarations accept it. */
export type LinkKey = Parameters<typeof crypto.subtle.sign>[1];

/** Version 1: a contact's link (five claims); version 2: a channel's (a sixth, the channel). */
const CONTACT_VERSION = 1;
const CHANNEL_VERSION = 2;
const TAG_BYTES = 32;
const CLAIM_FIELDS = 5;
const CHANNEL_CLAIM_FIELDS = 6;
/** A safe integer takes at most 8 bytes of 7 bits. */
const MAX_TOKEN_BYTES = 1 + CHANNEL_CLAIM_FIELDS * MAX_VARINT_BYTES + TAG_BYTES;
/** The longest token text: base64url of the longest token. */
export const MAX_TOKEN_CHARS = Math.ceil((MAX_TOKEN_BYTES * 4) / 3);
const TOKEN_TEXT = /^[A-Za-z0-9_-]+$/;
/**
 * What a token is for. The purpose is the domain label its tag is computed over, so a tag made for
 * one purpose never verifies for another, nor as anything else signed with the same secret: a
 * recipient page's token is no unsubscribe token, and the reverse.
 */
export type TokenPurpose = "recipient link" | "unsubscribe link";
const DOMAINS: Record<TokenPurpose, Uint8Array> = {
  "recipient link": new TextEncoder().encode("expiry-reminder recipient link\u0000"),
  "unsubscribe link": new TextEncoder().encode("expiry-reminder unsubscribe link\u0000"),
};
const DAY_MS = 86_400_000;
const NO_CLAIMS: LinkClaims = {
  companyId: 0,
  itemId: 0,
  contactId: 0,
  channelId: 0,
  epoch: 0,
  expiresOn: "1970-01-01",
};

const dayNumber = (date: string) => Math.round(Date.parse(`${date}T00:00:00Z`) / DAY_MS);
const dayText = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);

function encodeClaims(claims: ClaimsToSign): Uint8Array {
  const day = dayNumber(claims.expiresOn);
  if (!/^\d{4}-\d\d-\d\d$/.test(claims.expiresOn) || !Number.isSafeInteger(day))
    throw new Error(`recipient link: ${claims.expiresOn} is not a date`);
  const channelId = claims.channelId ?? 0;
  if (channelId !== 0 && claims.contactId !== 0)
    throw new Error("recipient link: a channel's link names no contact (contactId 0)");
  const out = [channelId === 0 ? CONTACT_VERSION : CHANNEL_VERSION];
  for (const value of [claims.companyId, claims.itemId, claims.contactId, claims.epoch, day])
    writeVarint(out, value, "recipient link");
  if (channelId !== 0) writeVarint(out, channelId, "recipient link");
  return Uint8Array.from(out);
}

/** The claims at the start of `bytes` and where they end; null when they are not well formed. */
function decodeClaims(bytes: Uint8Array): { claims: LinkClaims; length: number } | null {
  const version = bytes[0];
  if (version !== CONTACT_VERSION && version !== CHANNEL_VERSION) return null;
  const read = readVarints(bytes, 1, version === CHANNEL_VERSION ? CHANNEL_CLAIM_FIELDS : CLAIM_FIELDS);
  if (!read) return null;
  const { values, end: at } = read;
  const [companyId, itemId, contactId, epoch, day, channelId = 0] = values as [
    number,
    number,
    number,
    number,
    number,
    number?,
  ];
  if (day > dayNumber("9999-12-31")) return null;
  // One encoding per claims: a version 2 names a channel and no contact.
  if (version === CHANNEL_VERSION && (channelId === 0 || contactId !== 0)) return null;
  return { claims: { companyId, itemId, contactId, channelId, epoch, expiresOn: dayText(day) }, length: at };
}

function toBase64Url(bytes: Uint8Array): string {
  let text = "";
  for (const b of bytes) text += String.fromCharCode(b);
  return btoa(text).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
}

function fromBase64Url(text: string): Uint8Array | null {
  if (text.length > MAX_TOKEN_CHARS || !TOKEN_TEXT.test(text) || text.length % 4 === 1) return null;
  try {
    const raw = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(raw, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

async function tagOf(key: LinkKey, claims: Uint8Array, purpose: TokenPurpose): Promise<Uint8Array> {
  const domain = DOMAINS[purpose];
  const input = new Uint8Array(domain.length + claims.length);
  input.set(domain);
  input.set(claims, domain.length);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, input));
}

/** The token of `claims` for `purpose`, signed with `key` (an HMAC-SHA-256 key). */
export async function signClaims(
  key: LinkKey,
  claims: ClaimsToSign,
  purpose: TokenPurpose = "recipient link",
): Promise<string> {
  const bytes = encodeClaims(claims);
  const tag = await tagOf(key, bytes, purpose);
  const token = new Uint8Array(bytes.length + tag.length);
  token.set(bytes);
  token.set(tag, bytes.length);
  return toBase64Url(token);
}

/**
 * What `token` is, against `keys` (every key that may verify), on `today` (UTC, YYYY-MM-DD). The
 * same work whatever the token: a tag computed with every key, each compared in full (over claims
 * of no record when the token has none readable), so its time says nothing of what was wrong.
 */
export async function checkToken(
  keys: LinkKey[],
  token: string,
  today: string,
  purpose: TokenPurpose = "recipient link",
): Promise<TokenVerdict> {
  const bytes = fromBase64Url(token);
  const decoded = bytes ? decodeClaims(bytes) : null;
  const readable = decoded !== null && bytes!.length === decoded.length + TAG_BYTES;
  const claims = readable ? decoded.claims : NO_CLAIMS;
  const signed = readable ? bytes!.subarray(0, decoded.length) : encodeClaims(NO_CLAIMS);
  const tag = readable ? bytes!.subarray(decoded.length) : new Uint8Array(TAG_BYTES);
  let matches = false;
  for (const key of keys) {
    if (sameBytes(await tagOf(key, signed, purpose), tag)) matches = true;
  }
  if (!readable || !matches) return { state: "forged", claims };
  return { state: claims.expiresOn < today ? "expired" : "valid", claims };
}
