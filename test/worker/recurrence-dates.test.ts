// Recurrence dates (src/lib/time.ts occurrence, occurrenceAfter; src/lib/recurrence.ts upcomingDates): the anchor day
// is kept over 10 years of occurrences, and the first occurrence after a date is found directly.
import { describe, expect, it } from "vitest";
import { renewalDate, upcomingDates, type RecurrenceRule } from "../../src/lib/recurrence";
import { daysBetween, instantToLocal, occurrence, occurrenceAfter, startOfDayAfter, todayIn } from "../../src/lib/time";

const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const rule = (r: Partial<RecurrenceRule> & Pick<RecurrenceRule, "every" | "unit" | "anchor">): RecurrenceRule => ({
  renewOn: "expired",
  until: null,
  count: null,
  ...r,
});
const lastDay = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]!;

describe("occurrences keep the anchor day", () => {
  it("Jan 31 monthly: the month's last day when shorter, the 31st again when it has one, for 10 years", () => {
    for (let k = 1; k <= 120; k++) {
      const y = 2027 + Math.floor(k / 12);
      const m = (k % 12) + 1;
      const d = Math.min(31, lastDay(y, m));
      expect(occurrence("2027-01-31", 1, "month", k), `k=${k}`).toBe(
        `${y}-${String(m).padStart(2, "0")}-${String(d).padStart(2, "0")}`,
      );
    }
    expect(upcomingDates(rule({ every: 1, unit: "month", anchor: "2027-01-31" }), "2027-01-31", 3)).toEqual([
      "2027-02-28",
      "2027-03-31",
      "2027-04-30",
    ]);
    expect(upcomingDates(rule({ every: 1, unit: "month", anchor: "2028-01-31" }), "2028-01-31", 2)).toEqual([
      "2028-02-29",
      "2028-03-31",
    ]);
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
    expect(upcomingDates(rule({ every: 2, unit: "week", anchor: "2026-11-23" }), "2026-11-23", 3)).toEqual([
      "2026-12-07",
      "2026-12-21",
      "2027-01-04",
    ]);
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
            expect(occurrenceAfter(anchor, every, unit, after), `${anchor} ${every} ${unit} after ${after}`).toEqual({
              date: occurrence(anchor, every, unit, k),
              k,
            });
          }
        }
      }
    }
  });
});

// ---- the rule (src/lib/recurrence.ts) and its instant (startOfDayAfter) ----

describe("the date a renewal reaches: a table of cases", () => {
  const cases: Array<[string, RecurrenceRule, string, string | undefined, string | null]> = [
    // name, rule, current date, today (renewal at expiry; undefined: on completion), expected
    [
      "Jan 31 monthly -> Feb 28 in a common year",
      rule({ every: 1, unit: "month", anchor: "2027-01-31" }),
      "2027-01-31",
      undefined,
      "2027-02-28",
    ],
    [
      "... then back to Mar 31 (the anchor day is kept)",
      rule({ every: 1, unit: "month", anchor: "2027-01-31" }),
      "2027-02-28",
      undefined,
      "2027-03-31",
    ],
    [
      "Jan 31 monthly -> Feb 29 in a leap year",
      rule({ every: 1, unit: "month", anchor: "2028-01-31" }),
      "2028-01-31",
      undefined,
      "2028-02-29",
    ],
    [
      "Feb 29 yearly -> Feb 28 in a common year",
      rule({ every: 1, unit: "year", anchor: "2028-02-29" }),
      "2028-02-29",
      undefined,
      "2029-02-28",
    ],
    [
      "Feb 29 yearly -> Feb 29 again in the next leap year",
      rule({ every: 1, unit: "year", anchor: "2028-02-29" }),
      "2031-02-28",
      undefined,
      "2032-02-29",
    ],
    [
      "Aug 31 every 6 months -> Feb 28, then Aug 31",
      rule({ every: 6, unit: "month", anchor: "2026-08-31" }),
      "2027-02-28",
      undefined,
      "2027-08-31",
    ],
    ["every 2 weeks", rule({ every: 2, unit: "week", anchor: "2026-12-28" }), "2026-12-28", undefined, "2027-01-11"],
    [
      "every day over a year end",
      rule({ every: 1, unit: "day", anchor: "2026-12-31" }),
      "2026-12-31",
      undefined,
      "2027-01-01",
    ],
    [
      "every 1000 days",
      rule({ every: 1000, unit: "day", anchor: "2026-11-24" }),
      "2026-11-24",
      undefined,
      "2029-08-20",
    ],
    [
      "every 1000 months",
      rule({ every: 1000, unit: "month", anchor: "2026-01-31" }),
      "2026-01-31",
      undefined,
      "2109-05-31",
    ],
    [
      "every 1000 years runs past 9999: the rule has ended",
      rule({ every: 1000, unit: "year", anchor: "9026-11-24" }),
      "9026-11-24",
      undefined,
      null,
    ],
    [
      "until on the occurrence (inclusive)",
      rule({ every: 1, unit: "month", anchor: "2027-01-15", until: "2027-02-15" }),
      "2027-01-15",
      undefined,
      "2027-02-15",
    ],
    [
      "until before the next occurrence: ended",
      rule({ every: 1, unit: "month", anchor: "2027-01-15", until: "2027-02-14" }),
      "2027-01-15",
      undefined,
      null,
    ],
    [
      "count 1 left: renews",
      rule({ every: 1, unit: "year", anchor: "2027-03-01", count: 1 }),
      "2027-03-01",
      undefined,
      "2028-03-01",
    ],
    [
      "count 0 left: ended",
      rule({ every: 1, unit: "year", anchor: "2027-03-01", count: 0 }),
      "2028-03-01",
      undefined,
      null,
    ],
    [
      "at expiry, on time: the next occurrence (today)",
      rule({ every: 1, unit: "day", anchor: "2026-11-23" }),
      "2026-11-23",
      "2026-11-24",
      "2026-11-24",
    ],
    [
      "at expiry, on time, monthly",
      rule({ every: 1, unit: "month", anchor: "2026-10-31" }),
      "2026-10-31",
      "2026-11-01",
      "2026-11-30",
    ],
    [
      "catch-up: years late, the first occurrence not yet expired",
      rule({ every: 1, unit: "month", anchor: "2019-03-31" }),
      "2019-03-31",
      "2026-11-24",
      "2026-11-30",
    ],
    [
      "catch-up lands on today when an occurrence falls on it",
      rule({ every: 1, unit: "month", anchor: "2019-03-24" }),
      "2019-03-24",
      "2026-11-24",
      "2026-11-24",
    ],
    [
      "catch-up past until: ended, the item stays as it is",
      rule({ every: 1, unit: "month", anchor: "2019-03-31", until: "2025-12-31" }),
      "2019-03-31",
      "2026-11-24",
      null,
    ],
    [
      "catch-up Feb 29 yearly from 2016",
      rule({ every: 1, unit: "year", anchor: "2016-02-29" }),
      "2016-02-29",
      "2026-11-24",
      "2027-02-28",
    ],
    [
      "on completion a late item still moves one period (no catch-up)",
      rule({ every: 1, unit: "month", anchor: "2026-01-15", renewOn: "completed" }),
      "2026-01-15",
      undefined,
      "2026-02-15",
    ],
  ];
  for (const [name, r, current, today, expected] of cases) {
    it(name, () => expect(renewalDate(r, current, today)).toBe(expected));
  }

  it("next dates stop at until and count", () => {
    expect(upcomingDates(rule({ every: 1, unit: "month", anchor: "2027-01-31" }), "2027-01-31")).toEqual([
      "2027-02-28",
      "2027-03-31",
      "2027-04-30",
    ]);
    expect(upcomingDates(rule({ every: 1, unit: "month", anchor: "2027-01-31", count: 2 }), "2027-01-31")).toEqual([
      "2027-02-28",
      "2027-03-31",
    ]);
    expect(
      upcomingDates(rule({ every: 1, unit: "month", anchor: "2027-01-31", until: "2027-03-30" }), "2027-01-31"),
    ).toEqual(["2027-02-28"]);
    expect(upcomingDates(rule({ every: 1, unit: "month", anchor: "2027-01-31", count: 0 }), "2027-01-31")).toEqual([]);
  });
});

