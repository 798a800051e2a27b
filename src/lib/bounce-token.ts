// The bounce address of an outgoing reminder email (docs/bounces.md): `bounces+<token>@<domain>`,
// VERP-style, where the token names one delivery (company, reminder, recipient contact) and is
// signed with LINK_SIGNING_KEYS under a purpose of its own, so that a recipient-page token never
// verifies here and a bounce token never opens a page. Imports only with their .ts extension, so
// Node code (e2e tests, the benchmark) mints tokens the way the Worker does.
//
// Bytes: a version (1), company, reminder and contact as unsigned LEB128 varints, then the first
// 10 bytes (80 bits) of the HMAC-SHA-256 tag over a domain label and those bytes (a forger can only
// guess online, one message per guess). Text: lowercase base32 (RFC 4648 alphabet, no padding):
// mail systems may lowercase a local part, and base32 keeps its meaning when they do. 42 characters
// for ids below 2^35 (local part 50); at most 56 for any safe integers, so the local part
// `bounces+<token>` stays within RFC 5321's 64 characters.
import { MAX_VARINT_BYTES, readVarints, sameBytes, writeVarint } from "./varint.ts";

export interface BounceClaims {
  companyId: number;
  reminderId: number;
  contactId: number;
}

export type BounceKey = Parameters<typeof crypto.subtle.sign>[1];

/** The local part's prefix before the `+`. */
export const BOUNCE_LOCAL_PREFIX = "bounces";
const VERSION = 1;
const TAG_BYTES = 10;
const FIELDS = 3;
const MAX_TOKEN_BYTES = 1 + FIELDS * MAX_VARINT_BYTES + TAG_BYTES;
export const MAX_BOUNCE_TOKEN_CHARS = Math.ceil((MAX_TOKEN_BYTES * 8) / 5);
const ALPHABET = "abcdefghijklmnopqrstuvwxyz234567";
const DOMAIN = new TextEncoder().encode("expiry-reminder bounce address\u0000");

function encodeClaims(claims: BounceClaims): Uint8Array {
  const out = [VERSION];
  for (const value of [claims.companyId, claims.reminderId, claims.contactId]) writeVarint(out, value, "bounce token");
  return Uint8Array.from(out);
}

function decodeClaims(bytes: Uint8Array): { claims: BounceClaims; length: number } | null {
  if (bytes[0] !== VERSION) return null;
  const read = readVarints(bytes, 1, FIELDS);
  if (!read) return null;
  const { values, end: at } = read;
  const [companyId, reminderId, contactId] = values as [number, number, number];
  return { claims: { companyId, reminderId, contactId }, length: at };
}

export function toBase32(bytes: Uint8Array): string {
  let text = "";
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      text += ALPHABET[(buffer >>> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) text += ALPHABET[(buffer << (5 - bits)) & 31];
  return text;
}

/** Base32 text (either case) to bytes; null when it is not base32 of whole bytes. */
export function fromBase32(text: string): Uint8Array | null {
  const lower = text.toLowerCase();
  const out: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const char of lower) {
    const value = ALPHABET.indexOf(char);
    if (value < 0) return null;
    buffer = (buffer << 5) | value;
    bits += 5;
    if (bits >= 8) {
      out.push((buffer >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
    buffer &= (1 << bits) - 1;
  }
  // Leftover bits must be fewer than a byte and zero (a canonical encoding).
  if (bits >= 5 || buffer !== 0) return null;
  return Uint8Array.from(out);
}

async function tagOf(key: BounceKey, claims: Uint8Array): Promise<Uint8Array> {
  const input = new Uint8Array(DOMAIN.length + claims.length);
  input.set(DOMAIN);
  input.set(claims, DOMAIN.length);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, input)).subarray(0, TAG_BYTES);
}

/** The token of one delivery, signed with `key`. */
export async function signBounceToken(key: BounceKey, claims: BounceClaims): Promise<string> {
  const bytes = encodeClaims(claims);
  const tag = await tagOf(key, bytes);
  const token = new Uint8Array(bytes.length + TAG_BYTES);
  token.set(bytes);
  token.set(tag, bytes.length);
  return toBase32(token);
}

/**
 * The delivery a token names when one of `keys` signed it; null for anything else (malformed,
 * truncated, altered, another purpose's token, a dropped key). Every key is tried in full.
 */
export async function checkBounceToken(keys: BounceKey[], token: string): Promise<BounceClaims | null> {
  if (token.length === 0 || token.length > MAX_BOUNCE_TOKEN_CHARS) return null;
  const bytes = fromBase32(token);
  const decoded = bytes ? decodeClaims(bytes) : null;
  if (!decoded || bytes!.length !== decoded.length + TAG_BYTES) return null;
  const signed = bytes!.subarray(0, decoded.length);
  const tag = bytes!.subarray(decoded.length);
  let matches = false;
  for (const key of keys) if (sameBytes(await tagOf(key, signed), tag)) matches = true;
  return matches ? decoded.claims : null;
}

/** `bounces+<token>@<domain>`. */
export const bounceAddress = (token: string, domain: string) => `${BOUNCE_LOCAL_PREFIX}+${token}@${domain}`;

/** The token of a bounce address (any case, optional angle brackets); null when it is not one. */
export function tokenOfAddress(address: string): string | null {
  const match = /^<?\s*bounces\+([a-z2-7]{1,80})@[^\s@<>]+\s*>?$/i.exec(address.trim());
  return match ? match[1]!.toLowerCase() : null;
}
