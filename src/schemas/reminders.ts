import { z } from "@hono/zod-openapi";
import { idField, integerString, nullableEnum } from "../lib/schemas";
import { isCalendarDate } from "../lib/time";
import { CHANNELS } from "../company-clock/channels";
import { DELIVERY_STATES } from "../company-clock/store";
import {
  UNITS,
  checkRecipients,
  hourField,
  periodField,
  recipientFields,
  rtypeField,
  unitField,
} from "../company-clock/sequence-steps";

const Iso = z.string().openapi({ example: "2027-02-22T08:00:00.000Z", description: "UTC instant, ISO 8601" });

const DeliveryEntry = z
  .object({
    channel: z.string().openapi({
      example: "email",
      description: "email or sms, or the platform of a channel endpoint: slack, teams, google_chat, discord, ntfy",
    }),
    channel_id: z.number().int().nullable().openapi({
      example: null,
      description: "Extension: the channel endpoint of a delivery to one (docs/channels.md); null: a contact's",
    }),
    contact_id: z
      .number()
      .int()
      .nullable()
      .openapi({
        example: 42,
        description:
          "The recipient of this delivery: each contact a reminder goes to (the item's, " +
          "the reminder's, or each of its group's) is its own delivery. null while the " +
          "recipients are being resolved, or when there was nobody to send to",
      }),
    state: z.enum(DELIVERY_STATES).openapi({
      description:
        "pending: waiting for its (next) attempt; sent: handed to the provider; failed: " +
        "every attempt failed; no_recipient: nobody to send to " +
        "(no contact, or the contact has no address for the channel); skipped: the item was deleted before delivery; " +
        "bounced: a delivery status notification said the email failed (hard or soft); complained: its recipient " +
        "reported it as spam (docs/bounces.md); suppressed: not sent by the send gate, last_error says why " +
        "(unsubscribed, bounced, complained: the contact's email_status; channel_declined: the contact's channels " +
        "preference leaves the channel out (`chat` for a channel endpoint's message about the contact); " +
        "address_suppressed: the address bounced or complained for the company; channel_disabled: the channel " +
        "endpoint is disabled, by its owner or after the platform answered 404 or 410)",
    }),
    attempts: z.number().int(),
    recipient: z.string().nullable().openapi({ example: "anna@example.com" }),
    last_error: z.string().nullable(),
    delivered_at: Iso.nullable(),
    next_attempt_at: Iso.nullable(),
  })
  .openapi("ReminderDelivery");

export const ReminderEntry = z
  .object({
    reminder_id: z.number().int().openapi({ example: 17 }),
    date: z.string().openapi({ example: "2027-02-22", description: "Local date in the company's time zone" }),
    hour: z.string().openapi({ example: "09:00", description: "Local time HH:MM in the company's time zone" }),
    sent: z.boolean(),
    state: z.enum(["queued", "held", "sent"]).openapi({
      description:
        "Extension. held: waiting, but not to be sent while the item is completed or " +
        "archived, its occurrence is acknowledged (unless `always`), or it is snoozed " +
        "past this reminder",
    }),
    origin: z.enum(["sequence", "manual", "snooze"]).openapi({
      description:
        "Extension: from the item's reminder sequence, added through the API, or the one " +
        "reminder a snooze sends on its date",
    }),
    due_at: Iso.openapi({ description: "Extension: the UTC instant the date and hour resolve to" }),
    period: z.number().int().nullable().openapi({ description: "Extension: set when relative to the item's date" }),
    unit: nullableEnum(UNITS),
    rtype: z.number().int().nullable().openapi({ description: "1: before the item's date; 2: after" }),
    contact_id: z
      .number()
      .int()
      .openapi({
        description:
          "Extension: the recipient; 0 means the item's contact when it fires (or the " + "group's contacts)",
      }),
    group_id: z
      .number()
      .int()
      .nullable()
      .openapi({
        description:
          "Extension: the contact group it goes to (every contact of it, resolved when it " + "fires); null: none",
      }),
    channel_id: z
      .number()
      .int()
      .nullable()
      .openapi({
        description:
          "Extension: the channel endpoint it is posted to (Slack, Teams, Google Chat, Discord, ntfy; " +
          "then `channels` is its platform and no contact receives it); null: contacts",
      }),
    always: z.boolean().openapi({ description: "Extension: sent even when the item's occurrence is acknowledged" }),
    unless_acknowledged: z.boolean().openapi({
      description: "Extension: an escalation, fired only if nobody acknowledged the occurrence by " + "then",
    }),
    channels: z.array(z.string()).openapi({ example: ["email"] }),
    sent_at: Iso.nullable().openapi({ description: "Extension: when it was sent (null while queued)" }),
    deliveries: z
      .array(DeliveryEntry)
      .openapi({ description: "Extension: delivery state per channel and recipient (sent reminders)" }),
  })
  .openapi("ReminderEntry");

export const ItemRemindersSchema = z
  .object({
    queued: z.array(ReminderEntry).openapi({ description: "Waiting reminders, soonest first" }),
    sent: z.array(ReminderEntry).openapi({ description: "Sent reminders, newest first (the latest 100)" }),
  })
  .openapi("ItemReminders");

