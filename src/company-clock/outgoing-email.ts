// What a reminder email is as it leaves the service, apart from its body (reminder-email.ts): who
// it is from (the company's name at EMAIL_FROM), where replies go (settings.reply_to), the RFC 8058
// unsubscribe headers, and an .ics of an appointment or event. Pure: one structured value in the
// shape of the send_email binding's builder form (EmailMessageBuilder); the transport
// (reminder-delivery.ts) hands it over as it is.
//
// No Message-ID: the Email Service sets it and refuses one in `headers` (E_HEADER_NOT_ALLOWED,
// its "platform-controlled headers"). `wrangler dev`'s simulation gives each message one on the
// sender's domain (`<…@expiry-reminder.example>`); the binding answers it, and the delivery keeps it
// (docs/api-notes.md, "The sender").
import { escapeText, icalDate, icalText, icalUtc, itemUid } from "../lib/ical";
import { addDays } from "../lib/time";
import type { ReminderItemType, ReminderMessage } from "./reminder-email";
import { singleLine, truncate } from "./reminder-email";

export interface EmailAttachmentFile {
  disposition: "attachment";
  filename: string;
  type: string;
  content: string;
}

/** A reminder email, whole: what the binding's `send` takes. */
export interface OutgoingEmail {
  to: string;
  /** The bare address when the company's name leaves no display name. */
  from: { name: string; email: string } | string;
  replyTo?: string;
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
  attachments?: EmailAttachmentFile[];
}

/** The longest display name, in code points. */
export const DISPLAY_NAME_MAX = 64;

/**
 * The company's name as a From display name: on one line, without the characters that could make
 * it read as (or break out into) an address: quotes, angle brackets, backslash, @, and the other
 * RFC 5322 specials (`( ) , ; : [ ]`), runs of spaces squeezed; at most DISPLAY_NAME_MAX code points.
 */
export function displayName(companyName: string): string {
  const cleaned = singleLine(companyName)
    .replace(/[\p{Cc}\p{Cf}\u2028\u2029]/gu, "")
    .replace(/["<>\\@(),;:[\]]/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return truncate(cleaned, DISPLAY_NAME_MAX);
}

/** The item an .ics describes. */
export interface CalendarItem {
  id: number;
  companyId: number;
  title: string;
  itemType: ReminderItemType;
  date: string;
  notes: string | null;
}

/** Appointments and events carry an .ics; expirations and due dates do not. */
export const hasCalendarEvent = (itemType: ReminderItemType) => itemType === "apt" || itemType === "evt";

/**
 * The .ics of an appointment or event: METHOD:PUBLISH, one all-day VEVENT with the UID the calendar
 * feeds give the item, so a calendar that has both keeps one event.
 */
export function itemCalendar(item: CalendarItem, now: number): string {
  const lines = [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//Expiry Reminder API//Reminder//EN",
    "CALSCALE:GREGORIAN",
    "METHOD:PUBLISH",
    "BEGIN:VEVENT",
    `UID:${itemUid(item.id, item.companyId)}`,
    `DTSTAMP:${icalUtc(now)}`,
    `DTSTART;VALUE=DATE:${icalDate(item.date)}`,
    ...(item.date < "9999-12-31" ? [`DTEND;VALUE=DATE:${icalDate(addDays(item.date, 1))}`] : []),
    `SUMMARY:${escapeText(singleLine(item.title) || "(untitled)")}`,
    ...(item.notes ? [`DESCRIPTION:${escapeText(truncate(item.notes, 2000))}`] : []),
    "STATUS:CONFIRMED",
    "TRANSP:TRANSPARENT",
    "END:VEVENT",
    "END:VCALENDAR",
  ];
  return icalText(lines);
}

export interface EnvelopeInput {
  to: string;
  /** EMAIL_FROM. */
  sender: string;
  companyName: string;
  /** settings.reply_to, or null. */
  replyTo: string | null;
  /** The contact's unsubscribe URL (src/lib/unsubscribe-links.ts); null: no List-Unsubscribe. */
  unsubscribeUrl: string | null;
  /** The .ics of the item, when it has one. */
  calendar: string | null;
}

/** The whole email: the body `message` with its sender, headers and attachment. */
export function composeEmail(message: ReminderMessage, input: EnvelopeInput): OutgoingEmail {
  const name = displayName(input.companyName);
  const headers: Record<string, string> = {};
  if (input.unsubscribeUrl) {
    headers["List-Unsubscribe"] = `<${input.unsubscribeUrl}>`;
    headers["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click";
  }
  return {
    to: input.to,
    from: name ? { name, email: input.sender } : input.sender,
    ...(input.replyTo ? { replyTo: input.replyTo } : {}),
    subject: message.subject,
    text: message.text,
    html: message.html,
    headers,
    ...(input.calendar
      ? {
          attachments: [
            {
              disposition: "attachment" as const,
              filename: "event.ics",
              type: "text/calendar; charset=utf-8; method=PUBLISH",
              content: input.calendar,
            },
          ],
        }
      : {}),
  };
}
