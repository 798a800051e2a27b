// End to end, in the recipient's language (docs/languages.md): a company template for German and
// one for Arabic, a reminder to a German and to an Arabic contact at the coming minute, both emails
// read from wrangler's local email simulation as a recipient gets them, and the Arabic email and
// the Arabic recipient's page looked at in headless Chromium on a 390 px phone (screenshots kept).
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, originPage } from "./support/browser.ts";
import { comingMinute, emailsTo, pageLinksOf, type SentEmail } from "./support/recipient.ts";
import { callApi, ownerToken, startService, type Service } from "./support/service.ts";

let service: Service;
let browser: Browser;
let token: string;
/** Screenshots, for a person to look at: E2E_SCREENSHOTS, else a temporary directory. */
const SHOTS = process.env.E2E_SCREENSHOTS || join(tmpdir(), "expiry-e2e-language-shots");

beforeAll(async () => {
  service = await startService("expiry-e2e-languages-");
  browser = await launchChromium();
  token = await ownerToken(service.base);
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const api = (method: string, path: string, body?: unknown) => callApi(service.base, method, path, token, body);
const address = (word: string) => `${word}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;

async function remind(
  contact: Record<string, unknown>,
  item: Record<string, unknown>,
  minute: { date: string; hour: string },
) {
  const email = address(
    String(contact.first_name)
      .toLowerCase()
      .replace(/[^a-z]/g, "") || "x",
  );
  const created = await api("POST", "/v1/contacts", { ...contact, email });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const res = await api("POST", "/v1/items", { seqid: 0, contact_id: created.body.data.contact_id, ...item });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const reminder = await api("POST", `/v1/items/${res.body.data.item_id}/reminders`, minute);
  expect(reminder.status, JSON.stringify(reminder.body)).toBe(201);
  return email;
}

describe("reminders in the recipient's language, with the company's template", () => {
  let german: SentEmail;
  let arabic: SentEmail;

  beforeAll(async () => {
    for (const [language, body] of [
      [
        "de",
        {
          subject: "Frist: {item.title} – {item.when} ({item.date})",
          intro: "Guten Tag {contact.first_name} {contact.last_name},\n\nbitte denken Sie an {item.title}.",
          footer: "Ihr Team von {company.name}",
        },
      ],
      [
        "ar",
        { intro: "مرحبًا {contact.first_name}،\n\nنذكّرك بـ {item.title}.", footer: "مع تحيات فريق {company.name}" },
      ],
    ] as const) {
      const res = await api("PUT", `/v1/reminder-templates/${language}`, body);
      expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
    }
    const minute = comingMinute();
    const [de, ar] = await Promise.all([
      remind(
        { first_name: "Jana", last_name: "Weber", language: "de-DE" },
        { title: "Reisepass", expiry_date: "2027-03-14" },
        minute,
      ),
      remind(
        { first_name: "ليلى", last_name: "حداد", language: "ar" },
        { title: "جواز السفر", expiry_date: "2027-03-14", notes: "أحضر الصور" },
        minute,
      ),
    ]);
    const [toGerman, toArabic] = await Promise.all([emailsTo(service.base, de, 1), emailsTo(service.base, ar, 1)]);
    german = toGerman[0]!;
    arabic = toArabic[0]!;
  });

  it("German: the template's subject, intro and footer, German dates and words, the item's block and links", () => {
    expect(german.subject).toMatch(/^Frist: Reisepass – in \d+ (Tagen|Monaten) \(2027-03-14\)$/);
    expect(german.text.startsWith("Guten Tag Jana Weber,\n\nbitte denken Sie an Reisepass.\n")).toBe(true);
    expect(german.text).toMatch(/^Eintrag: +Reisepass$/m);
    expect(german.text).toContain("Was zu tun ist: Bitte erneuern Sie es vor dem Ablauf.");
    expect(german.text).toContain("Ihr Team von Demo Company");
    expect(pageLinksOf(german.text)).toHaveLength(5);
    expect(german.html).toContain('<html lang="de-DE" dir="ltr">');
    expect(german.html).toContain(">Eintrag öffnen</a>");
  });

  it("Arabic: right to left, the template's intro and footer, Arabic words around the data", () => {
    expect(arabic.subject).toMatch(/^تذكير: انتهاء صلاحية «جواز السفر» ينتهي خلال \d+/);
    expect(arabic.text.startsWith("مرحبًا ليلى،\n\nنذكّرك بـ جواز السفر.\n")).toBe(true);
    expect(arabic.text).toContain("مع تحيات فريق Demo Company");
    expect(arabic.html).toContain('<html lang="ar" dir="rtl">');
    // Dates are isolated left to right, so the bidirectional algorithm does not turn them around.
    expect(arabic.text).toContain("\u20662027-03-14\u2069");
    expect(arabic.html).toContain(">فتح العنصر</a>");
  });

  it("the Arabic email and page read right to left on a 390 px phone", async () => {
    const [pageLink] = pageLinksOf(arabic.text);
    const shown = await originPage(browser, pageLink!, { viewport: { width: 390, height: 844 }, javaScript: false });
    try {
      await shown.page.setContent(arabic.html);
      expect(await shown.page.evaluate<string>('getComputedStyle(document.querySelector("div")).direction')).toBe(
        "rtl",
      );
      await shown.page.screenshot({ path: join(SHOTS, "email-ar-390.png"), fullPage: true });
      expect(await shown.page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);

      const opened = await shown.page.goto(pageLink!);
      expect(opened?.status()).toBe(200);
      const main = shown.page.getByRole("main");
      await main.getByRole("heading", { name: "جواز السفر", level: 1 }).waitFor();
      await main.getByRole("button", { name: "سأتولى الأمر" }).waitFor();
      expect(await shown.page.evaluate<string>("getComputedStyle(document.body).direction")).toBe("rtl");
      await shown.page.screenshot({ path: join(SHOTS, "page-ar-390.png"), fullPage: true });
      expect(await shown.page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      expect(shown.foreign).toEqual([]);
    } finally {
      await shown.close();
    }
  });
});
