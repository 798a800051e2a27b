import { describe, expect, it } from "vitest";
import {
  DATE_FORMATS,
  canonicalTimeZone,
  dateFormatOr,
  formatDate,
  isoWeek,
  lastDailyRun,
  localToInstant,
  nextDailyRun,
  weekdayOf,
} from "../../src/lib/time";

describe("canonicalTimeZone", () => {
  it("accepts IANA zones, in the runtime's spelling when it lists them, and aliases as sent", () => {
    expect(canonicalTimeZone("UTC")).toBe("UTC");
    expect(canonicalTimeZone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(canonicalTimeZone("america/new_york")).toBe("America/New_York");
    expect(canonicalTimeZone("Asia/Kolkata")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("Asia/Kathmandu")).toBeTruthy();
  });

  it("refuses names the time zone data does not know", () => {
    for (const name of ["", "Mars/Olympus", "Europe/Berlinx", "+02:00", "-05:00", "x".repeat(200)])
      expect(canonicalTimeZone(name), name).toBeNull();
  });
});

describe("formatDate", () => {
  it("formats a date in every documented format", () => {
    const out = Object.fromEntries(DATE_FORMATS.map((f) => [f, formatDate("2026-03-07", f)]));
    expect(out).toEqual({
      "YYYY-MM-DD": "2026-03-07",
      "DD.MM.YYYY": "07.03.2026",
      "DD/MM/YYYY": "07/03/2026",
      "MM/DD/YYYY": "03/07/2026",
      "DD-MM-YYYY": "07-03-2026",
      "YYYY/MM/DD": "2026/03/07",
      "D MMM YYYY": "7 Mar 2026",
      "MMM D, YYYY": "Mar 7, 2026",
    });
  });
});

describe("dateFormatOr", () => {
  it("keeps a listed format and falls back to YYYY-MM-DD for anything else", () => {
    for (const f of DATE_FORMATS) expect(dateFormatOr(f)).toBe(f);
    for (const v of [null, undefined, "", "dd.mm.yyyy", 7, "YYYY-MM-DD "])
      expect(dateFormatOr(v), String(v)).toBe("YYYY-MM-DD");
  });
});

describe("calendar arithmetic", () => {
  it("knows real dates", async () => {
    const { isCalendarDate } = await import("../../src/lib/time");
    for (const ok of ["2026-02-28", "2024-02-29", "2026-12-31", "2000-02-29"])
      expect(isCalendarDate(ok), ok).toBe(true);
    for (const bad of [
      "2026-02-30",
      "2025-02-29",
      "1900-02-29",
      "2026-13-01",
      "2026-00-10",
      "2026-1-01",
      "26-01-01",
      "2026-01-01x",
      "1899-12-31",
    ]) {
      expect(isCalendarDate(bad), bad).toBe(false);
    }
  });

  it("adds days, months (clamped to month end) and years (Feb 29 -> Feb 28)", async () => {
    const { addDays, addMonths, addYears } = await import("../../src/lib/time");
    expect(addDays("2026-12-31", 1)).toBe("2027-01-01");
    expect(addDays("2026-03-01", -1)).toBe("2026-02-28");
    expect(addMonths("2026-01-31", 1)).toBe("2026-02-28");
    expect(addMonths("2024-01-31", 1)).toBe("2024-02-29");
    expect(addMonths("2026-03-31", -1)).toBe("2026-02-28");
    expect(addMonths("2026-11-15", 2)).toBe("2027-01-15");
    expect(addYears("2024-02-29", 1)).toBe("2025-02-28");
    expect(addYears("2024-02-29", 4)).toBe("2028-02-29");
  });

  it("gives today's date in a time zone", async () => {
    const { todayIn } = await import("../../src/lib/time");
    const instant = new Date("2026-11-21T23:30:00Z");
    expect(todayIn("UTC", instant)).toBe("2026-11-21");
    expect(todayIn("Europe/Berlin", instant)).toBe("2026-11-22");
    expect(todayIn("America/New_York", instant)).toBe("2026-11-21");
    expect(todayIn("Asia/Kathmandu", new Date("2026-11-21T18:14:00Z"))).toBe("2026-11-21");
    expect(todayIn("Asia/Kathmandu", new Date("2026-11-21T18:15:00Z"))).toBe("2026-11-22");
  });
});

describe("item list periods", () => {
  it("turns each period into its date range for the company's today", async () => {
    const { periodRange, isPeriod, PERIODS } = await import("../../src/lib/period");
    const today = "2026-02-20";
    expect(periodRange("expired", today)).toEqual({ to: "2026-02-19", pendingOnly: true });
    expect(periodRange("today", today)).toEqual({ from: today, to: today });
    expect(periodRange("next_7_days", today)).toEqual({ from: today, to: "2026-02-27" });
    expect(periodRange("next_30_days", today)).toEqual({ from: today, to: "2026-03-22" });
    expect(periodRange("this_month", today)).toEqual({ from: "2026-02-01", to: "2026-02-28" });
    expect(periodRange("next_month", "2026-12-05")).toEqual({ from: "2027-01-01", to: "2027-01-31" });
    expect(periodRange("this_year", today)).toEqual({ from: "2026-01-01", to: "2026-12-31" });
    expect(periodRange("2026-01-01..2026-01-31", today)).toEqual({ from: "2026-01-01", to: "2026-01-31" });
    for (const p of PERIODS) expect(isPeriod(p)).toBe(true);
    for (const bad of ["yesterday", "2026-02-30..2026-03-01", "2026-03-01..2026-02-01", "2026-01-01..", "next_8_days"])
      expect(isPeriod(bad), bad).toBe(false);
  });
});

describe("local date and hour to a UTC instant", () => {
  it("converts ordinary times in zones east and west of UTC, and in half-hour zones", async () => {
    const { localToInstant } = await import("../../src/lib/time");
    const at = (date: string, hour: string, zone: string) => new Date(localToInstant(date, hour, zone)).toISOString();
    expect(at("2026-07-01", "09:00", "UTC")).toBe("2026-07-01T09:00:00.000Z");
    expect(at("2026-07-01", "09:00", "Europe/Berlin")).toBe("2026-07-01T07:00:00.000Z");
    expect(at("2026-01-15", "09:00", "Europe/Berlin")).toBe("2026-01-15T08:00:00.000Z");
    expect(at("2026-01-15", "09:00", "America/New_York")).toBe("2026-01-15T14:00:00.000Z");
    expect(at("2026-07-01", "09:00", "America/New_York")).toBe("2026-07-01T13:00:00.000Z");
    expect(at("2026-01-15", "09:00", "Asia/Kolkata")).toBe("2026-01-15T03:30:00.000Z");
    expect(at("2026-01-15", "00:00", "Asia/Kathmandu")).toBe("2026-01-14T18:15:00.000Z");
    expect(at("2026-01-15", "23:59", "Pacific/Kiritimati")).toBe("2026-01-15T09:59:00.000Z");
  });

  it("answers for UTC, without Intl, what Intl answers for the same zone (Etc/UTC), whatever the instant", async () => {
    const { instantToLocal, localToInstant, zoneOffset } = await import("../../src/lib/time");
    const instants = [
      Date.UTC(1900, 0, 1),
      -1,
      -1_500,
      0,
      999,
      Date.UTC(2026, 2, 29, 1, 30, 15, 750),
      Date.UTC(2038, 0, 19, 3, 14, 8),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    for (const instant of instants) {
      expect(instantToLocal(instant, "UTC"), String(instant)).toEqual(instantToLocal(instant, "Etc/UTC"));
      expect(zoneOffset("UTC", instant), String(instant)).toBe(zoneOffset("Etc/UTC", instant));
    }
    for (const [date, hour] of [
      ["1900-01-01", "00:00"],
      ["2026-03-29", "02:30"],
      ["2026-10-25", "02:30"],
      ["9999-12-31", "23:59"],
    ] as const) {
      expect(localToInstant(date, hour, "UTC"), `${date} ${hour}`).toBe(localToInstant(date, hour, "Etc/UTC"));
    }
  });

  it("moves a time in the spring-forward gap forward by the gap (02:30 fires at 03:30 local)", async () => {
    const { localToInstant, instantToLocal } = await import("../../src/lib/time");
    // Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST.
    const berlin = localToInstant("2026-03-29", "02:30", "Europe/Berlin");
    expect(new Date(berlin).toISOString()).toBe("2026-03-29T01:30:00.000Z");
    expect(instantToLocal(berlin, "Europe/Berlin")).toEqual({ date: "2026-03-29", hour: "03:30" });
    // America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT.
    const ny = localToInstant("2026-03-08", "02:30", "America/New_York");
    expect(new Date(ny).toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(instantToLocal(ny, "America/New_York")).toEqual({ date: "2026-03-08", hour: "03:30" });
    // Around the gap, times are exact.
    expect(new Date(localToInstant("2026-03-29", "01:59", "Europe/Berlin")).toISOString()).toBe(
      "2026-03-29T00:59:00.000Z",
    );
    expect(new Date(localToInstant("2026-03-29", "03:00", "Europe/Berlin")).toISOString()).toBe(
      "2026-03-29T01:00:00.000Z",
    );
  });

  it("takes the first of the two instants of a time in the fall-back overlap (01:30 fires once, at the first)", async () => {
    const { localToInstant } = await import("../../src/lib/time");
    // America/New_York: 2026-11-01 02:00 EDT -> 01:00 EST; 01:30 happens at 05:30Z and 06:30Z.
    expect(new Date(localToInstant("2026-11-01", "01:30", "America/New_York")).toISOString()).toBe(
      "2026-11-01T05:30:00.000Z",
    );
    // Europe/Berlin: 2026-10-25 03:00 CEST -> 02:00 CET; 02:30 happens at 00:30Z and 01:30Z.
    expect(new Date(localToInstant("2026-10-25", "02:30", "Europe/Berlin")).toISOString()).toBe(
      "2026-10-25T00:30:00.000Z",
    );
    expect(new Date(localToInstant("2026-10-25", "03:00", "Europe/Berlin")).toISOString()).toBe(
      "2026-10-25T02:00:00.000Z",
    );
    // Australia/Lord_Howe moves by half an hour: 2026-04-05 02:00 (+11) -> 01:30 (+10:30).
    expect(new Date(localToInstant("2026-04-05", "01:45", "Australia/Lord_Howe")).toISOString()).toBe(
      "2026-04-04T14:45:00.000Z",
    );
  });

  it("keeps the local date and hour when the company's zone changes (the instant moves)", async () => {
    const { localToInstant, instantToLocal } = await import("../../src/lib/time");
    const utc = localToInstant("2027-03-01", "09:00", "UTC");
    const tokyo = localToInstant("2027-03-01", "09:00", "Asia/Tokyo");
    expect(utc - tokyo).toBe(9 * 3_600_000);
    expect(instantToLocal(tokyo, "Asia/Tokyo")).toEqual({ date: "2027-03-01", hour: "09:00" });
  });

  it("a reminder one minute ahead and an item due today resolve to this minute's neighbours", async () => {
    const { localToInstant, instantToLocal, todayIn } = await import("../../src/lib/time");
    const now = Date.UTC(2026, 10, 21, 22, 59, 30);
    const next = instantToLocal(now + 60_000, "Asia/Kolkata");
    expect(next).toEqual({ date: "2026-11-22", hour: "04:30" });
    expect(localToInstant(next.date, next.hour, "Asia/Kolkata")).toBe(Date.UTC(2026, 10, 21, 23, 0, 0));
    expect(todayIn("Asia/Kolkata", new Date(now))).toBe("2026-11-22");
    expect(todayIn("America/Los_Angeles", new Date(now))).toBe("2026-11-21");
  });

  it("steps relative to an item's date handle month ends and leap days", async () => {
    const { stepDate } = await import("../../src/company-clock/sequence-steps");
    expect(stepDate("2027-03-31", { period: 1, unit: "month", type: 1 })).toBe("2027-02-28");
    expect(stepDate("2028-03-31", { period: 1, unit: "month", type: 1 })).toBe("2028-02-29");
    expect(stepDate("2027-01-31", { period: 1, unit: "month", type: 2 })).toBe("2027-02-28");
    expect(stepDate("2028-02-29", { period: 1, unit: "year", type: 1 })).toBe("2027-02-28");
    expect(stepDate("2027-01-01", { period: 2, unit: "week", type: 1 })).toBe("2026-12-18");
    expect(stepDate("2027-01-01", { period: 0, unit: "day", type: 1 })).toBe("2027-01-01");
    expect(stepDate("2027-01-01", { period: 3, unit: "day", type: 2 })).toBe("2027-01-04");
  });
});

describe("digest runs (lastDailyRun, nextDailyRun, weekdayOf, isoWeek)", () => {
  const at = (date: string, hour: string, zone: string) => localToInstant(date, hour, zone);

  it("the next run is the next time the hour comes round in the zone, across month ends and leap days", () => {
    const zone = "Europe/Berlin";
    expect(nextDailyRun(at("2028-02-28", "09:00", zone), "08:00", zone).date).toBe("2028-02-29");
    expect(nextDailyRun(at("2028-02-29", "07:59", zone), "08:00", zone).date).toBe("2028-02-29");
    expect(nextDailyRun(at("2027-02-28", "08:00", zone), "08:00", zone).date).toBe("2027-03-01");
    expect(nextDailyRun(at("2026-12-31", "23:30", zone), "00:15", zone).date).toBe("2027-01-01");
    expect(lastDailyRun(at("2026-12-31", "23:30", zone), "23:45", zone).date).toBe("2026-12-30");
  });

  it("over DST: a run in the skipped hour goes the gap's length later, a run in the repeated hour at its first occurrence", () => {
    const zone = "Europe/Berlin";
    // 2027-03-28: 02:00 -> 03:00; 2027-10-31: 03:00 -> 02:00.
    const spring = nextDailyRun(at("2027-03-27", "12:00", zone), "02:30", zone);
    expect(spring.date).toBe("2027-03-28");
    expect(new Date(spring.at).toISOString()).toBe("2027-03-28T01:30:00.000Z");
    const autumn = nextDailyRun(at("2027-10-30", "12:00", zone), "02:30", zone);
    expect(new Date(autumn.at).toISOString()).toBe("2027-10-31T00:30:00.000Z");
    // The run after each is 24 h of wall clock later, not 24 h of elapsed time.
    expect(new Date(nextDailyRun(spring.at, "02:30", zone).at).toISOString()).toBe("2027-03-29T00:30:00.000Z");
    expect(new Date(nextDailyRun(autumn.at, "02:30", zone).at).toISOString()).toBe("2027-11-01T01:30:00.000Z");
    // A run due just now is the last one; a second before it, yesterday's was.
    expect(lastDailyRun(autumn.at, "02:30", zone).date).toBe("2027-10-31");
    expect(lastDailyRun(autumn.at - 1000, "02:30", zone).date).toBe("2027-10-30");
  });

  it("weekdays and ISO weeks (Monday first; week 1 holds the first Thursday)", () => {
    expect(weekdayOf("2026-11-30")).toBe("monday");
    expect(weekdayOf("2026-11-29")).toBe("sunday");
    expect(weekdayOf("2028-02-29")).toBe("tuesday");
    expect(isoWeek("2026-11-29")).toBe("2026-W48");
    expect(isoWeek("2026-11-30")).toBe("2026-W49");
    expect(isoWeek("2027-01-03")).toBe("2026-W53");
    expect(isoWeek("2027-01-04")).toBe("2027-W01");
    expect(isoWeek("2025-12-29")).toBe("2026-W01");
    expect(isoWeek("2021-01-03")).toBe("2020-W53");
  });
});
