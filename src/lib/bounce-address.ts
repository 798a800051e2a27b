// Minting and reading bounce addresses with the Worker's key ring (LINK_SIGNING_KEYS; the token
// itself is src/lib/bounce-token.ts, docs/bounces.md).
import { keyRing } from "./key-ring";
import { LINK_KEYS_VARIABLE } from "./recipient-links";
import { bounceAddress, checkBounceToken, signBounceToken, type BounceClaims } from "./bounce-token";

export { tokenOfAddress, type BounceClaims } from "./bounce-token";

/** The header carrying the bounce address on every reminder email (docs/bounces.md: why not Return-Path). */
export const BOUNCE_HEADER = "X-Bounce-Address";

/** The domain of an address (`reminders@example.com` → `example.com`); null when it has none. */
export function domainOf(address: string): string | null {
  const at = address.lastIndexOf("@");
  const domain =
    at > 0
      ? address
          .slice(at + 1)
          .trim()
          .toLowerCase()
      : "";
  return /^[a-z0-9.-]+\.[a-z0-9-]+$/.test(domain) ? domain : null;
}

/** The bounce address of one delivery, on the domain of `sender` (EMAIL_FROM). Throws when the keys are unusable. */
export async function mintBounceAddress(
  keys: string | undefined,
  sender: string,
  claims: BounceClaims,
): Promise<string> {
  if (!keys?.trim()) throw new Error(`${LINK_KEYS_VARIABLE} is not configured`);
  const domain = domainOf(sender);
  if (!domain) throw new Error("EMAIL_FROM has no domain");
  const ring = await keyRing(LINK_KEYS_VARIABLE, keys);
  return bounceAddress(await signBounceToken(ring.current.key, claims), domain);
}

/** The delivery a token names, checked against every key; null when forged or malformed (or no keys). */
export async function verifyBounceToken(keys: string | undefined, token: string): Promise<BounceClaims | null> {
  if (!keys?.trim()) return null;
  const ring = await keyRing(LINK_KEYS_VARIABLE, keys);
  return checkBounceToken([...ring.byKid.values()], token);
}
