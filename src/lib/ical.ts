// iCalendar (RFC 5545) text, the pure part: TEXT escaping (§3.3.11), content lines folded at 75
// octets (§3.1) without splitting a UTF-8 character, CRLF line ends, and DATE / UTC DATE-TIME values.

/** A TEXT value: backslash, semicolon and comma escaped, every line break (CRLF, LF or CR) written `\n`. */
export function escapeText(value: string): string {
  return value.replace(/[\\;,]/g, "\\$&").replace(/\r\n|\r|\n/g, "\\n");
}

/** Octets per physical line, CRLF not counted (§3.1). */
export const LINE_OCTETS = 75;

const NON_ASCII = /[^\x00-\x7f]/;
const utf8Length = (codePoint: number) => (codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4);

/**
 * Folds a content line into physical lines of at most 75 octets joined by CRLF + space (the space
 * counts towards the continuation line's 75), breaking only between characters (code points), so
 * no UTF-8 sequence is ever split.
 */
export function foldLine(line: string): string {
  if (line.length <= LINE_OCTETS && !NON_ASCII.test(line)) return line;
  let folded = "";
  let octets = 0;
  let room = LINE_OCTETS;
  for (const char of line) {
    const size = utf8Length(char.codePointAt(0)!);
    if (octets + size > room) {
      folded += "\r\n ";
      octets = 0;
      room = LINE_OCTETS - 1;
    }
    folded += char;
    octets += size;
  }
  return folded;
}

/** An iCalendar object's text from its content lines (`NAME;PARAMS:value`): each folded, each (the last too) ending in CRLF. */
export const icalText = (lines: string[]) => `${lines.map(foldLine).join("\r\n")}\r\n`;

/** DATE value: `2027-01-31` → `20270131`. */
export const icalDate = (date: string) => date.replaceAll("-", "");

/** UTC DATE-TIME value of an instant (ms): `20270131T090000Z`. */
export const icalUtc = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replace(/\.\d{3}/, "")
    .replace(/[-:]/g, "");

/** UTC DATE-TIME value of a record timestamp `YYYY-MM-DD HH:MM:SS` (UTC): `20270131T090000Z`. */
export const icalTimestamp = (timestamp: string) => `${timestamp.replace(/[-:]/g, "").replace(" ", "T")}Z`;

/** The UID of an item's event: the same in the calendar feeds and in a reminder's .ics attachment. */
export const itemUid = (itemId: number, companyId: number) => `item-${itemId}-${companyId}@expiry-reminder`;
