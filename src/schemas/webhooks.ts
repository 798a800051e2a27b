import { z } from "@hono/zod-openapi";
import { Timestamp, cleanText, nullableEnum, optionalText } from "../lib/schemas";
import { EVENT_TYPES, EventTypeSchema, EventsInput, type EventType } from "../webhooks/events";
import { MAX_URL_CHARS } from "../webhooks/urls";
import { VIAS } from "../lib/actors";
import { AcknowledgementSchema, ActionBySchema, ItemListEntrySchema } from "./items";
import { ReminderEntry } from "./reminders";
import { TaskSchema } from "./tasks";
import { ChannelSchema } from "./channels";

/** Most endpoints per company (checked inside the INSERT). */
export const MAX_ENDPOINTS = 10;
/** How long the previous secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3_600_000;
export const MAX_DESCRIPTION_CHARS = 500;

export const ENDPOINT_STATUSES = ["active", "failing", "disabled"] as const;

const Iso = z.string().openapi({ example: "2026-03-01T09:00:00.000Z", description: "UTC instant, ISO 8601" });

// ---- output ----

export const WebhookEndpointSchema = z
  .object({
    webhook_id: z.number().int().openapi({ example: 3 }),
    url: z.string().openapi({
      example: "https://hooks.example.com/expiry",
      description:
        "The URL as the WHATWG URL parser normalises it (lowercase scheme and host, no " +
        "default port, dot segments resolved, percent-encoded): the one deliveries go to",
    }),
    description: z.string().openapi({ example: "Ops dashboard", description: '"" when none' }),
    events: z.array(z.string()).openapi({
      example: ["item.created", "reminder.sent"],
      description: 'The subscribed event types (see WebhookEventType), or ["*"] for every type',
    }),
    enabled: z.boolean().openapi({ example: true }),
    status: z.enum(ENDPOINT_STATUSES).openapi({
      example: "active",
      description:
        "active: enabled, and its last delivery did not fail; failing: enabled, and " +
        "every delivery has failed since failing_since; disabled: enabled is false (by a " +
        "PATCH, or automatically after failing for 5 days: see disabled_reason)",
    }),
    disabled_reason: z
      .string()
      .nullable()
      .openapi({
        example: null,
        description:
          '"failing for 5 days" when the service disabled it, "url not allowed on this ' +
          'deployment: <rule>" when its URL failed the URL rules at send time (checked before ' +
          'every delivery), "disabled by the account owner" after a PATCH enabled=false; null ' +
          "while enabled",
      }),
    failing_since: Iso.nullable().openapi({
      example: null,
      description:
        "Since when every delivery to it has failed; null when its last delivery " + "succeeded (or none was made)",
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("WebhookEndpoint");

export const WebhookEndpointWithSecretSchema = WebhookEndpointSchema.extend({
  secret: z.string().openapi({
    example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    description:
      "The signing secret (Standard Webhooks: `whsec_` + base64 of 32 bytes). Shown " +
      "only here, at creation and rotation: store it, it cannot be read again.",
  }),
}).openapi("WebhookEndpointWithSecret");

export const WebhookListMeta = z
  .object({
    total: z.number().int().openapi({ example: 1, description: "The company's endpoints (all of them are in data)" }),
    max_allowed: z.number().int().openapi({ example: MAX_ENDPOINTS, description: "Most endpoints a company may have" }),
  })
  .openapi("WebhookEndpointListMeta");

export const WebhookListEnvelope = z
  .object({ success: z.literal(true), data: z.array(WebhookEndpointSchema), meta: WebhookListMeta })
  .openapi("WebhookEndpointList");

export const WebhookTestResultSchema = z
  .object({
    delivery_id: z
      .number()
      .int()
      .openapi({ example: 57, description: "The delivery, as listed by GET /v1/webhooks/{webhook_id}/deliveries" }),
    message_id: z
      .string()
      .openapi({ example: "msg_2Xb1tQ9oQqGm6pJc0Zr8Vw", description: "The `webhook-id` header of the test event" }),
  })
  .openapi("WebhookTestResult");

// ---- input ----

const URL_RULES = `An absolute https URL of at most ${MAX_URL_CHARS} characters on the default port, without credentials (user:password@) or a backslash before its path, whose host is a public name or address: loopback, private, link-local, carrier-grade NAT, unique-local, multicast, documentation, benchmarking, reserved and unspecified addresses (IPv4 and IPv6, including the IPv6 forms that embed an IPv4 address: IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo, ISATAP), localhost, *.localhost, *.local, *.internal, single-label hosts, names with an empty label (host..) and cloud metadata hosts are refused (400 naming the rule). Stored and returned as the URL parser normalises it (HTTPS://Example.COM:443/a/../b becomes https://example.com/b). A deployment with WEBHOOKS_ALLOW_PRIVATE_URLS="true" (local development) also accepts http, any port but 0 and loopback hosts (127.0.0.1, [::1], localhost).`;

const urlField = cleanText("url")
  .min(1, { error: "url must not be empty", abort: true })
  .max(MAX_URL_CHARS, { error: `url must be at most ${MAX_URL_CHARS} characters` })
  .openapi({ example: "https://hooks.example.com/expiry", description: URL_RULES });

const descriptionField = optionalText("description", MAX_DESCRIPTION_CHARS).openapi({
  example: "Ops dashboard",
  description: `At most ${MAX_DESCRIPTION_CHARS} characters; default ""`,
});

const enabledField = z.boolean({ error: "enabled must be true or false" });

export const CreateWebhookSchema = z
  .strictObject({
    url: urlField,
    events: EventsInput,
    description: descriptionField,
    enabled: enabledField
      .optional()
      .openapi({ example: true, description: "Default true; a disabled endpoint receives nothing" }),
  })
  .openapi("CreateWebhook");

export const UpdateWebhookSchema = z
  .strictObject({
    url: urlField.optional(),
    events: EventsInput.optional(),
    description: descriptionField,
    enabled: enabledField.optional().openapi({
      example: true,
      description:
        "true on a disabled endpoint enables it again and clears disabled_reason and " +
        "failing_since; false disables it",
    }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateWebhook");

export type WebhookEndpointOutput = z.infer<typeof WebhookEndpointSchema>;
export type CreateWebhookInput = z.infer<typeof CreateWebhookSchema>;
export type UpdateWebhookInput = z.infer<typeof UpdateWebhookSchema>;

// ---- event payloads (published as components; OpenAPI 3.0.3 has no `webhooks` section) ----

/** A person's or a program's action on an item's current occurrence (src/records/items/actions.ts). */
export const ITEM_ACTION_EVENT_TYPES = [
  "item.acknowledged",
  "item.unacknowledged",
  "item.snoozed",
  "item.unsnoozed",
] as const satisfies readonly EventType[];
/** A change of an item (an UPDATE of its row): who made it how rides along (`by`, `via`). */
export const ITEM_CHANGE_EVENT_TYPES = [
  "item.updated",
  "item.renewed",
  "item.status_changed",
  "item.archived",
  "item.restored",
] as const satisfies readonly EventType[];
const ITEM_EVENT_TYPES = EVENT_TYPES.filter(
  (t) =>
    t.startsWith("item.") &&
    !(ITEM_ACTION_EVENT_TYPES as readonly string[]).includes(t) &&
    !(ITEM_CHANGE_EVENT_TYPES as readonly string[]).includes(t),
) as EventType[];
const TASK_EVENT_TYPES = EVENT_TYPES.filter((t) => t.startsWith("task.")) as EventType[];

