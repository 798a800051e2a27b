import { z } from "@hono/zod-openapi";
import { isCalendarDate } from "../lib/time";
import {
  Timestamp,
  cleanText,
  idField,
  idQuery,
  integerString,
  optionalText,
  paginationQuery,
  requiredText,
  searchQuery,
} from "../lib/schemas";
import { ItemRemindersSchema } from "./reminders";
import { VIAS } from "../lib/actors";
import { CUSTOM_PERIOD, PERIODS, PERIOD_DESCRIPTION, isPeriod } from "../lib/period";
import { RECURRENCE_UNITS, RENEW_ON, UPCOMING, type RuleKey } from "../lib/recurrence";

export const ITEM_TYPES = ["exp", "due", "apt", "evt"] as const;
export const ITEM_STATUSES = ["pending", "completed"] as const;

const ItemType = z
  .enum(ITEM_TYPES)
  .openapi({ example: "exp", description: "exp: expiration, due: due date, apt: appointment, evt: event" });

export const ItemListEntrySchema = z
  .object({
    item_id: z.number().int().openapi({ example: 120 }),
    title: z.string().openapi({ example: "Fire safety certificate" }),
    item_type: ItemType,
    document_type: z
      .string()
      .openapi({ example: "Certificate", description: 'The document type\'s name; "" when the item has none' }),
    document_type_id: z.number().int().openapi({ example: 4, description: "0 when the item has no document type" }),
    deptid: z.number().int().openapi({ example: 1 }),
    expiry_date: z.string().openapi({ example: "2027-03-31" }),
    status: z.enum(ITEM_STATUSES).openapi({ example: "pending" }),
    folder_id: z.number().int().openapi({ example: 0, description: "0 means no folder" }),
    active: z.boolean().openapi({ example: true, description: "false when the item is archived" }),
  })
  .openapi("ItemListEntry");

const RECURRENCE_DESCRIPTION =
  "Renew the item by itself every `every` `unit`s: when it is completed " +
  "(`renew_on: completed`) or at the start of the day after its date " +
  "in the company's time zone (`renew_on: expired`). Occurrences count from the " +
  "rule's anchor day (Jan 31 monthly: Feb 28, Mar 31, ...). " +
  "`until` (inclusive) and `count` (automatic renewals left) end the rule. See docs/recurrence.md.";
const Every = z
  .number()
  .int()
  .min(1)
  .max(1000)
  .openapi({ example: 1, description: "How many units between occurrences, 1-1000" });
const Unit = z.enum(RECURRENCE_UNITS).openapi({ example: "month" });
const RenewOn = z.enum(RENEW_ON).openapi({
  example: "expired",
  description: "completed: when the item is marked completed; expired: at the start of the day " + "after its date",
});

export const RecurrenceSchema = z
  .object({
    every: Every,
    unit: Unit,
    renew_on: RenewOn,
    until: z
      .string()
      .nullable()
      .openapi({ format: "date", example: null, description: "The last date an occurrence may fall on; null: none" }),
    count: z
      .number()
      .int()
      .nullable()
      .openapi({ example: 12, description: "Automatic renewals left (0: the rule has ended); null: no limit" }),
  })
  .openapi("Recurrence", { description: RECURRENCE_DESCRIPTION });

export const ActionBySchema = z
  .object({
    type: z.enum(["contact", "channel", "client"]).openapi({
      example: "contact",
      description:
        "contact: a recipient, from a reminder email's page; channel: someone in a channel endpoint, " +
        "from the links of a reminder posted there (GET /v1/channels/{channel_id}); client: an API client",
    }),
    id: z.union([z.number().int(), z.string()]).openapi({
      example: 42,
      description: "The contact's or the channel's id (an integer), or the API client's client_id (a string)",
    }),
  })
  .openapi("ActionBy");

export const AcknowledgementSchema = z
  .object({
    at: z
      .string()
      .openapi({ example: "2027-02-22T09:14:03.120Z", description: "When it was acknowledged (UTC, RFC 3339)" }),
    by: ActionBySchema,
    via: z.enum(VIAS).openapi({
      example: "link",
      description:
        "link: from the reminder email's page; slack, teams, google_chat, discord, ntfy: from the page " +
        "a reminder posted to a channel of that type links to (by: the channel); api: through the API",
    }),
    note: z.string().nullable().openapi({
      example: "Booked the inspector for March 3",
      description: "What the acknowledger wrote; null: nothing",
    }),
  })
  .openapi("Acknowledgement", { description: "The acknowledgement of the item's current occurrence" });

