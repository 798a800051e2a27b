// The bounce token (src/lib/bounce-token.ts, bounce-address.ts) and the report reader
// (src/inbound/report.ts) on real-world-shaped DSNs and ARF reports (support/bounce-samples.ts).
import { describe, expect, it } from "vitest";
import { domainOf, mintBounceAddress, tokenOfAddress, verifyBounceToken } from "../../src/lib/bounce-address";
import { fromBase32, MAX_BOUNCE_TOKEN_CHARS, toBase32 } from "../../src/lib/bounce-token";
import { mintLinkToken } from "../../src/lib/recipient-links";
import { readReport } from "../../src/inbound/report";
import { env } from "./helpers";
import {
  aolComplaint,
  deliveredNotice,
  gmailHardBounce,
  outlookHardBounce,
  postfixBounce,
  yahooComplaint,
} from "./support/bounce-samples";

const KEYS = env.LINK_SIGNING_KEYS!;
const [CURRENT, PREVIOUS] = KEYS.split(" ") as [string, string];
const SENDER = "reminders@expiry-reminder.example";
const CLAIMS = { companyId: 500_001, reminderId: 123_456, contactId: 42 };

describe("bounce addresses", () => {
  it("name one delivery, lowercase base32, within 64 characters of local part, on the sender's domain", async () => {
    const address = await mintBounceAddress(KEYS, SENDER, CLAIMS);
    expect(address).toMatch(/^bounces\+[a-z2-7]+@expiry-reminder\.example$/);
    expect(address.split("@")[0]!.length).toBeLessThanOrEqual(64);
    const token = tokenOfAddress(address)!;
    expect(await verifyBounceToken(KEYS, token)).toEqual(CLAIMS);
    // Mail systems may change the case of a local part.
    expect(await verifyBounceToken(KEYS, tokenOfAddress(address.toUpperCase())!)).toEqual(CLAIMS);
    const huge = { companyId: Number.MAX_SAFE_INTEGER, reminderId: Number.MAX_SAFE_INTEGER, contactId: 2 ** 52 };
    const longest = await mintBounceAddress(KEYS, SENDER, huge);
    expect(longest.split("@")[0]!.length).toBeLessThanOrEqual(64);
    expect(await verifyBounceToken(KEYS, tokenOfAddress(longest)!)).toEqual(huge);
    expect(tokenOfAddress(longest)!.length).toBeLessThanOrEqual(MAX_BOUNCE_TOKEN_CHARS);
  });

  it("verify with any key of the ring, and with no other", async () => {
    const byPrevious = tokenOfAddress(await mintBounceAddress(PREVIOUS, SENDER, CLAIMS))!;
    expect(await verifyBounceToken(KEYS, byPrevious)).toEqual(CLAIMS);
    expect(await verifyBounceToken(CURRENT, byPrevious)).toBeNull();
    const foreign = tokenOfAddress(
      await mintBounceAddress("other:another-link-key-of-another-deployment-0123456789", SENDER, CLAIMS),
    )!;
    expect(await verifyBounceToken(KEYS, foreign)).toBeNull();
  });

  it("refuse altered, truncated, extended, another company's and another purpose's tokens", async () => {
    const token = tokenOfAddress(await mintBounceAddress(KEYS, SENDER, CLAIMS))!;
    const bytes = fromBase32(token)!;
    for (let i = 0; i < bytes.length; i++) {
      const altered = Uint8Array.from(bytes);
      altered[i]! ^= 0x01;
      expect(await verifyBounceToken(KEYS, toBase32(altered))).toBeNull();
    }
    expect(await verifyBounceToken(KEYS, token.slice(0, -1))).toBeNull();
    expect(await verifyBounceToken(KEYS, token.slice(0, -8))).toBeNull();
    expect(await verifyBounceToken(KEYS, `${token}aa`)).toBeNull();
    expect(await verifyBounceToken(KEYS, "")).toBeNull();
    expect(await verifyBounceToken(KEYS, "not base32!")).toBeNull();
    // The claims of another company with this token's tag: the tag covers the company.
    const other = fromBase32(tokenOfAddress(await mintBounceAddress(KEYS, SENDER, { ...CLAIMS, companyId: 2 }))!)!;
    const spliced = new Uint8Array([...other.subarray(0, other.length - 10), ...bytes.subarray(bytes.length - 10)]);
    expect(await verifyBounceToken(KEYS, toBase32(spliced))).toBeNull();
    // A recipient-page token (same keys, another purpose) never verifies as a bounce token.
    const link = await mintLinkToken(KEYS, {
      companyId: 1,
      itemId: 2,
      contactId: 3,
      epoch: 0,
      expiresOn: "2027-01-01",
    });
    expect(await verifyBounceToken(KEYS, link.toLowerCase())).toBeNull();
  });

  it("are read only from bounces+<token>@domain", () => {
    expect(tokenOfAddress("<bounces+abc234@x.example>")).toBe("abc234");
    expect(tokenOfAddress("reminders@x.example")).toBeNull();
    expect(tokenOfAddress("bounces+@x.example")).toBeNull();
    expect(tokenOfAddress("bounces+abc@x.example, other@y")).toBeNull();
    expect(domainOf("Reminders@Expiry-Reminder.Example")).toBe("expiry-reminder.example");
    expect(domainOf("nodomain")).toBeNull();
  });
});

