// The links in a reminder email to its recipient's page for the item (docs/recipient-journey.md).
//
// A link's token is the credential: no account, no cookie. It is signed, never stored: HMAC-SHA-256
// with the first key of LINK_SIGNING_KEYS over what it is bound to (the company, the item, the
// recipient contact or channel endpoint, the item's occurrence, schedule_epoch, and the last day it works), and every
// key of the set verifies it, so keys rotate like JWT_SIGNING_KEYS. The token is those claims and
// the full 256-bit tag, base64url. Deleting the item, the contact or the channel kills its links at
// once: the page reads them on every request. Verification does the same work whatever the token is
// (malformed, forged, signed by a dropped key, expired), so time tells nothing about it.
import type { Env } from "../env";
import { keyRing } from "./key-ring";
import { checkToken, signClaims, type ClaimsToSign, type TokenVerdict } from "./link-token";
import { addDays } from "./time";

export { MAX_TOKEN_CHARS, type ClaimsToSign, type LinkClaims, type TokenVerdict } from "./link-token";

/** The secret holding the link keys (`kid:secret` pairs; the first signs). */
export const LINK_KEYS_VARIABLE = "LINK_SIGNING_KEYS";
/** Where the pages are: `/r/{token}`, and `/r/{token}/{action}` for an action's confirmation. */
export const RECIPIENT_PREFIX = "/r/";
/** A link works until the end (UTC) of this many days after the item's date, or after the day it was sent when that is later. */
export const LINK_LIFETIME_DAYS = 60;

export const RECIPIENT_ACTIONS = ["acknowledge", "complete", "renew", "snooze"] as const;
export type RecipientAction = (typeof RECIPIENT_ACTIONS)[number];
export const isRecipientAction = (value: string): value is RecipientAction =>
  (RECIPIENT_ACTIONS as readonly string[]).includes(value);

/** Absolute URLs on PUBLIC_BASE_URL: the page, and each action's confirmation. */
export type RecipientLinks = { page: string } & Record<RecipientAction, string>;

// ---- minting and verifying ----

/** The link keys, or a rejection naming the variable (missing or unusable). */
function linkKeys(source: string | undefined) {
  if (!source?.trim()) return Promise.reject(new Error(`${LINK_KEYS_VARIABLE} is not configured`));
  return keyRing(LINK_KEYS_VARIABLE, source);
}

/** A token for `claims` (a channel's when `channelId` is set), signed with the first key of `keys` (LINK_SIGNING_KEYS). */
export async function mintLinkToken(keys: string | undefined, claims: ClaimsToSign): Promise<string> {
  return signClaims((await linkKeys(keys)).current.key, claims);
}

/**
 * What a token is (link-token.ts `checkToken`), against every key of LINK_SIGNING_KEYS. Throws
 * only when LINK_SIGNING_KEYS itself is unusable.
 */
export async function verifyLinkToken(keys: string | undefined, token: string, today: string): Promise<TokenVerdict> {
  return checkToken([...(await linkKeys(keys)).byKid.values()], token, today);
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
 * The links of one recipient of one item's reminder (what the email or the channel message shows):
 * a contact's (`contactId`), or a channel endpoint's (`channelId`, contactId 0: whoever in the
 * channel opens them acts as the channel, docs/recipient-journey.md). Absolute URLs on
 * PUBLIC_BASE_URL, bound to the item's current occurrence (`epoch`, its schedule_epoch) and
 * working until LINK_LIFETIME_DAYS after `itemDate` (or after today, when later). Null, with an
 * error logged once, when PUBLIC_BASE_URL or LINK_SIGNING_KEYS is missing or unusable: the email
 * then goes out without links rather than not at all.
 */
export async function recipientLinks(
  env: Pick<Env, "PUBLIC_BASE_URL" | "LINK_SIGNING_KEYS">,
  target: {
    companyId: number;
    itemId: number;
    contactId: number;
    channelId?: number;
    epoch: number;
    itemDate: string;
    today?: string;
  },
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
      channelId: target.channelId ?? 0,
      epoch: target.epoch,
      expiresOn: linkExpiry(target.itemDate, today),
    });
  } catch (error) {
    report(String((error as Error).message ?? error));
    return null;
  }
  return linksOfPage(`${base}${RECIPIENT_PREFIX}${token}`);
}

/** A recipient's page and its action pages (`{page}/{action}`). */
export function linksOfPage(page: string): RecipientLinks {
  return {
    page,
    ...(Object.fromEntries(RECIPIENT_ACTIONS.map((action) => [action, `${page}/${action}`])) as Record<
      RecipientAction,
      string
    >),
  };
}
