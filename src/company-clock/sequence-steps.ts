// Reminder timing relative to an item's date, shared by reminder sequences (D1) and the reminders
// the Durable Object keeps. Pure.

import { z } from "@hono/zod-openapi";
import { CHANNEL_TYPES, type ChannelType } from "../channels/urls";
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
  /** The recipient: a contact of the company, or every contact of a contact group; neither: the item's contact. */
  contact_id?: number | null;
  group_id?: number | null;
  /**
   * A channel endpoint of the company (docs/channels.md): the reminder is posted there instead of
   * going to contacts; contact_id then names who it is for (default: the item's contact).
   * `channel_type` is its platform, stored with the step when it is saved (a channel's type never changes).
   */
  channel_id?: number | null;
  channel_type?: ChannelType;
  /** An escalation: fires only if nobody has acknowledged the occurrence by then. */
  unless_acknowledged?: boolean;
  /** Sent even when the occurrence is acknowledged (e.g. on the day). */
  always?: boolean;
}

/** Most recipients of one reminder through a contact group (per channel, after de-duplication by address). */
export const MAX_GROUP_RECIPIENTS = 200;

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
    .openapi({
      example: 14,
      description: `How many units before or after the item's date (0: on the day), 0 to ${MAX_PERIOD}`,
    });

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
    .openapi({
      type: "string",
      enum: [...UNITS, "days", "weeks", "months", "years"],
      example: "day",
      description: "day, week, month or year; plurals accepted, stored singular",
    });

export const rtypeField = (field = "rtype") =>
  z
    .union([z.literal(RTYPE_BEFORE), z.literal(RTYPE_AFTER)], {
      error: `${field} must be 1 (before the item's date) or 2 (after it)`,
    })
    .openapi({
      type: "integer",
      enum: [RTYPE_BEFORE, RTYPE_AFTER],
      example: 1,
      description: "1: before the item's date; 2: after it",
    });

export const hourField = (field = "hour") =>
  z
    .string({ error: `${field} must be a time HH:MM (00:00 to 23:59)` })
    .refine((text) => isClockTime(text), { error: `${field} must be a time HH:MM (00:00 to 23:59)` })
    .openapi({
      example: "09:00",
      pattern: "^([01]\\d|2[0-3]):[0-5]\\d$",
      description: "Local time in the company's time zone, HH:MM",
    });

