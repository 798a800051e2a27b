// Reminder timing relative to an item's date, shared by reminder sequences (D1) and the reminders
// the Durable Object keeps. Pure.

import { z } from "@hono/zod-openapi";
import { isClockTime, shiftDate, type CalendarUnit } from "../lib/time";

export const UNITS = ["day", "week", "month", "year"] as const;
/** Accepted spellings: singular or plural, any case ("Days" -> "day"). */
export function normaliseUnit(text: string): CalendarUnit | null {
  const unit = text.trim().toLowerCase().replace(/s$/, "");
  return (UNITS as readonly string[]).includes(unit) ? (unit as CalendarUnit) : null;
}

/** `type` / `rtype`: 1 = before the item's date, 2 = after it. Period 0 is the day itself. */
export const RTYPE_BEFORE = 1;
export const RTYPE_AFTER = 2;
export const MAX_PERIOD = 1000;
export const DEFAULT_HOUR = "09:00";

export interface Step {
  period: number;
  unit: CalendarUnit;
  type: 1 | 2;
  hour: string;
}

/** The local date a relative step falls on for an item dated `anchor`. */
export function stepDate(anchor: string, step: { period: number; unit: CalendarUnit; type: number }): string {
  return shiftDate(anchor, step.type === RTYPE_AFTER ? step.period : -step.period, step.unit);
}

export const periodField = (field = "period") =>
  z
    .number({ error: `${field} must be an integer` })
    .int({ error: `${field} must be an integer` })
    .min(0, { error: `${field} must be between 0 and ${MAX_PERIOD}` })
    .max(MAX_PERIOD, { error: `${field} must be between 0 and ${MAX_PERIOD}` })
    .openapi({ example: 14, description: `How many units before or after the item's date (0: on the day), 0 to ${MAX_PERIOD}` });

export const unitField = (field = "unit") =>
  z
    .string({ error: `${field} must be one of day, week, month, year` })
    .max(10, { error: `${field} must be one of day, week, month, year` })
    .transform((text, ctx) => {
      const unit = normaliseUnit(text);
      if (!unit) {
        ctx.addIssue({ code: "custom", message: `${field} must be one of day, week, month, year (plural accepted)` });
        return z.NEVER;
      }
      return unit;
    })
    .openapi({ type: "string", enum: [...UNITS, "days", "weeks", "months", "years"], example: "day", description: "day, week, month or year; plurals accepted, stored singular" });

export const rtypeField = (field = "rtype") =>
  z
    .union([z.literal(RTYPE_BEFORE), z.literal(RTYPE_AFTER)], { error: `${field} must be 1 (before the item's date) or 2 (after it)` })
    .openapi({ type: "integer", enum: [RTYPE_BEFORE, RTYPE_AFTER], example: 1, description: "1: before the item's date; 2: after it" });

export const hourField = (field = "hour") =>
  z
    .string({ error: `${field} must be a time HH:MM (00:00 to 23:59)` })
    .refine((text) => isClockTime(text), { error: `${field} must be a time HH:MM (00:00 to 23:59)` })
    .openapi({ example: "09:00", pattern: "^([01]\\d|2[0-3]):[0-5]\\d$", description: "Local time in the company's time zone, HH:MM" });

/** One step of a sequence, as sent and as shown: `{period, unit, type, hour}`. */
export const StepSchema = z
  .strictObject({
    period: periodField(),
    unit: unitField(),
    type: rtypeField("type"),
    hour: hourField().optional().default(DEFAULT_HOUR),
  })
  .openapi("ReminderStep", { description: "A reminder relative to the item's date" });

export const StepOutput = z
  .object({
    period: z.number().int().openapi({ example: 14 }),
    unit: z.enum(UNITS).openapi({ example: "day" }),
    type: z.number().int().openapi({ example: 1, description: "1: before the item's date; 2: after it" }),
    hour: z.string().openapi({ example: "09:00" }),
  })
  .openapi("ReminderStepOutput");

export const DEFAULT_STEPS: Step[] = [30, 14, 7, 1, 0].map((period) => ({ period, unit: "day", type: RTYPE_BEFORE, hour: DEFAULT_HOUR }));

/** Steps stored as JSON in reminder_sequences.steps; anything malformed is dropped, not thrown. */
export function parseSteps(json: string | null | undefined): Step[] {
  if (!json) return [];
  try {
    const value = JSON.parse(json) as unknown;
    if (!Array.isArray(value)) return [];
    return value.flatMap((s: Record<string, unknown>) => {
      const unit = typeof s?.unit === "string" ? normaliseUnit(s.unit) : null;
      const period = Number(s?.period);
      const type = Number(s?.type);
      const hour = typeof s?.hour === "string" && isClockTime(s.hour) ? s.hour : DEFAULT_HOUR;
      if (!unit || !Number.isInteger(period) || period < 0 || period > MAX_PERIOD || (type !== 1 && type !== 2)) return [];
      return [{ period, unit, type: type as 1 | 2, hour }];
    });
  } catch {
    return [];
  }
}
