// The links in a channel message (docs/recipient-journey.md, "Links in a channel message"): a
// channel's token opens the item's page as the channel, in the channel's language; an action from
// it is recorded as the channel's, via its type, in the item's acknowledgement, the audit log and
// the webhook events; a deleted channel's links are dead, a disabled channel's still work; a
// contact's (version 1) links work as before. And the contact's `chat` preference.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { sendGate } from "../../src/company-clock/send-gate";
import { CHANNEL_TYPES } from "../../src/channels/urls";
import { CHANNEL_VIAS, VIAS } from "../../src/lib/actors";
import { mintLinkToken, verifyLinkToken } from "../../src/lib/recipient-links";
import { addDays, todayIn } from "../../src/lib/time";
import { unsubscribeLinks } from "../../src/lib/unsubscribe-links";
import { WebhookPayloadSchema, type WebhookPayload } from "../../src/schemas/webhooks";
import { call, createAccount, createContact, createItem, env, expectStatus, ok } from "./helpers";
import { formsOf, getPage, minutesAhead, postForm } from "./support/recipient";

const futureDate = (days: number) => addDays(todayIn("UTC"), days);
const LOCAL = "http://127.0.0.1:9/receiver";

interface Setup {
  companyId: number;
  token: string;
  contactId: number;
  itemId: number;
  channelId: number;
  /** The channel's page for the item: `/r/{token}` of a version-2 token. */
  page: string;
}

/** A token's page URL, minted as the delivery engine mints a channel message's (recipientLinks with a channelId). */
async function pageOf(claims: { companyId: number; itemId: number; contactId?: number; channelId?: number }) {
  const token = await mintLinkToken(env.LINK_SIGNING_KEYS, {
    contactId: 0,
    epoch: 1,
    expiresOn: futureDate(60),
    ...claims,
  });
  return `https://api.test/r/${token}`;
}

/** An account, its contact Ada, an item of hers, a channel endpoint and the channel's page for the item. */
async function setup(channel: Record<string, unknown> = {}, item: Record<string, unknown> = {}): Promise<Setup> {
  const { companyId, ownerToken: token } = await createAccount();
  const contact = await createContact(token, { first_name: "Ada", last_name: "Lovelace" });
  const created = await createItem(token, {
    title: "Boiler inspection",
    expiry_date: futureDate(40),
    seqid: 0,
    contact_id: contact.contact_id,
    ...item,
  });
  const res = await call("createChannel", "/v1/channels", {
    token,
    body: { type: "slack", name: "#facilities", url: LOCAL, ...channel },
  });
  expectStatus(res, 201, JSON.stringify(res.body));
  const channelId = res.body.data.channel_id;
  return {
    companyId,
    token,
    contactId: contact.contact_id,
    itemId: created.item_id,
    channelId,
    page: await pageOf({ companyId, itemId: created.item_id, channelId }),
  };
}

const itemOf = async (s: Setup) => ok(await call("getItem", `/v1/items/${s.itemId}`, { token: s.token })).body.data;

const itemAudit = async (s: Setup) =>
  ok(
    await call("listAuditLog", `/v1/audit-log?resource_type=item&resource_id=${s.itemId}&limit=100`, {
      token: s.token,
    }),
  ).body.data.filter((entry) => entry.action === "updated");

const outcomeOf = (html: string) => /<div class="outcome (\w+)"[^>]*><strong>([^<]*)<\/strong>/.exec(html)?.slice(1, 3);
const footerOf = (html: string) => /<footer>([^<]*)<\/footer>/.exec(html)?.[1];

/** Captures the company's webhook requests (the clock's sender replaced), as webhook-delivery.test.ts does. */
async function receiver(companyId: number): Promise<WebhookPayload[]> {
  const received: WebhookPayload[] = [];
  await runInDurableObject(clockFor(env, companyId), (instance: CompanyClock) => {
    instance.webhookTransport = async (request) => {
      received.push(JSON.parse(request.body) as WebhookPayload);
      return { status: 200 };
    };
  });
  return received;
}

async function drain(companyId: number, done: () => boolean) {
  for (let i = 0; i < 10 && !done(); i++) {
    await runDurableObjectAlarm(clockFor(env, companyId));
    if (!done()) await new Promise((r) => setTimeout(r, 20));
  }
}

async function webhookTo(s: Setup) {
  expectStatus(
    await call("createWebhook", "/v1/webhooks", {
      token: s.token,
      body: { url: "http://127.0.0.1:9/hook", events: ["*"] },
    }),
    201,
  );
  return receiver(s.companyId);
}