const eventTimestamp = Iso.openapi({
  description: "When the event happened (UTC, ISO 8601); the webhook-timestamp header is the " + "time of the attempt",
});

const ItemExample = {
  item_id: 120,
  title: "Fire safety certificate",
  item_type: "exp",
  document_type: "Certificate",
  document_type_id: 4,
  deptid: 1,
  expiry_date: "2027-03-31",
  status: "pending",
  folder_id: 0,
  active: true,
};

const WebhookReminderSchema = ReminderEntry.omit({ deliveries: true }).openapi("WebhookReminder", {
  description: "The reminder as GET /v1/items/{item_id}/reminders lists it under sent[], without deliveries",
});

/** Who acted how on an item (the batch's actor): `by` and `via`, null and null for the service itself. */
const actorFields = (example: "api" | "link") => ({
  // Inline, not a $ref: a nullable reference is published as allOf without a type.
  by: z
    .object(ActionBySchema.shape)
    .nullable()
    .openapi({
      description:
        "Who acted: an API client, a contact (from a reminder email's page) or a channel endpoint (from the " +
        "links of a reminder posted to it: someone in that channel); null: the service itself (e.g. a " +
        "recurrence rule's renewal)",
    }),
  via: nullableEnum(VIAS).openapi({
    example,
    description:
      "How: api, link (a reminder email's page), or slack, teams, google_chat, discord, ntfy (the page a " +
      "reminder posted to a channel of that type links to; by is the channel); null: the service",
  }),
});