export const ItemDetailSchema = ItemListEntrySchema.extend({
  tags: z.array(z.string()).openapi({ example: ["fire", "building A"] }),
  reminders: ItemRemindersSchema,
  notes: z
    .string()
    .openapi({ example: "Renew with the city office", description: "Extension: the input field, as stored" }),
  contact_id: z.number().int().openapi({ example: 42, description: "Extension: whom reminders go to; 0 for none" }),
  seqid: z.number().int().openapi({ example: 0, description: "Extension: the reminder sequence; 0 for none" }),
  renewals: z
    .array(
      z.object({
        previous_date: z.string(),
        new_date: z.string(),
        renewed_at: Timestamp,
        automatic: z.boolean().openapi({ description: "true when the item's recurrence rule renewed it" }),
        reason: z.enum(["manual", "completed", "expired"]).openapi({
          description:
            "manual: POST /v1/items/{item_id}/renew; completed: the rule renewed it when it " +
            "was completed; expired: the rule renewed it when its date passed",
        }),
      }),
    )
    .openapi({ description: "Extension: the renewal history, oldest first" }),
  add_date: Timestamp,
  external_id: z
    .string()
    .nullable()
    .openapi({
      example: "CERT-2041",
      description: "Extension: the client's own key of the item (unique in the company); null when " + "none",
    }),
  fields: z.array(z.object({ autonum: z.number().int(), field_name: z.string(), value: z.string() })).openapi({
    description: "Extension: the item's custom field values (set by imports), in the document " + "type's field order",
  }),
  recurrence: RecurrenceSchema.nullable().openapi({
    description: "The item's recurrence rule; null for an item that does not recur",
  }),
  acknowledgement: AcknowledgementSchema.nullable().openapi({
    description:
      "Extension: the acknowledgement of the current occurrence (POST " +
      "/v1/items/{item_id}/acknowledge, or a recipient's \"I'm on it\"); null: none. A " +
      "renewal starts the next occurrence unacknowledged.",
  }),
  snoozed_until: z
    .string()
    .nullable()
    .openapi({
      format: "date",
      example: null,
      description:
        "Extension: the current occurrence's reminders wait until this date (company " +
        "time zone); null: not snoozed, or the date has passed",
    }),
  next_occurrences: z.array(z.string().openapi({ format: "date" })).openapi({
    example: ["2027-04-30", "2027-05-31", "2027-06-30"],
    description: `The next ${UPCOMING} dates the rule will renew the item to, after its current date (fewer when until or count end the rule first; [] without a rule)`,
  }),
}).openapi("ItemDetail");

export const CreatedItemSchema = z
  .object({ item_id: z.number().int(), title: z.string(), expiry_date: z.string(), item_type: ItemType })
  .openapi("CreatedItem");

/** A real calendar date `YYYY-MM-DD`. */
export const calendarDate = (field: string) =>
  z
    .string({
      error: (issue) => (issue.input === undefined ? `${field} is required` : `${field} must be a date YYYY-MM-DD`),
    })
    .refine(isCalendarDate, { error: `${field} must be a real calendar date YYYY-MM-DD (years 1900-9999)` })
    .openapi({ type: "string", format: "date", example: "2027-03-31" });

const whole = (field: string, min: number, max: number) =>
  z
    .number({ error: `${field} must be an integer from ${min} to ${max}` })
    .int({ error: `${field} must be an integer from ${min} to ${max}` })
    .min(min, { error: `${field} must be an integer from ${min} to ${max}` })
    .max(max, { error: `${field} must be an integer from ${min} to ${max}` });

/**
 * The checks of a rule's values, their messages naming each value `name(key)`: `recurrence.every`
 * in the API, the column `recurrence_every` in imports. `until` is a date, checked by each.
 */
export const ruleValueChecks = (name: (key: RuleKey) => string) => ({
  every: whole(name("every"), 1, 1000),
  unit: z.enum(RECURRENCE_UNITS, { error: `${name("unit")} must be one of: ${RECURRENCE_UNITS.join(", ")}` }),
  renew_on: z.enum(RENEW_ON, { error: `${name("renew_on")} must be one of: ${RENEW_ON.join(", ")}` }),
  count: whole(name("count"), 0, 10000),
});
const ruleInput = ruleValueChecks((key) => `recurrence.${key}`);

export const RecurrenceInputSchema = z
  .strictObject({
    every: ruleInput.every.openapi({ example: 1, description: "How many units between occurrences, 1-1000" }),
    unit: ruleInput.unit.openapi({ example: "month" }),
    renew_on: ruleInput.renew_on.openapi({
      example: "expired",
      description: "completed: when the item is marked completed; expired: at the start of the day " + "after its date",
    }),
    until: calendarDate("recurrence.until")
      .nullable()
      .optional()
      .openapi({ description: "The last date an occurrence may fall on (inclusive); not before the item's date" }),
    count: ruleInput.count
      .nullable()
      .optional()
      .openapi({ example: 12, description: "Automatic renewals left; null or absent: no limit" }),
  })
  .openapi("RecurrenceInput", { description: RECURRENCE_DESCRIPTION });

