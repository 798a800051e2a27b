// The tokens of the links in reminder emails (src/lib/recipient-links.ts): minted with the first
// key of LINK_SIGNING_KEYS, verified by any; bound to company, item, contact, occurrence and a last
// day; altered, foreign, dropped-key, malformed and expired tokens refused, each with the same work.
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  LINK_LIFETIME_DAYS,
  MAX_TOKEN_CHARS,
  linkExpiry,
  mintLinkToken,
  publicBase,
  recipientLinks,
  verifyLinkToken,
  type LinkClaims,
} from "../../src/lib/recipient-links";
import { addDays } from "../../src/lib/time";
import { captureErrorLogs, env } from "./helpers";

const TODAY = "2026-11-26";
const CLAIMS: LinkClaims = {
  companyId: 500_001,
  itemId: 123_456_789,
  contactId: 42,
  channelId: 0,
  epoch: 3,
  expiresOn: "2027-03-31",
};
const KEYS = env.LINK_SIGNING_KEYS!;
const [CURRENT, PREVIOUS] = KEYS.split(" ") as [string, string];
const OTHER = "other:another-link-key-of-another-deployment-0123456789";

/** base64url -> bytes -> base64url, for altering a token byte by byte. */
const decode = (token: string) =>
  Uint8Array.from(atob(token.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (token.length % 4)) % 4)), (c) =>
    c.charCodeAt(0),
  );
