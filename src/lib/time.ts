// Time in one place: company time zones and date formats. Pure functions, no I/O.
// (The reminder engine adds local date + hour -> UTC instant conversion here.)

/** Date formats a company may choose for dates in messages (`settings.date_format`). */
export const DATE_FORMATS = [
  "YYYY-MM-DD",
  "DD.MM.YYYY",
  "DD/MM/YYYY",
  "MM/DD/YYYY",
  "DD-MM-YYYY",
  "YYYY/MM/DD",
  "D MMM YYYY",
  "MMM D, YYYY",
] as const;
export type DateFormat = (typeof DATE_FORMATS)[number];

export const DEFAULT_TIME_ZONE = "UTC";
export const DEFAULT_DATE_FORMAT: DateFormat = "YYYY-MM-DD";

let listed: Map<string, string> | undefined;
const accepted = new Map<string, boolean>();

function acceptedByRuntime(name: string): boolean {
  let ok = accepted.get(name);
  if (ok === undefined) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: name });
      ok = true;
    } catch {
      ok = false;
    }
    if (accepted.size < 1000) accepted.set(name, ok);
  }
  return ok;
}

/**
 * The name to store for an IANA time zone, or null when the runtime's time zone data does not
 * know it. A zone of the runtime's list gets that list's spelling (`europe/berlin` ->
 * `Europe/Berlin`); an alias the runtime accepts (`Asia/Kolkata`, `UTC`) is kept as sent. UTC
 * offsets (`+02:00`) are not IANA zones and are refused. Cached per isolate.
 */
export function canonicalTimeZone(name: string): string | null {
  if (name.length === 0 || name.length > 64 || /^[+-]/.test(name)) return null;
  listed ??= new Map(Intl.supportedValuesOf("timeZone").map((zone) => [zone.toLowerCase(), zone]));
  const known = listed.get(name.toLowerCase());
  if (known) return known;
  return acceptedByRuntime(name) ? name : null;
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/** Formats a `YYYY-MM-DD` date in one of the DATE_FORMATS. */
export function formatDate(date: string, format: DateFormat): string {
  const [y, m, d] = date.split("-") as [string, string, string];
  const month = MONTHS[Number(m) - 1]!;
  const day = String(Number(d));
  switch (format) {
    case "YYYY-MM-DD":
      return `${y}-${m}-${d}`;
    case "DD.MM.YYYY":
      return `${d}.${m}.${y}`;
    case "DD/MM/YYYY":
      return `${d}/${m}/${y}`;
    case "MM/DD/YYYY":
      return `${m}/${d}/${y}`;
    case "DD-MM-YYYY":
      return `${d}-${m}-${y}`;
    case "YYYY/MM/DD":
      return `${y}/${m}/${d}`;
    case "D MMM YYYY":
      return `${day} ${month} ${y}`;
    case "MMM D, YYYY":
      return `${month} ${day}, ${y}`;
  }
}

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Whether `text` is a real calendar date `YYYY-MM-DD` (`2026-02-30` is not), years 1900-9999. */
export function isCalendarDate(text: string): boolean {
  const match = DATE_PATTERN.exec(text);
  if (!match) return false;
  const [y, m, d] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (y < 1900 || m < 1 || m > 12 || d < 1) return false;
  return d <= daysInMonth(y, m);
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");
const fromUtc = (d: Date) => `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
const parts = (date: string) => date.split("-").map(Number) as [number, number, number];

/** `date` plus `days` (may be negative). */
export function addDays(date: string, days: number): string {
  const [y, m, d] = parts(date);
  return fromUtc(new Date(Date.UTC(y, m - 1, d + days)));
}

/** `date` plus `months`; a day past the end of the target month becomes its last day (Jan 31 + 1 month = Feb 28/29). */
export function addMonths(date: string, months: number): string {
  const [y, m, d] = parts(date);
  const index = y * 12 + (m - 1) + months;
  const year = Math.floor(index / 12);
  const month = (index % 12) + 1;
  return `${pad(year, 4)}-${pad(month)}-${pad(Math.min(d, daysInMonth(year, month)))}`;
}

/** `date` plus `years`; Feb 29 becomes Feb 28 in a year without it. */
export const addYears = (date: string, years: number) => addMonths(date, years * 12);

const todayFormats = new Map<string, Intl.DateTimeFormat>();

/** Today's date `YYYY-MM-DD` in time zone `zone` at instant `now`. */
export function todayIn(zone: string, now: Date = new Date()): string {
  let format = todayFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" });
    if (todayFormats.size < 1000) todayFormats.set(zone, format);
  }
  const byType = Object.fromEntries(format.formatToParts(now).map((p) => [p.type, p.value]));
  return `${byType.year}-${byType.month}-${byType.day}`;
}
