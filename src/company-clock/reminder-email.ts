// The reminder email: subject, plain-text and HTML bodies for one item. Pure, no I/O.
//
// Every interpolated value is user data. In the subject and the text body, control characters
// (CR/LF included) are replaced by a space so a title cannot add header lines or fake paragraphs;
// in the HTML body every value is also escaped. Long values are cut (by code point) with "…".

import { escapeHtml } from "../lib/html";
import type { RecipientLinks } from "../lib/recipient-links";
import { type DateFormat, daysBetween, formatDate } from "../lib/time";

export type ReminderItemType = "exp" | "due" | "apt" | "evt";

export interface ReminderMessageInput {
  companyName: string;
  itemTitle: string;
  /** exp: expiration, due: due date, apt: appointment, evt: event. */
  itemType: ReminderItemType;
  /** e.g. "Passport"; null or "" when the item has none. */
  documentType: string | null;
  /** The item's date, YYYY-MM-DD. */
  expiryDate: string;
  /** Today in the company's time zone at sending time, YYYY-MM-DD. */
  today: string;
  /** The company's settings.date_format. */
  dateFormat: DateFormat;
  recipientName: string | null;
  itemId: number;
  notes?: string | null;
  /** The recipient's links to its page for the item (src/lib/recipient-links.ts); none: the email has no links. */
  links?: RecipientLinks | null;
}

export interface ReminderMessage {
  subject: string;
  text: string;
  html: string;
}

export const SUBJECT_MAX = 200;
export const NOTES_MAX = 500;
const TITLE_IN_SUBJECT_MAX = 100;
const TITLE_MAX = 300;
const NAME_MAX = 100;
const DOCUMENT_TYPE_MAX = 60;
const TEXT_WIDTH = 78;

const KIND_LABEL: Record<ReminderItemType, string> = {
  exp: "Expiration",
  due: "Due date",
  apt: "Appointment",
  evt: "Event",
};

/** Verb before the relative time: [upcoming or today, passed]. */
const VERB: Record<ReminderItemType, [string, string]> = {
  exp: ["expires", "expired"],
  due: ["is due", "was due"],
  apt: ["is", "was"],
  evt: ["is", "was"],
};

/** What the recipient should do: [upcoming or today, passed]. */
const ACTION: Record<ReminderItemType, [string, string]> = {
  exp: ["Renew it before it expires.", "It has expired: renew it or mark it completed."],
  due: ["Complete it before it is due.", "It is overdue: complete it as soon as possible and mark it completed."],
  apt: ["Make sure you are ready for it.", "It has passed: mark it completed if it is done."],
  evt: ["Make sure you are ready for it.", "It has passed: mark it completed if it is done."],
};

/** The email's links, in order: the page first, then each action the item's type offers. */
function linkRows(links: RecipientLinks, itemType: ReminderItemType): Array<[string, string]> {
  return [
    ["Open the item", links.page],
    ["I'm on it", links.acknowledge],
    ["Mark it completed", links.complete],
    ...(itemType === "exp" ? ([["Renew it", links.renew]] as Array<[string, string]>) : []),
    ["Snooze reminders", links.snooze],
  ];
}

const LINKS_NOTE = "These links are yours: they act without signing in, so do not forward this email.";

// A run of C0/C1 controls, DEL or Unicode line/paragraph separators, with the spaces around it.
const CONTROL_RUNS = /\s*[\u0000-\u001f\u007f-\u009f\u2028\u2029][\s\u0000-\u001f\u007f-\u009f\u2028\u2029]*/g;

/** `value` on one line: every run of control characters (and the spaces around it) becomes one space. */
export function singleLine(value: string): string {
  return value.replace(CONTROL_RUNS, " ").trim();
}

/** `value` cut to `max` code points, the last one being "…" when it was longer. */
export function truncate(value: string, max: number): string {
  const points = Array.from(value);
  if (points.length <= max) return value;
  return `${points
    .slice(0, Math.max(0, max - 1))
    .join("")
    .trimEnd()}…`;
}

/**
 * How far `date` is from `today`, in words: "today", "tomorrow", "in 14 days", "yesterday",
 * "3 days ago"; beyond 60 days roughly, "in about 3 months" / "about 3 months ago", and from
 * 24 months on "in about 2 years".
 */
export function relativeDay(today: string, date: string): string {
  const days = daysBetween(today, date);
  if (days === 0) return "today";
  if (days === 1) return "tomorrow";
  if (days === -1) return "yesterday";
  const n = Math.abs(days);
  let amount: string;
  if (n <= 60) {
    amount = `${n} days`;
  } else {
    const months = Math.round(n / 30.4375);
    if (months < 24) amount = `about ${months} months`;
    else amount = `about ${Math.round(n / 365.25)} years`;
  }
  return days > 0 ? `in ${amount}` : `${amount} ago`;
}

/** Notes kept as lines: CRLF/CR become LF, tabs a space, other controls removed, blank runs squeezed. */
function cleanNotes(notes: string | null | undefined): string {
  if (!notes) return "";
  const cleaned = notes
    .replace(/\r\n?|[\u2028\u2029]/g, "\n")
    .replace(/\t/g, " ")
    .replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, "")
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return truncate(cleaned, NOTES_MAX);
}

/**
 * Word-wraps one paragraph to `width` (long words stay whole). The first line starts with
 * `prefix`, continuation lines with `indent`.
 */
