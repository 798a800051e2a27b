// The unsubscribe link of a reminder email (RFC 8058; docs/recipient-journey.md, "Unsubscribe and
// preferences"): `/u/{token}` on PUBLIC_BASE_URL, one per contact and address, and its preferences
// page `/u/{token}/preferences`.
//
// The token is a link token (link-token.ts) made for the purpose "unsubscribe link", so a
// recipient page's token never works here nor this one there. Its claims: the company, the contact
// (item 0), and in `epoch` a fingerprint of the contact's address (48 bits of SHA-256 of its
// email key): when the contact's address changes, links mailed to the old address stop working.
// It lives UNSUBSCRIBE_LIFETIME_DAYS from the day its email was sent, so an old email's link
// still works; deleting the contact kills it at once (the page reads the contact on every request).
import type { Env } from "../env";
import { keyRing } from "./key-ring";
import { checkToken, signClaims, type LinkClaims, type TokenVerdict } from "./link-token";
import { LINK_KEYS_VARIABLE, publicBase } from "./recipient-links";
import { addDays } from "./time";

/** Where the pages are: `/u/{token}` (unsubscribe, one-click POST) and `/u/{token}/preferences`. */
export const UNSUBSCRIBE_PREFIX = "/u/";
export const PREFERENCES_SUFFIX = "/preferences";
/** An unsubscribe link works until the end (UTC) of this many days after its email was sent. */
export const UNSUBSCRIBE_LIFETIME_DAYS = 730;

const PURPOSE = "unsubscribe link";

/** The fingerprint of an address, from its email key (src/lib/text-key.ts nameKey): 48 bits of its SHA-256. */
export async function addressFingerprint(emailKey: string): Promise<number> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(emailKey)));
  let value = 0;
  for (let i = 0; i < 6; i++) value = value * 256 + digest[i]!;
  return value;
}

async function keys(source: string | undefined) {
  if (!source?.trim()) throw new Error(`${LINK_KEYS_VARIABLE} is not configured`);
  return keyRing(LINK_KEYS_VARIABLE, source);
}

/** The unsubscribe token of a contact at an address, minted on `today` (UTC, YYYY-MM-DD). */
export async function mintUnsubscribeToken(
  linkKeys: string | undefined,
  target: { companyId: number; contactId: number; emailKey: string; today: string },
): Promise<string> {
  const claims: LinkClaims = {
    companyId: target.companyId,
    itemId: 0,
    contactId: target.contactId,
    channelId: 0,
    epoch: await addressFingerprint(target.emailKey),
    expiresOn: addDays(target.today, UNSUBSCRIBE_LIFETIME_DAYS),
  };
  return signClaims((await keys(linkKeys)).current.key, claims, PURPOSE);
}

/** What an unsubscribe token is, against every key of LINK_SIGNING_KEYS (the same work whatever the token). */
export async function verifyUnsubscribeToken(
  linkKeys: string | undefined,
  token: string,
  today: string,
): Promise<TokenVerdict> {
  return checkToken([...(await keys(linkKeys)).byKid.values()], token, today, PURPOSE);
}

/** A contact's unsubscribe URL and preferences URL, or null when PUBLIC_BASE_URL or the keys are unusable. */
export async function unsubscribeLinks(
  env: Pick<Env, "PUBLIC_BASE_URL" | "LINK_SIGNING_KEYS">,
  target: { companyId: number; contactId: number; emailKey: string; today?: string },
): Promise<{ unsubscribe: string; preferences: string } | null> {
  const base = publicBase(env.PUBLIC_BASE_URL);
  if (!base) return null;
  try {
    const token = await mintUnsubscribeToken(env.LINK_SIGNING_KEYS, {
      ...target,
      today: target.today ?? new Date().toISOString().slice(0, 10),
    });
    const unsubscribe = `${base}${UNSUBSCRIBE_PREFIX}${token}`;
    return { unsubscribe, preferences: `${unsubscribe}${PREFERENCES_SUFFIX}` };
  } catch {
    return null;
  }
}
