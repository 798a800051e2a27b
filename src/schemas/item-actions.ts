// What a person or a program does about an item's current occurrence (docs/reminders.md,
// "Acknowledgement and snooze"): acknowledge it ("I'm on it"), snooze its reminders, and the state
// those leave. The same shapes for the API routes and the records' actions a recipient's page uses.
import { z } from "@hono/zod-openapi";
import { optionalText } from "../lib/schemas";
import { AcknowledgementSchema, calendarDate, ITEM_STATUSES, ITEM_TYPES, type Acknowledgement } from "./items";

export { AcknowledgementSchema, type Acknowledgement };

/** The longest acknowledgement note. */
export const NOTE_MAX = 500;
/** How far ahead a snooze may reach, in days from the company's today. */
export const MAX_SNOOZE_DAYS = 365;

export const ItemActionStateSchema = z
  .object({
    item_id: z.number().int().openapi({ example: 120 }),
    title: z.string().openapi({ example: "Fire safety certificate" }),
    expiry_date: z.string().openapi({ example: "2027-03-31", description: "The current occurrence's date" }),
    item_type: z.enum(ITEM_TYPES).openapi({ example: "exp" }),
    status: z.enum(ITEM_STATUSES).openapi({ example: "pending" }),
    active: z.boolean().openapi({ example: true, description: "false when the item is archived" }),
    acknowledgement: AcknowledgementSchema.nullable().openapi({
      description: "null: the current occurrence is not acknowledged",
    }),
    snoozed_until: z
      .string()
      .nullable()
      .openapi({
        format: "date",
        example: "2027-03-10",
        description:
          "The current occurrence's reminders wait until this date (company time zone); " +
          "null: not snoozed, or the date has passed",
      }),
  })
  .openapi("ItemActionState");

export const AcknowledgeItemSchema = z
  .strictObject({
    note: optionalText("note", NOTE_MAX, { multiline: true })
      .nullable()
      .openapi({
        example: "Booked the inspector for March 3",
        description: `What to tell the others, at most ${NOTE_MAX} characters`,
      }),
  })
  .openapi("AcknowledgeItem");

export const SnoozeItemSchema = z
  .strictObject({
    until: calendarDate("until").openapi({
      example: "2027-03-10",
      description: `A date after today in the company's time zone, at most ${MAX_SNOOZE_DAYS} days ahead; may be after the item's date`,
    }),
  })
  .openapi("SnoozeItem");

export type ItemActionStateOutput = z.infer<typeof ItemActionStateSchema>;
