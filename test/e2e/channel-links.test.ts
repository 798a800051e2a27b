// End to end, the links of a channel message (docs/recipient-journey.md, "Links in a channel
// message"): a Slack channel and an Arabic one on loopback receivers (the local switch), a channel's
// link token minted as the delivery mints it, its page opened in headless Chromium with JavaScript
// off on a 390 px phone (screenshots kept), "I'm on it" clicked, and the API showing the channel as
// the actor, via slack.
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, originPage } from "./support/browser.ts";
import { mintToken } from "./support/recipient.ts";
import { callApi, ownerToken, startService, type Service } from "./support/service.ts";

let service: Service;
let browser: Browser;
let token: string;
/** Screenshots, for a person to look at: E2E_SCREENSHOTS, else a temporary directory. */
const SHOTS = process.env.E2E_SCREENSHOTS || join(tmpdir(), "expiry-e2e-channel-links-shots");

beforeAll(async () => {
  service = await startService("expiry-e2e-channel-links-");
  browser = await launchChromium();
  token = await ownerToken(service.base);
  mkdirSync(SHOTS, { recursive: true });
});

afterAll(async () => {
  await browser?.close();
  await service?.stop();
});

const api = (method: string, path: string, body?: unknown) => callApi(service.base, method, path, token, body);

/** An item of the demo company, a channel on a loopback URL, and the channel's page for the item. */
async function channelPage(item: Record<string, unknown>, channel: Record<string, unknown>) {
  const created = await api("POST", "/v1/items", { expiry_date: "2027-01-31", ...item });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const itemId: number = created.body.data.item_id;
  const made = await api("POST", "/v1/channels", { type: "slack", url: "http://127.0.0.1:9/slack", ...channel });
  expect(made.status, JSON.stringify(made.body)).toBe(201);
  const channelId: number = made.body.data.channel_id;
  const linkToken = await mintToken({
    companyId: 1,
    itemId,
    contactId: 0,
    channelId,
    epoch: 1,
    expiresOn: "2027-04-01",
  });
  return { itemId, channelId, page: `${service.base}/r/${linkToken}` };
}

describe("a channel message's links in a browser", () => {
  it("English at 390 px: the page names the channel, and I'm on it is recorded as the channel's, via slack", async () => {
    const { itemId, channelId, page } = await channelPage(
      { title: "Boiler inspection", notes: "Call Bob first." },
      { name: "#facilities", language: "en" },
    );
    const phone = await originPage(browser, page, { viewport: { width: 390, height: 844 }, javaScript: false });
    try {
      expect((await phone.page.goto(`${page}/acknowledge`))?.status()).toBe(200);
      const main = phone.page.getByRole("main");
      await main.getByRole("heading", { name: "Confirm: I'm on it" }).waitFor();
      await main.getByText(/^This page is for the channel #facilities \(Slack\), /).waitFor();
      await phone.page.screenshot({ path: join(SHOTS, "channel-confirm-en-390.png"), fullPage: true });
      expect(await phone.page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await Promise.all([phone.page.waitForURL(page), main.getByRole("button", { name: "I'm on it" }).click()]);
      await main.getByText("Thank you: you are on it").waitFor();
      await main.getByText(/^by #facilities \(Slack\), /).waitFor();
      await phone.page.screenshot({ path: join(SHOTS, "channel-acknowledged-en-390.png"), fullPage: true });
      expect(phone.foreign).toEqual([]);
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
    const detail = await api("GET", `/v1/items/${itemId}`);
    expect(detail.body.data.acknowledgement).toMatchObject({ by: { type: "channel", id: channelId }, via: "slack" });
    const audit = await api("GET", `/v1/audit-log?resource_type=item&resource_id=${itemId}&limit=10`);
    const fromPage = audit.body.data.filter((e: { operation_id: string }) => e.operation_id === "actOnRecipientPage");
    expect(fromPage.map((e: { actor: unknown }) => e.actor)).toEqual([
      { client_id: null, user_id: null, company_id: 1, contact_id: null, channel_id: channelId, via: "slack" },
    ]);
  });

  it("Arabic at 390 px: right to left, the channel's name isolated, no sideways scrolling", async () => {
    const { page } = await channelPage({ title: "جواز السفر" }, { name: "#المرافق", language: "ar", type: "discord" });
    const phone = await originPage(browser, page, { viewport: { width: 390, height: 844 }, javaScript: false });
    try {
      expect((await phone.page.goto(page))?.status()).toBe(200);
      const main = phone.page.getByRole("main");
      await main.getByRole("heading", { name: "جواز السفر", level: 1 }).waitFor();
      expect(await phone.page.evaluate<string>("getComputedStyle(document.body).direction")).toBe("rtl");
      await main.getByText("هذه الصفحة خاصة بالقناة", { exact: false }).waitFor();
      await phone.page.screenshot({ path: join(SHOTS, "channel-page-ar-390.png"), fullPage: true });
      expect(await phone.page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await Promise.all([phone.page.waitForURL(page), main.getByRole("button", { name: "سأتولى الأمر" }).click()]);
      await main
        .getByText(/Discord/)
        .first()
        .waitFor();
      await phone.page.screenshot({ path: join(SHOTS, "channel-acknowledged-ar-390.png"), fullPage: true });
      expect(phone.foreign).toEqual([]);
      expect(phone.errors).toEqual([]);
    } finally {
      await phone.close();
    }
  });
});
