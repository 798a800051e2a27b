// Delivery of fired reminders (email, SMS) from the company clock's outbox (table `deliveries`),
// after the transaction that fired them. Each (reminder, channel) is leased before it is sent, so
// two runs never send it twice at the same time; a failure is retried with exponential backoff
// until MAX_DELIVERY_ATTEMPTS, then it is `failed`.

import type { Env } from "../env";
import { recipientLinks } from "../lib/recipient-links";
import { DATE_FORMATS, DEFAULT_DATE_FORMAT, DEFAULT_TIME_ZONE, todayIn, type DateFormat } from "../lib/time";
import { reminderMessage } from "./reminder-email";

export const MAX_DELIVERY_ATTEMPTS = 6;
/** Deliveries attempted per alarm run; more ready re-arm the alarm at once. */
export const DELIVERY_BATCH = 200;
const CONCURRENCY = 10;
/** How long a delivery is leased to the run sending it (a run that dies leaves it to be retried after this). */
const LEASE_MS = 60_000;
const SEND_TIMEOUT_MS = 10_000;

/** Delay before attempt n + 1 after attempt n failed: 30 s, 2 min, 8 min, 32 min, 2 h (about 2 h 45 min in all). */
export function retryDelay(attempt: number): number {
  return Math.min(30_000 * 4 ** (attempt - 1), 2 * 3_600_000);
}

export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html: string;
}
export interface Transports {
  email(message: OutgoingEmail): Promise<string>;
  sms(to: string, text: string): Promise<string>;
}

export function defaultTransports(env: Env): Transports {
  return {
    async email(message) {
      if (!env.EMAIL || !env.EMAIL_FROM) throw new Error("no email sender configured");
      const result = await env.EMAIL.send({ from: env.EMAIL_FROM, ...message });
      return result.messageId;
    },
    async sms(to, text) {
      if (!env.SMS_API_URL || !env.SMS_API_KEY) throw new Error("no SMS provider configured");
      const response = await fetch(env.SMS_API_URL, {
        method: "POST",
        headers: { authorization: `Bearer ${env.SMS_API_KEY}`, "content-type": "application/json" },
        body: JSON.stringify({ to, text }),
        signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      });
      if (!response.ok) throw new Error(`SMS provider answered ${response.status}`);
      return response.headers.get("x-message-id") ?? "";
    },
  };
}

type Leased = {
  reminder_id: number;
  channel: string;
  attempts: number;
  item_id: number;
  contact_id: number | null;
};

type Outcome =
  | { state: "sent"; recipient: string; messageId: string }
  | { state: "no_recipient" | "skipped"; recipient: null; error: string }
  | { state: "retry"; recipient: string | null; error: string };

export async function deliverDue(storage: DurableObjectStorage, env: Env, d1: D1Database, companyId: number, transports: Transports): Promise<{ more: boolean }> {
  const now = Date.now();
  let leased: Leased[] = [];
  storage.transactionSync(() => {
    leased = storage.sql
      .exec<Leased>(
        `SELECT d.reminder_id, d.channel, d.attempts, r.item_id, r.contact_id FROM deliveries d JOIN reminders r ON r.reminder_id = d.reminder_id
         WHERE d.state = 'pending' AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`,
        now,
        DELIVERY_BATCH,
      )
      .toArray();
    for (const d of leased) {
      storage.sql.exec("UPDATE deliveries SET attempts = attempts + 1, next_at = ? WHERE reminder_id = ? AND channel = ?", now + LEASE_MS, d.reminder_id, d.channel);
    }
  });
  if (leased.length === 0) return { more: false };

  const outcomes = new Map<string, Outcome>();
  try {
    const targets: DeliveryTarget[] = leased.map((d) => ({ reminderId: d.reminder_id, itemId: d.item_id, contactId: d.contact_id }));
    const { company, details } = await deliveryDetails(d1, companyId, targets);
    const today = todayIn(company.timezone);
    const send = async (d: Leased) => {
      const key = `${d.reminder_id}:${d.channel}`;
      const facts = details.get(d.reminder_id);
      // Issue 33: the recipient's links to its page for the item, bound to the item's current
      // occurrence (src/lib/recipient-links.ts). Email only; the one place delivery makes them.
      const links =
        d.channel === "email" && facts?.present && facts.contactId !== null
          ? await recipientLinks(env, { companyId, itemId: d.item_id, contactId: facts.contactId, epoch: facts.epoch, itemDate: facts.expiryDate })
          : null;
      outcomes.set(key, await deliverOne(d, facts, { companyName: company.name, today, dateFormat: company.dateFormat }, transports, links));
    };
    for (let i = 0; i < leased.length; i += CONCURRENCY) await Promise.all(leased.slice(i, i + CONCURRENCY).map(send));
  } catch (error) {
    for (const d of leased) outcomes.set(`${d.reminder_id}:${d.channel}`, { state: "retry", recipient: null, error: `delivery details unavailable: ${String(error)}` });
  }

  const done = Date.now();
  storage.transactionSync(() => {
    for (const d of leased) {
      const outcome = outcomes.get(`${d.reminder_id}:${d.channel}`)!;
      const attempt = d.attempts + 1;
      if (outcome.state === "sent") {
        storage.sql.exec(
          "UPDATE deliveries SET state = 'sent', recipient = ?, message_id = ?, delivered_at = ?, last_error = NULL, next_at = NULL WHERE reminder_id = ? AND channel = ?",
          outcome.recipient,
          outcome.messageId,
          done,
          d.reminder_id,
          d.channel,
        );
      } else if (outcome.state === "retry") {
        const failed = attempt >= MAX_DELIVERY_ATTEMPTS;
        storage.sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = ? WHERE reminder_id = ? AND channel = ?",
          failed ? "failed" : "pending",
          outcome.recipient,
          outcome.error.slice(0, 300),
          failed ? null : done + retryDelay(attempt),
          d.reminder_id,
          d.channel,
        );
      } else {
        storage.sql.exec(
          "UPDATE deliveries SET state = ?, last_error = ?, next_at = NULL WHERE reminder_id = ? AND channel = ?",
          outcome.state,
          outcome.error,
          d.reminder_id,
          d.channel,
        );
      }
    }
  });
  const ready = storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND next_at <= ?", Date.now()).one().n;
  return { more: ready > 0 };
}

