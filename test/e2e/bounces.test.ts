// End to end, as a mail system meets the service (docs/bounces.md): a real reminder goes out, its
// bounce address is read from wrangler's email explorer (the X-Bounce-Address header), then 1,000
// forged or malformed messages are delivered to the email() handler at /cdn-cgi/handler/email
// (altered tokens, another company's token, broken MIME, garbage, 20 MB): no 5xx, nothing changes;
// then a DSN built for the delivery as Gmail would send it marks it bounced in the API, in
// GET /v1/deliveries and in a reminder.bounced webhook, and the next reminder to that address is
// suppressed (no email).
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromBase32, signBounceToken, toBase32 } from "../../src/lib/bounce-token.ts";
import { gmailHardBounce, postfixBounce, yahooComplaint } from "../worker/support/bounce-samples.ts";
import { comingMinute, emailsTo, linkSigningKey, listEmails } from "./support/recipient.ts";
import { callApi, ownerToken, sleep, startService, type Service } from "./support/service.ts";

let service: Service;
let token: string;
let receiver: Server;
let receiverBase = "";
const received: Array<{ type: string; data: Record<string, unknown> }> = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        received.push(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      } catch {
        // not ours
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const address = receiver.address();
  receiverBase = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  service = await startService("expiry-e2e-bounces-", [
    "--var",
    "WEBHOOK_SECRETS_KEY:e2e-webhook-secrets-key-0123456789abcdef",
    "--var",
    "WEBHOOKS_ALLOW_PRIVATE_URLS:true",
  ]);
  token = await ownerToken(service.base);
});

afterAll(async () => {
  try {
    await service?.stop();
  } finally {
    await new Promise((r) => receiver?.close(r));
  }
});

const api = (method: string, path: string, body?: unknown) => callApi(service.base, method, path, token, body);

/** Delivers a raw message to the email() handler as wrangler's local Email Routing does. */
async function deliver(raw: string | Uint8Array, to: string, from = "mailer-daemon@googlemail.com") {
  const res = await fetch(
    `${service.base}/cdn-cgi/handler/email?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`,
    { method: "POST", body: raw },
  );
  return { status: res.status, text: await res.text() };
}

/** The X-Bounce-Address of the email to `address`, as the explorer lists its headers. */
async function bounceAddressOf(address: string): Promise<string> {
  const listed = (await listEmails(service.base)).filter((m) => m.to.includes(address)) as Array<{
    headers?: Record<string, string>;
  }>;
  const header = listed[0]?.headers?.["X-Bounce-Address"];
  if (!header) throw new Error(`no X-Bounce-Address on the email to ${address}: ${JSON.stringify(listed)}`);
  return header.replace(/^<|>$/g, "");
}

async function remindAt(itemId: number, contactId: number) {
  const res = await api("POST", `/v1/items/${itemId}/reminders`, { ...comingMinute(), contact_id: contactId });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.reminder_id as number;
}

async function emailDelivery(itemId: number, reminderId: number) {
  const res = await api("GET", `/v1/items/${itemId}/reminders`);
  const reminder = res.body.data.sent.find((r: { reminder_id: number }) => r.reminder_id === reminderId);
  return reminder?.deliveries.find((d: { channel: string }) => d.channel === "email");
}

