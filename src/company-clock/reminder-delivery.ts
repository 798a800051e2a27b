// Delivery of fired reminders (email, SMS) from the company clock's outbox (table `deliveries`),
// after the transaction that fired them. A fired reminder has one delivery per channel until its
// recipients are resolved (recipients.ts), then one per channel and recipient, each with its own
// state, attempts and message. Each is leased before it is sent, so two runs never send it twice at
// the same time; a failure is retried with exponential backoff until MAX_DELIVERY_ATTEMPTS, then it is `failed`.

import type { Env } from "../env";
import type { EmailStatus } from "../lib/contact-preferences";
import { eachInPool } from "../lib/pool";
import { recipientLinks } from "../lib/recipient-links";
import { unsubscribeLinks } from "../lib/unsubscribe-links";
import { todayIn } from "../lib/time";
import { COMPANY_SENDER_SQL, COMPANY_TEMPLATES_SQL, senderOf, templatesOf, type CompanySender } from "./company-facts";
import { speechFor } from "../i18n/language";
import { normaliseAddress, suppressedAmong } from "./bounces";
import { sendEmail, type DeliveryIdentity } from "./email-transport";
import { composeEmail, hasCalendarEvent, itemCalendar, type OutgoingEmail } from "./outgoing-email";
import { reminderMessage, type ReminderTemplateTexts } from "./reminder-email";
import { sendGate } from "./send-gate";
import { resolveRecipients, resolutionKey, type Resolution } from "./recipients";

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

export type { OutgoingEmail } from "./outgoing-email";
export interface Transports {
  email(message: OutgoingEmail, delivery: DeliveryIdentity): Promise<string>;
  sms(to: string, text: string): Promise<string>;
}