async function deliverOne(
  d: Leased,
  facts: DeliveryDetails | undefined,
  company: { companyName: string; today: string; dateFormat: Parameters<typeof reminderMessage>[0]["dateFormat"] },
  transports: Transports,
  links: Awaited<ReturnType<typeof recipientLinks>> = null,
): Promise<Outcome> {
  if (!facts?.present) return { state: "skipped", recipient: null, error: "the item was deleted before delivery" };
  const message = reminderMessage({
    companyName: company.companyName,
    itemTitle: facts.title,
    itemType: facts.itemType,
    documentType: facts.documentType,
    expiryDate: facts.expiryDate,
    today: company.today,
    dateFormat: company.dateFormat,
    recipientName: facts.recipientName,
    itemId: d.item_id,
    notes: facts.notes,
    links,
  });
  const recipient = d.channel === "email" ? facts.email : d.channel === "sms" ? facts.phone : null;
  if (d.channel !== "email" && d.channel !== "sms") return { state: "skipped", recipient: null, error: `channel ${d.channel} is not delivered by this deployment` };
  if (!recipient) {
    return {
      state: "no_recipient",
      recipient: null,
      error: d.contact_id || facts.recipientName ? `the contact has no ${d.channel === "email" ? "email address" : "phone number"}` : "no recipient: the item has no contact and the reminder names none",
    };
  }
  try {
    const messageId = d.channel === "email" ? await transports.email({ to: recipient, ...message }) : await transports.sms(recipient, `${message.subject}`);
    return { state: "sent", recipient, messageId };
  } catch (error) {
    return { state: "retry", recipient, error: error instanceof Error ? error.message : String(error) };
  }
}

// ---- what a delivery needs from D1 ----

interface DeliveryTarget {
  reminderId: number;
  itemId: number;
  contactId: number | null;
}

interface DeliveryDetails {
  reminderId: number;
  present: boolean;
  title: string;
  itemType: "exp" | "due" | "apt" | "evt";
  documentType: string | null;
  expiryDate: string;
  /** The item's schedule_epoch: the occurrence the links are bound to. */
  epoch: number;
  notes: string | null;
  /** The contact the delivery goes to (the reminder's, else the item's); null without one. */
  contactId: number | null;
  email: string | null;
  phone: string | null;
  recipientName: string | null;
}

interface CompanyDetails {
  name: string;
  timezone: string;
  dateFormat: DateFormat;
}

/** The current D1 facts for a batch of deliveries: item, recipient (the reminder's contact or the item's), company. */
async function deliveryDetails(db: D1Database, companyId: number, targets: DeliveryTarget[]): Promise<{ company: CompanyDetails; details: Map<number, DeliveryDetails> }> {
  const [companyResult, rows] = await db.batch([
    db
      .prepare("SELECT name, json_extract(settings, '$.timezone') AS timezone, json_extract(settings, '$.date_format') AS date_format FROM companies WHERE id = ?")
      .bind(companyId),
    db
      .prepare(
        `SELECT t.value ->> 0 AS reminder_id, i.id IS NOT NULL AS present, i.title, i.item_type, i.expiry_date, i.schedule_epoch AS epoch, i.notes, d.name AS document_type,
           c.id AS contact_id, c.email, trim(c.mobile_code || ' ' || c.phone_number) AS phone, trim(c.first_name || ' ' || c.last_name) AS recipient_name
         FROM json_each(?2) AS t
         LEFT JOIN items i ON i.id = t.value ->> 1 AND i.company_id = ?1
         LEFT JOIN document_types d ON d.id = i.document_type_id
         LEFT JOIN contacts c ON c.id = coalesce(t.value ->> 2, i.contact_id) AND c.company_id = ?1`,
      )
      .bind(companyId, JSON.stringify(targets.map((t) => [t.reminderId, t.itemId, t.contactId]))),
  ]);
  const company = (companyResult!.results as Array<{ name: string; timezone: string | null; date_format: string | null }>)[0];
  const dateFormat = (DATE_FORMATS as readonly string[]).includes(company?.date_format ?? "") ? (company!.date_format as DateFormat) : DEFAULT_DATE_FORMAT;
  const details = new Map<number, DeliveryDetails>();
  for (const r of rows!.results as Array<Record<string, unknown>>) {
    details.set(Number(r.reminder_id), {
      reminderId: Number(r.reminder_id),
      present: r.present === 1,
      title: String(r.title ?? ""),
      itemType: (r.item_type as DeliveryDetails["itemType"]) ?? "exp",
      documentType: (r.document_type as string | null) ?? null,
      expiryDate: String(r.expiry_date ?? ""),
      epoch: Number(r.epoch ?? 0),
      contactId: r.contact_id === null || r.contact_id === undefined ? null : Number(r.contact_id),
      notes: (r.notes as string | null) ?? null,
      email: (r.email as string | null) || null,
      phone: (r.phone as string | null) || null,
      recipientName: (r.recipient_name as string | null) || null,
    });
  }
  return { company: { name: company?.name ?? "", timezone: company?.timezone || DEFAULT_TIME_ZONE, dateFormat }, details };
}
