// What every channel message says about one reminder (docs/channels.md, "The messages"): the input
// the builders share and the wording they all show, from the same catalogue, item wording and
// company template as the reminder email (src/company-clock/reminder-email.ts). Pure, no I/O.
//
// User text (title, document type, company, recipient, notes, template texts) is put on one line
// (notes and templates keep their lines), stripped of bidirectional embedding, override and
// isolate controls (so a title cannot reverse the rest of a message), and cut by code point.
// Each builder escapes it for its platform's markup and cuts it to the platform's limits.
import type { RecipientAction, RecipientLinks } from "../../lib/recipient-links";
import {
  cleanNotes,
  itemWording,
  type ReminderMessageInput,
  type ReminderTemplateTexts,
  SUBJECT_MAX,
  singleLine,
  templateText,
  templateValues,
  truncate,
} from "../../company-clock/reminder-email";
import type { Speech } from "../../i18n/language";
import { type MessageKey, t } from "../../i18n/messages";
import { fillTemplate } from "../../i18n/template";

/**
 * One reminder for one channel endpoint: the email's item fields (`ReminderMessageInput`: company,
 * item id, title, type, document type, date, the company's today and date format, the recipient's
 * first and last names for templates), and the rest, each required.
 */
export interface ChannelReminder
  extends Pick<
    ReminderMessageInput,
    | "companyName"
    | "itemId"
    | "itemTitle"
    | "itemType"
    | "documentType"
    | "expiryDate"
    | "today"
    | "dateFormat"
    | "recipientFirstName"
    | "recipientLastName"
  > {
  /** The endpoint's language (src/i18n/language.ts). */
  speech: Speech;
  /** Who it is for (the item's contact, the step's recipient); null: nobody named. */
  recipientName: string | null;
  notes: string | null;
  /** The recipient page and its action pages (GET shows a page, the page POSTs); null: no actions. */
  links: RecipientLinks | null;
  /** The company's template for the language; null: the default wording. */
  template: ReminderTemplateTexts | null;
}

export type ChannelType = "slack" | "teams" | "google_chat" | "discord" | "ntfy";
export const CHANNEL_TYPES: readonly ChannelType[] = ["slack", "teams", "google_chat", "discord", "ntfy"];

/** A request body for the platform, and the headers that go with it (the delivery adds its own auth). */
export interface ChannelPayload {
  headers: Record<string, string>;
  body: string;
}

export interface ChannelLink {
  /** "page" for the item's page, else the action. */
  action: "page" | RecipientAction;
  label: string;
  url: string;
}

/** The wording of one channel message, in the endpoint's language, before any platform's markup. */
export interface ChannelContent {
  speech: Speech;
  rtl: boolean;
  /** The template's subject, else 'Reminder: Expiration "Passport" expires in 3 days (14.03.2027)'. */
  title: string;
  /** The card's heading: 'Inspection certificate "Fire inspection"' (the item's label and title). */
  heading: string;
  /** The template's intro (lines kept), else the email's headline. */
  headline: string;
  /** [label, value]: item, type, date (format and relative), reference, company, and who it is for. */
  rows: Array<[string, string]>;
  whatToDo: string;
  todo: string;
  notesLabel: string;
  /** Lines kept; "" when none. */
  notes: string;
  /** The template's footer, else "This reminder was sent for {company}." */
  footer: string;
  /** "Act on it:" */
  actOnIt: string;
  /** The page first, then acknowledge, complete, renew (expirations only) and snooze; [] without links. */
  links: ChannelLink[];
  /** That anyone in the channel can use the links, and that each asks before it acts; "" without links. */
  linksNote: string;
  /** Days from today to the item's date (negative once it has passed). */
  days: number;
}

const NAME_MAX = 100;

// Embedding, override and isolate controls (LRE RLE PDF LRO RLO, LRI RLI FSI PDI).
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;

/** `value` without bidirectional embedding, override and isolate controls. */
export function withoutBidiControls(value: string): string {
  return value.replace(BIDI_CONTROLS, "");
}

/**
 * Longest user text looked at, in UTF-16 units: well above any limit a message shows (the email's
 * helpers cut titles to 300 code points, notes to 500), so a 10,000-character title costs no more
 * than a 4,000-character one. Never ends inside a surrogate pair.
 */
const READ_MAX = 4000;

const clean = (value: string | null | undefined) => {
  if (!value) return value;
  let head = value.length > READ_MAX ? value.slice(0, READ_MAX) : value;
  if (head !== value && /[\ud800-\udbff]$/.test(head)) head = head.slice(0, -1);
  return withoutBidiControls(head) + (head !== value ? "…" : "");
};

