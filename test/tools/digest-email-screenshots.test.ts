// The digest email's HTML part (src/company-clock/digest-email.ts) in headless Chromium, as a
// recipient's mail client would show it: English on an 800 px desktop, Arabic on a 390 px phone.
// Nothing is loaded from anywhere (every request is refused and counted), the Arabic one reads right
// to left, and neither scrolls sideways. No service: the renderer is pure, so this takes a few
// seconds, and it is a tools test (src/ typechecks here, not under the e2e files' Node resolution).
// The screenshots are kept for a person to look at: E2E_SCREENSHOTS, else a temporary directory
// (docs/languages.md, "Digests").
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DigestEntry, digestMessage } from "../../src/company-clock/digest-email";
import { speechFor } from "../../src/i18n/language";
import { launchChromium, originPage } from "../e2e/support/browser.ts";

const SHOTS = process.env.E2E_SCREENSHOTS || join(tmpdir(), "expiry-e2e-digest-shots");
/** An origin nothing is served from: the page may load nothing at all. */
const NOWHERE = "https://digest.invalid";

const TITLES: Array<[string, DigestEntry["itemType"], string | null, number]> = [
  ["Boiler inspection, building A", "exp", "Fire inspection", -4],
  ["VAT return Q4", "due", null, -1],
  ["Anna Smith", "exp", "Passport", 0],
  ["Dentist: Dr. Weber", "apt", null, 2],
  ["Lift maintenance contract", "exp", "Contract", 6],
  ["Trade fair Hannover", "evt", null, 12],
  ["<script>alert('x')</script> \u202Eevil title", "due", null, 25],
];
const entries = (count: number): DigestEntry[] =>
  Array.from({ length: count }, (_, i) => {
    const [title, itemType, documentType, days] = TITLES[i % TITLES.length]!;
    const page = `https://reminders.example/r/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w${i}`;
    const date = new Date(Date.UTC(2027, 2, 11 + days)).toISOString().slice(0, 10);
    return {
      itemId: i + 1,
      title,
      itemType,
      documentType,
      expiryDate: date,
      links:
        i === 3
          ? null
          : {
              page,
              acknowledge: `${page}/acknowledge`,
              complete: `${page}/complete`,
              renew: `${page}/renew`,
              snooze: `${page}/snooze`,
            },
    };
  });
const digest = (language: string, count: number, total: number) =>
  digestMessage({
    speech: speechFor(language),
    kind: "weekly",
    today: "2027-03-11",
    dateFormat: "D MMM YYYY",
    companyName: "Acme Facilities Ltd",
    recipientFirstName: language === "ar" ? "ليلى" : "Ada",
    recipientLastName: language === "ar" ? "حداد" : "Lovelace",
    entries: entries(count),
    total,
    preferencesUrl: "https://reminders.example/u/AQEBAgHXowGQ_oHFkKwNybGMLROXxDVG_3-xDRWabv_DY_L5C4aJ1w/preferences",
  });

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});

async function look(html: string, width: number, file: string) {
  const shown = await originPage(browser, NOWHERE, { viewport: { width, height: 900 }, javaScript: false });
  try {
    await shown.page.setContent(html);
    await shown.page.screenshot({ path: join(SHOTS, file), fullPage: true });
    return {
      direction: await shown.page.evaluate<string>('getComputedStyle(document.querySelector("div")).direction'),
      scrollWidth: await shown.page.evaluate<number>("document.documentElement.scrollWidth"),
      headings: await shown.page.locator("h2").allInnerTexts(),
      links: await shown.page.locator("a").count(),
      foreign: shown.foreign,
    };
  } finally {
    await shown.close();
  }
}

describe("the digest email in Chromium", () => {
  it("English at 800 px: groups, links, nothing loaded", async () => {
    const seen = await look(digest("en", 7, 9).html, 800, "digest-en-800.png");
    expect(seen.direction).toBe("ltr");
    expect(seen.headings).toEqual(["Overdue (2)", "In the next 7 days (3)", "Later, within 30 days (2)"]);
    expect(seen.links).toBe(6 * 4 + 1);
    expect(seen.scrollWidth).toBeLessThanOrEqual(800);
    expect(seen.foreign).toEqual([]);
  });

  it("Arabic at 390 px: right to left, no sideways scrolling", async () => {
    const seen = await look(digest("ar", 7, 9).html, 390, "digest-ar-390.png");
    expect(seen.direction).toBe("rtl");
    expect(seen.headings[0]).toBe("متأخرة (2)");
    expect(seen.scrollWidth).toBeLessThanOrEqual(390);
    expect(seen.foreign).toEqual([]);
  });
});
