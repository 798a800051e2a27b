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
