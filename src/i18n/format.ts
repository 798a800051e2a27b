// Dates, relative days and plural rules in a recipient's locale, through Intl (docs/languages.md,
// "Dates"). Intl objects are costly to build, so each is made once per isolate per (locale,
// options) and kept. Digits are Latin in every language (`-u-nu-latn`), so a date in a company's
// numeric format and the relative time next to it agree. Pure.
import { type DateFormat, daysBetween, formatDate } from "../lib/time";

const cache = new Map<string, unknown>();
/** Bound of the cache: tags are validated, but regions and scripts make many; past it, formatters are built and not kept. */
const CACHE_MAX = 256;
function cached<T>(key: string, make: () => T): T {
  let value = cache.get(key) as T | undefined;
  if (value === undefined) {
    value = make();
    if (cache.size < CACHE_MAX) cache.set(key, value);
  }
  return value;
}

/** The Intl locale of a language tag: Latin digits unless the tag names a numbering system itself. */
export function intlLocale(tag: string): string {
  const canonical = canonicalTag(tag) ?? "en";
  return canonical.includes("-u-") ? canonical : `${canonical}-u-nu-latn`;
}

/** The tag in its canonical form (`pt-br` → `pt-BR`), or null when it is no valid BCP 47 tag. */
export function canonicalTag(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null;
  } catch {
    return null;
  }
}

export const pluralRules = (locale: string) => cached(`plural|${locale}`, () => new Intl.PluralRules(locale));

const relativeFormat = (locale: string) =>
  cached(`relative|${locale}`, () => new Intl.RelativeTimeFormat(locale, { numeric: "auto" }));

const monthDateFormat = (locale: string) =>
  cached(
    `date|${locale}`,
    () => new Intl.DateTimeFormat(locale, { day: "numeric", month: "short", year: "numeric", timeZone: "UTC" }),
  );

/** Formats with month names: the locale writes these. Numeric formats are the company's as chosen. */
const MONTH_NAME_FORMATS: ReadonlySet<DateFormat> = new Set<DateFormat>(["D MMM YYYY", "MMM D, YYYY"]);

/**
 * A `YYYY-MM-DD` date for a reader of `locale` in the company's `settings.date_format`: numeric
 * formats exactly as the company chose them (13.03.2027 stays 13.03.2027 in every language); the
 * month-name formats with the locale's month name and order (English keeps the company's own).
 */
export function localDate(date: string, format: DateFormat, locale: string): string {
  if (!MONTH_NAME_FORMATS.has(format) || locale.startsWith("en")) return formatDate(date, format);
  const [y, m, d] = date.split("-").map(Number) as [number, number, number];
  return monthDateFormat(locale).format(new Date(Date.UTC(y, m - 1, d)));
}

/**
 * How far `date` is from `today` in words of `locale`: "today", "tomorrow", "in 14 days", "2 days
 * ago"; beyond 60 days in months ("in 3 months"), from 24 months on in years.
 */
export function relativeDays(today: string, date: string, locale: string): string {
  const days = daysBetween(today, date);
  const n = Math.abs(days);
  const sign = days < 0 ? -1 : 1;
  const format = relativeFormat(locale);
  if (n <= 60) return format.format(days, "day");
  const months = Math.round(n / 30.4375);
  if (months < 24) return format.format(sign * months, "month");
  return format.format(sign * Math.round(n / 365.25), "year");
}

/**
 * A date (or any left-to-right run of digits and signs) kept whole in right-to-left text: wrapped
 * in a left-to-right isolate (U+2066 … U+2069), so 2027-05-13 is not shown as 13-05-2027 by the
 * bidirectional algorithm. Text with letters gets a first-strong isolate (U+2068 … U+2069)
 * instead: it takes the direction of its first letter, so an Arabic date with a month name
 * ("7 مارس 2027") reads right to left, not "مارس 2027 7", and a Latin one left to right as before.
 * Left-to-right text gets it unchanged.
 */
export const isolated = (text: string, dir: "ltr" | "rtl") =>
  dir === "rtl" ? `${/\p{L}/u.test(text) ? "\u2068" : "\u2066"}${text}\u2069` : text;

const weekdayFormat = (locale: string) =>
  cached(`weekday|${locale}`, () => new Intl.DateTimeFormat(locale, { weekday: "long", timeZone: "UTC" }));

const WEEKDAY_INDEX = { monday: 0, tuesday: 1, wednesday: 2, thursday: 3, friday: 4, saturday: 5, sunday: 6 } as const;

/** A weekday's name in `locale` ("Montag", "الاثنين"), by Intl: 2024-01-01 was a Monday. */
export function weekdayName(weekday: keyof typeof WEEKDAY_INDEX, locale: string): string {
  return weekdayFormat(locale).format(new Date(Date.UTC(2024, 0, 1 + WEEKDAY_INDEX[weekday])));
}
