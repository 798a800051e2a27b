// The sender a recipient recognises and the unsubscribe link (issue 34): a reminder email fired by a
// real alarm, its From, Reply-To, Message-ID, List-Unsubscribe headers and .ics; the one-click POST
// as a mail client sends it, the page, re-subscription, the preferences page, links that do not work
// (as the recipient pages' do), and the send gate.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import ICAL from "ical.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { displayName } from "../../src/company-clock/outgoing-email";
import { mintLinkToken } from "../../src/lib/recipient-links";
import { addDays, todayIn } from "../../src/lib/time";
import { mintUnsubscribeToken } from "../../src/lib/unsubscribe-links";
import { nameKey } from "../../src/lib/text-key";
import { call, createAccount, createContact, createItem, env, expectStatus, ok } from "./helpers";
import { fetchWithEnv, fireReminder, formsOf, getPage, postForm, type PageResult } from "./support/recipient";
import type { OutgoingEmail } from "../../src/company-clock/reminder-delivery";
import { exports } from "cloudflare:workers";

const futureDate = (days: number) => addDays(todayIn("UTC"), days);
const BASE = "https://api.test";

interface Setup {
  companyId: number;
  token: string;
  contact: Awaited<ReturnType<typeof createContact>>;
  item: Awaited<ReturnType<typeof createItem>>;
  email: OutgoingEmail;
  unsubscribe: string;
}

async function setup(item: Record<string, unknown> = {}): Promise<Setup> {
  const { companyId, ownerToken: token } = await createAccount();
  const contact = await createContact(token, { first_name: "Ada", last_name: "Lovelace" });
  const created = await createItem(token, {
    expiry_date: futureDate(40),
    seqid: 0,
    contact_id: contact.contact_id,
    ...item,
  });
  const [email] = await fireReminder(companyId, token, created.item_id);
  if (!email) throw new Error("no email was sent");
  const unsubscribe = /^<(https:\/\/[^>]+)>$/.exec(email.headers["List-Unsubscribe"] ?? "")?.[1];
  if (!unsubscribe) throw new Error(`no List-Unsubscribe in ${JSON.stringify(email.headers)}`);
  return { companyId, token, contact, item: created, email, unsubscribe };
}

/** The one-click POST exactly as a mail client sends it (RFC 8058): the form body, no other header, no cookie. */
const oneClick = async (url: string) =>
  exports.default.fetch(
    new Request(url, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: "List-Unsubscribe=One-Click",
      redirect: "manual",
    }),
  );

const contactOf = async (s: Setup) =>
  ok(await call("getContact", `/v1/contacts/${s.contact.contact_id}`, { token: s.token })).body.data;

const outcomeOf = (page: PageResult) =>
  /<div class="outcome (\w+)"[^>]*><strong>([^<]*)<\/strong>/.exec(page.html)?.slice(1, 3) ?? null;

describe("the sender", () => {
  it("From carries the company's name at EMAIL_FROM, Reply-To the company's reply_to, and the unsubscribe headers", async () => {
    const { companyId, ownerToken: token } = await createAccount();
    await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
      token,
      body: { reply_to: "office@demo.example" },
    });
    const contact = await createContact(token);
    const item = await createItem(token, { expiry_date: futureDate(20), seqid: 0, contact_id: contact.contact_id });
    const [email] = await fireReminder(companyId, token, item.item_id);
    const company = ok(await call("getCompany", `/v1/companies/${companyId}`, { token })).body.data.company;
    expect(email!.from).toEqual({ name: displayName(company.name), email: env.EMAIL_FROM });
    expect(email!.replyTo).toBe("office@demo.example");
    // The Email Service sets Message-ID itself and refuses one in headers: none is sent.
    expect(Object.keys(email!.headers).sort()).toEqual(["List-Unsubscribe", "List-Unsubscribe-Post"]);
    expect(email!.headers["List-Unsubscribe-Post"]).toBe("List-Unsubscribe=One-Click");
    expect(email!.headers["List-Unsubscribe"]).toMatch(/^<https:\/\/api\.test\/u\/[A-Za-z0-9_-]{40,}>$/);
    // An expiration carries no calendar event.
    expect(email!.attachments).toBeUndefined();
  });

  it("without reply_to there is no Reply-To", async () => {
    const s = await setup();
    expect(s.email.replyTo).toBeUndefined();
  });

  it("the display name is bounded and cannot forge an address", () => {
    expect(displayName('Evil" <ceo@bank.example>\r\nBcc: x@y')).toBe("Evil ceo bank.example Bcc x y");
    expect(Array.from(displayName("é".repeat(100)))).toHaveLength(64);
    expect(displayName("\u0000\u202e")).toBe("");
    expect(displayName("Müller & Söhne GmbH")).toBe("Müller & Söhne GmbH");
  });

  it("an appointment carries an .ics: METHOD:PUBLISH, one VEVENT with the calendar feed's UID", async () => {
    const s = await setup({ item_type: "apt", title: "Dentist; check-up, 2nd" });
    const [ics] = s.email.attachments ?? [];
    expect(ics).toMatchObject({ disposition: "attachment", filename: "event.ics" });
    expect(ics!.type).toMatch(/^text\/calendar/);
    const calendar = new ICAL.Component(ICAL.parse(ics!.content as string));
    expect(calendar.getFirstPropertyValue("method")).toBe("PUBLISH");
    const events = calendar.getAllSubcomponents("vevent");
    expect(events).toHaveLength(1);
    const event = new ICAL.Event(events[0]!);
    expect(event.uid).toBe(`item-${s.item.item_id}-${s.companyId}@expiry-reminder`);
    expect(event.summary).toBe("Dentist; check-up, 2nd");
    expect(event.startDate.toString()).toBe(futureDate(40));
  });
});

