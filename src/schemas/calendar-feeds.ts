import { z } from "@hono/zod-openapi";
import { Timestamp, idField, pageEnvelope, paginationQuery } from "../lib/schemas";
import { ITEM_STATUSES, ITEM_TYPES } from "./items";

/** Most feeds a company may have (checked inside the INSERT). */
export const MAX_FEEDS = 100;

const ItemTypeFilter = z
  .enum([...ITEM_TYPES, "all"], { error: `item_type must be one of: ${[...ITEM_TYPES, "all"].join(", ")}` })
  .openapi({ example: "all", description: "exp, due, apt, evt, or all (default)" });
const StatusFilter = z
  .enum(["any", ...ITEM_STATUSES], { error: `status must be one of: ${["any", ...ITEM_STATUSES].join(", ")}` })
  .openapi({ example: "any", description: "pending, completed, or any (default)" });
const FolderFilter = z
  .union([z.literal(0), idField("folder_id")], { error: "folder_id must be 0 (items in no folder) or a folder id" })
  .openapi({
    type: "integer",
    minimum: 0,
    example: 12,
    description:
      "A folder of the company (its items only, not those of its sub-folders), or 0 " + "for items in no folder",
  });

/** The filters of a new feed: the item list's filters (GET /v1/items), as a JSON body. */
export const CreateFeedSchema = z
  .strictObject({
    folder_id: FolderFilter.optional(),
    deptid: idField("deptid").optional().openapi({ description: "A department of the company" }),
    contact_id: idField("contact_id")
      .optional()
      .openapi({ description: "A contact of the company: the items it is the contact of" }),
    item_type: ItemTypeFilter.optional(),
    status: StatusFilter.optional(),
    include_archived: z
      .boolean({ error: "include_archived must be a boolean" })
      .optional()
      .openapi({ description: "Default false: archived items are left out" }),
  })
  .openapi("CreateCalendarFeed");

/** A feed's filters as stored and shown: the defaults filled in, ids only when given. */
export const FeedFiltersSchema = z
  .object({
    folder_id: z.number().int().optional().openapi({ example: 12 }),
    deptid: z.number().int().optional(),
    contact_id: z.number().int().optional(),
    item_type: ItemTypeFilter,
    status: StatusFilter,
    include_archived: z.boolean().openapi({ example: false }),
  })
  .openapi("CalendarFeedFilters");

const feedId = z.number().int().openapi({ example: 7 });

export const CalendarFeedSchema = z
  .object({ feed_id: feedId, filters: FeedFiltersSchema, created_at: Timestamp })
  .openapi("CalendarFeed", { description: "A calendar feed; its URL is shown only when it is created" });

export const CreatedCalendarFeedSchema = z
  .object({
    feed_id: feedId,
    url: z.string().openapi({
      example: "https://api.example.com/v1/calendar/q3oX0r2mJ5Qk1Zb7nWf8cV4dE6gH9iL0pAsTuYxKzR.ics",
      description:
        "The feed's address (the origin the request was sent to). It is the only " +
        "credential of the feed: shown only here, stored only as a SHA-256 hash",
    }),
    filters: FeedFiltersSchema,
    created_at: Timestamp,
  })
  .openapi("CreatedCalendarFeed");

export const ListFeedsQuery = z.object(paginationQuery(200, 50));

export const CalendarFeedListEnvelope = pageEnvelope(CalendarFeedSchema, "CalendarFeedList");

export type CreateFeedInput = z.infer<typeof CreateFeedSchema>;
export type FeedFilters = z.infer<typeof FeedFiltersSchema>;
export type CalendarFeedOutput = z.infer<typeof CalendarFeedSchema>;
