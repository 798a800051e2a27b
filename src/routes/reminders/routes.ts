import { auditActor } from "../../lib/context";
import { idempotencyKeyFor } from "../../idempotency/middleware";
import {
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { created, done, ok, updated } from "../../lib/respond";
import { checkChannels, itemForReminders, reminderInput, remindersOf, unwrap } from "../../records/reminders";
import {
  CreateReminderSchema,
  ItemRemindersSchema,
  ReminderEntry,
  ReminderParams,
  TriggeredEntry,
  TriggeredQuery,
  UpdateReminderSchema,
} from "../../schemas/reminders";

const tags = ["Reminders"];
const ItemParams = idParam("item_id");
const ReminderResult = resultEnvelope(ReminderEntry, "ReminderResult");

export const remindersRouter = createRouter();

remindersRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items/{item_id}/reminders",
    operationId: "listItemReminders",
    scope: "items:read",
    tags,
    summary: "List an item's reminders",
    description:
      "`queued`: waiting reminders, soonest first (including those held while the item " +
      "is completed or archived, `state: held`). " +
      "`sent`: sent reminders, newest first (the latest 100), each with its delivery state per channel.",
    request: { params: ItemParams },
    responses: {
      200: jsonResponse(dataEnvelope(ItemRemindersSchema, "ItemRemindersEnvelope"), "The item's reminders"),
    },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const { syncFirst } = await itemForReminders(c.var.db, c.var.companyId, itemId);
    return ok(c, unwrap(await remindersOf(c.env, c.var.companyId).itemReminders(c.var.companyId, itemId, syncFirst)));
  },
);

remindersRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items/{item_id}/reminders",
    operationId: "createItemReminder",
    scope: "items:write",
    tags,
    summary: "Add a reminder to an item",
    description:
      "Either `date` (+ `hour`) or `period` + `unit` + `rtype` (1: before the item's " +
      "date, 2: after; period 0: on the day). `hour` is HH:MM, " +
      "default 09:00, local time in the company's time zone (DST: a time skipped by " +
      "the clock change fires that much later, a repeated time " +
      "fires at its first occurrence). A time that has passed is 400. `contact_id` " +
      "defaults to the item's contact; without any recipient the " +
      "reminder still fires (it shows in /v1/reminders/triggered) and its delivery " +
      "says `no_recipient`. `group_id` sends it to every contact of a " +
      "contact group of the company instead (resolved when it fires, de-duplicated by " +
      "address, at most 200 per channel, one delivery each). " +
      "Like every waiting reminder it is held while the item's occurrence is " +
      "acknowledged, unless `always: true`; `unless_acknowledged: true` " +
      "marks an escalation (fired only if nobody acknowledged by then). `channels` defaults to email; a " +
      "channel this deployment cannot deliver is 400; `webhook` needs an enabled " +
      "webhook endpoint subscribed to `reminder.sent` (the " +
      "reminder then goes out only as that event, see docs/webhooks.md). `channel_id` (instead of `channels`) " +
      "posts the reminder to a channel endpoint of the company (Slack, Teams, Google Chat, Discord, ntfy: " +
      "docs/channels.md), paced to the platform's rate; `contact_id` then names who it is for. An item may " +
      "have at most 100 waiting reminders. On a completed or archived item the " +
      "reminder is held until the item is reopened or restored.",
    request: { params: ItemParams, body: jsonBody(CreateReminderSchema) },
    responses: { 201: jsonResponse(ReminderResult, "Reminder queued") },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const body = c.req.valid("json");
    await checkChannels(c.env, c.var.db, c.var.companyId, body.channels);
    const { syncFirst, channelType } = await itemForReminders(c.var.db, c.var.companyId, itemId, {
      contactId: body.contact_id,
      groupId: body.group_id,
      channelId: body.channel_id,
    });
    const view = unwrap(
      await remindersOf(c.env, c.var.companyId).addReminder(
        c.var.companyId,
        itemId,
        reminderInput(c.env, body, channelType),
        syncFirst,
        await idempotencyKeyFor(c),
        auditActor(c),
      ),
    );
    return created(c, "Reminder queued", view);
  },
);

remindersRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/items/{item_id}/reminders/{reminder_id}",
    operationId: "updateItemReminder",
    scope: "items:write",
    tags,
    summary: "Change a queued reminder",
    description:
      "Fields not sent keep their values: `hour` alone moves the time of day; `date` " +
      "makes the reminder absolute; `period`/`unit`/`rtype` " +
      "make it relative to the item's date. The new time must be in the future. A sent " +
      "reminder cannot be changed (400). Extensions: " +
      "`contact_id`, `group_id`, `channel_id`, `channels`: `channel_id` makes it a reminder to that channel " +
      "endpoint (its channels: the platform; a group is cleared); `channel_id: null`, `channels` or `group_id` " +
      "make it a reminder to contacts again (channels: as sent, else the default). An empty body is 400.",
    request: { params: ReminderParams, body: jsonBody(UpdateReminderSchema) },
    responses: { 200: jsonResponse(ReminderResult, "Reminder updated") },
  }),
  async (c) => {
    const { item_id: itemId, reminder_id: reminderId } = c.req.valid("param");
    const body = c.req.valid("json");
    await checkChannels(c.env, c.var.db, c.var.companyId, body.channels);
    const { syncFirst, channelType } = await itemForReminders(c.var.db, c.var.companyId, itemId, {
      contactId: body.contact_id,
      groupId: body.group_id,
      channelId: body.channel_id,
    });
    const view = unwrap(
      await remindersOf(c.env, c.var.companyId).updateReminder(
        c.var.companyId,
        itemId,
        reminderId,
        reminderInput(c.env, body, channelType),
        syncFirst,
        await idempotencyKeyFor(c),
        auditActor(c),
      ),
    );
    return updated(c, "Reminder updated", view);
  },
);

remindersRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/items/{item_id}/reminders/{reminder_id}",
    operationId: "deleteItemReminder",
    scope: "items:write",
    tags,
    summary: "Delete a queued reminder",
    description: "A sent reminder stays in the history and cannot be deleted (400).",
    request: { params: ReminderParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Reminder deleted") },
  }),
  async (c) => {
    const { item_id: itemId, reminder_id: reminderId } = c.req.valid("param");
    const { syncFirst } = await itemForReminders(c.var.db, c.var.companyId, itemId);
    unwrap(
      await remindersOf(c.env, c.var.companyId).deleteReminder(
        c.var.companyId,
        itemId,
        reminderId,
        syncFirst,
        await idempotencyKeyFor(c),
        auditActor(c),
      ),
    );
    return done(c, "Reminder deleted");
  },
);

remindersRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/reminders/triggered",
    operationId: "listTriggeredReminders",
    scope: "items:read",
    tags,
    summary: "Recently sent reminders",
    description:
      "The company's sent reminders, newest first (`limit` 1 to 100, default 20). " +
      "Entries stay after their item is deleted; the latest " +
      "10,000 are kept. Delivery state per channel is on the item's reminder list.",
    request: { query: TriggeredQuery },
    responses: {
      200: jsonResponse(dataEnvelope(TriggeredEntry.array(), "TriggeredRemindersEnvelope"), "Sent reminders"),
    },
  }),
  async (c) => ok(c, await remindersOf(c.env, c.var.companyId).triggered(c.var.companyId, c.req.valid("query").limit)),
);
