// Acknowledgement and snooze of an item's current occurrence through the API (docs/reminders.md,
// "Acknowledgement and snooze"). The records' actions (src/records/items/actions.ts) are the same
// ones a recipient's page calls: one guarded write each, the audit entry and webhook event with it.
import type { Context } from "hono";
import type { AppBindings } from "../../env";
import { conflict } from "../../lib/errors";
import {
  ApiErrorSchema,
  createRouter,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { updated } from "../../lib/respond";
import {
  acknowledgeItem,
  actionStateOutput,
  syncAction,
  unacknowledgeItem,
  snoozeItem,
  unsnoozeItem,
  type ActionResult,
  type ItemAction,
} from "../../records/items/actions";
import {
  AcknowledgeItemSchema,
  ItemActionStateSchema,
  MAX_SNOOZE_DAYS,
  NOTE_MAX,
  SnoozeItemSchema,
} from "../../schemas/item-actions";
import { itemRecord } from "./routes";

const tags = ["Items"];
const ItemParams = idParam("item_id");
const ActionResultEnvelope = resultEnvelope(ItemActionStateSchema, "ItemActionResult");

const NOT_OPEN = jsonResponse(
  ApiErrorSchema,
  "The item is completed or archived: its occurrence needs no acknowledgement or " +
    "snooze (Shape B); nothing was changed",
);

/** The API's actor: the token's client, through the API. */
const apiAction = (c: Context<AppBindings>): ItemAction => ({
  by: { type: "client", id: c.var.auth.clientId },
  via: "api",
});

/** The answer of an action: its message (applied or not), or 409 when the occurrence is over. */
async function answer(
  c: Context<AppBindings>,
  itemId: number,
  result: ActionResult,
  messages: { applied: string; unchanged: string },
) {
  if (result.outcome === "moved_on") {
    const { item } = result;
    throw conflict(
      `Item ${itemId} is ${result.reason === "archived" ? "archived" : "completed"}: its occurrence ${item.expiry_date} needs no acknowledgement or snooze; nothing was changed`,
    );
  }
  await syncAction(c.env, c.var.companyId, itemId, result);
  return updated(
    c,
    result.outcome === "applied" ? messages.applied : messages.unchanged,
    actionStateOutput(result.item),
  );
}

export const itemActionsRouter = createRouter();

itemActionsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items/{item_id}/acknowledge",
    operationId: "acknowledgeItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: 'Acknowledge an item ("I\'m on it")',
    description:
      "Acknowledges the item's current occurrence: its reminders still waiting are " +
      "held, not sent, except steps marked `always` (e.g. on the " +
      "day); steps marked `unless_acknowledged` (escalations) will not fire. A renewal " +
      "starts the next occurrence unacknowledged. " +
      `\`note\` (optional, at most ${NOTE_MAX} characters) is shown with the acknowledgement. Acknowledging an acknowledged occurrence changes ` +
      "nothing and answers the existing acknowledgement (200, no second event). A " +
      "completed or archived item is 409. Emits `item.acknowledged`; " +
      "the audit entry names the client and `via: api`. The same action as a " +
      "recipient's \"I'm on it\" on a reminder's page.",
    request: {
      params: ItemParams,
      body: { required: false, content: { "application/json": { schema: AcknowledgeItemSchema } } },
    },
    responses: { 200: jsonResponse(ActionResultEnvelope, "Acknowledged (or already so)"), 409: NOT_OPEN },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const result = await acknowledgeItem(c.var.db, c.var.companyId, itemId, {
      ...apiAction(c),
      note: c.req.valid("json")?.note ?? null,
    });
    return answer(c, itemId, result, { applied: "Item acknowledged", unchanged: "Item was already acknowledged" });
  },
);

itemActionsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/items/{item_id}/acknowledge",
    operationId: "unacknowledgeItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Take an acknowledgement back",
    description:
      "The current occurrence is no longer acknowledged: its held reminders still " +
      "ahead are queued again (those whose time passed meanwhile " +
      "are not sent late). Not acknowledged: 200, nothing changed. Also on a completed or archived " +
      "item (its reminders stay held while it is). Emits `item.unacknowledged`.",
    request: { params: ItemParams },
    responses: { 200: jsonResponse(ActionResultEnvelope, "Acknowledgement taken back (or there was none)") },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const result = await unacknowledgeItem(c.var.db, c.var.companyId, itemId, apiAction(c));
    return answer(c, itemId, result, { applied: "Acknowledgement taken back", unchanged: "Item was not acknowledged" });
  },
);

itemActionsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items/{item_id}/snooze",
    operationId: "snoozeItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Snooze an item's reminders",
    description:
      "Nothing is sent for the current occurrence before `until`; at the default hour " +
      "(09:00 in the company's time zone) that day one reminder " +
      "goes out to the item's contact, then the steps still ahead. `until` must be " +
      "after today in the company's time zone (today or a past " +
      `date is 400) and at most ${MAX_SNOOZE_DAYS} days ahead. It may be after the item's date: then the steps on and after the date that fall ` +
      "before `until` are not sent either, and the one reminder on `until` says the " +
      "date has passed. A renewal ends the snooze. The same " +
      "`until` again changes nothing (200); another date replaces it. A completed or " +
      "archived item is 409. Emits `item.snoozed`.",
    request: { params: ItemParams, body: jsonBody(SnoozeItemSchema) },
    responses: { 200: jsonResponse(ActionResultEnvelope, "Snoozed (or already so)"), 409: NOT_OPEN },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const { until } = c.req.valid("json");
    const result = await snoozeItem(c.var.db, c.var.companyId, itemId, { ...apiAction(c), until });
    return answer(c, itemId, result, {
      applied: `Item snoozed until ${until}`,
      unchanged: `Item was already snoozed until ${until}`,
    });
  },
);

itemActionsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/items/{item_id}/snooze",
    operationId: "unsnoozeItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "End a snooze",
    description:
      "The current occurrence's snooze ends: its held reminders still ahead are queued " +
      "again, and the reminder planned for the snooze's date " +
      "is dropped. Not snoozed: 200, nothing changed. Also on a completed or archived item. " +
      "Emits `item.unsnoozed`.",
    request: { params: ItemParams },
    responses: { 200: jsonResponse(ActionResultEnvelope, "Snooze ended (or there was none)") },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const result = await unsnoozeItem(c.var.db, c.var.companyId, itemId, apiAction(c));
    return answer(c, itemId, result, { applied: "Snooze ended", unchanged: "Item was not snoozed" });
  },
);
