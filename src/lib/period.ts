import { addDays, addMonths, isCalendarDate } from "./time";

/** Named values of the item list's `period` filter; a custom range is `YYYY-MM-DD..YYYY-MM-DD`. */
export const PERIODS = [
  "expired",
  "today",
  "next_7_days",
  "next_30_days",
  "next_60_days",
  "next_90_days",
  "this_month",
  "next_month",
  "this_year",
] as const;

export const PERIOD_DESCRIPTION =
  "`expired`: date before today, still pending; `today`; `next_7_days`, " +
  "`next_30_days`, `next_60_days`, `next_90_days`: " +
  "from today through today + N days; `this_month`, `next_month`, `this_year`: the " +
  "calendar month or year; or a custom range " +
  '`YYYY-MM-DD..YYYY-MM-DD` (inclusive). "Today" is the company\'s today in its time zone (settings.timezone).';

/** Inclusive date bounds of a period; `pendingOnly` for `expired`. */
export interface PeriodRange {
  from?: string;
  to?: string;
  pendingOnly?: boolean;
}

/** The custom range form, `YYYY-MM-DD..YYYY-MM-DD`; the dates are checked further by `isPeriod`. */
export const CUSTOM_PERIOD = /^(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})$/;

/** Whether `value` is a valid period (named or a well-formed custom range with from <= to). */
export function isPeriod(value: string): boolean {
  if ((PERIODS as readonly string[]).includes(value)) return true;
  const custom = CUSTOM_PERIOD.exec(value);
  return !!custom && isCalendarDate(custom[1]!) && isCalendarDate(custom[2]!) && custom[1]! <= custom[2]!;
}

/** The date range of a valid `period`, given the company's `today`. */
export function periodRange(period: string, today: string): PeriodRange {
  const monthStart = `${today.slice(0, 7)}-01`;
  switch (period) {
    case "expired":
      return { to: addDays(today, -1), pendingOnly: true };
    case "today":
      return { from: today, to: today };
    case "next_7_days":
      return { from: today, to: addDays(today, 7) };
    case "next_30_days":
      return { from: today, to: addDays(today, 30) };
    case "next_60_days":
      return { from: today, to: addDays(today, 60) };
    case "next_90_days":
      return { from: today, to: addDays(today, 90) };
    case "this_month":
      return { from: monthStart, to: addDays(addMonths(monthStart, 1), -1) };
    case "next_month": {
      const next = addMonths(monthStart, 1);
      return { from: next, to: addDays(addMonths(next, 1), -1) };
    }
    case "this_year":
      return { from: `${today.slice(0, 4)}-01-01`, to: `${today.slice(0, 4)}-12-31` };
    default: {
      const [, from, to] = CUSTOM_PERIOD.exec(period)!;
      return { from, to };
    }
  }
}
