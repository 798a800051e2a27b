// ntfy: a publish to the endpoint's topic URL (POST https://host/topic) with the message as the
// plain-text body and the rest as headers: Title, Priority (from how near the date is), Tags,
// Click (the item's page) and Actions (a JSON array of at most 3 view actions to the action pages).
//
// Why headers and not the JSON form: the JSON form must be posted to the server's root with the
// topic in the body, while an endpoint is saved as its topic URL (the form ntfy's apps and docs
// give). HTTP header values are ASCII, so a title with anything else (Arabic, "Für") is sent
// RFC 2047-encoded (=?UTF-8?B?…?=), which ntfy decodes since v2.4.0, and the Actions JSON has its
// other characters as \u escapes (plain ASCII for any ntfy). The body is cut to 4,096 bytes:
// above ntfy's default message-size-limit a body becomes an attachment instead of a message. Pure.
import { type ChannelContent, type ChannelPayload, clip, clipBytes, type Nearness, nearness } from "./reminder";

export const NTFY_LIMITS = {
  /** ntfy's default message-size-limit: a longer body is stored as an attachment. */
  bodyBytes: 4096,
  /** ntfy accepts at most 3 actions. */
  actions: 3,
  /** Our own bound for the title. */
  title: 250,
} as const;

/** Priority by how near the date is: 5 urgent (today or passed), 4 high (1-3 days), 3 default (4-7), 2 low. */
export const NTFY_PRIORITY: Record<Nearness, number> = { overdue: 5, today: 5, soon: 4, week: 3, later: 2 };
/** Tags ntfy shows as emoji (its emoji short codes), by how near the date is. */
const NTFY_TAG: Record<Nearness, string> = {
  overdue: "rotating_light",
  today: "rotating_light",
  soon: "warning",
  week: "hourglass_flowing_sand",
  later: "date",
};

/** The actions that fit ntfy's three: the page is the notification's Click. */
const ACTIONS = ["acknowledge", "complete", "snooze"];

const ENCODER = new TextEncoder();
const ENCODED_WORD_BYTES = 45; // 60 base64 characters: each encoded word stays within RFC 2047's 75.

/** `value` as an HTTP header value: itself when it is printable ASCII, else RFC 2047 B-encoded words. */
export function headerValue(value: string): string {
  if (/^[\x20-\x7e]*$/.test(value) && !value.includes("=?")) return value;
  const bytes = ENCODER.encode(value);
  const words: string[] = [];
  for (let start = 0; start < bytes.length; ) {
    let end = Math.min(start + ENCODED_WORD_BYTES, bytes.length);
    // Back up to the start of a character: never split one's UTF-8 bytes across two words.
    while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--;
    words.push(`=?UTF-8?B?${btoa(String.fromCharCode(...bytes.subarray(start, end)))}?=`);
    start = end;
  }
  // Whitespace between adjacent encoded words is not part of the text (RFC 2047 §6.2).
  return words.join(" ");
}

/**
 * `value` as JSON in printable ASCII: every other character as a \\u escape. ntfy decodes RFC 2047
 * in Title, Message and Tags since v2.4.0 but in Actions only later; escaped JSON needs neither.
 */
export function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

export function ntfyMessage(c: ChannelContent): ChannelPayload {
  const L = NTFY_LIMITS;
  const near = nearness(c.days);
  const lines = [
    c.headline,
    "",
    ...c.rows.map(([label, value]) => `${label}: ${value}`),
    "",
    `${c.whatToDo} ${c.todo}`,
    ...(c.linksNote ? ["", c.linksNote] : []),
    "",
    c.footer,
    // The notes last: when the body is too long, they are what is cut.
    ...(c.notes ? ["", c.notesLabel, c.notes] : []),
  ];
  const actions = c.links
    .filter((link) => ACTIONS.includes(link.action))
    .slice(0, L.actions)
    .map((link) => ({ action: "view", label: link.label, url: link.url, clear: true }));
  const page = c.links.find((link) => link.action === "page");
  const headers: Record<string, string> = {
    "content-type": "text/plain; charset=utf-8",
    title: headerValue(clip(c.title, L.title)),
    priority: String(NTFY_PRIORITY[near]),
    tags: NTFY_TAG[near],
  };
  if (page) headers.click = page.url;
  if (actions.length > 0) headers.actions = asciiJson(actions);
  return { headers, body: clipBytes(lines.join("\n"), L.bodyBytes) };
}