describe("bounces over the email() handler", () => {
  it("refuses 1,000 forged or malformed messages without a 5xx, then records a real DSN: bounced, listed, webhook, next reminder suppressed", async () => {
    const hook = await api("POST", "/v1/webhooks", { url: `${receiverBase}/bounces`, events: ["reminder.bounced"] });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    const rcpt = `bounce-${Date.now()}@example.com`;
    const contact = await api("POST", "/v1/contacts", { first_name: "Bo", last_name: "Unce", email: rcpt });
    expect(contact.status).toBe(201);
    const contactId = contact.body.data.contact_id as number;
    const item = await api("POST", "/v1/items", {
      title: "Boiler inspection",
      expiry_date: "2030-01-31",
      contact_id: contactId,
    });
    const itemId = item.body.data.item_id as number;
    const first = await remindAt(itemId, contactId);
    await emailsTo(service.base, rcpt, 1);
    const bounce = await bounceAddressOf(rcpt);
    expect(bounce).toMatch(/^bounces\+[a-z2-7]{20,56}@expiry-reminder\.example$/);
    const domain = bounce.slice(bounce.indexOf("@") + 1);

    // ---- 1,000 forged or malformed messages ----
    const tokenText = bounce.slice("bounces+".length, bounce.indexOf("@"));
    const bytes = fromBase32(tokenText)!;
    const key = await linkSigningKey();
    // Demo "Other Company" (2) naming this delivery: signed, but the reminder is not company 2's.
    const foreign = `bounces+${await signBounceToken(key, { companyId: 2, reminderId: first, contactId })}@${domain}`;
    const altered = (i: number) => {
      const copy = Uint8Array.from(bytes);
      copy[i % copy.length]! ^= 1 + (i % 255);
      return `bounces+${toBase32(copy)}@${domain}`;
    };
    const huge = new Uint8Array(20 * 1024 * 1024).fill(0x41);
    huge.set(
      new TextEncoder().encode(
        `From: x@y.example\r\nTo: ${bounce}\r\nMessage-ID: <huge@y.example>\r\nSubject: big\r\n\r\n`,
      ),
    );
    const messages: Array<() => Promise<{ status: number; text: string }>> = [];
    for (let i = 0; i < 1000; i++) {
      const kind = i % 8;
      if (kind === 0) messages.push(() => deliver(gmailHardBounce({ rcpt, bounce: altered(i) }), altered(i)));
      else if (kind === 1) messages.push(() => deliver(gmailHardBounce({ rcpt, bounce: foreign }), foreign));
      else if (kind === 2)
        messages.push(() => deliver(postfixBounce({ rcpt: `other-${i}@example.com`, bounce }), bounce));
      else if (kind === 3)
        messages.push(() =>
          deliver(
            `From: a@b.example\r\nMessage-ID: <m${i}@b.example>\r\nContent-Type: multipart/report; boundary=\r\n\r\n--\r\n`,
            bounce,
          ),
        );
      else if (kind === 4) messages.push(() => deliver(`\u0000garbage ${i} \u00ff\r\n\r\n`, bounce));
      else if (kind === 5)
        messages.push(() =>
          deliver(yahooComplaint({ rcpt, bounce: `bounces+${tokenText.slice(0, -2)}@${domain}` }), `fbl@${domain}`),
        );
      else if (kind === 6)
        messages.push(() => deliver(gmailHardBounce({ rcpt, bounce: "bounces+@x" }), `bounces+aaaa@${domain}`));
      else
        messages.push(() =>
          i < 24 ? deliver(huge, bounce) : deliver(gmailHardBounce({ rcpt, bounce }).slice(0, 900), bounce),
        );
    }
    const statuses: number[] = [];
    for (let i = 0; i < messages.length; i += 25)
      statuses.push(...(await Promise.all(messages.slice(i, i + 25).map((m) => m()))).map((r) => r.status));
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.filter((s) => s === 200)).toEqual([]);
    expect((await emailDelivery(itemId, first)).state).toBe("sent");
    expect((await api("GET", "/v1/deliveries")).body.data).toEqual([]);
    expect((await api("GET", `/v1/contacts/${contactId}`)).body.data.email_status).toBe("active");

    // ---- the real DSN, as Gmail sends it to the bounce address ----
    const dsn = await deliver(gmailHardBounce({ rcpt, bounce }), bounce);
    expect(dsn, dsn.text).toMatchObject({ status: 200 });
    const routing = await callApi(service.base, "GET", "/cdn-cgi/explorer/api/local/email/routing");
    expect(routing.status).toBe(200);
    expect(await emailDelivery(itemId, first)).toMatchObject({ state: "bounced", recipient: rcpt });
    const listed = (await api("GET", "/v1/deliveries?state=bounced")).body.data;
    expect(listed).toEqual([
      expect.objectContaining({
        reminder_id: first,
        state: "bounced",
        item: { item_id: itemId, title: "Boiler inspection" },
        bounce: { kind: "hard", status: "5.1.1" },
      }),
    ]);
    // Written to D1 by the clock's next alarm, within about 5 s of the report (docs/bounces.md).
    for (let i = 0; i < 60 && (await api("GET", `/v1/contacts/${contactId}`)).body.data.email_status === "active"; i++)
      await sleep(500);
    expect((await api("GET", `/v1/contacts/${contactId}`)).body.data.email_status).toBe("bounced");
    // The same DSN again changes nothing more.
    expect((await deliver(gmailHardBounce({ rcpt, bounce }), bounce)).status).toBe(200);
    for (let i = 0; i < 60 && !received.some((r) => r.type === "reminder.bounced"); i++) await sleep(500);
    const events = received.filter((r) => r.type === "reminder.bounced");
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toMatchObject({
      delivery: { reminder_id: first, contact_id: contactId, state: "bounced" },
      item: expect.objectContaining({ item_id: itemId }),
      contact: { contact_id: contactId, email: rcpt },
      kind: "hard",
      status: "5.1.1",
      suppressed: true,
    });

    // ---- the next reminder to that address: suppressed, no email ----
    const second = await remindAt(itemId, contactId);
    let delivery: { state: string; last_error: string } | undefined;
    for (let i = 0; i < 150; i++) {
      delivery = await emailDelivery(itemId, second);
      if (delivery && delivery.state !== "pending") break;
      await sleep(1000);
    }
    expect(delivery).toMatchObject({ state: "suppressed" });
    expect((await listEmails(service.base)).filter((m) => m.to.includes(rcpt))).toHaveLength(1);
    const all = (await api("GET", "/v1/deliveries")).body.data.map((d: { reminder_id: number; state: string }) => [
      d.reminder_id,
      d.state,
    ]);
    expect(all).toEqual([
      [second, "suppressed"],
      [first, "bounced"],
    ]);
  }, 400_000);
});
