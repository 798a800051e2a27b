// The reminder email: subject, plain-text and HTML bodies for one item, in the recipient's language
// (docs/languages.md), with the company's template for that language when it has one. Pure, no I/O.
//
// Every interpolated value is user data. In the subject and the text body, control characters
// (CR/LF included) are replaced by a space so a title cannot add header lines or fake paragraphs;
// in the HTML body every value is also escaped. Long values are cut (by code point) with "…".

import { escapeHtml } from "../lib/html";
import type { RecipientLinks } from "../lib/recipient-links";
import { type DateFormat, daysBetween } from "../lib/time";
import { isolated, localDate, relativeDays } from "../i18n/format";
import { type Speech, speechFor } from "../i18n/language";
import { type MessageKey, t } from "../i18n/messages";
import { fillTemplate, type TemplateValues } from "../i18n/template";

export type ReminderItemType = "exp" | "due" | "apt" | "evt";

/** A company's wording for one language (POST/PUT /v1/reminder-templates): null keeps the default. */
export interface ReminderTemplateTexts {
  subject: string | null;
  intro: string | null;
  footer: string | null;
}

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
  /** For the template's {contact.first_name} / {contact.last_name}. */
  recipientFirstName?: string | null;
  recipientLastName?: string | null;
  itemId: number;
  notes?: string | null;
  /** The recipient's links to its page for the item (src/lib/recipient-links.ts); none: the email has no links. */
  links?: RecipientLinks | null;
  /** The recipient's language (src/i18n/language.ts); default English. */
  speech?: Speech;
  /** The company's template for that language; none: the default wording. */
  template?: ReminderTemplateTexts | null;
}

export interface ReminderMessage {
  subject: string;
  text: string;
  html: string;
}

export const SUBJECT_MAX = 200;
export const NOTES_MAX = 500;
/** Longest intro or footer of a template, after its placeholders are filled. */
const TEMPLATE_TEXT_MAX = 2000;
const TITLE_IN_SUBJECT_MAX = 100;
export const TITLE_MAX = 300;
export const NAME_MAX = 100;
export const DOCUMENT_TYPE_MAX = 60;
export const TEXT_WIDTH = 78;

/** The email's links, in order: the page first, then each action the item's type offers. */
function linkRows(links: RecipientLinks, itemType: ReminderItemType, speech: Speech): Array<[string, string]> {
  const label = (key: MessageKey) => t(speech.language, key);
  return [
    [label("email.link.open"), links.page],
    [label("email.link.acknowledge"), links.acknowledge],
    [label("email.link.complete"), links.complete],
    ...(itemType === "exp" ? ([[label("email.link.renew"), links.renew]] as Array<[string, string]>) : []),
    [label("email.link.snooze"), links.snooze],
  ];
}

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

/** How far `date` is from `today`, in words of `locale` (src/i18n/format.ts): "tomorrow", "in 14 days", "3 days ago". */
export function relativeDay(today: string, date: string, locale = "en"): string {
  return relativeDays(today, date, locale);
}

/** Notes kept as lines: CRLF/CR become LF, tabs a space, other controls removed, blank runs squeezed. */
export function cleanNotes(notes: string | null | undefined, max = NOTES_MAX): string {
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
  return truncate(cleaned, max);
}

/**
 * Word-wraps one paragraph to `width` (long words stay whole). The first line starts with
 * `prefix`, continuation lines with `indent`.
 */
