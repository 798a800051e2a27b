// Time in one place: company time zones, date formats, calendar arithmetic and the conversion of
// a local date + "HH:MM" in an IANA zone to a UTC instant. Pure functions, no I/O.
//
// Local -> UTC uses Intl (workerd's IANA data) rather than Temporal: Temporal is behind a
// compatibility flag that would also change other runtime behaviour, and the conversion needs only
// the zone's offset at two instants. DST rules (the same as Temporal's "compatible"):
// - a local time that does not exist (the spring-forward gap, 02:30 in Europe/Berlin on the last
//   Sunday of March) is moved forward by the length of the gap: 02:30 fires at 03:30 local;
// - a local time that happens twice (the fall-back overlap, 02:30 in Berlin in October) is the
//   first of the two, so a reminder fires once, at the earlier instant.

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

/** A stored `date_format` when it is one of DATE_FORMATS, else the default. */
export function dateFormatOr(value: unknown): DateFormat {
  return (DATE_FORMATS as readonly unknown[]).includes(value) ? (value as DateFormat) : DEFAULT_DATE_FORMAT;
}

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

// ---- local date and hour <-> UTC instant ----

const HOUR_PATTERN = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Whether `text` is an hour "HH:MM" of a 24-hour clock (00:00 to 23:59). */
export const isClockTime = (text: string) => HOUR_PATTERN.test(text);

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

function wallClock(zone: string, instant: number): number {
  // UTC, the default zone, shows the instant itself (to the second): no Intl call, which costs more
  // than the rest of a reminder's scheduling (every step of every queued sequence comes here).
  if (zone === "UTC") return Math.floor(instant / 1000) * 1000;
  let format = offsetFormats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    if (offsetFormats.size < 1000) offsetFormats.set(zone, format);
  }
  const p: Record<string, number> = {};
  for (const part of format.formatToParts(new Date(instant)))
    if (part.type !== "literal") p[part.type] = Number(part.value);
  return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!);
}

/** The zone's offset from UTC (ms, east positive) at `instant`. */
export function zoneOffset(zone: string, instant: number): number {
  const whole = Math.floor(instant / 1000) * 1000;
  return wallClock(zone, whole) - whole;
}

/**
 * The UTC instant (ms) of local `date` ("YYYY-MM-DD") at `hour` ("HH:MM") in `zone`, with the DST
 * rules above. Offsets are read a day either side of the local time: zones change offset at most
 * once in that span.
 */
export function localToInstant(date: string, hour: string, zone: string): number {
  const [y, m, d] = parts(date);
  const [hh, mm] = hour.split(":").map(Number) as [number, number];
  const local = Date.UTC(y, m - 1, d, hh, mm);
  const DAY = 86_400_000;
  const before = zoneOffset(zone, local - DAY);
  const after = zoneOffset(zone, local + DAY);
  const fits = [local - before, local - after].filter((t) => wallClock(zone, t) === local);
  // Overlap: two instants show this local time; take the first. Gap: none does; use the offset
  // in force before the change, which lands the gap's length later on the new clock.
  return fits.length > 0 ? Math.min(...fits) : local - before;
}

/** The local date and hour ("YYYY-MM-DD", "HH:MM") of `instant` in `zone`. */
export function instantToLocal(instant: number, zone: string): { date: string; hour: string } {
  const wall = new Date(wallClock(zone, instant));
  return { date: fromUtc(wall), hour: `${pad(wall.getUTCHours())}:${pad(wall.getUTCMinutes())}` };
}

/** Whole days from `from` to `to` (dates "YYYY-MM-DD"; negative when `to` is earlier). */
export function daysBetween(from: string, to: string): number {
  const [y1, m1, d1] = parts(from);
  const [y2, m2, d2] = parts(to);
  return Math.round((Date.UTC(y2, m2 - 1, d2) - Date.UTC(y1, m1 - 1, d1)) / 86_400_000);
}

export type CalendarUnit = "day" | "week" | "month" | "year";

/** `date` moved by `amount` units (negative: earlier); months and years clamp to the month's end. */
export function shiftDate(date: string, amount: number, unit: CalendarUnit): string {
  switch (unit) {
    case "day":
      return addDays(date, amount);
    case "week":
      return addDays(date, amount * 7);
    case "month":
      return addMonths(date, amount);
    case "year":
      return addYears(date, amount);
  }
}

/**
 * Recurrence (issue 19): occurrence k of a rule is the anchor shifted by k × every units, always
 * from the anchor, never from the previous occurrence. So the anchor day is kept: Jan 31 monthly
 * gives Feb 28 (Feb 29 in a leap year), then Mar 31; Feb 29 yearly gives Feb 28 in common years
 * and Feb 29 in leap years.
 */
export function occurrence(anchor: string, every: number, unit: CalendarUnit, k: number): string {
  return shiftDate(anchor, k * every, unit);
}

/** The first occurrence (k >= 1) strictly after `after`, and its k. */
export function occurrenceAfter(
  anchor: string,
  every: number,
  unit: CalendarUnit,
  after: string,
): { date: string; k: number } {
  const days = daysBetween(anchor, after);
  const [ya, ma] = parts(anchor);
  const [yb, mb] = parts(after);
  const months = (yb - ya) * 12 + (mb - ma);
  const span =
    unit === "day"
      ? days / every
      : unit === "week"
        ? days / (7 * every)
        : unit === "month"
          ? months / every
          : months / (12 * every);
  let k = Math.max(1, Math.floor(span));
  // Compared as days, not strings: an occurrence past year 9999 has a five-digit year.
  const notAfter = (date: string) => daysBetween(date, after) >= 0;
  while (k > 1 && !notAfter(occurrence(anchor, every, unit, k - 1))) k--;
  while (notAfter(occurrence(anchor, every, unit, k))) k++;
  return { date: occurrence(anchor, every, unit, k), k };
}

