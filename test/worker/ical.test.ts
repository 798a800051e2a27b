// src/lib/ical.ts: TEXT escaping, folding at 75 octets without splitting a UTF-8 character, value formats.
import ICAL from "ical.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LINE_OCTETS, escapeText, foldLine, icalDate, icalText, icalTimestamp, icalUtc } from "../../src/lib/ical";

const octets = (text: string) => new TextEncoder().encode(text).length;
/** RFC 5545 §3.1 unfolding: a CRLF followed by one space or tab goes. */
const unfold = (text: string) => text.replace(/\r\n[ \t]/g, "");

describe("escapeText", () => {
  it("escapes backslash, semicolon and comma, and writes every line break as \\n", () => {
    expect(escapeText("a\\b;c,d")).toBe("a\\\\b\\;c\\,d");
    expect(escapeText("one\ntwo\r\nthree\rfour")).toBe("one\\ntwo\\nthree\\nfour");
    expect(escapeText('colon: "quotes" stay')).toBe('colon: "quotes" stay');
  });
});

describe("foldLine", () => {
  it("leaves a line of at most 75 octets alone", () => {
    const line = `SUMMARY:${"x".repeat(LINE_OCTETS - 8)}`;
    expect(foldLine(line)).toBe(line);
  });

  it("folds longer lines: 75 octets, then continuation lines of a space and at most 74 octets", () => {
    const line = `DESCRIPTION:${"abcdefghij".repeat(30)}`;
    const physical = foldLine(line).split("\r\n");
    expect(physical.length).toBeGreaterThan(1);
    expect(octets(physical[0]!)).toBe(75);
    for (const continuation of physical.slice(1)) {
      expect(continuation.startsWith(" ")).toBe(true);
      expect(octets(continuation)).toBeLessThanOrEqual(75);
    }
    expect(unfold(foldLine(line))).toBe(line);
  });

  it("never splits a multi-byte character (2, 3 and 4 octets) and every physical line is valid UTF-8", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 120 }), fc.integer({ min: 0, max: 6 }), (text, pad) => {
        const line = `SUMMARY:${"p".repeat(pad)}${text}`;
        const folded = foldLine(line);
        expect(unfold(folded)).toBe(line);
        for (const physical of folded.split("\r\n")) {
          expect(octets(physical)).toBeLessThanOrEqual(LINE_OCTETS);
          // A lone surrogate would mean a 4-octet character was cut in two.
          expect(physical.isWellFormed()).toBe(true);
        }
      }),
    );
    const emoji = `SUMMARY:${"🎉".repeat(40)}`;
    const physical = foldLine(emoji).split("\r\n");
    expect(octets(physical[0]!)).toBe(8 + 4 * 16 + 0); // 72: a fifth emoji (4 octets) would pass 75
    expect(physical.every((p) => p.isWellFormed())).toBe(true);
    expect(unfold(foldLine(`SUMMARY:${"é".repeat(60)}`))).toBe(`SUMMARY:${"é".repeat(60)}`);
  });
});

describe("icalText and value formats", () => {
  it("ends every line, the last too, in CRLF", () => {
    expect(icalText(["BEGIN:VCALENDAR", "END:VCALENDAR"])).toBe("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n");
  });

  it("formats DATE and UTC DATE-TIME values", () => {
    expect(icalDate("2027-01-31")).toBe("20270131");
    expect(icalUtc(Date.UTC(2027, 0, 31, 9, 5, 7, 123))).toBe("20270131T090507Z");
    expect(icalTimestamp("2026-11-20 09:30:00")).toBe("20261120T093000Z");
  });

  it("round-trips escaped, folded TEXT through ical.js exactly", () => {
    const texts = [
      'Comma, semicolon; backslash \\ and "quotes"',
      "Line one\nline two\n\nafter a blank line",
      "Ünïcödé ✓ 🎉👩‍👩‍👧 ".repeat(12),
    ];
    for (const text of texts) {
      const body = icalText([
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//test//EN",
        "BEGIN:VEVENT",
        "UID:u1",
        "DTSTAMP:20260101T000000Z",
        `SUMMARY:${escapeText(text)}`,
        "END:VEVENT",
        "END:VCALENDAR",
      ]);
      const event = new ICAL.Component(ICAL.parse(body)).getFirstSubcomponent("vevent")!;
      expect(event.getFirstPropertyValue("summary")).toBe(text);
    }
  });
});