describe("the instant of a renewal at expiry: the start of the day after the date, in the company's zone", () => {
  const at = (date: string, zone: string) => new Date(startOfDayAfter(date, zone)).toISOString();
  it("UTC, and zones far east and west of it", () => {
    expect(at("2027-03-31", "UTC")).toBe("2027-04-01T00:00:00.000Z");
    // Kiritimati is UTC+14: its day starts 14 hours before UTC's.
    expect(at("2027-03-31", "Pacific/Kiritimati")).toBe("2027-03-31T10:00:00.000Z");
    // Pago Pago is UTC-11: its day starts 11 hours after UTC's.
    expect(at("2027-03-31", "Pacific/Pago_Pago")).toBe("2027-04-01T11:00:00.000Z");
  });
  it("across DST: the offset of the new day, whichever the change", () => {
    // Europe/Berlin: 2027-03-28 02:00 -> 03:00; midnight exists on both sides.
    expect(at("2027-03-27", "Europe/Berlin")).toBe("2027-03-27T23:00:00.000Z");
    expect(at("2027-03-28", "Europe/Berlin")).toBe("2027-03-28T22:00:00.000Z");
    // America/New_York, back on 2027-11-07 02:00 -> 01:00.
    expect(at("2027-11-06", "America/New_York")).toBe("2027-11-07T04:00:00.000Z");
    expect(at("2027-11-07", "America/New_York")).toBe("2027-11-08T05:00:00.000Z");
  });
  it("where DST skips midnight, the day starts at the first minute that exists", () => {
    // America/Santiago moves 00:00 -> 01:00 on the first Sunday of September (2027-09-05).
    expect(at("2027-09-04", "America/Santiago")).toBe("2027-09-05T04:00:00.000Z");
    expect(instantToLocal(startOfDayAfter("2027-09-04", "America/Santiago"), "America/Santiago")).toEqual({
      date: "2027-09-05",
      hour: "01:00",
    });
  });
  it("the day Kiritimati skipped (1994-12-31): the renewal of Dec 30 is at the start of Jan 1", () => {
    expect(instantToLocal(startOfDayAfter("1994-12-30", "Pacific/Kiritimati"), "Pacific/Kiritimati")).toEqual({
      date: "1995-01-01",
      hour: "00:00",
    });
  });
  it("a company's time-zone change moves the instant, not the date reached", () => {
    const r = rule({ every: 1, unit: "month", anchor: "2027-05-31" });
    expect(startOfDayAfter("2027-05-31", "Asia/Tokyo")).toBe(Date.parse("2027-05-31T15:00:00Z"));
    expect(startOfDayAfter("2027-05-31", "America/Los_Angeles")).toBe(Date.parse("2027-06-01T07:00:00Z"));
    expect(renewalDate(r, "2027-05-31", todayIn("Asia/Tokyo", new Date("2027-05-31T15:00:00Z")))).toBe("2027-06-30");
    expect(renewalDate(r, "2027-05-31", todayIn("America/Los_Angeles", new Date("2027-06-01T07:00:00Z")))).toBe(
      "2027-06-30",
    );
  });
});