const positiveId = (field: string) =>
  z
    .number({ error: `${field} must be a positive integer` })
    .int({ error: `${field} must be a positive integer` })
    .positive({ error: `${field} must be a positive integer` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${field} is too large` });

const flag = (field: string) => z.boolean({ error: `${field} must be a boolean` });

/**
 * Whom a reminder goes to and what an acknowledgement does to it: the fields a sequence step and a
 * reminder added through the API share (docs/reminders.md, "Recipients and escalation").
 */
export const recipientFields = {
  contact_id: positiveId("contact_id")
    .nullable()
    .optional()
    .openapi({
      example: 42,
      description:
        "A contact of the company: the reminder goes to them instead of the item's contact. Not with group_id. " +
        "With channel_id: who the channel's message is for (default: the item's contact).",
    }),
  group_id: positiveId("group_id")
    .nullable()
    .optional()
    .openapi({
      example: 7,
      description: `A contact group of the company: the reminder goes to every contact of the group when it fires (de-duplicated by address, the first ${MAX_GROUP_RECIPIENTS} by contact id), each its own delivery. Not with contact_id.`,
    }),
  channel_id: positiveId("channel_id")
    .nullable()
    .optional()
    .openapi({
      example: 3,
      description:
        "A channel endpoint of the company (POST /v1/channels: Slack, Teams, Google Chat, Discord, ntfy): the " +
        "reminder is posted there, and goes to no contact. contact_id may name who it is for (the message shows " +
        "them; their `channels` preference without `chat` suppresses it). Not with group_id.",
    }),
  unless_acknowledged: flag("unless_acknowledged")
    .optional()
    .openapi({
      description:
        "An escalation: fires only if nobody has acknowledged the item's current " +
        "occurrence by then (what every reminder without `always` does; this names it). " +
        "Not with always.",
    }),
  always: flag("always")
    .optional()
    .openapi({
      description:
        "Sent even when the occurrence is acknowledged (e.g. on the day). Not with " + "unless_acknowledged.",
    }),
};

/** contact_id and group_id, channel_id and group_id, always and unless_acknowledged: one of each pair at most (400 naming the field). */
export function checkRecipients(
  v: {
    contact_id?: number | null;
    group_id?: number | null;
    channel_id?: number | null;
    always?: boolean;
    unless_acknowledged?: boolean;
  },
  ctx: z.RefinementCtx,
) {
  if (v.contact_id && v.group_id)
    ctx.addIssue({ code: "custom", path: ["group_id"], message: "give contact_id or group_id, not both" });
  if (v.channel_id && v.group_id)
    ctx.addIssue({
      code: "custom",
      path: ["group_id"],
      message: "give channel_id or group_id, not both: a reminder to a channel goes to no contact group",
    });
  if (v.always && v.unless_acknowledged)
    ctx.addIssue({
      code: "custom",
      path: ["always"],
      message: "always and unless_acknowledged contradict each other: give one",
    });
}

/** One step of a sequence, as sent: `{period, unit, type, hour}` and optionally its recipient and acknowledgement rule. */
export const StepSchema = z
  .strictObject({
    period: periodField(),
    unit: unitField(),
    type: rtypeField("type"),
    hour: hourField().optional().default(DEFAULT_HOUR),
    ...recipientFields,
  })
  .superRefine(checkRecipients)
  .openapi("ReminderStep", { description: "A reminder relative to the item's date" });

export const StepOutput = z
  .object({
    period: z.number().int().openapi({ example: 14 }),
    unit: z.enum(UNITS).openapi({ example: "day" }),
    type: z.number().int().openapi({ example: 1, description: "1: before the item's date; 2: after it" }),
    hour: z.string().openapi({ example: "09:00" }),
    contact_id: z
      .number()
      .int()
      .nullable()
      .openapi({ example: null, description: "The step's contact; null: the item's contact (or the group)" }),
    group_id: z
      .number()
      .int()
      .nullable()
      .openapi({ example: null, description: "The step's contact group; null: none" }),
    channel_id: z
      .number()
      .int()
      .nullable()
      .openapi({ example: null, description: "The channel endpoint the step posts to; null: none (contacts)" }),
    unless_acknowledged: z.boolean().openapi({
      example: false,
      description: "An escalation: fires only if nobody acknowledged the occurrence by then",
    }),
    always: z.boolean().openapi({ example: false, description: "Sent even when the occurrence is acknowledged" }),
  })
  .openapi("ReminderStepOutput");

/** A step as the API shows it (absent recipient fields filled in). */
export const stepOutput = (step: Step): z.infer<typeof StepOutput> => ({
  period: step.period,
  unit: step.unit,
  type: step.type,
  hour: step.hour,
  contact_id: step.contact_id ?? null,
  group_id: step.group_id ?? null,
  channel_id: step.channel_id ?? null,
  unless_acknowledged: step.unless_acknowledged === true,
  always: step.always === true,
});

export const DEFAULT_STEPS: Step[] = [30, 14, 7, 1, 0].map((period) => ({
  period,
  unit: "day",
  type: RTYPE_BEFORE,
  hour: DEFAULT_HOUR,
}));

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
      if (!unit || !Number.isInteger(period) || period < 0 || period > MAX_PERIOD || (type !== 1 && type !== 2))
        return [];
      const step: Step = { period, unit, type: type as 1 | 2, hour };
      const id = (value: unknown) => (Number.isSafeInteger(value) && (value as number) > 0 ? (value as number) : null);
      if (id(s.group_id)) step.group_id = id(s.group_id);
      else if (id(s.contact_id)) step.contact_id = id(s.contact_id);
      if (!step.group_id && id(s.channel_id) && (CHANNEL_TYPES as readonly unknown[]).includes(s.channel_type)) {
        step.channel_id = id(s.channel_id);
        step.channel_type = s.channel_type as ChannelType;
      }
      if (s.always === true) step.always = true;
      else if (s.unless_acknowledged === true) step.unless_acknowledged = true;
      return [step];
    });
  } catch {
    return [];
  }
}