const recurrenceField = RecurrenceInputSchema.nullable().optional();

const title = requiredText("title", 200).openapi({ example: "Fire safety certificate" });
export const externalIdField = requiredText("external_id", 255).openapi({
  example: "CERT-2041",
  description:
    "Extension: your own key for the item, unique in the company (409 when another " +
    "item has it); imports update the item by it",
});
const notes = optionalText("notes", 5000, { multiline: true }).openapi({ example: "Renew with the city office" });
/** An id that may be 0 to mean "none" (clears the reference on PATCH). */
const optionalRef = (field: string) =>
  z
    .number({ error: `${field} must be an integer` })
    .int({ error: `${field} must be an integer` })
    .min(0, { error: `${field} must be 0 (none) or an id` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${field} is too large` });

export const CreateItemSchema = z
  .strictObject({
    title,
    expiry_date: calendarDate("expiry_date"),
    item_type: z
      .enum(ITEM_TYPES, { error: `item_type must be one of: ${ITEM_TYPES.join(", ")}` })
      .optional()
      .openapi({ description: "Default exp" }),
    document_type_id: idField("document_type_id").optional(),
    document_type: requiredText("document_type", 100)
      .optional()
      .openapi({
        description:
          "A document type name of the company (case-insensitive); unknown is 400. With " +
          "document_type_id, both must name the same type.",
      }),
    deptid: idField("deptid")
      .optional()
      .openapi({ description: "Default: the document type's department, else the company's default department" }),
    folder_id: idField("folder_id").optional(),
    folder_path: cleanText("folder_path")
      .max(1100, { error: "folder_path must be at most 1100 characters" })
      .optional()
      .openapi({
        example: "Permits/City",
        description:
          "Creates missing folders like mkdir -p, reusing existing ones by name; not " + "together with folder_id",
      }),
    contact_id: idField("contact_id").optional().openapi({ description: "The contact reminders go to" }),
    seqid: z
      .union([z.literal(0), idField("seqid")], {
        error: "seqid must be a positive integer, or 0 for no reminder sequence",
      })
      .optional()
      .openapi({
        type: "integer",
        minimum: 0,
        description:
          "Reminder sequence of the company (GET /v1/reminder-sequences); default: the " +
          "company's default sequence; 0: none. Unknown is 400.",
      }),
    notes,
    external_id: externalIdField.optional(),
    recurrence: recurrenceField.openapi({
      description: "Extension: renew the item by itself (docs/recurrence.md); null or absent: it " + "does not recur",
    }),
  })
  .superRefine((v, ctx) => {
    if (v.folder_id !== undefined && v.folder_path !== undefined) {
      ctx.addIssue({ code: "custom", path: ["folder_path"], message: "folder_path cannot be combined with folder_id" });
    }
    if (v.recurrence?.until && v.recurrence.until < v.expiry_date) {
      ctx.addIssue({
        code: "custom",
        path: ["recurrence", "until"],
        message: "recurrence.until must not be earlier than expiry_date",
      });
    }
  })
  .openapi("CreateItem");

export const UpdateItemSchema = z
  .strictObject({
    title: title.optional(),
    notes,
    expiry_date: calendarDate("expiry_date").optional(),
    folder_id: optionalRef("folder_id").optional().openapi({ description: "0 takes the item out of its folder" }),
    document_type_id: optionalRef("document_type_id")
      .optional()
      .openapi({ description: "0 removes the document type" }),
    contact_id: optionalRef("contact_id").optional().openapi({ description: "Extension; 0 removes the contact" }),
    item_type: z
      .enum(ITEM_TYPES, { error: `item_type must be one of: ${ITEM_TYPES.join(", ")}` })
      .optional()
      .openapi({ description: "Extension" }),
    reschedule_reminders: z
      .boolean({ error: "reschedule_reminders must be a boolean" })
      .optional()
      .openapi({ description: "With a new expiry_date: recompute the reminders that are relative to the date" }),
    external_id: externalIdField
      .nullable()
      .optional()
      .openapi({
        description: "Extension: your own key of the item (409 when another item has it); null " + "removes it",
      }),
    recurrence: recurrenceField.openapi({
      description:
        "Extension: sets the rule (docs/recurrence.md); null removes it. A new every or " +
        "unit, or a new expiry_date, counts occurrences from the item's date.",
    }),
  })
  .refine((v) => Object.entries(v).some(([k, x]) => x !== undefined && k !== "reschedule_reminders"), {
    error: "No updatable fields provided",
  })
  .openapi("UpdateItem");

export const ItemStatusSchema = z
  .strictObject({
    status: z.enum(ITEM_STATUSES, {
      error: (i) => (i.input === undefined ? "status is required" : "status must be completed or pending"),
    }),
    expiry_date: calendarDate("expiry_date")
      .optional()
      .openapi({
        description:
          "Extension: the occurrence this change is for, the item's `expiry_date` as the " +
          "client read it. The change applies only while the item " +
          "is still so dated; otherwise 409 naming the item's current date, and nothing is changed.",
      }),
  })
  .openapi("ItemStatus");

export const ItemArchiveSchema = z
  .strictObject({
    archived: z.boolean({ error: "archived must be a boolean" }).optional().openapi({ description: "Default true" }),
  })
  .openapi("ItemArchive");

export const RenewItemSchema = z
  .strictObject({
    expiry_date: calendarDate("expiry_date")
      .optional()
      .openapi({ description: "Must be later than the current date; default: one year later" }),
  })
  .openapi("RenewItem");

const choice = <T extends readonly [string, ...string[]]>(field: string, values: T, fallback: T[number]) =>
  z
    .enum(values, { error: `${field} must be one of: ${values.join(", ")}` })
    .default(fallback)
    .openapi({ param: { name: field, in: "query" }, default: fallback });

export const ListItemsQuery = z.object({
  ...paginationQuery(200, 50),
  deptid: idQuery("deptid"),
  document_type_id: idQuery("document_type_id"),
  contact_id: idQuery("contact_id"),
  folder_id: integerString("folder_id must be 0 (items in no folder) or a folder id", 0)
    .optional()
    .openapi({ param: { name: "folder_id", in: "query" }, description: "A folder id, or 0 for items in no folder" }),
  item_type: choice("item_type", [...ITEM_TYPES, "all"] as const, "all"),
  status: choice("status", ["any", ...ITEM_STATUSES] as const, "any"),
  archived: choice("archived", ["false", "true", "any"] as const, "false").openapi({
    description: "Extension: archived items are left out unless `true` (only archived) or `any`",
  }),
  period: cleanText("period")
    .max(30, { error: "period must be at most 30 characters" })
    .refine(isPeriod, { error: `period must be one of: ${PERIODS.join(", ")}, or a range YYYY-MM-DD..YYYY-MM-DD` })
    .optional()
    .openapi({
      // In place of the generated string schema: what isPeriod accepts, in a form client generators
      // validate (a named period, or the range form).
      param: {
        name: "period",
        in: "query",
        schema: {
          anyOf: [
            { type: "string", enum: [...PERIODS] },
            { type: "string", pattern: CUSTOM_PERIOD.source },
          ],
          example: "next_30_days",
        },
      },
      description: PERIOD_DESCRIPTION,
    }),
  q: searchQuery.openapi({
    description: "Word-prefix search over title and notes; every word must match (case- and accent-insensitive).",
  }),
  recurring: z
    .enum(["true", "false"], { error: "recurring must be true or false" })
    .optional()
    .openapi({
      param: { name: "recurring", in: "query" },
      description: "Extension: true, only items with a recurrence rule; false, only items without " + "one",
    }),
  acknowledged: z
    .enum(["true", "false"], { error: "acknowledged must be true or false" })
    .optional()
    .openapi({
      param: { name: "acknowledged", in: "query" },
      description:
        "Extension: true, only items whose current occurrence is acknowledged; false, " + "only those not acknowledged",
    }),
  external_id: cleanText("external_id")
    .max(255, { error: "external_id must be at most 255 characters" })
    .optional()
    .openapi({
      param: { name: "external_id", in: "query" },
      description: "Extension: only the item with this external_id",
    }),
  cursor: cleanText("cursor")
    .max(100, { error: "cursor is invalid" })
    .optional()
    .openapi({
      param: { name: "cursor", in: "query" },
      description: "Extension: `meta.next_cursor` of the previous page (keyset pagination; offset " + "must be 0)",
    }),
});

export const ItemListEnvelope = z
  .object({
    success: z.literal(true),
    data: z.array(ItemListEntrySchema),
    meta: z.object({
      total: z.number().int(),
      limit: z.number().int(),
      offset: z.number().int(),
      total_exact: z.boolean().openapi({
        description:
          "false when a filtered list has more than 10,000 matches (1,000 with q): total " + "is then that lower bound",
      }),
      next_cursor: z
        .string()
        .nullable()
        .openapi({ description: "Pass as `cursor` for the next page; null on the last page" }),
    }),
  })
  .openapi("ItemList");

export type ItemListEntry = z.infer<typeof ItemListEntrySchema>;
export type ItemDetail = z.infer<typeof ItemDetailSchema>;
export type Acknowledgement = z.infer<typeof AcknowledgementSchema>;
export type CreateItemInput = z.infer<typeof CreateItemSchema>;
export type UpdateItemInput = z.infer<typeof UpdateItemSchema>;
export type ListItemsInput = z.infer<typeof ListItemsQuery>;
export type RecurrenceInput = z.infer<typeof RecurrenceInputSchema>;