const encode = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/=+$/, "")
    .replace(/\+/g, "-")
    .replace(/\//g, "_");

describe("minting and verifying", () => {
  it("verifies what it minted, with the claims it was given; URL-safe, at least 256 bits of tag", async () => {
    const token = await mintLinkToken(KEYS, CLAIMS);
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decode(token).length).toBeGreaterThanOrEqual(32 + 6);
    expect(await verifyLinkToken(KEYS, token, TODAY)).toEqual({ state: "valid", claims: CLAIMS });
    // Deterministic: a recipient's links for one occurrence are the same in every email.
    expect(await mintLinkToken(KEYS, CLAIMS)).toBe(token);
    // Each claim changes the token.
    for (const change of [
      { companyId: 1 },
      { itemId: 1 },
      { contactId: 1 },
      { epoch: 4 },
      { expiresOn: "2027-04-01" },
    ]) {
      expect(await mintLinkToken(KEYS, { ...CLAIMS, ...change }), JSON.stringify(change)).not.toBe(token);
    }
  });

  it("refuses a token with any byte altered", async () => {
    const bytes = decode(await mintLinkToken(KEYS, CLAIMS));
    for (let i = 0; i < bytes.length; i++) {
      const altered = bytes.slice();
      altered[i] = altered[i]! ^ 0x01;
      expect((await verifyLinkToken(KEYS, encode(altered), TODAY)).state, `byte ${i}`).toBe("forged");
    }
    expect((await verifyLinkToken(KEYS, encode(bytes.subarray(0, bytes.length - 1)), TODAY)).state).toBe("forged");
    expect((await verifyLinkToken(KEYS, encode(Uint8Array.of(...bytes, 0)), TODAY)).state).toBe("forged");
  });

  it("rotates: the previous key still verifies, a dropped key or another deployment's does not", async () => {
    const byPrevious = await mintLinkToken(PREVIOUS, CLAIMS);
    expect((await verifyLinkToken(KEYS, byPrevious, TODAY)).state).toBe("valid");
    // Rotation: a new key first, the old one kept: old links work, new ones are signed by the new key.
    const rotated = `new:a-brand-new-link-signing-key-0123456789abcdef ${CURRENT}`;
    expect((await verifyLinkToken(rotated, await mintLinkToken(KEYS, CLAIMS), TODAY)).state).toBe("valid");
    expect((await verifyLinkToken(KEYS, await mintLinkToken(rotated, CLAIMS), TODAY)).state).toBe("forged");
    // The old key dropped: its links are dead.
    expect((await verifyLinkToken(CURRENT, byPrevious, TODAY)).state).toBe("forged");
    expect((await verifyLinkToken(KEYS, await mintLinkToken(OTHER, CLAIMS), TODAY)).state).toBe("forged");
  });

  it("expires after its last day (UTC), and says so only to a signed token", async () => {
    const token = await mintLinkToken(KEYS, CLAIMS);
    expect((await verifyLinkToken(KEYS, token, CLAIMS.expiresOn)).state).toBe("valid");
    expect((await verifyLinkToken(KEYS, token, addDays(CLAIMS.expiresOn, 1))).state).toBe("expired");
    expect((await verifyLinkToken(OTHER, token, addDays(CLAIMS.expiresOn, 1))).state).toBe("forged");
  });

  it("refuses malformed text with claims of no record", async () => {
    const token = await mintLinkToken(KEYS, CLAIMS);
    const none = { companyId: 0, itemId: 0, contactId: 0, channelId: 0, epoch: 0, expiresOn: "1970-01-01" };
    for (const text of [
      "",
      "x",
      "not a token",
      "%2F..",
      `${token}=`,
      "A".repeat(5000),
      token.slice(0, 1),
      `${token}/`,
      `AgEBAQGtow${token.slice(10)}`,
    ]) {
      const verdict = await verifyLinkToken(KEYS, text, TODAY);
      expect(verdict.state, text.slice(0, 40)).toBe("forged");
      if (!text.startsWith(token.slice(0, 10)) && text !== `${token}=`)
        expect(verdict.claims, text.slice(0, 40)).toEqual(none);
    }
  });

  it("does the same work whatever the token: one HMAC per configured key", async () => {
    const signs = vi.spyOn(crypto.subtle, "sign");
    const valid = await mintLinkToken(KEYS, CLAIMS);
    const kinds = {
      valid,
      expired: await mintLinkToken(KEYS, { ...CLAIMS, expiresOn: "2026-01-01" }),
      forged: await mintLinkToken(OTHER, CLAIMS),
      altered: valid.slice(0, -2) + (valid.endsWith("AA") ? "BB" : "AA"),
      malformed: "!!",
      empty: "",
    };
    const counts: Record<string, number> = {};
    for (const [kind, token] of Object.entries(kinds)) {
      signs.mockClear();
      await verifyLinkToken(KEYS, token, TODAY);
      counts[kind] = signs.mock.calls.length;
    }
    signs.mockRestore();
    expect(new Set(Object.values(counts))).toEqual(new Set([2]));
  });

  it("throws when LINK_SIGNING_KEYS is missing or unusable (the pages answer 500, emails go without links)", async () => {
    await expect(verifyLinkToken(undefined, "x", TODAY)).rejects.toThrow(/LINK_SIGNING_KEYS is not configured/);
    await expect(mintLinkToken("k:short", CLAIMS)).rejects.toThrow(/LINK_SIGNING_KEYS must hold/);
  });
});

/** A token built by hand, byte by byte, as the format says (src/lib/link-token.ts): no code of the module's. */
async function handMade(version: number, fields: number[], keyPair = CURRENT): Promise<string> {
  const bytes: number[] = [version];
  for (let value of fields) {
    while (value >= 0x80) {
      bytes.push((value % 0x80) | 0x80);
      value = Math.floor(value / 0x80);
    }
    bytes.push(value);
  }
  const secret = keyPair.slice(keyPair.indexOf(":") + 1);
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const domain = new TextEncoder().encode("expiry-reminder recipient link\u0000");
  const tag = new Uint8Array(await crypto.subtle.sign("HMAC", key, Uint8Array.of(...domain, ...bytes)));
  return encode(Uint8Array.of(...bytes, ...tag));
}

const dayOf = (date: string) => Math.round(Date.parse(`${date}T00:00:00Z`) / 86_400_000);

