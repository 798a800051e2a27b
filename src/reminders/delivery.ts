// Delivery of fired reminders from the Durable Object's outbox (table `deliveries`), after the
// transaction that fired them. Each (reminder, channel) is leased before it is sent, so two runs
// never send it twice at the same time; a failure is retried with exponential backoff until
// MAX_DELIVERY_ATTEMPTS, then it is `failed`.

import type { Env } from "../env";
import { todayIn } from "../lib/time";
import { deliveryDetails, type DeliveryDetails, type DeliveryTarget } from "./d1";
import { reminderMessage } from "./email";

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
      outcomes.set(key, await deliverOne(d, facts, { companyName: company.name, today, dateFormat: company.dateFormat }, transports));
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