describe("the ways in", () => {
  it("are api, link and every channel type: an action from a channel's link is via its type", () => {
    expect(CHANNEL_VIAS).toEqual(CHANNEL_TYPES);
    expect(VIAS).toEqual(["api", "link", "slack", "teams", "google_chat", "discord", "ntfy"]);
  });
});

describe("a channel's page", () => {
  it("names the channel, offers the item's actions, and a GET changes nothing", async () => {
    const s = await setup();
    const page = await getPage(s.page);
    expect(page.status).toBe(200);
    expect(page.html).toContain("<h1>Boiler inspection</h1>");
    expect(footerOf(page.html)).toMatch(/^This page is for the channel #facilities \(Slack\), from a reminder of /);
    expect(page.html).not.toContain("Ada Lovelace");
    expect(formsOf(page.html).map((f) => f.fields.action)).toEqual(["acknowledge", "complete", "renew", "snooze"]);
    const confirm = await getPage(`${s.page}/acknowledge`);
    expect(formsOf(confirm.html).map((f) => f.fields.action)).toEqual(["acknowledge"]);
    expect(await itemOf(s)).toMatchObject({ acknowledgement: null, snoozed_until: null, status: "pending" });
    expect(await itemAudit(s)).toEqual([]);
  });

  it("acknowledges as the channel, via slack: the item, the audit log, the webhook event and every page say so", async () => {
    const s = await setup();
    const received = await webhookTo(s);
    const done = await postForm(s.page, { action: "acknowledge", note: "on it" });
    expect(done.status).toBe(200);
    expect(outcomeOf(done.html)).toEqual(["applied", "Thank you: you are on it"]);
    expect(done.html).toMatch(/<dt>Acknowledged<\/dt><dd>by #facilities \(Slack\), [^<]*— “on it”<\/dd>/);
    const by = { type: "channel", id: s.channelId };
    const item = await itemOf(s);
    expect(item.acknowledgement).toMatchObject({ by, via: "slack", note: "on it" });
    const [entry] = await itemAudit(s);
    expect(entry).toMatchObject({
      operation_id: "actOnRecipientPage",
      actor: { client_id: null, user_id: null, contact_id: null, channel_id: s.channelId, via: "slack" },
      after: { acknowledgement: { by, via: "slack", note: "on it" } },
    });
    await drain(s.companyId, () => received.some((p) => p.type === "item.acknowledged"));
    const event = received.find((p) => p.type === "item.acknowledged");
    expect(WebhookPayloadSchema.safeParse(event).success, JSON.stringify(event)).toBe(true);
    expect(event?.data).toMatchObject({ item_id: s.itemId, by, via: "slack", acknowledgement: { by, via: "slack" } });
    // The contact's own (version 1) page names the channel as the acknowledger too.
    const adasPage = await pageOf({ companyId: s.companyId, itemId: s.itemId, contactId: s.contactId });
    const ada = await getPage(adasPage);
    expect(ada.status).toBe(200);
    expect(ada.html).toMatch(/<dd>by #facilities \(Slack\), /);
    expect(footerOf(ada.html)).toMatch(/^This page is for Ada Lovelace, /);
    // A repeat from the channel is unchanged and records nothing more.
    const again = await postForm(s.page, { action: "acknowledge" });
    expect(outcomeOf(again.html)).toEqual(["unchanged", "It was already acknowledged"]);
    expect(await itemAudit(s)).toHaveLength(1);
  });

  it("snoozes as the channel via its type: the snooze's reminder goes to the item's contact (none recorded for it)", async () => {
    const s = await setup({ type: "teams", name: "Ops on call" });
    const received = await webhookTo(s);
    const until = futureDate(5);
    const done = await postForm(s.page, { action: "snooze", until });
    expect(done.status).toBe(200);
    expect(await itemOf(s)).toMatchObject({ snoozed_until: until, acknowledgement: null });
    const row = await env.DB.prepare("SELECT snooze_contact_id, snoozed_until FROM items WHERE id = ?")
      .bind(s.itemId)
      .first<{ snooze_contact_id: number | null; snoozed_until: string }>();
    expect(row).toEqual({ snooze_contact_id: null, snoozed_until: until });
    const [entry] = await itemAudit(s);
    expect(entry?.actor).toMatchObject({ contact_id: null, channel_id: s.channelId, via: "teams" });
    await drain(s.companyId, () => received.some((p) => p.type === "item.snoozed"));
    expect(received.find((p) => p.type === "item.snoozed")?.data).toMatchObject({
      snoozed_until: until,
      by: { type: "channel", id: s.channelId },
      via: "teams",
    });
  });

  it("completes as the channel: the completion's audit entry and item.status_changed name it", async () => {
    const s = await setup({ type: "google_chat", name: "Facilities space" });
    const received = await webhookTo(s);
    const done = await postForm(s.page, { action: "complete" });
    expect(outcomeOf(done.html)?.[0]).toBe("applied");
    expect((await itemOf(s)).status).toBe("completed");
    const [entry] = await itemAudit(s);
    expect(entry).toMatchObject({
      after: { status: "completed" },
      actor: { contact_id: null, channel_id: s.channelId, via: "google_chat" },
    });
    await drain(s.companyId, () => received.some((p) => p.type === "item.status_changed"));
    expect(received.find((p) => p.type === "item.status_changed")?.data).toMatchObject({
      status: "completed",
      by: { type: "channel", id: s.channelId },
      via: "google_chat",
    });
  });

  it("is dead once the channel is deleted (the same page as any dead link); a disabled channel's links still work", async () => {
    const s = await setup();
    const path = `/v1/channels/${s.channelId}`;
    expectStatus(await call("updateChannel", path, { token: s.token, body: { disabled: true } }), 200);
    expect((await getPage(s.page)).status).toBe(200);
    expect((await postForm(s.page, { action: "acknowledge" })).status).toBe(200);
    expectStatus(await call("deleteChannel", path, { token: s.token }), 200);
    const dead = await getPage(s.page);
    const unknown = await getPage(`${s.page.slice(0, -6)}AAAAAA`);
    expect(dead.status).toBe(404);
    expect(dead.html).toBe(unknown.html);
    expect((await postForm(s.page, { action: "complete" })).status).toBe(404);
    expect((await itemOf(s)).status).toBe("pending");
    // Another company's channel named in a token of this company: dead too.
    const other = await setup();
    const foreign = await pageOf({ companyId: s.companyId, itemId: s.itemId, channelId: other.channelId });
    expect((await getPage(foreign)).status).toBe(404);
  });

  it("speaks the channel's language, else the company's, else English; Arabic right to left", async () => {
    const german = await setup({ language: "de" });
    const de = await getPage(german.page);
    expect(de.html).toContain('<html lang="de">');
    expect(footerOf(de.html)).toMatch(/^Diese Seite gehört zum Kanal #facilities \(Slack\), /);
    const arabic = await setup({ language: "ar", name: "#المرافق" });
    const ar = await getPage(arabic.page);
    expect(ar.html).toContain('<html lang="ar" dir="rtl">');
    expect(footerOf(ar.html)).toContain("هذه الصفحة خاصة بالقناة \u2068#المرافق\u2069 (\u2068Slack\u2069)");
    const french = await setup({ language: null });
    expectStatus(
      await call("updateCompanySettings", `/v1/companies/${french.companyId}/settings`, {
        token: french.token,
        body: { language: "fr" },
      }),
      200,
    );
    expect(footerOf((await getPage(french.page)).html)).toMatch(/^Cette page est celle du canal #facilities \(Slack\)/);
    expect(footerOf((await getPage((await setup()).page)).html)).toMatch(/^This page is for the channel /);
  });
});

describe("a delivered channel message", () => {
  it("carries the channel's links (a version-2 token naming it), and its I'm on it acts as the channel", async () => {
    const s = await setup();
    const bodies: string[] = [];
    const clock = clockFor(env, s.companyId);
    await runInDurableObject(clock, (instance: CompanyClock) => {
      instance.channelFetch = async (_input, init) => {
        bodies.push(String(init?.body ?? ""));
        return new Response("ok");
      };
    });
    const reminder = ok(
      await call("createItemReminder", `/v1/items/${s.itemId}/reminders`, {
        token: s.token,
        body: { ...minutesAhead(3), channel_id: s.channelId },
      }),
    ).body.data;
    await runInDurableObject(clock, (_i, state) => {
      state.storage.sql.exec(
        "UPDATE reminders SET due_at = ? WHERE reminder_id = ?",
        Date.now() - 1000,
        reminder.reminder_id,
      );
    });
    for (let i = 0; i < 10 && bodies.length === 0; i++) {
      await runDurableObjectAlarm(clock);
      await runInDurableObject(clock, async (instance: CompanyClock) => {
        await instance.channelSending;
      });
    }
    expect(bodies).toHaveLength(1);
    const urls = [...bodies[0]!.matchAll(/"url":"(https:\/\/api\.test\/r\/[^"]+)"/g)].map((m) => m[1]!);
    const acknowledge = urls.find((u) => u.endsWith("/acknowledge"));
    expect(acknowledge).toBeDefined();
    const token = acknowledge!.slice("https://api.test/r/".length, -"/acknowledge".length);
    const verdict = await verifyLinkToken(env.LINK_SIGNING_KEYS, token, todayIn("UTC"));
    expect(verdict).toMatchObject({
      state: "valid",
      claims: { contactId: 0, channelId: s.channelId, itemId: s.itemId },
    });
    const confirm = await getPage(acknowledge!);
    expect(footerOf(confirm.html)).toMatch(/^This page is for the channel #facilities \(Slack\), /);
    expect((await postForm(acknowledge!, { action: "acknowledge" })).status).toBe(200);
    expect((await itemOf(s)).acknowledgement).toMatchObject({ by: { type: "channel", id: s.channelId }, via: "slack" });
  });
});

describe("the contact's chat preference", () => {
  it("is a channel a contact can want or leave out through the API", async () => {
    const { ownerToken: token } = await createAccount();
    const chatOnly = await createContact(token, { channels: ["chat"] });
    expect(chatOnly.channels).toEqual(["chat"]);
    const res = await call("updateContact", `/v1/contacts/${chatOnly.contact_id}`, {
      token,
      body: { channels: ["email", "chat"] },
    });
    expect(ok(res).body.data.channels).toEqual(["email", "chat"]);
    const bad = await call("updateContact", `/v1/contacts/${chatOnly.contact_id}`, {
      token,
      body: { channels: ["pigeon"] },
    });
    expectStatus(bad, 400);
    expect(JSON.stringify(bad.body)).toContain("channels must hold only: email, sms, chat");
  });

  it("gates channel deliveries: a list without chat declines them, null or a list with it lets them through", () => {
    const facts = { channel: "chat", emailStatus: "unsubscribed" as const };
    expect(sendGate({ ...facts, channels: '["email"]' })).toMatch(/^channel_declined: .* chat reminders/);
    expect(sendGate({ ...facts, channels: '["chat"]' })).toBeNull();
    expect(sendGate({ ...facts, channels: null })).toBeNull();
    expect(sendGate({ channel: "email", emailStatus: "active", channels: '["chat"]' })).toMatch(/^channel_declined/);
  });

  it("is a checkbox of the preferences page, in every language; ticking all saves null, leaving it out saves the rest", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    const contact = await createContact(token, { first_name: "Ada" });
    const key = await env.DB.prepare("SELECT email_key FROM contacts WHERE id = ?")
      .bind(contact.contact_id)
      .first<string>("email_key");
    const links = await unsubscribeLinks(env, { companyId, contactId: contact.contact_id, emailKey: key! });
    const url = links!.preferences;
    const labels: Record<string, string> = {
      en: "Team chats: reminders for you",
      de: "Team-Chats: Erinnerungen für Sie",
      fr: "Messageries d’équipe",
      es: "Chats de equipo",
      pt: "Chats de equipa",
      ar: "محادثات الفريق",
    };
    for (const [language, label] of Object.entries(labels)) {
      expectStatus(
        await call("updateContact", `/v1/contacts/${contact.contact_id}`, { token, body: { language } }),
        200,
      );
      const page = await getPage(url);
      expect(page.html, language).toMatch(/<input type="checkbox" name="channels" value="chat" checked>/);
      expect(page.html, language).toContain(label);
    }
    const post = (channels: string[]) =>
      exports.default.fetch(
        new Request(url, {
          method: "POST",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams([
            ["language", "en"],
            ["digest", "off"],
            ...channels.map((c) => ["channels", c] as [string, string]),
          ]).toString(),
        }),
      );
    const contactChannels = async () =>
      ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token })).body.data.channels;
    expect((await post(["email"])).status).toBe(200);
    expect(await contactChannels()).toEqual(["email"]);
    expect((await getPage(url)).html).toMatch(/<input type="checkbox" name="channels" value="chat">/);
    expect((await post(["chat"])).status).toBe(200);
    expect(await contactChannels()).toEqual(["chat"]);
    expect((await post(["email", "chat"])).status).toBe(200);
    expect(await contactChannels()).toBeNull();
  });
});
