// The digest email (docs/languages.md, "Digests"): one contact's daily or weekly summary of the
// items they receive reminders for that are overdue or due within 30 days, grouped (overdue, the
// next 7 days, later), each with its date, how far away it is and its action links, in the
// recipient's language. Pure, no I/O: the engine (digests.ts) chooses the items, sorts them and sends.
//
// Values are user data, cleaned as in the reminder email (reminder-email.ts: one line, bounded) and
// also stripped of bidirectional embedding, override and isolate controls, so a title holding
// U+202E cannot turn the rest of its line around; in the HTML every value is escaped and each title
// is isolated (`dir="auto"`), in right-to-left text too (U+2068 … U+2069).

import { escapeHtml } from "../lib/html";
import type { RecipientLinks } from "../lib/recipient-links";
import type { DateFormat } from "../lib/time";
import type { Speech } from "../i18n/language";
import { type MessageKey, type MessageParams, t } from "../i18n/messages";
import {
  DOCUMENT_TYPE_MAX,
  htmlEmailHead,
  type ItemWording,
  itemWording,
  NAME_MAX,
  type ReminderItemType,
  type ReminderMessage,
  SUBJECT_MAX,
  TITLE_MAX,
  singleLine,
  TEXT_WIDTH,
  truncate,
  wrap,
} from "./reminder-email";

/** Entries listed; the rest are counted ("And 37 more items…"). */
export const DIGEST_MAX_ITEMS = 200;
/** Items due within this many days (today included) form the second group; the catalogue's texts say 7 and 30. */
const SOON_DAYS = 7;
/**
 * The digest's horizon. Items past it are there only because one of their reminders was folded into
 * the digest (docs/reminders.md, "Digests"): they get a group of their own.
 */
const WINDOW_DAYS = 30;

export interface DigestEntry {
  itemId: number;
  title: string;
  itemType: ReminderItemType;
  documentType: string | null;
  /** YYYY-MM-DD */
  expiryDate: string;
  /** The recipient's page and action links for this item (null: none). */
  links: RecipientLinks | null;
}

export interface DigestMessageInput {
  /** src/i18n/language.ts (language, locale, dir). */
  speech: Speech;
  kind: "daily" | "weekly";
  /** The digest's local date, YYYY-MM-DD (company zone). */
  today: string;
  /** The company's date format (src/lib/time.ts). */
  dateFormat: DateFormat;
  companyName: string;
  recipientFirstName: string | null;
  recipientLastName: string | null;
  /** Sorted by the engine: overdue first, then by date; may exceed DIGEST_MAX_ITEMS. */
  entries: DigestEntry[];
  /** How many items the digest holds when `entries` are only its first ones (default, and at least, entries.length). */
  total?: number;
  /** How many of `total` are overdue (default: counted in `entries`). */
  overdue?: number;
  /** The contact's preferences page (to change or stop the digest); null: none. */
  preferencesUrl: string | null;
}

type Group = "overdue" | "soon" | "later" | "beyond";
const GROUPS: readonly Group[] = ["overdue", "soon", "later", "beyond"];
/**
 * Each entry's links, with the reminder email's labels: its page, then the three actions every kind
 * offers. Renewing (expirations) is one click further, on the page: it asks for the new date anyway,
 * and 200 entries' fifth link would add some 20 KB to the HTML.
 */
const LINKS = [
  ["email.link.open", "page"],
  ["email.link.acknowledge", "acknowledge"],
  ["email.link.complete", "complete"],
  ["email.link.snooze", "snooze"],
] as const satisfies ReadonlyArray<readonly [MessageKey, keyof RecipientLinks]>;

interface Line {
  wording: ItemWording;
  links: Array<[string, string]>;
}

// Bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): in a value they
// only reorder what follows. The marks (U+200E, U+200F, U+061C) stay.
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/** A value on one line, without bidirectional controls, at most `max` code points. */
function clean(value: string | null | undefined, max: number): string {
  return truncate(singleLine((value ?? "").replace(BIDI_CONTROLS, "")), max);
}

const httpUrl = (url: string | null | undefined): string | null =>
  url && /^https?:\/\/[^\s]+$/i.test(url) ? url : null;