describe("a channel's link (version 2)", () => {
  const CHANNEL: LinkClaims = { ...CLAIMS, contactId: 0, channelId: 7 };
  const fields = (c: LinkClaims) => [c.companyId, c.itemId, c.contactId, c.epoch, dayOf(c.expiresOn)];

  it("keeps a contact's token the version 1 it was: the same bytes, and a version-1 token still verifies", async () => {
    const v1 = await handMade(1, fields(CLAIMS));
    expect(await mintLinkToken(KEYS, CLAIMS)).toBe(v1);
    expect(await verifyLinkToken(KEYS, v1, TODAY)).toEqual({ state: "valid", claims: { ...CLAIMS, channelId: 0 } });
    const small = await handMade(1, [1, 2, 3, 1, dayOf("2027-01-01")]);
    expect(small).toHaveLength(54);
    expect((await verifyLinkToken(KEYS, small, TODAY)).claims.channelId).toBe(0);
  });

  it("round-trips a channel's claims as version 2: the sixth varint is the channel, the contact 0", async () => {
    const token = await mintLinkToken(KEYS, CHANNEL);
    expect(decode(token)[0]).toBe(2);
    expect(token).toBe(await handMade(2, [...fields(CHANNEL), 7]));
    expect(await verifyLinkToken(KEYS, token, TODAY)).toEqual({ state: "valid", claims: CHANNEL });
    expect(token).not.toBe(await mintLinkToken(KEYS, { ...CHANNEL, channelId: 8 }));
    expect((await verifyLinkToken(KEYS, token, addDays(CHANNEL.expiresOn, 1))).state).toBe("expired");
    // A channel's link names no contact.
    await expect(mintLinkToken(KEYS, { ...CHANNEL, contactId: 42 })).rejects.toThrow(/names no contact/);
  });

  it("refuses a token whose channel field was altered, and version-2 bytes that are not a channel's", async () => {
    const bytes = decode(await mintLinkToken(KEYS, CHANNEL));
    const channelAt = 1 + fields(CHANNEL).reduce((n, v) => n + Math.max(1, Math.ceil(Math.log2(v + 1) / 7)), 0);
    expect(bytes[channelAt]).toBe(7);
    for (const value of [8, 0, 6]) {
      const altered = bytes.slice();
      altered[channelAt] = value;
      expect((await verifyLinkToken(KEYS, encode(altered), TODAY)).state, `channel ${value}`).toBe("forged");
    }
    // The version byte swapped: a version 1 reading of a channel's bytes (or the reverse) is forged.
    const asV1 = bytes.slice();
    asV1[0] = 1;
    expect((await verifyLinkToken(KEYS, encode(asV1), TODAY)).state).toBe("forged");
    // Signed with the right key, but version 2 with channel 0, or with a contact as well: not well formed.
    for (const odd of [await handMade(2, [...fields(CHANNEL), 0]), await handMade(2, [...fields(CLAIMS), 7])]) {
      const verdict = await verifyLinkToken(KEYS, odd, TODAY);
      expect(verdict.state).toBe("forged");
      expect(verdict.claims.channelId).toBe(0);
    }
  });

  it("stays within MAX_TOKEN_CHARS at the largest ids; anything longer is refused unread", async () => {
    const max = Number.MAX_SAFE_INTEGER;
    const largest = await mintLinkToken(KEYS, {
      companyId: max,
      itemId: max,
      contactId: 0,
      channelId: max,
      epoch: max,
      expiresOn: "9999-12-31",
    });
    expect(largest.length).toBeLessThanOrEqual(MAX_TOKEN_CHARS);
    expect(MAX_TOKEN_CHARS).toBe(Math.ceil(((1 + 6 * 8 + 32) * 4) / 3));
    expect((await verifyLinkToken(KEYS, largest, TODAY)).state).toBe("valid");
    expect((await verifyLinkToken(KEYS, `${largest}${"A".repeat(MAX_TOKEN_CHARS)}`, TODAY)).claims.channelId).toBe(0);
    expect((await verifyLinkToken(KEYS, "A".repeat(MAX_TOKEN_CHARS + 1), TODAY)).state).toBe("forged");
  });
});

