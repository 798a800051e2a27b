import { describe, expect, it } from "vitest";
import { DATE_FORMATS, canonicalTimeZone, formatDate } from "../../src/lib/time";

describe("canonicalTimeZone", () => {
  it("accepts IANA zones, in the runtime's spelling when it lists them, and aliases as sent", () => {
    expect(canonicalTimeZone("UTC")).toBe("UTC");
    expect(canonicalTimeZone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(canonicalTimeZone("america/new_york")).toBe("America/New_York");
    expect(canonicalTimeZone("Asia/Kolkata")).toBe("Asia/Kolkata");
    expect(canonicalTimeZone("Asia/Kathmandu")).toBeTruthy();
  });

  it("refuses names the time zone data does not know", () => {
    for (const name of ["", "Mars/Olympus", "Europe/Berlinx", "+02:00", "-05:00", "x".repeat(200)]) expect(canonicalTimeZone(name), name).toBeNull();
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

describe("calendar arithmetic", () => {
  it("knows real dates", async () => {
    const { isCalendarDate } = await import("../../src/lib/time");
    for (const ok of ["2026-02-28", "2024-02-29", "2026-12-31", "2000-02-29"]) expect(isCalendarDate(ok), ok).toBe(true);
    for (const bad of ["2026-02-30", "2025-02-29", "1900-02-29", "2026-13-01", "2026-00-10", "2026-1-01", "26-01-01", "2026-01-01x", "1899-12-31"]) {
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
    const { periodRange, isPeriod, PERIODS } = await import("../../src/routes/items/period");
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
    for (const bad of ["yesterday", "2026-02-30..2026-03-01", "2026-03-01..2026-02-01", "2026-01-01..", "next_8_days"]) expect(isPeriod(bad), bad).toBe(false);
  });
});
