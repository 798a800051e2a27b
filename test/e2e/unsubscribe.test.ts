// End to end, the sender and the unsubscribe link (issue 34) as a recipient and a mail client meet
// them: a real reminder sent through `npm start`, read from wrangler's local email simulation with
// its headers and its .ics; the one-click POST exactly as Gmail sends it; the contact's status, the
// webhook and the audit entry through the API; the next reminder not sent; the unsubscribe and
// preferences pages in headless Chromium at 390 and 1280 px.
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ICAL from "ical.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, originPage } from "./support/browser.ts";
import { comingMinute, emailsTo, listEmails } from "./support/recipient.ts";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

let service: Service;
let token: string;
let receiver: Server | undefined;
let receiverBase = "";
const received: Array<{ headers: IncomingHttpHeaders; body: string }> = [];
const SHOTS = process.env.E2E_SCREENSHOTS || join(tmpdir(), "expiry-e2e-unsubscribe-shots");

beforeAll(async () => {
  receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  service = await startService("expiry-e2e-unsubscribe-", [
    "--var",
    "WEBHOOK_SECRETS_KEY:e2e-webhook-secrets-key-0123456789abcdef",
    "--var",
    "WEBHOOKS_ALLOW_PRIVATE_URLS:true",
  ]);
  token = await ownerToken(service.base);
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  try {
    await service?.stop();
  } finally {
    await new Promise((r) => receiver?.close(r));
  }
});

const api = (method: string, path: string, body?: unknown) => callApi(service.base, method, path, token, body);
const unique = (word: string) => `${word}-${Date.now()}-${Math.floor(Math.random() * 1e6)}@example.com`;

/** One message as the explorer shows it, whole (headers, text, HTML, raw MIME). */
async function explorerDetail(messageId: string): Promise<Record<string, any>> {
  const res = await callApi(
    service.base,
    "GET",
    `/cdn-cgi/explorer/api/local/email/sending?email_id=${encodeURIComponent(messageId)}`,
  );
  expect(res.status).toBe(200);
  return res.body.result;
}

/** Answers `probe()` once it is defined, polling up to `timeoutMs`. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(500);
  }
}

/** A new contact with an item of theirs and a reminder at `minute`. */
async function remindedContact(first: string, item: Record<string, unknown>, minute: { date: string; hour: string }) {
  const email = unique(first.toLowerCase());
  const contact = await api("POST", "/v1/contacts", { first_name: first, last_name: "Tester", email });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  const contactId = contact.body.data.contact_id as number;
  const created = await api("POST", "/v1/items", { seqid: 0, contact_id: contactId, ...item });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const itemId = created.body.data.item_id as number;
  expect((await api("POST", `/v1/items/${itemId}/reminders`, minute)).status).toBe(201);
  return { contactId, email, itemId };
}