export function defaultTransports(env: Env): Transports {
  return {
    email: (message, delivery) => sendEmail(env, message, delivery),
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
  contact_id: number;
  attempts: number;
  item_id: number;
  /** The reminder goes out even to a contact on a digest (its step's `always`). */
  always: number;
};

type Outcome =
  | { state: "sent"; recipient: string; messageId: string }
  | { state: "no_recipient" | "skipped" | "digested"; recipient: null; error: string }
  | { state: "suppressed"; recipient: string | null; error: string }
  | { state: "retry"; recipient: string | null; error: string };

/** Fired reminders whose recipients one run resolves (each becomes up to MAX_GROUP_RECIPIENTS deliveries per channel). */
const RESOLVE_BATCH = 50;

const deliveryKey = (d: { reminder_id: number; channel: string; contact_id: number }) =>
  `${d.reminder_id}:${d.channel}:${d.contact_id}`;

/**
 * One run of the outbox: the recipients of reminders that just fired are resolved (each becomes its
 * own delivery), then up to DELIVERY_BATCH ready deliveries are leased and sent. `more`: ready work is left.
 */
export async function deliverDue(
  storage: DurableObjectStorage,
  env: Env,
  d1: D1Database,
  companyId: number,
  transports: Transports,
): Promise<{ more: boolean }> {
  await resolveFired(storage, d1, companyId, Date.now());
  const now = Date.now();
  let leased: Leased[] = [];
  storage.transactionSync(() => {
    leased = storage.sql
      .exec<Leased>(
        `SELECT d.reminder_id, d.channel, d.contact_id, d.attempts, r.item_id, r.always FROM deliveries d JOIN reminders r ON r.reminder_id = d.reminder_id
         WHERE d.state = 'pending' AND d.next_at <= ? AND d.contact_id <> 0 AND d.endpoint_id IS NULL ORDER BY d.next_at LIMIT ?`,
        now,
        DELIVERY_BATCH,
      )
      .toArray();
    for (const d of leased) {
      storage.sql.exec(
        "UPDATE deliveries SET attempts = attempts + 1, next_at = ? WHERE reminder_id = " +
          "? AND channel = ? AND contact_id = ?",
        now + LEASE_MS,
        d.reminder_id,
        d.channel,
        d.contact_id,
      );
    }
  });
  if (leased.length > 0) {
    const outcomes = await send(storage, leased, env, d1, companyId, transports);
    recordOutcomes(storage, leased, outcomes);
  }
  const ready = storage.sql
    .exec<{ n: number }>(
      "SELECT count(*) AS n FROM deliveries WHERE state = 'pending' AND next_at <= ? AND endpoint_id IS NULL",
      Date.now(),
    )
    .one().n;
  return { more: ready > 0 };
}

/**
 * The recipients of fired reminders (their placeholder deliveries, contact 0), read from D1 now:
 * each becomes a delivery of its own (same attempts and schedule), or the placeholder says why
 * there is nobody. D1 away: the placeholder is retried like a failed attempt.
 */
async function resolveFired(
  storage: DurableObjectStorage,
  d1: D1Database,
  companyId: number,
  now: number,
): Promise<void> {
  const waiting = storage.sql
    .exec<{
      reminder_id: number;
      channel: string;
      attempts: number;
      item_id: number;
      contact_id: number | null;
      group_id: number | null;
    }>(
      `SELECT d.reminder_id, d.channel, d.attempts, r.item_id, r.contact_id, r.group_id FROM deliveries d JOIN reminders r ON r.reminder_id = d.reminder_id
       WHERE d.state = 'pending' AND d.contact_id = 0 AND d.endpoint_id IS NULL AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`,
      now,
      RESOLVE_BATCH,
    )
    .toArray();
  if (waiting.length === 0) return;
  let resolved: Map<string, Resolution> | null = null;
  let failure = "";
  try {
    resolved = await resolveRecipients(
      d1,
      companyId,
      waiting.map((w) => ({
        reminderId: w.reminder_id,
        channel: w.channel,
        itemId: w.item_id,
        contactId: w.contact_id,
        groupId: w.group_id,
      })),
    );
  } catch (error) {
    failure = `recipients unavailable: ${String(error)}`;
  }
  const done = Date.now();
  storage.transactionSync(() => {
    const sql = storage.sql;
    for (const w of waiting) {
      const where = [w.reminder_id, w.channel] as const;
      const found = resolved?.get(resolutionKey(w.reminder_id, w.channel));
      if (!found) {
        const attempt = w.attempts + 1;
        const failed = attempt >= MAX_DELIVERY_ATTEMPTS;
        sql.exec(
          "UPDATE deliveries SET attempts = ?, state = ?, last_error = ?, next_at = ?, changed_at = ? " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = 0 AND state = 'pending'",
          attempt,
          failed ? "failed" : "pending",
          (failure || "recipients unavailable").slice(0, 300),
          failed ? null : done + retryDelay(attempt),
          done,
          ...where,
        );
      } else if (found.kind === "none") {
        sql.exec(
          "UPDATE deliveries SET state = ?, last_error = ?, next_at = NULL, changed_at = ? WHERE " +
            "reminder_id = ? AND channel = ? AND contact_id = 0 AND state = 'pending'",
          found.state,
          found.error,
          done,
          ...where,
        );
      } else {
        sql.exec(
          "DELETE FROM deliveries WHERE reminder_id = ? AND channel = ? AND contact_id = 0 " + "AND state = 'pending'",
          ...where,
        );
        sql.exec(
          `INSERT OR IGNORE INTO deliveries (reminder_id, channel, contact_id, state, attempts, next_at)
           SELECT ?, ?, value, 'pending', ?, ? FROM json_each(?)`,
          ...where,
          w.attempts,
          done,
          JSON.stringify(found.contactIds),
        );
      }
    }
  });
}

/** Sends each leased delivery (CONCURRENCY at a time) with the D1 facts read for all of them at once. */
async function send(
  storage: DurableObjectStorage,
  leased: Leased[],
  env: Env,
  d1: D1Database,
  companyId: number,
  transports: Transports,
): Promise<Map<string, Outcome>> {
  const outcomes = new Map<string, Outcome>();
  try {
    const targets: DeliveryTarget[] = leased.map((d) => ({
      reminderId: d.reminder_id,
      itemId: d.item_id,
      contactId: d.contact_id,
    }));
    const { company, details } = await deliveryDetails(d1, companyId, targets);
    const today = todayIn(company.timezone);
    // Addresses suppressed by bounces or complaints (bounces.ts): not sent to, one query for the batch.
    const suppressed = suppressedAmong(
      storage.sql,
      leased
        .flatMap((d) => (d.channel === "email" ? [details.get(`${d.reminder_id}:${d.contact_id}`)?.email ?? ""] : []))
        .filter(Boolean),
    );
    const one = async (d: Leased) => {
      const facts = details.get(`${d.reminder_id}:${d.contact_id}`);
      const suppression =
        d.channel === "email" && facts?.email ? suppressed.get(normaliseAddress(facts.email)) : undefined;
      // The recipient's links to its page for the item, bound to the item's current occurrence
      // (src/lib/recipient-links.ts). Email only; the one place delivery makes them.
      const mailed = d.channel === "email" && facts?.present && facts.contactPresent && facts.email;
      const links = mailed
        ? await recipientLinks(env, {
            companyId,
            itemId: d.item_id,
            contactId: d.contact_id,
            epoch: facts.epoch,
            itemDate: facts.expiryDate,
          })
        : null;
      const unsubscribe = mailed
        ? await unsubscribeLinks(env, { companyId, contactId: d.contact_id, emailKey: facts.emailKey })
        : null;
      outcomes.set(
        deliveryKey(d),
        await deliverOne(
          d,
          facts,
          {
            companyId,
            companyName: company.name,
            replyTo: company.replyTo,
            sender: env.EMAIL_FROM ?? "",
            today,
            dateFormat: company.dateFormat,
            language: company.language,
            templates: company.templates,
          },
          transports,
          links,
          unsubscribe?.unsubscribe ?? null,
          suppression ?? null,
        ),
      );
    };
    await eachInPool(leased, CONCURRENCY, one);
  } catch (error) {
    for (const d of leased)
      outcomes.set(deliveryKey(d), {
        state: "retry",
        recipient: null,
        error: `delivery details unavailable: ${String(error)}`,
      });
  }
  return outcomes;
}

function recordOutcomes(storage: DurableObjectStorage, leased: Leased[], outcomes: Map<string, Outcome>): void {
  const done = Date.now();
  storage.transactionSync(() => {
    for (const d of leased) {
      const outcome = outcomes.get(deliveryKey(d))!;
      const where = [d.reminder_id, d.channel, d.contact_id] as const;
      const attempt = d.attempts + 1;
      if (outcome.state === "sent") {
        storage.sql.exec(
          "UPDATE deliveries SET state = 'sent', recipient = ?, message_id = ?, " +
            "delivered_at = ?, changed_at = delivered_at, last_error = NULL, next_at = NULL WHERE reminder_id = ? AND " +
            "channel = ? AND contact_id = ?",
          outcome.recipient,
          outcome.messageId,
          done,
          ...where,
        );
      } else if (outcome.state === "retry") {
        const failed = attempt >= MAX_DELIVERY_ATTEMPTS;
        storage.sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = ?, changed_at = ? " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = ?",
          failed ? "failed" : "pending",
          outcome.recipient,
          outcome.error.slice(0, 300),
          failed ? null : done + retryDelay(attempt),
          done,
          ...where,
        );
      } else {
        storage.sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = NULL, changed_at = ? WHERE " +
            "reminder_id = ? AND channel = ? AND contact_id = ?",
          outcome.state,
          outcome.recipient,
          outcome.error.slice(0, 300),
          done,
          ...where,
        );
      }
    }
  });
}