export function wrap(paragraph: string, width = TEXT_WIDTH, prefix = "", indent = ""): string {
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

/** What the email (and a digest's line for the item) says about one item, in the recipient's language. */
export interface ItemWording {
  title: string;
  /** The document type, else the item's kind. */
  label: string;
  date: string;
  /** "in 14 days", "tomorrow", ... */
  when: string;
  /** "expires in 14 days", "was due yesterday", ... */
  due: string;
  /** What the recipient should do. */
  todo: string;
  days: number;
  reference: string;
  /** The item's rows: [label, value]. */
  rows: Array<[string, string]>;
}

/** The wording of one item for `speech`: reusable by any message that lists items (one email, a digest). */
export function itemWording(
  input: Pick<
    ReminderMessageInput,
    "itemTitle" | "itemType" | "documentType" | "expiryDate" | "today" | "dateFormat" | "itemId" | "companyName"
  >,
  speech: Speech,
): ItemWording {
  const lang = speech.language;
  const title = truncate(singleLine(input.itemTitle) || t(lang, "untitled"), TITLE_MAX);
  const documentType = truncate(singleLine(input.documentType ?? ""), DOCUMENT_TYPE_MAX);
  const label = documentType || t(lang, `kind.${input.itemType}`);
  const company = truncate(singleLine(input.companyName), NAME_MAX);
  const date = isolated(localDate(input.expiryDate, input.dateFormat, speech.locale), speech.dir);
  const when = relativeDays(input.today, input.expiryDate, speech.locale);
  const days = daysBetween(input.today, input.expiryDate);
  const tense = days < 0 ? "past" : "ahead";
  const due = t(lang, `due.${input.itemType}.${tense}`, { when });
  const todo = t(lang, `email.todo.${input.itemType}.${tense}`);
  const reference = t(lang, "item.reference", { id: input.itemId });
  const rows: Array<[string, string]> = [
    [t(lang, "email.row.item"), title],
    [t(lang, "email.row.type"), label],
    [t(lang, "email.row.date"), t(lang, "email.date_when", { date, when })],
    [t(lang, "email.row.reference"), reference],
  ];
  if (company) rows.push([t(lang, "email.row.company"), company]);
  return { title, label, date, when, due, todo, days, reference, rows };
}

/** The values of a template's placeholders (src/i18n/template.ts) for one item and recipient, each on one line. */
export function templateValues(input: ReminderMessageInput, wording: ItemWording, speech: Speech): TemplateValues {
  const line = (value: string | null | undefined) => truncate(singleLine(value ?? ""), NAME_MAX);
  return {
    "item.title": wording.title,
    "item.date": wording.date,
    "item.when": wording.when,
    "item.type": t(speech.language, `kind.${input.itemType}`),
    "item.reference": wording.reference,
    days: String(wording.days),
    document_type: truncate(singleLine(input.documentType ?? ""), DOCUMENT_TYPE_MAX),
    "contact.first_name": line(input.recipientFirstName),
    "contact.last_name": line(input.recipientLastName),
    "contact.name": line(input.recipientName),
    "company.name": line(input.companyName),
  };
}

/** A template text filled in and cleaned like notes (lines kept, controls gone), or null to use the default. */
export function templateText(text: string | null | undefined, values: TemplateValues): string | null {
  if (!text) return null;
  const filled = fillTemplate(text, values);
  if (filled === null) return null;
  return cleanNotes(filled, TEMPLATE_TEXT_MAX) || null;
}

/** An HTML email's opening lines up to its body: doctype, `<html>` with the language and direction, the head. */
export function htmlEmailHead(speech: Speech, title: string): string[] {
  return [
    "<!doctype html>",
    `<html lang="${escapeHtml(speech.tag)}" dir="${speech.dir}">`,
    "<head>",
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    "</head>",
  ];
}

/** The reminder email for one item. */
export function reminderMessage(input: ReminderMessageInput): ReminderMessage {
  const speech = input.speech ?? speechFor(null);
  const lang = speech.language;
  const rtl = speech.dir === "rtl";
  const wording = itemWording(input, speech);
  const company = truncate(singleLine(input.companyName), NAME_MAX);
  const name = truncate(singleLine(input.recipientName ?? ""), NAME_MAX);
  const notes = cleanNotes(input.notes);
  const values = templateValues(input, wording, speech);
  const template = input.template ?? null;

  const subjectTitle = truncate(wording.title, TITLE_IN_SUBJECT_MAX);
  const defaultSubject = t(lang, "email.subject", {
    title: subjectTitle,
    label: wording.label,
    due: wording.due,
    date: wording.date,
  });
  const templateSubject = template?.subject ? fillTemplate(template.subject, values) : null;
  const subject = truncate(singleLine(templateSubject ?? "") || defaultSubject, SUBJECT_MAX);

  // The intro replaces the greeting and the headline; the footer the footer. The item's rows, what
  // to do, the links and the notes always stay.
  const intro = templateText(template?.intro, values);
  const footer =
    templateText(template?.footer, values) ??
    (company ? t(lang, "email.footer.company", { company }) : t(lang, "email.footer.service"));
  const greeting = name ? t(lang, "email.greeting.named", { name }) : t(lang, "email.greeting");
  const headlineItem = t(lang, "email.headline.item", { label: wording.label, title: wording.title });
  const headlineRest = { due: wording.due, date: wording.date };
  const headline = t(lang, "email.headline", { item: headlineItem, ...headlineRest });
  const whatToDo = t(lang, "email.what_to_do");
  const linksNote = t(lang, "email.links_note");

  const rows = wording.rows;
  const labelWidth = Math.max(...rows.map(([key]) => Array.from(key).length)) + 2;
  const links = input.links ? linkRows(input.links, input.itemType, speech) : [];
  const linkWidth = Math.max(0, ...links.map(([label]) => Array.from(label).length)) + 2;
  const pad = (value: string, width: number) => value + " ".repeat(Math.max(0, width - Array.from(value).length));
  const paragraphs = (text: string) => text.split("\n").map((line) => wrap(line));
  const text = [
    ...(intro ? paragraphs(intro) : [greeting, "", wrap(headline)]),
    "",
    ...rows.map(([key, value]) => wrap(value, TEXT_WIDTH, pad(`${key}:`, labelWidth), " ".repeat(labelWidth))),
    "",
    wrap(`${whatToDo} ${wording.todo}`),
    // URLs stay whole on their lines (a wrapped URL does not work).
    ...(links.length > 0
      ? [
          "",
          t(lang, "email.act_on_it"),
          ...links.map(([label, url]) => `  ${pad(`${label}:`, linkWidth)}${url}`),
          "",
          wrap(linksNote),
        ]
      : []),
    ...(notes ? ["", t(lang, "email.notes"), ...paragraphs(notes)] : []),
    "",
    ...paragraphs(footer),
    "",
  ].join("\n");

  const e = escapeHtml;
  // Mirrored for right-to-left languages: alignment, the cells' and buttons' outer spacing.
  const align = rtl ? "right" : "left";
  const cell = rtl
    ? "padding:4px 0 4px 16px;text-align:right;vertical-align:top;"
    : "padding:4px 16px 4px 0;text-align:left;vertical-align:top;";
  const buttonMargin = rtl ? "margin:0 0 8px 8px;" : "margin:0 8px 8px 0;";
  const htmlParagraphs = (text: string, style: string) =>
    text.split(/\n{2,}/).map((block) => `<p style="${style}">${block.split("\n").map(e).join("<br>")}</p>`);
  const html = [
    ...htmlEmailHead(speech, subject),
    `<body dir="${speech.dir}" ` +
      `style="margin:0;padding:24px;background:#f4f5f7;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;color:#1f2933;text-align:${align};">`,
    `<div dir="${speech.dir}" style="max-width:560px;margin:0 ` +
      "auto;padding:24px;background:#ffffff;border:1px solid " +
      `#dde1e6;border-radius:6px;text-align:${align};">`,
    ...(intro
      ? htmlParagraphs(intro, "margin:0 0 16px;")
      : [
          `<p style="margin:0 0 16px;">${e(greeting)}</p>`,
          // The headline with the item's label and title in bold, wherever the language puts them.
          `<p style="margin:0 0 16px;font-size:16px;">${e(t(lang, "email.headline", { item: "\u0000", ...headlineRest })).replace("\u0000", () => `<strong>${e(headlineItem)}</strong>`)}</p>`,
        ]),
    '<table role="presentation" style="border-collapse:collapse;margin:0 0 16px;">',
    ...rows.map(
      ([key, value]) =>
        `<tr><th scope="row" style="${cell}color:#52606d;font-weight:normal;">${e(key)}</th><td style="${cell}">${e(value)}</td></tr>`,
    ),
    "</table>",
    `<p style="margin:0 0 16px;"><strong>${e(whatToDo)}</strong> ${e(wording.todo)}</p>`,
    ...(links.length > 0
      ? [
          '<p style="margin:0 0 16px;">',
          ...links.map(([label, url], i) =>
            i === 0
              ? `<a href="${e(url)}" style="display:inline-block;${buttonMargin}padding:10px 16px;background:#1f5fbf;color:#ffffff;text-decoration:none;border-radius:4px;font-weight:bold;">${e(label)}</a>`
              : `<a href="${e(url)}" style="display:inline-block;${buttonMargin}padding:9px 14px;border:1px solid #1f5fbf;color:#1f5fbf;text-decoration:none;border-radius:4px;">${e(label)}</a>`,
          ),
          "</p>",
          `<p style="margin:0 0 16px;font-size:12px;color:#52606d;">${e(linksNote)}</p>`,
        ]
      : []),
    ...(notes
      ? [
          `<p style="margin:0 0 4px;"><strong>${e(t(lang, "email.notes"))}</strong></p>`,
          `<div style="margin:0 0 16px;padding:8px 12px;background:#f4f5f7;border-radius:4px;white-space:pre-wrap;">${e(notes)}</div>`,
        ]
      : []),
    ...htmlParagraphs(footer, "margin:16px 0 0;font-size:12px;color:#7b8794;"),
    "</div>",
    "</body>",
    "</html>",
    "",
  ].join("\n");

  return { subject, text, html };
}
