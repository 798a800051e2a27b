import { page, updated } from "../../lib/respond";
import { createRouter, idParam, jsonBody, jsonResponse, resultEnvelope, scopedRoute } from "../../lib/openapi";
import { listTags, setItemTags, tagOutput } from "../../records/tags";
import {
  ItemTagNames,
  ListTagsQuery,
  MAX_TAG_LENGTH,
  MAX_TAGS_PER_ITEM,
  SetItemTagsSchema,
  TagListEnvelope,
} from "../../schemas/tags";

const ItemTagsResult = resultEnvelope(ItemTagNames, "ItemTagsResult");

export const tagsRouter = createRouter();

tagsRouter.openapi(
  scopedRoute({
    method: "put",
    path: "/v1/items/{item_id}/tags",
    operationId: "setItemTags",
    scope: "items:write",
    tags: ["Items", "Tags"],
    summary: "Replace an item's tags",
    description: [
      `Replaces ALL of the item's tags with \`tags\`, in the order given; \`[]\` removes them all. Needs \`items:write\`, not \`tags:write\`: the tag list is part of the item (it is in the item's detail, and the item's updated time changes).`,
      `Each tag is trimmed and NFC-normalised, then must be 1 to ${MAX_TAG_LENGTH} characters with no control characters; at most ${MAX_TAGS_PER_ITEM} entries (400 naming the limit). Entries equal case-insensitively (Unicode case folding, so "Straße" = "STRASSE") collapse to the first.`,
      `Tag names are per company and case-insensitively unique: a tag the company already uses is reused in its stored spelling (the first spelling wins), so \`data\` may differ in case from the request. A tag no item uses any more is deleted at once (its tag_id is not reused); a later use creates it again, in the spelling of that request.`,
      `One transaction: an item that is not in the caller's company, or that is deleted concurrently, is 404 and nothing is written; two concurrent PUTs on one item leave exactly one of the two lists.`,
    ].join("\n\n"),
    request: {
      params: idParam("item_id"),
      body: jsonBody(SetItemTagsSchema),
    },
    responses: {
      200: jsonResponse(
        ItemTagsResult,
        "The item's tag names now, in the given order and in the company's stored " + "spelling",
      ),
    },
  }),
  async (c) => {
    const names = await setItemTags(c.var.db, c.var.companyId, c.req.valid("param").item_id, c.req.valid("json").tags);
    return updated(c, "Item tags updated", names);
  },
);

tagsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/tags",
    operationId: "listTags",
    scope: "tags:read",
    tags: ["Tags"],
    summary: "List tags",
    description:
      "The tags of the caller's company that at least one item carries (an unused tag " +
      "is deleted), with items_count, the number of items carrying it. Ordered by name " +
      "case-insensitively, then tag_id. Pagination is optional: limit defaults to 200 " +
      "(the maximum). q is a case-insensitive substring of the name.",
    request: { query: ListTagsQuery },
    responses: { 200: jsonResponse(TagListEnvelope, "Tags with their items_count") },
  }),
  async (c) => {
    const result = await listTags(c.var.db, c.var.companyId, c.req.valid("query"));
    return page(c, { rows: result.rows.map(tagOutput), meta: result.meta });
  },
);