function wrap(paragraph: string, width = TEXT_WIDTH, prefix = "", indent = ""): string {
  const lines: string[] = [];
  let line = prefix;
  let empty = true;
  for (const word of paragraph.split(" ")) {
    if (word === "") continue;
    const candidate = empty ? line + word : `${line} ${word}`;
    if (!empty && Array.from(candidate).length > width) {
      lines.push(line);
      line = indent + word;
    } else {
      line = candidate;
    }
    empty = false;
  }
  lines.push(line.trimEnd());
  return lines.join("\n");
}

/** The reminder email for one item. */
export function reminderMessage(input: ReminderMessageInput): ReminderMessage {
  const title = singleLine(input.itemTitle) || "(untitled)";
  const documentType = truncate(singleLine(input.documentType ?? ""), DOCUMENT_TYPE_MAX);
  const label = documentType || KIND_LABEL[input.itemType];
  const company = truncate(singleLine(input.companyName), NAME_MAX);
  const name = truncate(singleLine(input.recipientName ?? ""), NAME_MAX);
  const notes = cleanNotes(input.notes);
  const reference = `Item #${input.itemId}`;

  const date = formatDate(input.expiryDate, input.dateFormat);
  const relative = relativeDay(input.today, input.expiryDate);
  const passed = daysBetween(input.today, input.expiryDate) < 0 ? 1 : 0;
  const verb = VERB[input.itemType][passed];
  const action = ACTION[input.itemType][passed];

  const subjectTitle = truncate(title, TITLE_IN_SUBJECT_MAX);
  const bodyTitle = truncate(title, TITLE_MAX);
  const subject = truncate(`Reminder: ${label} "${subjectTitle}" ${verb} ${relative} (${date})`, SUBJECT_MAX);
  const headline = `${label} "${bodyTitle}" ${verb} ${relative} (${date}).`;
  const greeting = name ? `Hello ${name},` : "Hello,";
  const footer = company
    ? `This reminder was sent for ${company}.`
    : "This reminder was sent by your reminder service.";

  const rows: [string, string][] = [
    ["Item", bodyTitle],
    ["Type", label],
    ["Date", `${date} (${relative})`],
    ["Reference", reference],
  ];
  if (company) rows.push(["Company", company]);

  const labelWidth = Math.max(...rows.map(([key]) => key.length)) + 2;
  const links = input.links ? linkRows(input.links, input.itemType) : [];
  const linkWidth = Math.max(0, ...links.map(([label]) => label.length)) + 2;
  const text = [
    greeting,
    "",
    wrap(headline),
    "",
    ...rows.map(([key, value]) => wrap(value, TEXT_WIDTH, `${key}:`.padEnd(labelWidth), " ".repeat(labelWidth))),
    "",
    wrap(`What to do: ${action}`),
    // URLs stay whole on their lines (a wrapped URL does not work).
    ...(links.length > 0
      ? [
          "",
          "Act on it:",
          ...links.map(([label, url]) => `  ${`${label}:`.padEnd(linkWidth)}${url}`),
          "",
          wrap(LINKS_NOTE),
        ]
      : []),
    ...(notes ? ["", "Notes:", ...notes.split("\n").map((line) => wrap(line))] : []),
    "",
    wrap(footer),
    "",
  ].join("\n");

  const e = escapeHtml;
  const cell = "padding:4px 16px 4px 0;text-align:left;vertical-align:top;";
  const html = [
    "<!doctype html>",
    '<html lang="en">',
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${e(subject)}</title>`,
    "</head>",
    "<body " +
      'style="margin:0;padding:24px;background:#f4f5f7;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;color:#1f2933;">',
    '<div style="max-width:560px;margin:0 ' +
      "auto;padding:24px;background:#ffffff;border:1px solid " +
      '#dde1e6;border-radius:6px;">',
    `<p style="margin:0 0 16px;">${e(greeting)}</p>`,
    `<p style="margin:0 0 16px;font-size:16px;"><strong>${e(`${label} "${bodyTitle}"`)}</strong> ${e(`${verb} ${relative} (${date}).`)}</p>`,
    '<table role="presentation" style="border-collapse:collapse;margin:0 0 16px;">',
    ...rows.map(
      ([key, value]) =>
        `<tr><th scope="row" style="${cell}color:#52606d;font-weight:normal;">${e(key)}</th><td style="${cell}">${e(value)}</td></tr>`,
    ),
    "</table>",
    `<p style="margin:0 0 16px;"><strong>What to do:</strong> ${e(action)}</p>`,
    ...(links.length > 0
      ? [
          '<p style="margin:0 0 16px;">',
          ...links.map(([label, url], i) =>
            i === 0
              ? `<a href="${e(url)}" style="display:inline-block;margin:0 8px 8px 0;padding:10px 16px;background:#1f5fbf;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:bold;">${e(label)}</a>`
              : `<a href="${e(url)}" style="display:inline-block;margin:0 8px 8px 0;padding:9px 14px;border:1px solid #1f5fbf;color:#1f5fbf;text-decoration:none;border-radius:4px;">${e(label)}</a>`,
          ),
          "</p>",
          `<p style="margin:0 0 16px;font-size:12px;color:#52606d;">${e(LINKS_NOTE)}</p>`,
        ]
      : []),
    ...(notes
      ? [
          '<p style="margin:0 0 4px;"><strong>Notes:</strong></p>',
          `<div style="margin:0 0 16px;padding:8px 12px;background:#f4f5f7;border-radius:4px;white-space:pre-wrap;">${e(notes)}</div>`,
        ]
      : []),
    `<p style="margin:16px 0 0;font-size:12px;color:#7b8794;">${e(footer)}</p>`,
    "</div>",
    "</body>",
    "</html>",
    "",
  ].join("\n");

  return { subject, text, html };
}
