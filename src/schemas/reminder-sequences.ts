import { z } from "@hono/zod-openapi";
import { Flag, flagField, requiredText } from "../lib/schemas";
import { DEFAULT_HOUR, MAX_GROUP_RECIPIENTS, StepOutput, StepSchema, type Step } from "../company-clock/sequence-steps";

/** Most sequences per company, and most steps (reminders) per sequence. */
export const MAX_SEQUENCES = 50;
export const MAX_STEPS = 20;

// ---- output ----

export const ReminderSequenceSchema = z
  .object({
    seqid: z.number().int().openapi({ example: 4 }),
    name: z.string().openapi({ example: "Standard" }),
    isdefault: Flag.openapi({ example: 1, description: "0 or 1; exactly one default sequence per company" }),
    reminders: z.array(StepOutput).openapi({
      description: "The steps, in the order they were sent; unit always singular",
      example: [
        {
          period: 7,
          unit: "day",
          type: 1,
          hour: "09:00",
          contact_id: null,
          group_id: null,
          channel_id: null,
          unless_acknowledged: false,
          always: false,
        },
        {
          period: 3,
          unit: "day",
          type: 1,
          hour: "09:00",
          contact_id: null,
          group_id: 2,
          channel_id: null,
          unless_acknowledged: true,
          always: false,
        },
        {
          period: 0,
          unit: "day",
          type: 1,
          hour: "09:00",
          contact_id: null,
          group_id: null,
          channel_id: null,
          unless_acknowledged: false,
          always: true,
        },
      ],
    }),
  })
  .openapi("ReminderSequence");

export const ReminderSequenceListMeta = z
  .object({
    total: z.number().int().openapi({ example: 1, description: "The company's sequences (all of them are in data)" }),
    max_allowed: z.number().int().openapi({ example: MAX_SEQUENCES, description: "Most sequences a company may have" }),
  })
  .openapi("ReminderSequenceListMeta");

export const ReminderSequenceListEnvelope = z
  .object({ success: z.literal(true), data: z.array(ReminderSequenceSchema), meta: ReminderSequenceListMeta })
  .openapi("ReminderSequenceList");

// ---- input ----

/**
 * When two steps fire at the same moment for every item: the same period, unit, type and hour
 * once normalised, and period 0 (the item's date itself) whatever its unit and type.
 */
export function stepKey(step: Step): string {
  // Steps to different recipients may share a moment (the contact and, at once, a group).
  const to = step.group_id ? `g${step.group_id}` : step.contact_id ? `c${step.contact_id}` : "item";
  return step.period === 0 ? `0|${step.hour}|${to}` : `${step.period}|${step.unit}|${step.type}|${step.hour}|${to}`;
}

/** A step repeated (same moment as an earlier one) is 400 naming both. */
function uniqueSteps(steps: Step[], ctx: z.RefinementCtx) {
  const seen = new Map<string, number>();
  steps.forEach((step, i) => {
    const key = stepKey(step);
    const first = seen.get(key);
    if (first !== undefined) {
      ctx.addIssue({
        code: "custom",
        path: [i],
        message: `reminders.${i} repeats reminders.${first} (the same period, unit, type, hour and recipient)`,
      });
    } else seen.set(key, i);
  });
}

const STEP_RULES =
  `1 to ${MAX_STEPS} steps, each {period 0-1000, unit day|week|month|year (plurals accepted, stored singular), type 1 before / 2 after the item's date, ` +
  `hour HH:MM local time (default ${DEFAULT_HOUR})}, optionally with a recipient (contact_id, or group_id: every contact of the group, ` +
  `de-duplicated by address, at most ${MAX_GROUP_RECIPIENTS}; default the item's contact) and an acknowledgement rule (always: sent even when ` +
  `acknowledged; unless_acknowledged: an escalation, fired only if nobody acknowledged by then). Two steps to the same recipient that fall on ` +
  `the same moment (same period, unit, type and hour; period 0 whatever the unit and type) are 400; a contact or group not of the company is 400 ` +
  `naming the step (reminders.2.group_id).`;

const reminders = z
  .array(StepSchema)
  .min(1, { error: `reminders must hold 1 to ${MAX_STEPS} steps` })
  .max(MAX_STEPS, { error: `reminders must hold 1 to ${MAX_STEPS} steps` })
  .superRefine(uniqueSteps)
  .openapi({
    description: STEP_RULES,
    example: [
      { period: 1, unit: "month", type: 1, hour: "09:00" },
      { period: 1, unit: "week", type: 1 },
      { period: 0, unit: "day", type: 1, hour: "08:30" },
    ],
  });

const sequenceName = requiredText("name", 100).openapi({
  example: "Contracts",
  description: "1 to 100 characters, unique within the company case-insensitively (409 otherwise)",
});

export const CreateSequenceSchema = z
  .strictObject({
    name: sequenceName,
    reminders,
    isdefault: flagField("isdefault")
      .optional()
      .openapi({
        example: 0,
        description:
          "1 makes it the company's default sequence (the previous default is unset in the " +
          "same transaction); default 0",
      }),
  })
  .openapi("CreateReminderSequence");

export const UpdateSequenceSchema = z
  .strictObject({
    name: sequenceName.optional(),
    reminders: reminders.optional().openapi({ description: `Replaces all the steps. ${STEP_RULES}` }),
    isdefault: flagField("isdefault")
      .optional()
      .openapi({
        example: 1,
        description:
          "1 makes it the company's default (the previous default is unset in the same " +
          "transaction). 0 on the default sequence is 400: make another sequence the " +
          "default instead",
      }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateReminderSequence");

export type ReminderSequenceOutput = z.infer<typeof ReminderSequenceSchema>;
export type CreateSequenceInput = z.infer<typeof CreateSequenceSchema>;
export type UpdateSequenceInput = z.infer<typeof UpdateSequenceSchema>;