describe("the sender and the one-click unsubscribe", () => {
  it("a real reminder's headers and .ics; the one-click POST as Gmail sends it; the next reminder is not sent", async () => {
    expect((await api("PATCH", "/v1/companies/1/settings", { reply_to: "office@demo.example" })).status).toBe(200);
    const hook = await api("POST", "/v1/webhooks", { url: `${receiverBase}/hook`, events: ["contact.unsubscribed"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const ada = await remindedContact(
      "Ada",
      { title: "Dentist appointment", item_type: "apt", expiry_date: "2027-02-15" },
      comingMinute(),
    );

    // The email as the local email simulation holds it, headers included.
    await emailsTo(service.base, ada.email, 1);
    const listed = (await listEmails(service.base)).find((m) => m.to.includes(ada.email))!;
    const sent = await explorerDetail(listed.messageId);
    expect(sent.from).toBe('"Demo Company" <reminders@expiry-reminder.example>');
    expect(sent.replyTo).toBe("office@demo.example");
    // Message-ID: the binding's own, on the sender's domain (the Email Service refuses one in headers).
    expect(sent.messageId).toMatch(/^<[^<>@\s]+@expiry-reminder\.example>$/);
    const unsubscribeUrl = /^<(http:\/\/localhost:\d+\/u\/[A-Za-z0-9_-]{40,})>$/.exec(
      sent.headers["List-Unsubscribe"],
    )?.[1];
    expect(unsubscribeUrl, JSON.stringify(sent.headers)).toBeDefined();
    expect(new URL(unsubscribeUrl!).port).toBe(new URL(service.base).port);
    expect(sent.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(sent.attachments).toEqual([expect.objectContaining({ filename: "event.ics", disposition: "attachment" })]);
    // The explorer lists an attachment's name, type and size; the simulation keeps its bytes in a file
    // whose path `wrangler dev` prints ("event.ics -> <path>").
    const ics = await waitFor("the .ics file", () => icsFor(ada.itemId));
    const calendar = new ICAL.Component(ICAL.parse(ics));
    expect(calendar.getFirstPropertyValue("method")).toBe("PUBLISH");
    const events = calendar.getAllSubcomponents("vevent");
    expect(events).toHaveLength(1);
    expect(new ICAL.Event(events[0]!).uid).toBe(`item-${ada.itemId}-1@expiry-reminder`);
    expect(new ICAL.Event(events[0]!).startDate.toString()).toBe("2027-02-15");

    // The one-click POST exactly as Gmail sends it: that Content-Type and body, nothing else, no cookie.
    const clicked = await fetch(unsubscribeUrl!, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
      redirect: "manual",
    });
    expect(clicked.status).toBe(200);
    expect(clicked.headers.get("Location")).toBeNull();
    expect(await clicked.text()).toContain("You are unsubscribed.");
    const contact = await api("GET", `/v1/contacts/${ada.contactId}`);
    expect(contact.body.data.email_status).toBe("unsubscribed");
    const again = await fetch(unsubscribeUrl!, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
      redirect: "manual",
    });
    expect(again.status).toBe(200);

    const event = await waitFor("contact.unsubscribed", () =>
      received.find((r) => r.body.includes("contact.unsubscribed")),
    );
    expect(JSON.parse(event.body)).toMatchObject({
      type: "contact.unsubscribed",
      data: { contact_id: ada.contactId, email: ada.email, email_status: "unsubscribed", via: "link" },
    });
    const audit = await api("GET", `/v1/audit-log?resource_type=contact&resource_id=${ada.contactId}`);
    expect(audit.body.data.filter((e: any) => e.action === "updated")).toEqual([
      expect.objectContaining({
        actor: expect.objectContaining({ contact_id: ada.contactId, via: "link", client_id: null }),
        before: { email_status: "active" },
        after: { email_status: "unsubscribed" },
      }),
    ]);

    // The next reminder to Ada is not sent; Grace's, at the same minute, is.
    const minute = comingMinute();
    expect((await api("POST", `/v1/items/${ada.itemId}/reminders`, minute)).status).toBe(201);
    const grace = await remindedContact("Grace", { title: "Permit", expiry_date: "2027-03-01" }, minute);
    await emailsTo(service.base, grace.email, 1);
    const delivery = await waitFor("Ada's second delivery", async () => {
      const list = await api("GET", `/v1/items/${ada.itemId}/reminders`);
      const deliveries = list.body.data.sent.flatMap((r: any) => r.deliveries);
      return deliveries.length >= 2 ? deliveries : undefined;
    });
    expect(delivery.map((d: any) => d.state).sort()).toEqual(["sent", "suppressed"]);
    expect((await listEmails(service.base)).filter((m) => m.to.includes(ada.email))).toHaveLength(1);

    // The pages, as a person sees them, on a phone and a desktop, without JavaScript.
    const browser = await launchChromium();
    try {
      for (const width of [390, 1280]) {
        const tab = await originPage(browser, unsubscribeUrl!, { viewport: { width, height: 900 }, javaScript: false });
        try {
          expect((await tab.page.goto(unsubscribeUrl!))?.status()).toBe(200);
          await tab.page.getByRole("button", { name: "Subscribe again" }).waitFor();
          await tab.page.screenshot({ path: join(SHOTS, `unsubscribe-${width}.png`), fullPage: true });
          const box = await tab.page.locator("main").boundingBox();
          expect(box!.x + box!.width).toBeLessThanOrEqual(width);
          await Promise.all([
            tab.page.waitForURL(`${unsubscribeUrl}/preferences`),
            tab.page.getByRole("link", { name: "Manage your preferences" }).click(),
          ]);
          await tab.page.getByRole("button", { name: "Save preferences" }).waitFor();
          await tab.page.screenshot({ path: join(SHOTS, `preferences-${width}.png`), fullPage: true });
          const prefsBox = await tab.page.locator("main").boundingBox();
          expect(prefsBox!.x + prefsBox!.width).toBeLessThanOrEqual(width);
          expect(tab.foreign).toEqual([]);
          expect(tab.errors).toEqual([]);
        } finally {
          await tab.close();
        }
      }
      // Preferences and re-subscription through the forms, as a browser posts them.
      const tab = await originPage(browser, unsubscribeUrl!, {
        viewport: { width: 390, height: 900 },
        javaScript: false,
      });
      try {
        await tab.page.goto(`${unsubscribeUrl}/preferences`);
        await tab.page.getByLabel("Language of emails and pages").selectOption("de");
        await tab.page.getByLabel("A weekly summary", { exact: true }).check();
        await tab.page.getByLabel("Day of the weekly summary").selectOption("friday");
        await tab.page.getByRole("button", { name: "Save preferences" }).click();
        // The outcome, and every page after it, speaks the language just saved.
        await tab.page.getByText("Ihre Einstellungen wurden gespeichert.").waitFor();
        await tab.page.screenshot({ path: join(SHOTS, "preferences-saved-390.png"), fullPage: true });
        const prefs = (await api("GET", `/v1/contacts/${ada.contactId}`)).body.data;
        expect(prefs).toMatchObject({ language: "de", digest: "weekly", digest_weekday: "friday" });
        await tab.page.goto(unsubscribeUrl!);
        await tab.page.getByRole("button", { name: "Wieder anmelden" }).click();
        await tab.page.getByText("Sie sind wieder angemeldet.").waitFor();
        expect((await api("GET", `/v1/contacts/${ada.contactId}`)).body.data.email_status).toBe("active");
        // Arabic on a phone: right to left, nothing wider than the screen.
        await tab.page.goto(`${unsubscribeUrl}/preferences`);
        await tab.page.getByLabel("Sprache der E-Mails und Seiten").selectOption("ar");
        await tab.page.getByRole("button", { name: "Einstellungen speichern" }).click();
        await tab.page.getByText("تم حفظ تفضيلاتك.").waitFor();
        expect(await tab.page.evaluate<string>("document.documentElement.dir")).toBe("rtl");
        await tab.page.getByRole("button", { name: "حفظ التفضيلات" }).waitFor();
        await tab.page.screenshot({ path: join(SHOTS, "preferences-ar-390.png"), fullPage: true });
        expect(await tab.page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
        expect(tab.errors).toEqual([]);
      } finally {
        await tab.close();
      }
    } finally {
      await browser.close();
    }
  }, 360_000);
});

/** The text of the .ics attachment of an item's email, from the file the local simulation wrote it to. */
function icsFor(itemId: number): string | undefined {
  for (const [, path] of service.output().matchAll(/event\.ics -> (\S+)/g)) {
    const text = existsSync(path!) ? readFileSync(path!, "utf8") : "";
    if (text.includes(`UID:item-${itemId}-1@expiry-reminder`)) return text;
  }
  return undefined;
}
