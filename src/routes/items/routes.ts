import type { Context } from "hono";
import type { Db } from "../../db/client";
import type { AppBindings } from "../../env";
import { conditionalRecord, ifMatchNamesTag, rowVersion } from "../../lib/conditional";
import {
  ApiErrorSchema,
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { created, done, ok, page, updated } from "../../lib/respond";
import { syncReminders } from "../../company-clock/handoff/worker";
import { itemRemindersLoader } from "../../records/reminders";
import { MAX_EXACT_SEARCH_TOTAL } from "../../lib/search";
import {
  MAX_EXACT_TOTAL,
  RENEWAL_SETTLE_SECONDS,
  createItem,
  currentDate,
  deleteItem,
  getItem,
  listItems,
  renewItem,
  setItemArchived,
  setItemStatus,
  updateItem,
  itemEntry,
  type OccurrenceBinding,
} from "../../records/items/queries";
import {
  CreateItemSchema,
  CreatedItemSchema,
  ItemArchiveSchema,
  ItemDetailSchema,
  ItemListEnvelope,
  ItemStatusSchema,
  ListItemsQuery,
  RenewItemSchema,
  UpdateItemSchema,
} from "../../schemas/items";

const tags = ["Items"];
const ItemParams = idParam("item_id");
const ItemResult = resultEnvelope(ItemDetailSchema, "ItemResult");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
export const itemRecord = conditionalRecord({
  what: "Item",
  table: "items",
  params: ItemParams,
  load: async (c, { item_id }) => {
    const version = await rowVersion(c, "items", item_id);
    return {
      id: item_id,
      version,
      data: await getItem(c.var.db, c.var.companyId, item_id, itemRemindersLoader(c.env, c.var.companyId, item_id)),
    };
  },
});

/**
 * The handle a write's answer is read through. When the item's rule renews at expiry, the company
 * clock may have just renewed it (catch-up, a restore) in its own D1 session: read the primary, so
 * the answer shows that renewal rather than a replica's older copy.
 */
function answerDb(c: Context<AppBindings>, row: { recurRenewOn: string | null }): Db {
  return row.recurRenewOn === "expired" ? c.var.db.primary() : c.var.db;
}

export const itemsRouter = createRouter();

itemsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items",
    operationId: "listItems",
    scope: "items:read",
    tags,
    summary: "List items",
    description:
      "Ordered by expiry_date, then item_id (stable across pages). Filters combine " +
      "with AND. Archived items are left out unless `archived=true` " +
      `or \`any\`. \`meta.total\` counts every match: unfiltered exactly, filtered up to ${MAX_EXACT_TOTAL} (${MAX_EXACT_SEARCH_TOTAL} with \`q\`); beyond that ` +
      "`meta.total_exact` is false and total is that bound (a lower bound). " +
      "For deep pages use keyset pagination: pass `meta.next_cursor` as `cursor` (it costs what the first page costs).",
    request: { query: ListItemsQuery },
    responses: { 200: jsonResponse(ItemListEnvelope, "A page of items") },
  }),
  async (c) => {
    const result = await listItems(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(itemEntry), meta: result.meta });
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items",
    operationId: "createItem",
    scope: "items:write",
    tags,
    summary: "Create an item",
    description:
      "`expiry_date` must be a real calendar date. `document_type` names an existing " +
      "type of the company (case-insensitive; an unknown name is 400, " +
      'types are created through /v1/document-types). `folder_path` ("Permits/City") ' +
      "creates missing folders like mkdir -p. Ids that are not in the " +
      "company are 400. Refused with 400 when the company holds documents_limit items " +
      "(checked inside the insert). The item's reminders are queued " +
      "by the reminder engine. With a `recurrence` that renews at expiry (`renew_on: " +
      "expired`) and a date whose renewal instant has passed, the item " +
      "is caught up to the rule's first occurrence not yet expired before the answer, " +
      "and `expiry_date` is that date (docs/recurrence.md).",
    request: { body: jsonBody(CreateItemSchema) },
    responses: { 201: jsonResponse(resultEnvelope(CreatedItemSchema, "ItemCreated"), "Item created") },
  }),
  async (c) => {
    const input = c.req.valid("json");
    const { row, snapshot } = await createItem(c.var.db, c.var.companyId, c.var.auth.userId, input);
    await syncReminders(c.env, c.var.companyId, [row.id], snapshot);
    // A rule renewing at expiry on a past date has just caught the item up: answer its date now.
    const date =
      row.recurRenewOn === "expired" ? await currentDate(answerDb(c, row), c.var.companyId, row.id) : row.expiryDate;
    return created(c, "Item created", {
      item_id: row.id,
      title: row.title,
      expiry_date: date ?? row.expiryDate,
      item_type: row.itemType as "exp",
    });
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/items/{item_id}",
    operationId: "getItem",
    etag: true,
    scope: "items:read",
    tags,
    summary: "Get an item with its tags and reminders",
    description:
      "Adds tags, reminders {queued, sent} and, as extensions, notes, contact_id, " +
      "seqid, the renewal history and add_date.",
    request: { params: ItemParams },
    responses: { 200: jsonResponse(dataEnvelope(ItemDetailSchema, "ItemEnvelope"), "The item") },
  }),
  async (c) =>
    ok(
      c,
      await getItem(
        c.var.db,
        c.var.companyId,
        c.req.valid("param").item_id,
        itemRemindersLoader(c.env, c.var.companyId, c.req.valid("param").item_id),
      ),
    ),
);

itemsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/items/{item_id}",
    operationId: "updateItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Update an item",
    description:
      "At least one of title, notes, expiry_date, folder_id (0: no folder), " +
      "document_type_id (0: none), and as extensions contact_id (0: none) and " +
      "item_type. `reschedule_reminders: true` with a new expiry_date recomputes the " +
      "reminders relative to the date. An empty body is 400.",
    request: { params: ItemParams, body: jsonBody(UpdateItemSchema) },
    responses: { 200: jsonResponse(ItemResult, "Item updated") },
  }),
  async (c) => {
    const input = c.req.valid("json");
    const { row, snapshot } = await updateItem(c.var.db, c.var.companyId, c.req.valid("param").item_id, input);
    await syncReminders(c.env, c.var.companyId, [row.id], snapshot);
    return updated(
      c,
      "Item updated",
      await getItem(answerDb(c, row), c.var.companyId, row.id, itemRemindersLoader(c.env, c.var.companyId, row.id)),
    );
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/items/{item_id}",
    operationId: "deleteItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Delete an item",
    description:
      "Its tags, renewal history and reminders go with it; the company's, department's " +
      "and document type's counters drop at once.",
    request: { params: ItemParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Item deleted") },
  }),
  async (c) => {
    const itemId = c.req.valid("param").item_id;
    const snapshot = await deleteItem(c.var.db, c.var.companyId, itemId);
    await syncReminders(c.env, c.var.companyId, [itemId], snapshot);
    return done(c, "Item deleted");
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/items/{item_id}/status",
    operationId: "setItemStatus",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Mark an item completed or pending",
    description:
      "pending <-> completed. Completing holds the item's queued reminders; reopening " +
      "resumes those still in the future. An item whose recurrence " +
      "rule renews on completion (`renew_on: completed`, not archived, rule not ended) " +
      "is instead renewed in the same step: its date moves to the " +
      "rule's next occurrence after the current date, the renewal history records it " +
      "(`automatic: true`), the status stays pending and the " +
      "reminder sequence is queued for the new date.\n\n" +
      "A change is for one **occurrence** of the item. Name it with `expiry_date` (the " +
      "item's date as you read it) or with `If-Match` (the " +
      "item's ETag): it then applies only to that occurrence, and a request that finds " +
      "the item dated otherwise (renewed meanwhile) is 409 naming " +
      "the current date, with nothing changed. Of completions of one occurrence sent " +
      "together exactly one renews the item; the others are 409 " +
      "(or 412 with If-Match). A **bare** completion (neither, or `If-Match: *`) " +
      "completes the current occurrence, except when the item was " +
      `renewed on completion less than ${RENEWAL_SETTLE_SECONDS / 60} minutes ago: it is then taken for a repeat of that completion (sent with ` +
      "it, or retried) and answered 409 naming the new date, so that it cannot " +
      "complete the new occurrence unseen. To complete the new " +
      "occurrence at once, name it.",
    request: { params: ItemParams, body: jsonBody(ItemStatusSchema) },
    responses: {
      200: jsonResponse(ItemResult, "Status changed (or the item renewed)"),
      409: jsonResponse(
        ApiErrorSchema,
        "The occurrence is not the item's current one (Shape B, naming the current date; " +
          "nothing changed): `expiry_date` names another date, " +
          "a completion sent together with the one that renewed the item lost to it, or a " +
          "bare completion found the item renewed on completion " +
          `less than ${RENEWAL_SETTLE_SECONDS / 60} minutes ago`,
      ),
    },
  }),
  async (c) => {
    const { status, expiry_date } = c.req.valid("json");
    const binding: OccurrenceBinding =
      expiry_date !== undefined ? { date: expiry_date } : ifMatchNamesTag(c) ? "current" : "bare";
    const { row, snapshot, renewedTo } = await setItemStatus(
      c.var.db,
      c.var.companyId,
      c.var.auth.userId,
      c.req.valid("param").item_id,
      status,
      binding,
    );
    await syncReminders(c.env, c.var.companyId, [row.id], snapshot);
    const message = renewedTo
      ? `Item completed and renewed until ${renewedTo}`
      : status === "completed"
        ? "Item marked completed"
        : "Item marked pending";
    return updated(
      c,
      message,
      await getItem(c.var.db, c.var.companyId, row.id, itemRemindersLoader(c.env, c.var.companyId, row.id)),
    );
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/items/{item_id}/archive",
    operationId: "archiveItem",
    precondition: itemRecord,
    scope: "items:write",
    tags,
    summary: "Archive or restore an item",
    description:
      '`archived` defaults to true ("Item archived"); false restores it ("Item ' +
      "restored\"). `active` reflects it. Archiving holds the item's reminders.",
    request: {
      params: ItemParams,
      body: { required: false, content: { "application/json": { schema: ItemArchiveSchema } } },
    },
    responses: { 200: jsonResponse(ItemResult, "Archived or restored") },
  }),
  async (c) => {
    const archived = c.req.valid("json")?.archived ?? true;
    const { row, snapshot } = await setItemArchived(c.var.db, c.var.companyId, c.req.valid("param").item_id, archived);
    await syncReminders(c.env, c.var.companyId, [row.id], snapshot);
    return updated(
      c,
      archived ? "Item archived" : "Item restored",
      await getItem(answerDb(c, row), c.var.companyId, row.id, itemRemindersLoader(c.env, c.var.companyId, row.id)),
    );
  },
);

itemsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/items/{item_id}/renew",
    operationId: "renewItem",
    scope: "items:write",
    tags,
    summary: "Renew an item",
    description:
      "Sets a new expiry_date, which must be later than the current one (400 " +
      "otherwise); without one the date moves one year on (Feb 29 becomes " +
      "Feb 28). The status goes back to pending, the previous date is kept in the " +
      "renewal history, and the reminder sequence is queued again for the " +
      "new date (sent reminders stay in the history).",
    request: {
      params: ItemParams,
      body: { required: false, content: { "application/json": { schema: RenewItemSchema } } },
    },
    responses: { 200: jsonResponse(ItemResult, "Item renewed") },
  }),
  async (c) => {
    const { row, snapshot } = await renewItem(
      c.var.db,
      c.var.companyId,
      c.var.auth.userId,
      c.req.valid("param").item_id,
      c.req.valid("json")?.expiry_date,
    );
    await syncReminders(c.env, c.var.companyId, [row.id], snapshot);
    return updated(
      c,
      `Item renewed until ${row.expiryDate}`,
      await getItem(c.var.db, c.var.companyId, row.id, itemRemindersLoader(c.env, c.var.companyId, row.id)),
    );
  },
);