export const WebhookItemEventSchema = z
  .object({
    type: z.enum(ITEM_EVENT_TYPES as [EventType, ...EventType[]]).openapi({ example: "item.created" }),
    timestamp: eventTimestamp,
    data: ItemListEntrySchema,
  })
  .openapi("WebhookItemEvent", {
    description:
      "item.created, item.deleted (the entry as it was) and item.expired: data is the item entry of GET /v1/items",
  });

export const WebhookItemChangeEventSchema = z
  .object({
    type: z.enum(ITEM_CHANGE_EVENT_TYPES).openapi({ example: "item.status_changed" }),
    timestamp: eventTimestamp,
    data: ItemListEntrySchema.extend({
      ...actorFields("api"),
    }).openapi("WebhookItemChangeData"),
  })
  .openapi("WebhookItemChangeEvent", {
    description:
      "item.updated, item.renewed, item.status_changed, item.archived, item.restored: the item entry after " +
      "the change, and who made it how",
  });

export const WebhookReminderSentEventSchema = z
  .object({
    type: z.enum(["reminder.sent"]),
    timestamp: eventTimestamp,
    data: z.object({
      reminder: WebhookReminderSchema,
      // Inline (a nullable $ref is not valid OpenAPI 3.0): the ItemListEntry fields, or null.
      item: z
        .object(ItemListEntrySchema.shape)
        .nullable()
        .openapi({ description: "The item entry when the event was sent; null if the item was deleted meanwhile" }),
    }),
  })
  .openapi("WebhookReminderSentEvent", {
    description: 'A reminder fired, whatever its channels (channels ["webhook"]: only this event, ' + "no email)",
  });

export const WebhookReminderBouncedEventSchema = z
  .object({
    type: z.enum(["reminder.bounced"]),
    timestamp: eventTimestamp,
    data: z.object({
      delivery: z.object({
        reminder_id: z.number().int().openapi({ example: 311 }),
        channel: z.enum(["email"]),
        contact_id: z.number().int().openapi({ example: 42 }),
        state: z.enum(["bounced", "complained"]),
      }),
      item: z
        .object(ItemListEntrySchema.shape)
        .nullable()
        .openapi({ description: "The item entry when the event was sent; null if the item was deleted meanwhile" }),
      contact: z.object({
        contact_id: z.number().int().openapi({ example: 42 }),
        email: z.string().openapi({ example: "anna@example.com" }),
      }),
      kind: z.enum(["hard", "soft", "complaint"]),
      status: z.string().openapi({
        example: "5.1.1",
        description: "The DSN's enhanced status code, or the complaint's Feedback-Type (abuse, fraud, ...)",
      }),
      reason: z.string().openapi({ example: "smtp; 550 5.1.1 user unknown" }),
      suppressed: z.boolean().openapi({
        description:
          "Whether the address is now suppressed for the company (hard bounce, complaint, 3 soft in 30 days)",
      }),
      at: Iso,
    }),
  })
  .openapi("WebhookReminderBouncedEvent", {
    description: "A reminder email bounced or its recipient complained (docs/bounces.md)",
  });

export const WebhookTaskEventSchema = z
  .object({
    type: z.enum(TASK_EVENT_TYPES as [EventType, ...EventType[]]).openapi({ example: "task.created" }),
    timestamp: eventTimestamp,
    data: TaskSchema,
  })
  .openapi("WebhookTaskEvent", {
    description:
      "task.created, task.updated, task.deleted (the task as it was): data is the task " + "of GET /v1/tasks/{task_id}",
  });

export const WebhookFileUploadedEventSchema = z
  .object({
    type: z.enum(["file.uploaded"]),
    timestamp: eventTimestamp,
    data: z.object({
      file_id: z.string().openapi({ example: "fil_Xb3kq9ZrT0aW5mLpQe1uYg" }),
      file_name: z.string().openapi({ example: "Fire certificate 2026.pdf" }),
      size_bytes: z.number().int().openapi({ example: 12697 }),
      content_type: z.string().openapi({ example: "application/pdf" }),
    }),
  })
  .openapi("WebhookFileUploadedEvent", { description: "A file upload completed (PUT /v1/uploads)" });