describe("the links of a reminder", () => {
  const logged = captureErrorLogs();
  afterEach(() => vi.restoreAllMocks());

  it("lasts LINK_LIFETIME_DAYS after the item's date, or after today when that is later", () => {
    expect(LINK_LIFETIME_DAYS).toBe(60);
    expect(linkExpiry("2027-01-31", "2026-11-26")).toBe("2027-04-01");
    expect(linkExpiry("2026-10-01", "2026-11-26")).toBe("2027-01-25");
  });

  it("are absolute URLs on PUBLIC_BASE_URL: the page and one per action, bound to the recipient and the occurrence", async () => {
    const links = await recipientLinks(
      { PUBLIC_BASE_URL: "https://reminders.example.com/", LINK_SIGNING_KEYS: KEYS },
      { companyId: 7, itemId: 18, contactId: 5, epoch: 2, itemDate: "2027-01-31", today: "2026-11-26" },
    );
    expect(links).not.toBeNull();
    const token = links!.page.slice("https://reminders.example.com/r/".length);
    expect(links).toEqual({
      page: `https://reminders.example.com/r/${token}`,
      acknowledge: `https://reminders.example.com/r/${token}/acknowledge`,
      complete: `https://reminders.example.com/r/${token}/complete`,
      renew: `https://reminders.example.com/r/${token}/renew`,
      snooze: `https://reminders.example.com/r/${token}/snooze`,
    });
    expect(await verifyLinkToken(KEYS, token, "2026-11-26")).toEqual({
      state: "valid",
      claims: { companyId: 7, itemId: 18, contactId: 5, channelId: 0, epoch: 2, expiresOn: "2027-04-01" },
    });
  });

  it("of a channel's message name the channel (contactId 0) when given a channelId", async () => {
    const links = await recipientLinks(
      { PUBLIC_BASE_URL: "https://reminders.example.com", LINK_SIGNING_KEYS: KEYS },
      { companyId: 7, itemId: 18, contactId: 0, channelId: 3, epoch: 2, itemDate: "2027-01-31", today: "2026-11-26" },
    );
    const token = links!.page.slice("https://reminders.example.com/r/".length);
    expect(await verifyLinkToken(KEYS, token, "2026-11-26")).toEqual({
      state: "valid",
      claims: { companyId: 7, itemId: 18, contactId: 0, channelId: 3, epoch: 2, expiresOn: "2027-04-01" },
    });
  });

  it("are left out (null, one error line) without a usable PUBLIC_BASE_URL or LINK_SIGNING_KEYS", async () => {
    const target = { companyId: 1, itemId: 1, contactId: 1, epoch: 1, itemDate: "2027-01-31" };
    expect(await recipientLinks({ PUBLIC_BASE_URL: "ftp://x.example", LINK_SIGNING_KEYS: KEYS }, target)).toBeNull();
    expect(await recipientLinks({ PUBLIC_BASE_URL: undefined, LINK_SIGNING_KEYS: KEYS }, target)).toBeNull();
    expect(
      await recipientLinks({ PUBLIC_BASE_URL: "https://x.example", LINK_SIGNING_KEYS: undefined }, target),
    ).toBeNull();
    expect(logged.join("\n")).toMatch(/without action links/);
    expect(logged.join("\n")).not.toContain("test-link-key");
  });

  it("normalises PUBLIC_BASE_URL to an origin (and path) without a trailing slash", () => {
    expect(publicBase("https://reminders.example.com")).toBe("https://reminders.example.com");
    expect(publicBase(" https://reminders.example.com/ ")).toBe("https://reminders.example.com");
    expect(publicBase("http://localhost:8790")).toBe("http://localhost:8790");
    expect(publicBase("https://example.com/base/")).toBe("https://example.com/base");
    for (const bad of [
      "",
      "reminders.example.com",
      "javascript:alert(1)",
      "https://example.com/?q=1",
      "https://u:p@example.com",
    ])
      expect(publicBase(bad), bad).toBeNull();
  });
});