/**
 * The instant an item dated `date` has expired: the start of the next day in `zone` (00:00, or
 * the first minute that exists when a DST change skips midnight; see localToInstant).
 */
export const startOfDayAfter = (date: string, zone: string): number => localToInstant(addDays(date, 1), "00:00", zone);

const DATE_PARTS: Record<DateFormat, RegExp> = {
  "YYYY-MM-DD": /^(?<y>\d{4})-(?<m>\d{2})-(?<d>\d{2})$/,
  "DD.MM.YYYY": /^(?<d>\d{2})\.(?<m>\d{2})\.(?<y>\d{4})$/,
  "DD/MM/YYYY": /^(?<d>\d{2})\/(?<m>\d{2})\/(?<y>\d{4})$/,
  "MM/DD/YYYY": /^(?<m>\d{2})\/(?<d>\d{2})\/(?<y>\d{4})$/,
  "DD-MM-YYYY": /^(?<d>\d{2})-(?<m>\d{2})-(?<y>\d{4})$/,
  "YYYY/MM/DD": /^(?<y>\d{4})\/(?<m>\d{2})\/(?<d>\d{2})$/,
  "D MMM YYYY": /^(?<d>\d{1,2}) (?<mon>[A-Za-z]{3}) (?<y>\d{4})$/,
  "MMM D, YYYY": /^(?<mon>[A-Za-z]{3}) (?<d>\d{1,2}), (?<y>\d{4})$/,
};

/**
 * A date written in `format` as `YYYY-MM-DD`, or null: strictly that format (two-digit day and
 * month where the format says DD and MM, four-digit years, English month abbreviations in any
 * case), and a real calendar date (years 1900-9999). Never guesses: `03/04/2027` is only read in a
 * format that says which part is the month, and text in another format is null.
 */
export function parseDate(text: string, format: DateFormat): string | null {
  const groups = DATE_PARTS[format].exec(text.trim())?.groups;
  if (!groups) return null;
  const month =
    groups.mon === undefined
      ? Number(groups.m)
      : MONTHS.findIndex((m) => m.toLowerCase() === groups.mon!.toLowerCase()) + 1;
  if (month < 1) return null;
  const date = `${groups.y}-${String(month).padStart(2, "0")}-${groups.d!.padStart(2, "0")}`;
  return isCalendarDate(date) ? date : null;
}

// ---- digests (docs/reminders.md, "Digests") ----

const WEEKDAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;

/** The weekday of `date`, in English lower case ("monday" … "sunday"). */
export function weekdayOf(date: string): (typeof WEEKDAY_NAMES)[number] {
  const [y, m, d] = parts(date);
  return WEEKDAY_NAMES[(new Date(Date.UTC(y, m - 1, d)).getUTCDay() + 6) % 7]!;
}

/** The ISO 8601 week of `date`, "YYYY-Www" (weeks start on Monday; week 1 holds the year's first Thursday). */
export function isoWeek(date: string): string {
  const thursday = addDays(date, 3 - WEEKDAY_NAMES.indexOf(weekdayOf(date)));
  const year = thursday.slice(0, 4);
  const week = Math.floor(daysBetween(`${year}-01-01`, thursday) / 7) + 1;
  return `${year}-W${pad(week)}`;
}

/**
 * The local day whose `hour` in `zone` is the latest at or before `now`: the day a digest run
 * at `now` is for. Its instant follows localToInstant (a gap hour runs late by the gap's length).
 */
export function lastDailyRun(now: number, hour: string, zone: string): { date: string; at: number } {
  const today = instantToLocal(now, zone).date;
  const at = localToInstant(today, hour, zone);
  if (at <= now) return { date: today, at };
  const yesterday = addDays(today, -1);
  return { date: yesterday, at: localToInstant(yesterday, hour, zone) };
}

/** The first instant after `now` at which it is `hour` in `zone`, and its local day. */
export function nextDailyRun(now: number, hour: string, zone: string): { date: string; at: number } {
  const last = lastDailyRun(now, hour, zone);
  let date = addDays(last.date, 1);
  let at = localToInstant(date, hour, zone);
  // A gap hour can land the next day's run at or before now only if the zone skips a whole day (Samoa 2011).
  while (at <= now) {
    date = addDays(date, 1);
    at = localToInstant(date, hour, zone);
  }
  return { date, at };
}

/**
 * How long a `Retry-After` header (RFC 9110: delay-seconds or an HTTP-date) asks to wait from `now`,
 * in ms, at most `max`; null when it is absent or says nothing usable. A date in the past is 0.
 */
export function retryAfterDelay(value: string | null | undefined, now: number, max: number): number | null {
  const text = value?.trim() ?? "";
  if (text === "") return null;
  if (/^\d{1,10}$/.test(text)) return Math.min(Number(text) * 1000, max);
  if (text.length > 40) return null;
  const at = Date.parse(text);
  if (!Number.isFinite(at) || !/[a-z]/i.test(text)) return null;
  return Math.min(Math.max(at - now, 0), max);
}