export const WebhookContactUnsubscribedEventSchema = z
  .object({
    type: z.enum(["contact.unsubscribed"]),
    timestamp: eventTimestamp,
    data: z.object({
      contact_id: z.number().int().openapi({ example: 42 }),
      firstname: z.string().openapi({ example: "Ada" }),
      lastname: z.string().openapi({ example: "Lovelace" }),
      email: z.string().openapi({ example: "ada@example.com" }),
      email_status: z.enum(["unsubscribed"]),
      email_status_changed_at: z.string().openapi({ example: "2027-03-02T07:41:09.220Z" }),
      via: z.enum(["link"]).openapi({ description: "link: the contact's unsubscribe link (one-click or its page)" }),
    }),
  })
  .openapi("WebhookContactUnsubscribedEvent", {
    description: "A contact unsubscribed from the company's reminder emails through its email's unsubscribe link",
  });

export const WebhookChannelDisabledEventSchema = z
  .object({
    type: z.enum(["channel.disabled"]),
    timestamp: eventTimestamp,
    data: z.object({
      channel: ChannelSchema,
      status: z
        .number()
        .int()
        .nullable()
        .openapi({ example: 404, description: "The platform's HTTP status; null: no request was made (URL refused)" }),
    }),
  })
  .openapi("WebhookChannelDisabledEvent", {
    description: "A channel endpoint was disabled by the service after its platform said its webhook is gone",
  });

export const WebhookTestEventSchema = z
  .object({
    type: z.enum(["webhook.test"]),
    timestamp: eventTimestamp,
    data: z.object({
      webhook_id: z.number().int().openapi({ example: 3 }),
      message: z.string().openapi({ example: "A test event sent by POST /v1/webhooks/{webhook_id}/test" }),
    }),
  })
  .openapi("WebhookTestEvent", { description: "Sent by POST /v1/webhooks/{webhook_id}/test to that endpoint only" });

export const WebhookItemActionEventSchema = z
  .object({
    type: z.enum(ITEM_ACTION_EVENT_TYPES).openapi({ example: "item.acknowledged" }),
    timestamp: eventTimestamp,
    data: ItemListEntrySchema.extend({
      acknowledgement: AcknowledgementSchema.nullable().openapi({
        description: "The acknowledgement of the current occurrence after the action; null: none",
      }),
      snoozed_until: z.string().nullable().openapi({
        format: "date",
        example: null,
        description: "The current occurrence's snooze after the action; null: none",
      }),
      ...actorFields("link"),
    }).openapi("WebhookItemActionData"),
  })
  .openapi("WebhookItemActionEvent", {
    description:
      "item.acknowledged, item.unacknowledged, item.snoozed, item.unsnoozed: the item " +
      "entry with the occurrence's acknowledgement and snooze after the action, and " +
      "who acted how",
  });

export const WebhookPayloadSchema = z
  .discriminatedUnion("type", [
    WebhookItemEventSchema,
    WebhookItemChangeEventSchema,
    WebhookItemActionEventSchema,
    WebhookReminderSentEventSchema,
    WebhookReminderBouncedEventSchema,
    WebhookTaskEventSchema,
    WebhookFileUploadedEventSchema,
    WebhookContactUnsubscribedEventSchema,
    WebhookChannelDisabledEventSchema,
    WebhookTestEventSchema,
  ])
  .openapi("WebhookPayload", {
    description:
      "The JSON body POSTed to an endpoint: {type, timestamp, data} (Standard " +
      "Webhooks), signed in the webhook-id, webhook-timestamp and webhook-signature " +
      "headers. `data` has the shape of the API's own output for the record.",
  });

export const WebhookEventTypeInfoSchema = z
  .object({
    type: EventTypeSchema,
    description: z.string().openapi({ example: "An item was created; data: the item entry." }),
    example: WebhookPayloadSchema,
  })
  .openapi("WebhookEventTypeInfo");

export const WebhookEventTypeListEnvelope = z
  .object({ success: z.literal(true), data: z.array(WebhookEventTypeInfoSchema) })
  .openapi("WebhookEventTypeList");

// ---- example payloads (the catalogue route) ----

const TaskExample = {
  task_id: 17,
  public_id: "tsk_3kTMd9Qx0bW2yV7pLr5A",
  title: "Book the fire inspection",
  description: "",
  status: "open",
  priority: "normal",
  due_at: "2027-03-31 09:00:00",
  ownerid: 1,
  assignee_type: "",
  assignee_id: 0,
  item_id: 120,
  add_date: "2026-03-01 09:00:00",
  updated_at: "2026-03-01 09:00:00",
};