const groupOf = (days: number): Group =>
  days < 0 ? "overdue" : days <= SOON_DAYS ? "soon" : days <= WINDOW_DAYS ? "later" : "beyond";

/** The digest email of one contact for one period. */
export function digestMessage(input: DigestMessageInput): ReminderMessage {
  const { speech } = input;
  const lang = speech.language;
  const rtl = speech.dir === "rtl";
  const say = (key: MessageKey, params: MessageParams = {}) => t(lang, key, params, speech.locale);
  const company = clean(input.companyName, NAME_MAX);
  const firstName = clean(input.recipientFirstName, NAME_MAX);
  const name = firstName ? truncate(`${firstName} ${clean(input.recipientLastName, NAME_MAX)}`.trim(), NAME_MAX) : "";

  const shown = input.entries.slice(0, DIGEST_MAX_ITEMS);
  const linkLabels = LINKS.map(([key]) => say(key));
  const groups = new Map<Group, Line[]>(GROUPS.map((group) => [group, []]));
  for (const entry of shown) {
    const wording = itemWording(
      {
        itemTitle: clean(entry.title, TITLE_MAX),
        itemType: entry.itemType,
        documentType: clean(entry.documentType, DOCUMENT_TYPE_MAX),
        expiryDate: entry.expiryDate,
        today: input.today,
        dateFormat: input.dateFormat,
        itemId: entry.itemId,
        companyName: "",
      },
      speech,
    );
    const links: Array<[string, string]> = [];
    for (const [i, [, action]] of LINKS.entries()) {
      const url = httpUrl(entry.links?.[action]);
      if (url) links.push([linkLabels[i]!, url]);
    }
    groups.get(groupOf(wording.days))!.push({ wording, links });
  }
  const total = Math.max(input.total ?? 0, input.entries.length);
  const overdue = Math.min(
    total,
    input.overdue ?? input.entries.filter((entry) => entry.expiryDate < input.today).length,
  );
  const more = total - shown.length;
  const hasLinks = shown.length > 0 && [...groups.values()].some((lines) => lines.some((line) => line.links.length));
  const preferencesUrl = httpUrl(input.preferencesUrl);

  const count = overdue > 0 ? say("digest.count.overdue", { n: total, overdue }) : say("digest.count", { n: total });
  const subject = truncate(singleLine(say(`digest.subject.${input.kind}`, { company, count })), SUBJECT_MAX);
  const greeting = name ? say("email.greeting.named", { name }) : say("email.greeting");
  const intro = say(`digest.intro.${input.kind}`, { company });
  const moreLine = more > 0 ? say("digest.more", { n: more, max: DIGEST_MAX_ITEMS }) : "";
  const linksNote = say("email.links_note");
  const footer = say(`digest.footer.${input.kind}`, { company });
  const preferences = preferencesUrl ? say("digest.preferences") : say("digest.preferences.none", { company });
  const heading = (group: Group, lines: Line[]) =>
    say("digest.group.heading", { group: say(`digest.group.${group}`), n: lines.length });
  const filled = GROUPS.map((group) => [group, groups.get(group)!] as const).filter(([, lines]) => lines.length > 0);

  // ---- the text part: URLs whole on their own lines ----
  const isolate = (value: string) => (rtl ? `\u2068${value}\u2069` : value);
  const pad = (value: string, width: number) => value + " ".repeat(Math.max(0, width - Array.from(value).length));
  const textEntry = ({ wording, links }: Line) => {
    const width = Math.max(0, ...links.map(([label]) => Array.from(label).length)) + 2;
    const item = say("email.headline.item", { label: isolate(wording.label), title: isolate(wording.title) });
    return [
      "",
      wrap(item, TEXT_WIDTH, "* ", "  "),
      wrap(say("digest.entry.due", { due: wording.due, date: wording.date }), TEXT_WIDTH, "  ", "  "),
      ...links.map(([label, url]) => `    ${pad(`${label}:`, width)}${url}`),
    ];
  };
  const text = [
    greeting,
    "",
    wrap(intro),
    ...(shown.length === 0 ? ["", wrap(say("digest.empty"))] : []),
    ...filled.flatMap(([group, lines]) => {
      const title = heading(group, lines);
      return ["", "", title, "-".repeat(Array.from(title).length), ...lines.flatMap(textEntry)];
    }),
    ...(moreLine ? ["", wrap(moreLine)] : []),
    ...(hasLinks ? ["", wrap(linksNote)] : []),
    "",
    wrap(footer),
    wrap(preferences),
    ...(preferencesUrl ? [preferencesUrl] : []),
    "",
  ].join("\n");

  // ---- the HTML part: simple blocks, inline styles, mirrored for right-to-left ----
  const e = escapeHtml;
  /** `key`'s text escaped, with the `html` placeholders put in as given (already HTML). */
  const htmlSay = (key: MessageKey, params: MessageParams, html: Record<string, string>) => {
    const names = Object.keys(html);
    const marked = say(key, { ...params, ...Object.fromEntries(names.map((n, i) => [n, `\u0000${i}\u0000`])) });
    return e(marked).replace(/\u0000(\d+)\u0000/g, (_, i: string) => html[names[Number(i)]!]!);
  };
  const align = rtl ? "right" : "left";
  const htmlEntry = ({ wording, links }: Line, group: Group) =>
    [
      '<div style="padding:10px 0;border-top:1px solid #e4e7eb;">',
      `<div style="font-weight:bold;">${htmlSay(
        "email.headline.item",
        {},
        {
          label: `<span dir="auto">${e(wording.label)}</span>`,
          title: `<span dir="auto">${e(wording.title)}</span>`,
        },
      )}</div>`,
      `<div style="color:${group === "overdue" ? "#b42318" : "#52606d"};">${e(say("digest.entry.due", { due: wording.due, date: wording.date }))}</div>`,
      ...(links.length > 0
        ? [
            // Grey separators between the links; a phone wraps between links, never inside a label.
            `<div style="margin-top:4px;color:#9aa5b1;">${links
              .map(
                ([label, url]) => `<a href="${e(url)}" style="color:#1f5fbf;">${e(label).replace(/ /g, "\u00a0")}</a>`,
              )
              .join(" · ")}</div>`,
          ]
        : []),
      "</div>",
    ].join("");
  const small = "margin:16px 0 0;font-size:12px;color:#52606d;";
  const html = [
    ...htmlEmailHead(speech, subject),
    `<body dir="${speech.dir}" style="margin:0;padding:16px 8px;background:#f4f5f7;font-family:Arial,Helvetica,sans-serif;font-size:14px;line-height:1.5;color:#1f2933;text-align:${align};">`,
    `<div dir="${speech.dir}" style="max-width:600px;margin:0 auto;padding:20px 16px;background:#ffffff;border:1px solid #dde1e6;border-radius:6px;text-align:${align};">`,
    `<p style="margin:0 0 12px;">${name ? htmlSay("email.greeting.named", {}, { name: `<span dir="auto">${e(name)}</span>` }) : e(greeting)}</p>`,
    `<p style="margin:0 0 8px;">${e(intro)}</p>`,
    ...(shown.length === 0 ? [`<p style="margin:16px 0 0;">${e(say("digest.empty"))}</p>`] : []),
    ...filled.flatMap(([group, lines]) => [
      `<h2 style="margin:24px 0 4px;font-size:16px;color:${group === "overdue" ? "#b42318" : "#1f2933"};">${e(heading(group, lines))}</h2>`,
      ...lines.map((line) => htmlEntry(line, group)),
    ]),
    ...(moreLine ? [`<p style="margin:16px 0 0;font-weight:bold;">${e(moreLine)}</p>`] : []),
    ...(hasLinks ? [`<p style="${small}">${e(linksNote)}</p>`] : []),
    `<div style="margin:24px 0 0;padding:12px 0 0;border-top:1px solid #dde1e6;font-size:12px;color:#7b8794;">`,
    `<p style="margin:0 0 4px;">${e(footer)}</p>`,
    `<p style="margin:0;">${e(preferences)}${
      preferencesUrl
        ? ` <a href="${e(preferencesUrl)}" style="color:#1f5fbf;">${e(say("unsub.preferences_link"))}</a>`
        : ""
    }</p>`,
    "</div>",
    "</div>",
    "</body>",
    "</html>",
    "",
  ].join("\n");

  return { subject, text, html };
}