interface Sender {
  companyId: number;
  companyName: string;
  /** settings.reply_to. */
  replyTo: string | null;
  /** EMAIL_FROM. */
  sender: string;
  today: string;
  dateFormat: Parameters<typeof reminderMessage>[0]["dateFormat"];
  /** settings.language, and the company's reminder templates by language (docs/languages.md). */
  language: string | null;
  templates: Map<string, ReminderTemplateTexts>;
}

async function deliverOne(
  d: Leased,
  facts: DeliveryDetails | undefined,
  company: Sender,
  transports: Transports,
  links: Awaited<ReturnType<typeof recipientLinks>> = null,
  unsubscribeUrl: string | null = null,
  /** Why the recipient's address is suppressed for the company (bounces.ts), if it is. */
  addressSuppressed: string | null = null,
): Promise<Outcome> {
  if (!facts?.present) return { state: "skipped", recipient: null, error: "the item was deleted before delivery" };
  if (!facts.contactPresent)
    return { state: "no_recipient", recipient: null, error: `contact ${d.contact_id} no longer exists` };
  const stopped = sendGate({
    channel: d.channel,
    emailStatus: facts.emailStatus,
    channels: facts.channels,
    addressSuppressed,
  });
  if (stopped)
    return { state: "suppressed", recipient: addressSuppressed ? facts.email : null, error: stopped.slice(0, 300) };
  // A contact on a digest gets this reminder's item in its next digest instead (digests.ts), unless the step is `always`.
  if (d.channel === "email" && facts.digest !== "off" && !d.always)
    return { state: "digested", recipient: null, error: `digest: folded into the contact's ${facts.digest} digest` };
  // The recipient's language (docs/languages.md), and the company's template for it when there is one.
  const speech = speechFor(facts.language, company.language);
  const message = reminderMessage({
    speech,
    template: company.templates.get(speech.language) ?? null,
    recipientFirstName: facts.firstName,
    recipientLastName: facts.lastName,
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
  if (d.channel !== "email" && d.channel !== "sms")
    return { state: "skipped", recipient: null, error: `channel ${d.channel} is not delivered by this deployment` };
  if (!recipient)
    return {
      state: "no_recipient",
      recipient: null,
      error: `the contact has no ${d.channel === "email" ? "email address" : "phone number"}`,
    };
  try {
    const messageId =
      d.channel === "email"
        ? await transports.email(
            composeEmail(message, {
              to: recipient,
              sender: company.sender,
              companyName: company.companyName,
              replyTo: company.replyTo,
              unsubscribeUrl,
              calendar: hasCalendarEvent(facts.itemType)
                ? itemCalendar(
                    {
                      id: d.item_id,
                      companyId: company.companyId,
                      title: facts.title,
                      itemType: facts.itemType,
                      date: facts.expiryDate,
                      notes: facts.notes,
                    },
                    Date.now(),
                  )
                : null,
            }),
            { companyId: company.companyId, reminderId: d.reminder_id, contactId: d.contact_id },
          )
        : await transports.sms(recipient, `${message.subject}`);
    return { state: "sent", recipient, messageId };
  } catch (error) {
    return { state: "retry", recipient, error: error instanceof Error ? error.message : String(error) };
  }
}

// ---- what a delivery needs from D1 ----

interface DeliveryTarget {
  reminderId: number;
  itemId: number;
  contactId: number;
}

interface DeliveryDetails {
  reminderId: number;
  present: boolean;
  contactPresent: boolean;
  /** The item's current occurrence (the recipient's links are bound to it). */
  epoch: number;
  title: string;
  itemType: "exp" | "due" | "apt" | "evt";
  documentType: string | null;
  expiryDate: string;
  notes: string | null;
  email: string | null;
  /** The email's key (nameKey): the unsubscribe link is bound to it. */
  emailKey: string;
  emailStatus: EmailStatus;
  /** The contact's channels preference as stored (JSON array or null). */
  channels: string | null;
  /** The contact's digest preference. */
  digest: "off" | "daily" | "weekly";
  phone: string | null;
  recipientName: string | null;
  firstName: string | null;
  lastName: string | null;
  /** The contact's `language` (BCP 47), null when not set. */
  language: string | null;
}

interface CompanyDetails extends CompanySender {
  /** Its reminder templates by language (at most one per supported language). */
  templates: Map<string, ReminderTemplateTexts>;
}

/** The current D1 facts for a batch of deliveries, by `reminderId:contactId`: item, recipient, company (its templates too: one read per batch). */
async function deliveryDetails(
  db: D1Database,
  companyId: number,
  targets: DeliveryTarget[],
): Promise<{ company: CompanyDetails; details: Map<string, DeliveryDetails> }> {
  const [companyResult, rows, templateRows] = await db.batch([
    db.prepare(COMPANY_SENDER_SQL).bind(companyId),
    db
      .prepare(
        `SELECT t.value ->> 0 AS reminder_id, t.value ->> 2 AS contact_id, i.id IS NOT NULL AS present, c.id IS NOT NULL AS contact_present,
           i.schedule_epoch AS epoch, i.title, i.item_type, i.expiry_date, i.notes, d.name AS document_type,
           c.email, c.email_key, c.email_status, c.channels, c.digest, trim(c.mobile_code || ' ' || c.phone_number) AS phone, trim(c.first_name || ' ' || c.last_name) AS recipient_name,
           c.first_name, c.last_name, c.language
         FROM json_each(?2) AS t
         LEFT JOIN items i ON i.id = t.value ->> 1 AND i.company_id = ?1
         LEFT JOIN document_types d ON d.id = i.document_type_id
         LEFT JOIN contacts c ON c.id = t.value ->> 2 AND c.company_id = ?1`,
      )
      .bind(companyId, JSON.stringify(targets.map((t) => [t.reminderId, t.itemId, t.contactId]))),
    db.prepare(COMPANY_TEMPLATES_SQL).bind(companyId),
  ]);
  const details = new Map<string, DeliveryDetails>();
  for (const r of rows!.results as Array<Record<string, unknown>>) {
    details.set(`${Number(r.reminder_id)}:${Number(r.contact_id)}`, {
      reminderId: Number(r.reminder_id),
      present: r.present === 1,
      contactPresent: r.contact_present === 1,
      epoch: Number(r.epoch ?? 0),
      title: String(r.title ?? ""),
      itemType: (r.item_type as DeliveryDetails["itemType"]) ?? "exp",
      documentType: (r.document_type as string | null) ?? null,
      expiryDate: String(r.expiry_date ?? ""),
      notes: (r.notes as string | null) ?? null,
      email: (r.email as string | null) || null,
      emailKey: String(r.email_key ?? ""),
      emailStatus: (r.email_status as EmailStatus | null) ?? "active",
      channels: (r.channels as string | null) ?? null,
      digest: (r.digest as DeliveryDetails["digest"] | null) ?? "off",
      phone: (r.phone as string | null) || null,
      recipientName: (r.recipient_name as string | null) || null,
      firstName: (r.first_name as string | null) || null,
      lastName: (r.last_name as string | null) || null,
      language: (r.language as string | null) || null,
    });
  }
  return {
    company: {
      ...senderOf(companyResult!.results[0] as Record<string, unknown> | undefined),
      templates: templatesOf(templateRows!.results as Array<Record<string, unknown>>),
    },
    details,
  };
}