const ReminderExample = {
  reminder_id: 17,
  date: "2027-03-01",
  hour: "09:00",
  sent: true,
  state: "sent",
  origin: "sequence",
  due_at: "2027-03-01T08:00:00.000Z",
  period: 30,
  unit: "day",
  rtype: 1,
  contact_id: 0,
  group_id: null,
  channel_id: null,
  always: false,
  unless_acknowledged: false,
  channels: ["email"],
  sent_at: "2027-03-01T08:00:00.412Z",
};

const AcknowledgementExample = {
  at: "2027-03-02T07:41:09.220Z",
  by: { type: "contact", id: 42 },
  via: "link",
  note: "Booked the inspector for March 3",
};

export type WebhookPayload = z.infer<typeof WebhookPayloadSchema>;

/** A sample `data` for each type. */
function exampleData(type: EventType): unknown {
  if (type === "reminder.sent") return { reminder: ReminderExample, item: ItemExample };
  if (type === "reminder.bounced")
    return {
      delivery: { reminder_id: ReminderExample.reminder_id, channel: "email", contact_id: 42, state: "bounced" },
      item: ItemExample,
      contact: { contact_id: 42, email: "anna@example.com" },
      kind: "hard",
      status: "5.1.1",
      reason: "smtp; 550 5.1.1 The email account that you tried to reach does not exist.",
      suppressed: true,
      at: "2027-03-01T08:00:04.120Z",
    };
  if (type === "file.uploaded")
    return {
      file_id: "fil_Xb3kq9ZrT0aW5mLpQe1uYg",
      file_name: "Fire certificate 2026.pdf",
      size_bytes: 12697,
      content_type: "application/pdf",
    };
  if (type === "contact.unsubscribed")
    return {
      contact_id: 42,
      firstname: "Ada",
      lastname: "Lovelace",
      email: "ada@example.com",
      email_status: "unsubscribed",
      email_status_changed_at: "2027-03-02T07:41:09.220Z",
      via: "link",
    };
  if (type === "channel.disabled")
    return {
      channel: {
        channel_id: 3,
        type: "slack",
        name: "#facilities",
        url: "https://hooks.slack.com/…Xk9Q",
        has_access_token: false,
        language: null,
        disabled: true,
        disabled_reason: "the platform answered HTTP 404 to a reminder: the webhook no longer exists",
        created_at: "2026-11-02 09:12:44",
        updated_at: "2027-03-01 08:00:01",
      },
      status: 404,
    };
  if (type === "webhook.test")
    return { webhook_id: 3, message: "A test event sent by POST /v1/webhooks/{webhook_id}/test" };
  if (type.startsWith("task.")) return TaskExample;
  const api = { by: { type: "client", id: "ck_erp_sync" }, via: "api" };
  if (type === "item.archived") return { ...ItemExample, active: false, ...api };
  if (type === "item.status_changed")
    return { ...ItemExample, status: "completed", by: { type: "channel", id: 3 }, via: "slack" };
  if (type === "item.renewed") return { ...ItemExample, expiry_date: "2028-03-31", by: null, via: null };
  if ((ITEM_CHANGE_EVENT_TYPES as readonly string[]).includes(type)) return { ...ItemExample, ...api };
  const by = { type: "contact", id: 42 };
  if (type === "item.acknowledged")
    return { ...ItemExample, acknowledgement: AcknowledgementExample, snoozed_until: null, by, via: "link" };
  if (type === "item.unacknowledged")
    return {
      ...ItemExample,
      acknowledgement: null,
      snoozed_until: null,
      by: { type: "client", id: "ck_erp_sync" },
      via: "api",
    };
  if (type === "item.snoozed")
    return {
      ...ItemExample,
      acknowledgement: null,
      snoozed_until: "2027-03-10",
      by: { type: "channel", id: 7 },
      via: "slack",
    };
  if (type === "item.unsnoozed") return { ...ItemExample, acknowledgement: null, snoozed_until: null, by, via: "link" };
  return ItemExample;
}

/** A sample payload of each type (GET /v1/webhook-event-types); the catalogue test checks them against WebhookPayload. */
export const examplePayload = (type: EventType): WebhookPayload =>
  ({ type, timestamp: "2026-03-01T09:00:00.000Z", data: exampleData(type) }) as WebhookPayload;