const date = z
  .string({ error: "date must be a date YYYY-MM-DD" })
  .max(10, { error: "date must be a date YYYY-MM-DD" })
  .refine(isCalendarDate, { error: "date must be a real calendar date YYYY-MM-DD" })
  .openapi({ example: "2027-02-22", description: "Local date in the company's time zone" });

const channels = z
  .array(z.enum(CHANNELS, { error: `channels must be a list of: ${CHANNELS.join(", ")}` }), {
    error: "channels must be an array of strings",
  })
  .max(CHANNELS.length, { error: `channels may list at most ${CHANNELS.length} channels` })
  .transform((list) => [...new Set(list)])
  .openapi({
    example: ["email"],
    description:
      "Default: email (when this deployment can send email). A channel this deployment cannot deliver is 400. " +
      "To post to a channel endpoint (Slack, Teams…), give channel_id instead.",
  });

const contactId = z
  .union([z.literal(0), idField("contact_id")], {
    error: "contact_id must be a positive integer, or 0 for the item's contact",
  })
  .openapi({
    type: "integer",
    minimum: 0,
    example: 42,
    description: "Recipient; default (and 0): the item's contact at sending time. Not with group_id.",
  });

const timeFields = {
  date: date.optional(),
  hour: hourField().optional(),
  period: periodField().optional(),
  unit: unitField().optional(),
  rtype: rtypeField().optional(),
};

function checkTime(
  v: { date?: string; period?: number; unit?: string; rtype?: number },
  ctx: z.RefinementCtx,
  required: boolean,
) {
  const relative = v.period !== undefined || v.unit !== undefined || v.rtype !== undefined;
  if (v.date !== undefined && relative) {
    ctx.addIssue({
      code: "custom",
      path: ["date"],
      message: "Give either date (with hour) or period, unit and rtype, not both",
    });
  } else if (required && v.date === undefined && !relative) {
    ctx.addIssue({ code: "custom", path: ["date"], message: "Give either date (with hour) or period, unit and rtype" });
  } else if (required && relative && (v.period === undefined || v.unit === undefined || v.rtype === undefined)) {
    ctx.addIssue({ code: "custom", path: ["period"], message: "A relative reminder needs period, unit and rtype" });
  }
}

/** A reminder to a channel endpoint goes there only: `channels` does not come with it. */
function checkChannelTarget(v: { channel_id?: number | null; channels?: string[] }, ctx: z.RefinementCtx) {
  if (v.channel_id && v.channels !== undefined)
    ctx.addIssue({
      code: "custom",
      path: ["channels"],
      message: "give channel_id or channels, not both: a reminder to a channel endpoint is posted there only",
    });
}

const recipients = {
  contact_id: contactId.optional(),
  group_id: recipientFields.group_id,
  channel_id: recipientFields.channel_id,
  unless_acknowledged: recipientFields.unless_acknowledged,
  always: recipientFields.always,
};

export const CreateReminderSchema = z
  .strictObject({ ...timeFields, ...recipients, channels: channels.optional() })
  .superRefine((v, ctx) => {
    checkTime(v, ctx, true);
    checkRecipients(v, ctx);
    checkChannelTarget(v, ctx);
  })
  .openapi("CreateReminder", {
    description:
      "Either an absolute `date` + `hour`, or `period` + `unit` + `rtype` relative to " +
      "the item's date; `hour` defaults to 09:00, local time in the company's time " +
      "zone.",
  });

export const UpdateReminderSchema = z
  .strictObject({ ...timeFields, ...recipients, channels: channels.optional() })
  .superRefine((v, ctx) => {
    checkTime(v, ctx, false);
    checkRecipients(v, ctx);
    checkChannelTarget(v, ctx);
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateReminder");

export type CreateReminderInput = z.infer<typeof CreateReminderSchema>;

export const ReminderParams = z.object({
  item_id: integerString("item_id must be a positive integer", 1).openapi({
    param: { name: "item_id", in: "path" },
    example: 7,
  }),
  reminder_id: integerString("reminder_id must be a positive integer", 1).openapi({
    param: { name: "reminder_id", in: "path" },
    example: 17,
  }),
});

export const TriggeredEntry = z
  .object({
    reminder_id: z.number().int(),
    item_id: z.number().int(),
    title: z.string().openapi({ description: "The item's title when the reminder was sent" }),
    date: z.string().openapi({ example: "2027-02-22" }),
    hour: z.string().openapi({ example: "09:00" }),
    due_at: Iso.openapi({ description: "Extension: the instant it was due" }),
    sent_at: Iso.openapi({ description: "Extension: when it was sent" }),
  })
  .openapi("TriggeredReminder");

export const TriggeredQuery = z.object({
  limit: integerString("limit must be an integer between 1 and 100", 1, 100)
    .optional()
    .default(20)
    .openapi({ param: { name: "limit", in: "query" }, example: 20, description: "1 to 100, default 20" }),
});
