// Recurrence dates (src/lib/time.ts occurrence, occurrenceAfter, nextOccurrences): the anchor day
// is kept over 10 years of occurrences, and the first occurrence after a date is found directly.
import { describe, expect, it } from "vitest";
import { daysBetween, nextOccurrences, occurrence, occurrenceAfter } from "../../src/lib/time";

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const lastDay = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;

describe("occurrences keep the anchor day", () => {
  it("Jan 31 monthly: the month's last day when shorter, the 31st again when it has one, for 10 years", () => {
    for (let k = 1; k <= 120; k++) {
      const y = 2027 + Math.floor(k / 12);
      const m = (k % 12) + 1;
      const d = Math.min(31, lastDay(y, m));
      expect(occurrence("2027-01-31", 1, "month", k), `k=${k}`).toBe(`${y}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`);
    }
    expect(nextOccurrences("2027-01-31", 1, "month", "2027-01-31", 3)).toEqual(["2027-02-28", "2027-03-31", "2027-04-30"]);
    expect(nextOccurrences("2028-01-31", 1, "month", "2028-01-31", 2)).toEqual(["2028-02-29", "2028-03-31"]);
  });

  it("Feb 29 yearly: Feb 28 in common years, Feb 29 in leap years, including 2100 (not leap) and 2400", () => {
    for (let k = 1; k <= 10; k++) {
      const y = 2028 + k;
      expect(occurrence("2028-02-29", 1, "year", k)).toBe(`${y}-02-${isLeap(y) ? 29 : 28}`);
    }
    expect(occurrence("2096-02-29", 1, "year", 4)).toBe("2100-02-28");
    expect(occurrence("2396-02-29", 4, "year", 1)).toBe("2400-02-29");
  });

  it("weeks, days and every=1000", () => {
    expect(nextOccurrences("2026-11-23", 2, "week", "2026-11-23", 3)).toEqual(["2026-12-07", "2026-12-21", "2027-01-04"]);
    expect(occurrence("2026-11-23", 1000, "day", 1)).toBe("2029-08-19");
    expect(occurrence("2026-11-23", 1000, "year", 1)).toBe("3026-11-23");
    expect(daysBetween("2026-11-23", occurrence("2026-11-23", 1000, "week", 1))).toBe(7000);
  });
});

describe("the first occurrence after a date", () => {
  it("jumps over missed periods at once (catch-up), strictly after the date", () => {
    expect(occurrenceAfter("2015-03-31", 1, "month", "2026-11-23")).toEqual({ date: "2026-11-30", k: 140 });
    expect(occurrenceAfter("2015-03-31", 1, "month", "2026-11-30")).toEqual({ date: "2026-12-31", k: 141 });
    expect(occurrenceAfter("2020-02-29", 1, "year", "2026-11-23")).toEqual({ date: "2027-02-28", k: 7 });
    expect(occurrenceAfter("2026-11-23", 3, "year", "2020-01-01")).toEqual({ date: "2029-11-23", k: 1 });
  });

  it("agrees with counting one occurrence at a time, for every unit and many anchors", () => {
    const anchors = ["2024-01-31", "2024-02-29", "2023-12-31", "2025-06-15"];
    const units = ["day", "week", "month", "year"] as const;
    for (const anchor of anchors) {
      for (const unit of units) {
        for (const every of [1, 2, 3, 7]) {
          for (const after of ["2024-03-01", "2026-11-23", "2031-02-28"]) {
            let k = 1;
            while (occurrence(anchor, every, unit, k) <= after) k++;
            expect(occurrenceAfter(anchor, every, unit, after), `${anchor} ${every} ${unit} after ${after}`).toEqual({ date: occurrence(anchor, every, unit, k), k });
          }
        }
      }
    }
  });
});
