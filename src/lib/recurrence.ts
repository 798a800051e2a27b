// Recurrence rules of items (docs/recurrence.md): which date a renewal moves an item to, and the
// next dates a rule will produce. Pure; the calendar arithmetic is src/lib/time.ts.

import { addDays, isCalendarDate, occurrence, occurrenceAfter, type CalendarUnit } from "./time";

export const RECURRENCE_UNITS = ["day", "week", "month", "year"] as const;
export const RENEW_ON = ["completed", "expired"] as const;
export type RenewOn = (typeof RENEW_ON)[number];
/** A rule's fields as the API names them (`recurrence` objects); imports and exports write them as `recurrence_<key>` columns. */
export const RULE_KEYS = ["every", "unit", "renew_on", "until", "count"] as const;
export type RuleKey = (typeof RULE_KEYS)[number];
/** The CSV column of a rule's field in imports and exports: `recurrence_every`, ... */
export const ruleColumn = <K extends RuleKey>(key: K): `recurrence_${K}` => `recurrence_${key}`;
export const RULE_COLUMNS = RULE_KEYS.map(ruleColumn);
/** How many dates GET /v1/items/{id} shows in `next_occurrences`. */
export const UPCOMING = 3;

export interface RecurrenceRule {
  every: number;
  unit: CalendarUnit;
  renewOn: RenewOn;
  /** The last date an occurrence may fall on (inclusive), or null. */
  until: string | null;
  /** Automatic renewals left, or null for no limit. */
  count: number | null;
  /** The date occurrences count from: occurrence k is the anchor plus k x every units. */
  anchor: string;
}

/** The occurrences of `rule` after `after` (at most `n`), within until, count and year 9999. */
function occurrencesAfter(rule: RecurrenceRule, after: string, n: number): string[] {
  const limit = Math.min(n, rule.count ?? n);
  if (limit <= 0) return [];
  let { k } = occurrenceAfter(rule.anchor, rule.every, rule.unit, after);
  const dates: string[] = [];
  while (dates.length < limit) {
    const date = occurrence(rule.anchor, rule.every, rule.unit, k++);
    if (!isCalendarDate(date) || (rule.until !== null && date > rule.until)) break;
    dates.push(date);
  }
  return dates;
}

/**
 * The date a renewal moves an item dated `current` to: the rule's first occurrence after it, or,
 * with `notBefore` (the company's today, for a renewal at expiry), the first one on or after that
 * day, so missed periods are jumped over at once. Null when the rule has ended (count 0, past
 * until, past year 9999).
 */
export function renewalDate(rule: RecurrenceRule, current: string, notBefore?: string): string | null {
  const yesterday = notBefore === undefined ? current : addDays(notBefore, -1);
  return occurrencesAfter(rule, yesterday > current ? yesterday : current, 1)[0] ?? null;
}

/** The next `n` dates renewals will move an item dated `current` to (fewer when the rule ends). */
export const upcomingDates = (rule: RecurrenceRule, current: string, n = UPCOMING): string[] =>
  occurrencesAfter(rule, current, n);

/** What an item's rule state (src/records/items/recurrence.ts ruleState, a JSON array) says. */
export interface RuleState {
  date: string;
  rule: RecurrenceRule | null;
  archived: boolean;
}

export function parseRuleState(text: string): RuleState {
  const [date, every, unit, renewOn, until, count, anchor, archived] = JSON.parse(text) as [
    string,
    number | null,
    CalendarUnit | null,
    RenewOn | null,
    string | null,
    number | null,
    string | null,
    number,
  ];
  const rule =
    every !== null && unit !== null && renewOn !== null
      ? { every, unit, renewOn, until, count, anchor: anchor ?? date }
      : null;
  return { date, rule, archived: archived === 1 };
}