describe("reading reports", () => {
  const sample = { rcpt: "Ada@Example.com", bounce: "bounces+aaaabbbb@expiry-reminder.example" };

  it("Gmail: a hard bounce 5.1.1 with its diagnostic unfolded, the token from the returned original", () => {
    const bounce = readReport(gmailHardBounce(sample))!;
    expect(bounce).toMatchObject({ kind: "hard", status: "5.1.1", recipients: ["ada@example.com"] });
    expect(bounce.reason).toMatch(/^smtp; 550-5\.1\.1 The email account that you tried to reach does not exist/);
    expect(bounce.reason.length).toBeLessThanOrEqual(300);
    expect(bounce.originalToken).toBe("aaaabbbb");
  });

  it("Outlook / Exchange Online: a base64 delivery-status part, 5.1.10", () => {
    expect(readReport(outlookHardBounce(sample))).toMatchObject({
      kind: "hard",
      status: "5.1.10",
      reason: "smtp;550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup",
      recipients: ["ada@example.com"],
      originalToken: "aaaabbbb",
    });
  });

  it("Postfix: hard 5.1.1, soft 4.2.2 (failed or delayed), the token from text/rfc822-headers", () => {
    expect(readReport(postfixBounce(sample))).toMatchObject({
      kind: "hard",
      status: "5.1.1",
      originalToken: "aaaabbbb",
    });
    expect(readReport(postfixBounce(sample, "4.2.2"))).toMatchObject({ kind: "soft", status: "4.2.2" });
    expect(readReport(postfixBounce(sample, "4.4.1", "delayed"))).toMatchObject({ kind: "soft", status: "4.4.1" });
    // A 5.x.x that is only "delayed" is not final: soft.
    expect(readReport(postfixBounce(sample, "5.1.1", "delayed"))).toMatchObject({ kind: "soft" });
  });

  it("Yahoo and AOL ARF: complaints, with the recipient when the report names it", () => {
    expect(readReport(yahooComplaint(sample))).toMatchObject({
      kind: "complaint",
      status: "abuse",
      recipients: ["ada@example.com"],
      originalToken: "aaaabbbb",
    });
    expect(readReport(yahooComplaint(sample))!.reason).toBe("complaint (abuse) from Yahoo!-Mail-Feedback/2.0");
    expect(readReport(aolComplaint(sample))).toMatchObject({
      kind: "complaint",
      recipients: [],
      originalToken: "aaaabbbb",
    });
  });

  it("nothing for successes, other messages, broken MIME and garbage", () => {
    expect(readReport(deliveredNotice(sample))).toBeNull();
    expect(readReport("From: a@b\r\nSubject: hello\r\n\r\nHi")).toBeNull();
    expect(readReport("")).toBeNull();
    expect(readReport("\u0000\u0001garbage")).toBeNull();
    expect(readReport("Content-Type: multipart/report; report-type=delivery-status\r\n\r\nno boundary")).toBeNull();
    expect(
      readReport('Content-Type: multipart/report; report-type=delivery-status; boundary="x"\r\n\r\n--x\r\n--x--'),
    ).toBeNull();
    // Deeply nested multiparts end at the depth bound instead of recursing on.
    let nested = "Content-Type: text/plain\r\n\r\nx";
    for (let i = 0; i < 50; i++)
      nested = `Content-Type: multipart/mixed; boundary="b${i}"\r\n\r\n--b${i}\r\n${nested}\r\n--b${i}--`;
    expect(readReport(nested.replace("multipart/mixed", "multipart/report"))).toBeNull();
  });
});
