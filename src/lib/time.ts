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
