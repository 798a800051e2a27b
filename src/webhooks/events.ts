// The webhook event catalogue: every type an endpoint can subscribe to, and the zod schema of an
// endpoint's `events` list (POST / PATCH /v1/webhooks). The payload schemas published in the
// OpenAPI document live in src/schemas/webhooks.ts.

import { z } from "@hono/zod-openapi";

/** Every event type, in catalogue order (docs/webhooks.md "Events"). */
export const EVENT_TYPES = [
  "reminder.sent",
  "reminder.bounced",
  "item.expired",
  "item.created",
  "item.updated",
  "item.renewed",
  "item.status_changed",
  "item.archived",
  "item.restored",
  "item.deleted",
  "item.acknowledged",
  "item.unacknowledged",
  "item.snoozed",
  "item.unsnoozed",
  "task.created",
  "task.updated",
  "task.deleted",
  "file.uploaded",
  "contact.unsubscribed",
  "channel.disabled",
  "webhook.test",
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** What each type means, for the catalogue (GET /v1/webhook-event-types, docs/webhooks.md). */
export const EVENT_DESCRIPTIONS: Record<EventType, string> = {
  "reminder.sent": "A reminder fired (whatever its channels); data: {reminder, item}.",
  "reminder.bounced":
    "A reminder email bounced (hard or soft) or its recipient complained (an ARF report), " +
    "read by the service's email() handler (docs/bounces.md); data: {delivery, item, contact, " +
    "kind, status, reason, suppressed, at}.",
  "item.expired":
    "The item's date began (00:00 in the company's time zone) while it was pending " +
    "and not archived; data: the item entry.",
  "item.created": "An item was created; data: the item entry.",
  "item.updated":
    "What an item says changed (title, notes, date, type, folder, document type, " +
    "contact, department); data: the item entry after the change, with by and via (who made it how).",
  "item.renewed":
    "An item was renewed, by POST /v1/items/{item_id}/renew or by its recurrence " +
    "rule (on completion or at expiry; docs/recurrence.md): its date moved on, its " +
    "reminders requeued; data: the item entry after the renewal, with by and via (null for a rule's renewal).",
  "item.status_changed":
    "An item's status changed (pending / completed); data: the item entry after the change, with by and via " +
    "(e.g. completed from a Slack message's link: by a channel, via slack).",
  "item.archived": "An item was archived; data: the item entry, with by and via.",
  "item.restored": "An archived item was restored; data: the item entry, with by and via.",
  "item.deleted": "An item was deleted; data: the item entry as it was.",
  "item.acknowledged":
    "The item's current occurrence was acknowledged (\"I'm on it\": a recipient's " +
    "page, or POST /v1/items/{item_id}/acknowledge): its reminders are held except " +
    "`always` steps; data: the item entry with acknowledgement, snoozed_until, by " +
    "and via.",
  "item.unacknowledged":
    "The acknowledgement was taken back (DELETE /v1/items/{item_id}/acknowledge): " +
    "held reminders still ahead are queued again; data: as item.acknowledged " +
    "(acknowledgement null).",
  "item.snoozed":
    "The current occurrence's reminders were snoozed until a date (a recipient's " +
    "page, or POST /v1/items/{item_id}/snooze); data: as item.acknowledged, with " +
    "snoozed_until.",
  "item.unsnoozed":
    "A snooze was ended (DELETE /v1/items/{item_id}/snooze); data: as " + "item.acknowledged (snoozed_until null).",
  "task.created": "A task was created; data: the task.",
  "task.updated": "A task changed (including its status); data: the task after the change.",
  "task.deleted": "A task was deleted; data: the task as it was.",
  "file.uploaded": "A file upload completed; data: {file_id, file_name, size_bytes, content_type}.",
  "contact.unsubscribed":
    "A contact unsubscribed from the company's reminder emails, by its email's unsubscribe link " +
    "(one-click or its page; not sent again while it stays unsubscribed); data: {contact_id, firstname, " +
    "lastname, email, email_status, email_status_changed_at, via}.",
  "channel.disabled":
    "A channel endpoint was disabled by the service: its platform answered 404 or 410 to a reminder (the " +
    "webhook is gone), or its URL is no longer allowed on this deployment (docs/channels.md); not sent when the " +
    "account owner disables it. data: {channel, status} (the channel as GET /v1/channels/{channel_id} shows " +
    "it; status: the platform's HTTP status, null when no request was made).",
  "webhook.test":
    "Sent by POST /v1/webhooks/{webhook_id}/test to that endpoint only, whatever it " +
    "subscribes to; data: {webhook_id, message}.",
};

/** The subscription to every type (stored and shown as `["*"]`). */
export const ALL_EVENTS = "*";

const KNOWN = new Set<string>(EVENT_TYPES);

export function isEventType(value: string): value is EventType {
  return KNOWN.has(value);
}

/** Whether an endpoint subscribed to `events` (a list of types, or ["*"]) receives `type`. */
export function subscribes(events: readonly string[], type: string): boolean {
  return events.includes(ALL_EVENTS) || events.includes(type);
}

export const EventTypeSchema = z.enum(EVENT_TYPES).openapi("WebhookEventType", {
  description:
    "A webhook event type. `webhook.test` is sent only by POST " +
    "/v1/webhooks/{webhook_id}/test, to that endpoint, whatever it subscribes to; " +
    "listing it is accepted and changes nothing.",
  example: "item.created",
});

const EVENTS_RULE = `A non-empty list of event types from the catalogue (${EVENT_TYPES.join(", ")}), or ["*"] (also accepted: "*") for every type. Duplicates are ignored.`;

/**
 * The `events` input: a non-empty list of catalogue types, or ["*"] ("*" alone is accepted too);
 * unknown types are 400 naming them, "*" mixed with types is 400. Output: the deduplicated list
 * in the order given, or ["*"].
 */
export const EventsInput = z
  .union([z.literal(ALL_EVENTS), z.array(z.string().max(100)).max(50)], {
    error: (issue) =>
      issue.input === undefined ? "events is required" : 'events must be a list of event types, or "*"',
  })
  .transform((value) => (value === ALL_EVENTS ? [ALL_EVENTS] : value))
  .superRefine((list, ctx) => {
    if (list.length === 0) {
      ctx.addIssue({ code: "custom", message: 'events must not be empty (use ["*"] for every type)' });
      return;
    }
    if (list.includes(ALL_EVENTS) && list.some((t) => t !== ALL_EVENTS)) {
      ctx.addIssue({ code: "custom", message: '"*" subscribes to every type: send ["*"] alone' });
      return;
    }
    const unknown = [...new Set(list.filter((t) => t !== ALL_EVENTS && !isEventType(t)))];
    if (unknown.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown event type${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")} (known: ${EVENT_TYPES.join(", ")})`,
      });
    }
  })
  .transform((list) => [...new Set(list)])
  .openapi({
    type: "array",
    items: { type: "string" },
    description: EVENTS_RULE,
    example: ["item.created", "reminder.sent"],
  });