describe("one-click unsubscribe (RFC 8058)", () => {
  it("POST with only the form body: 200, no redirect, the contact unsubscribed, an audit entry naming it, idempotent", async () => {
    const s = await setup();
    const res = await oneClick(s.unsubscribe);
    expect(res.status).toBe(200);
    expect(res.headers.get("Location")).toBeNull();
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(await res.text()).toContain("You are unsubscribed.");
    const contact = await contactOf(s);
    expect(contact.email_status).toBe("unsubscribed");
    expect(contact.email_status_changed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const again = await oneClick(s.unsubscribe);
    expect(again.status).toBe(200);
    expect(await again.text()).toContain("You were already unsubscribed.");
    expect((await contactOf(s)).email_status_changed_at).toBe(contact.email_status_changed_at);
    const audit = ok(
      await call("listAuditLog", `/v1/audit-log?resource_type=contact&resource_id=${s.contact.contact_id}`, {
        token: s.token,
      }),
    ).body.data.filter((entry) => entry.action === "updated");
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({
      actor: { client_id: null, user_id: null, contact_id: s.contact.contact_id, via: "link" },
      operation_id: "actOnUnsubscribePage",
      before: { email_status: "active" },
      after: { email_status: "unsubscribed" },
    });
  });

  it("concurrent one-click POSTs: all 200, exactly one applies (one audit entry)", async () => {
    const s = await setup();
    const answers = await Promise.all(Array.from({ length: 6 }, () => oneClick(s.unsubscribe)));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    const texts = await Promise.all(answers.map((a) => a.text()));
    expect(texts.filter((t) => t.includes("You are unsubscribed.")).length).toBe(1);
    const audit = ok(
      await call("listAuditLog", `/v1/audit-log?resource_type=contact&resource_id=${s.contact.contact_id}`, {
        token: s.token,
      }),
    ).body.data.filter((entry) => entry.action === "updated");
    expect(audit).toHaveLength(1);
  });

  it("works without any header at all, and from the page's own form", async () => {
    const s = await setup();
    const bare = await exports.default.fetch(
      new Request(s.unsubscribe, { method: "POST", body: "List-Unsubscribe=One-Click" }),
    );
    expect(bare.status).toBe(200);
    expect((await contactOf(s)).email_status).toBe("unsubscribed");
  });

  it("fires contact.unsubscribed once", async () => {
    const s = await setup();
    const hook = await call("createWebhook", "/v1/webhooks", {
      token: s.token,
      body: { url: "http://127.0.0.1:9/hook", events: ["contact.unsubscribed"] },
    });
    expectStatus(hook, 201, JSON.stringify(hook.body));
    const received: Array<{ body: string }> = [];
    await runInDurableObject(clockFor(env, s.companyId), (instance: CompanyClock) => {
      instance.webhookTransport = async (request) => {
        received.push(request);
        return { status: 200 };
      };
    });
    await oneClick(s.unsubscribe);
    await oneClick(s.unsubscribe);
    for (let i = 0; i < 10 && received.length === 0; i++) await runDurableObjectAlarm(clockFor(env, s.companyId));
    expect(received).toHaveLength(1);
    expect(JSON.parse(received[0]!.body)).toMatchObject({
      type: "contact.unsubscribed",
      data: { contact_id: s.contact.contact_id, email: s.contact.email, email_status: "unsubscribed", via: "link" },
    });
  });

  it("GET shows the page and changes nothing; its buttons unsubscribe and re-subscribe; PATCH cannot", async () => {
    const s = await setup();
    const page = await getPage(s.unsubscribe);
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Security-Policy")).toContain("default-src 'none'");
    expect(page.headers.get("X-Robots-Tag")).toBe("noindex, nofollow");
    expect(page.headers.get("Referrer-Policy")).toBe("no-referrer");
    expect(page.html).toContain("Reminder emails are sent to");
    expect((await contactOf(s)).email_status).toBe("active");
    const [unsubscribeForm] = formsOf(page.html);
    expect(unsubscribeForm).toMatchObject({ method: "post", fields: { action: "unsubscribe" } });
    expect(page.html).toContain(`href="${new URL(s.unsubscribe).pathname}/preferences"`);

    const done = await postForm(`${BASE}${unsubscribeForm!.action}`, unsubscribeForm!.fields);
    expect(done.status).toBe(200);
    expect(outcomeOf(done)).toEqual(["applied", "You are unsubscribed."]);
    const [resubscribeForm] = formsOf(done.html);
    expect(resubscribeForm!.fields).toEqual({ action: "resubscribe" });

    const patched = await call("updateContact", `/v1/contacts/${s.contact.contact_id}`, {
      token: s.token,
      body: { email_status: "active" },
    });
    expectStatus(patched, 400);
    expect((await contactOf(s)).email_status).toBe("unsubscribed");

    const back = await postForm(`${BASE}${resubscribeForm!.action}`, resubscribeForm!.fields);
    expect(outcomeOf(back)).toEqual(["applied", "You are subscribed again."]);
    expect((await contactOf(s)).email_status).toBe("active");
    const unknown = await postForm(s.unsubscribe, { action: "delete-everything" });
    expect(unknown.status).toBe(400);
    expect((await contactOf(s)).email_status).toBe("active");
  });

  it("a link that does not work gets the recipient pages' one page and status, whatever is wrong", async () => {
    const s = await setup();
    const claims = { companyId: s.companyId, contactId: s.contact.contact_id, emailKey: nameKey(s.contact.email) };
    const recipientToken = await mintLinkToken(env.LINK_SIGNING_KEYS, {
      companyId: s.companyId,
      itemId: s.item.item_id,
      contactId: s.contact.contact_id,
      epoch: 1,
      expiresOn: futureDate(30),
    });
    const expired = await mintUnsubscribeToken(env.LINK_SIGNING_KEYS, { ...claims, today: "2020-01-01" });
    const otherAddress = await mintUnsubscribeToken(env.LINK_SIGNING_KEYS, {
      ...claims,
      emailKey: "someone-else@example.test",
      today: todayIn("UTC"),
    });
    const reference = await getPage(`${BASE}/r/not-a-token`);
    expect(reference.status).toBe(404);
    for (const token of [
      "not-a-token",
      recipientToken,
      expired,
      otherAddress,
      `${new URL(s.unsubscribe).pathname.slice(3)}x`,
    ]) {
      for (const path of [`/u/${token}`, `/u/${token}/preferences`]) {
        const page = await getPage(`${BASE}${path}`);
        expect(page.status, path).toBe(404);
        expect(page.html).toBe(reference.html);
        const posted = await oneClick(`${BASE}${path}`);
        expect(posted.status).toBe(404);
      }
    }
    // An unsubscribe token is no recipient page token either.
    const asPage = await getPage(`${BASE}/r/${new URL(s.unsubscribe).pathname.slice(3)}`);
    expect(asPage.status).toBe(404);
    expect((await contactOf(s)).email_status).toBe("active");
    // Deleting the contact kills the link.
    ok(await call("deleteContact", `/v1/contacts/${s.contact.contact_id}`, { token: s.token }));
    expect((await getPage(s.unsubscribe)).status).toBe(404);
  });

  it("a new address kills the old address's link", async () => {
    const s = await setup();
    ok(
      await call("updateContact", `/v1/contacts/${s.contact.contact_id}`, {
        token: s.token,
        body: { email: `new-${s.contact.email}` },
      }),
    );
    expect((await oneClick(s.unsubscribe)).status).toBe(404);
    expect((await contactOf(s)).email_status).toBe("active");
  });
});

describe("the log", () => {
  afterEach(() => vi.restoreAllMocks());

  it("never holds an unsubscribe token: the request lines show /u/[token]", async () => {
    const s = await setup();
    const lines: string[] = [];
    vi.spyOn(console, "info").mockImplementation((line: unknown) => void lines.push(String(line)));
    const on = { REQUEST_LOGS: "on" };
    await fetchWithEnv(on, new Request(s.unsubscribe));
    await fetchWithEnv(on, new Request(`${s.unsubscribe}/preferences`));
    await fetchWithEnv(on, new Request(s.unsubscribe, { method: "POST", body: "List-Unsubscribe=One-Click" }));
    const requests = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
    expect(requests.map((l) => [l.path, l.status])).toEqual([
      ["/u/[token]", 200],
      ["/u/[token]/preferences", 200],
      ["/u/[token]", 200],
    ]);
    expect(lines.join("\n")).not.toContain(new URL(s.unsubscribe).pathname.slice(3));
  });
});

describe("the send gate", () => {
  it("the next reminder to an unsubscribed contact is not sent: its delivery is suppressed, saying why", async () => {
    const s = await setup();
    await oneClick(s.unsubscribe);
    const emails = await fireReminder(s.companyId, s.token, s.item.item_id);
    expect(emails).toEqual([]);
    const list = ok(await call("listItemReminders", `/v1/items/${s.item.item_id}/reminders`, { token: s.token })).body
      .data;
    const deliveries = list.sent.flatMap((r) => r.deliveries);
    expect(deliveries.map((d) => d.state).sort()).toEqual(["sent", "suppressed"]);
    expect(deliveries.find((d) => d.state === "suppressed")!.last_error).toMatch(/^unsubscribed: /);
  });

  it("a contact whose channels leave email out gets no email (channels_declined)", async () => {
    const s = await setup();
    // This deployment delivers no SMS, so the API refuses ["sms"]: a deployment that had it stored it.
    await env.DB.prepare("UPDATE contacts SET channels = '[\"sms\"]' WHERE id = ?").bind(s.contact.contact_id).run();
    expect(await fireReminder(s.companyId, s.token, s.item.item_id)).toEqual([]);
    ok(
      await call("updateContact", `/v1/contacts/${s.contact.contact_id}`, { token: s.token, body: { channels: null } }),
    );
    expect(await fireReminder(s.companyId, s.token, s.item.item_id)).toHaveLength(1);
  });
});

describe("the preferences page", () => {
  it("shows and saves language, digest and channels; bad input is 422 and saves nothing", async () => {
    const s = await setup();
    const url = `${s.unsubscribe}/preferences`;
    const page = await getPage(url);
    expect(page.status).toBe(200);
    expect(page.html).toContain("Deutsch");
    expect(page.html).toContain("العربية");
    const saved = await postForm(url, {
      language: "de",
      digest: "weekly",
      digest_weekday: "friday",
      channels: "email",
    });
    expect(saved.status).toBe(200);
    // The outcome speaks the language just saved (docs/languages.md).
    expect(outcomeOf(saved)).toEqual(["applied", "Ihre Einstellungen wurden gespeichert."]);
    expect(saved.html).toContain('<html lang="de">');
    expect(await contactOf(s)).toMatchObject({
      language: "de",
      digest: "weekly",
      digest_weekday: "friday",
      // Email ticked, the team chats not: the list without chat.
      channels: ["email"],
    });
    const bad = await postForm(url, { language: "xx", digest: "daily", channels: "email" });
    expect(bad.status).toBe(422);
    const noDigest = await postForm(url, { language: "", digest: "hourly", channels: "email" });
    expect(noDigest.status).toBe(422);
    const noChannel = await postForm(url, { language: "", digest: "off" });
    expect(noChannel.status).toBe(422);
    expect(await contactOf(s)).toMatchObject({ language: "de", digest: "weekly", digest_weekday: "friday" });
    const cleared = await postForm(url, { language: "", digest: "daily", digest_weekday: "monday", channels: "email" });
    expect(cleared.status).toBe(200);
    expect(await contactOf(s)).toMatchObject({ language: null, digest: "daily", digest_weekday: null });
    const audit = ok(
      await call("listAuditLog", `/v1/audit-log?resource_type=contact&resource_id=${s.contact.contact_id}`, {
        token: s.token,
      }),
    ).body.data.filter((entry) => entry.action === "updated");
    expect(audit[0]).toMatchObject({
      actor: { contact_id: s.contact.contact_id, via: "link" },
      operation_id: "savePreferences",
    });
  });
});