/** The wording every builder shows, from the catalogue and the company's template. */
export function channelContent(input: ChannelReminder): ChannelContent {
  const speech = input.speech;
  const lang = speech.language;
  const label = (key: MessageKey, params?: Record<string, string>) => t(lang, key, params);
  const cleaned = {
    ...input,
    companyName: clean(input.companyName) ?? "",
    itemTitle: clean(input.itemTitle) ?? "",
    documentType: clean(input.documentType) ?? null,
    recipientName: clean(input.recipientName) ?? null,
    recipientFirstName: clean(input.recipientFirstName) ?? null,
    recipientLastName: clean(input.recipientLastName) ?? null,
  };
  const wording = itemWording(cleaned, speech);
  const values = templateValues(cleaned, wording, speech);
  const template = input.template ?? null;
  const company = truncate(singleLine(cleaned.companyName), NAME_MAX);
  const name = truncate(singleLine(cleaned.recipientName ?? ""), NAME_MAX);

  const defaultTitle = label("email.subject", {
    title: wording.title,
    label: wording.label,
    due: wording.due,
    date: wording.date,
  });
  const templateTitle = template?.subject ? fillTemplate(clean(template.subject)!, values) : null;
  const title = truncate(singleLine(templateTitle ?? "") || defaultTitle, SUBJECT_MAX);
  const heading = label("email.headline.item", { label: wording.label, title: wording.title });
  const headline =
    templateText(clean(template?.intro), values) ??
    label("email.headline", { item: heading, due: wording.due, date: wording.date });
  const footer =
    templateText(clean(template?.footer), values) ??
    (company ? label("email.footer.company", { company }) : label("email.footer.service"));

  const rows = [...wording.rows];
  if (name) rows.push([label("channel.row.for"), name]);

  const links: ChannelLink[] = input.links
    ? [
        { action: "page", label: label("email.link.open"), url: input.links.page },
        { action: "acknowledge", label: label("email.link.acknowledge"), url: input.links.acknowledge },
        { action: "complete", label: label("email.link.complete"), url: input.links.complete },
        ...(input.itemType === "exp"
          ? [{ action: "renew" as const, label: label("email.link.renew"), url: input.links.renew }]
          : []),
        { action: "snooze", label: label("email.link.snooze"), url: input.links.snooze },
      ]
    : [];

  return {
    speech,
    rtl: speech.dir === "rtl",
    title,
    heading,
    headline,
    rows,
    whatToDo: label("email.what_to_do"),
    todo: wording.todo,
    notesLabel: label("email.notes"),
    notes: cleanNotes(clean(input.notes)),
    footer,
    actOnIt: label("email.act_on_it"),
    links,
    linksNote: links.length > 0 ? label("channel.links_note") : "",
    days: wording.days,
  };
}

// ---- cutting to a platform's limits ----

/**
 * `value` with each code point written by `write` (an escape, or itself), cut so that the result
 * is at most `max` UTF-16 code units (the strictest way any platform counts characters), ending in
 * "…" when it was cut. Never splits a surrogate pair or an escape.
 */
export function clip(value: string, max: number, write: (point: string) => string = (p) => p): string {
  let out = "";
  let fits = "";
  for (const point of value) {
    const piece = write(point);
    if (out.length + piece.length > max) return `${fits.trimEnd()}…`;
    out += piece;
    // The longest prefix that still leaves room for the ellipsis.
    if (out.length <= max - 1) fits = out;
  }
  return out;
}

/** `value` cut to at most `max` bytes of UTF-8, ending in "…" when it was cut; never splits a code point. */
export function clipBytes(value: string, max: number): string {
  // Nearly every body is far under the limit: count its bytes without encoding when it surely is.
  if (value.length * 3 <= max) return value;
  const bytes = UTF8.encode(value);
  if (bytes.length <= max) return value;
  let end = max - 3; // room for "…" (3 bytes)
  // Back up to the start of a character.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${new TextDecoder().decode(bytes.subarray(0, end)).trimEnd()}…`;
}

const UTF8 = new TextEncoder();

/** A payload whose body is JSON. */
export function jsonPayload(body: unknown): ChannelPayload {
  return { headers: { "content-type": "application/json; charset=utf-8" }, body: JSON.stringify(body) };
}

/** How near the date is: "overdue" (passed), "today", "soon" (1-3 days), "week" (4-7 days), "later". */
export type Nearness = "overdue" | "today" | "soon" | "week" | "later";

export function nearness(days: number): Nearness {
  if (days < 0) return "overdue";
  if (days === 0) return "today";
  if (days <= 3) return "soon";
  if (days <= 7) return "week";
  return "later";
}
