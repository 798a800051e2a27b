// Calendar feeds (docs/api-notes.md, "Calendar feeds"): a company's items as an iCalendar
// subscription. The feed operations are scoped like item reads; the feed itself is public, its
// unguessable URL being its only credential (src/records/calendar-feeds/feed.ts).
import { requestTags } from "../../lib/conditional";
import { notFound } from "../../lib/errors";
import {
  ApiErrorSchema,
  MessageEnvelope,
  createRouter,
  errorResponses,
  idParam,
  jsonResponse,
  named,
  resultEnvelope,
  scopedRoute,
  sharedParameters,
  z,
} from "../../lib/openapi";
import { created, done, page } from "../../lib/respond";
import { MAX_FEED_EVENTS } from "../../company-clock/api";
import { feedShard, serveFeed } from "../../records/calendar-feeds/feed";
import { bookmarkOnAnswer, requestSession } from "../../db/session";
import { createFeed, deleteFeed, listFeeds, normalizeFilters } from "../../records/calendar-feeds/queries";
import {
  CalendarFeedListEnvelope,
  CreateFeedSchema,
  CreatedCalendarFeedSchema,
  ListFeedsQuery,
  MAX_FEEDS,
} from "../../schemas/calendar-feeds";

const tags = ["Calendar feeds"];
const FeedParams = idParam("feed_id");

/** Revalidate on every use: an edit, a fired reminder or a revocation shows at the next poll (the 304 is cheap). */
const CACHE_CONTROL = "private, no-cache";
const ICS_TYPE = "text/calendar; charset=utf-8";

const SCOPE_NOTE =
  "Creating and revoking a feed needs only `items:read`: a feed reads items and " +
  "nothing more, and whoever may create one may revoke it.";

export const calendarFeedsRouter = createRouter();

calendarFeedsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/calendar-feeds",
    operationId: "createCalendarFeed",
    scope: "items:read",
    tags,
    summary: "Create a calendar feed",
    description:
      "Extension. A subscribable iCalendar feed (RFC 5545) of the company's items, " +
      "with the item list's filters: `folder_id` (0: items in no folder), " +
      "`deptid`, `contact_id`, `item_type`, `status`, `include_archived` (default " +
      "false); the body is optional (no filter). Ids not in the company are 400 naming " +
      "the field. " +
      "`url` is absolute (the origin the request was sent to) and ends in a token of " +
      "32 random bytes (base64url): it is shown only in this answer and stored only " +
      `as its SHA-256, so it cannot be read again; the URL needs no Authorization header. A company has at most ${MAX_FEEDS} feeds: one more is 400 (checked ` +
      `inside the insert, so concurrent creates cannot overshoot). ${SCOPE_NOTE}`,
    request: { body: { required: false, content: { "application/json": { schema: CreateFeedSchema } } } },
    responses: {
      201: jsonResponse(resultEnvelope(CreatedCalendarFeedSchema, "CalendarFeedCreated"), "Feed created, with its URL"),
    },
  }),
  async (c) => {
    const filters = normalizeFilters(c.req.valid("json") ?? {});
    const { row, token } = await createFeed(c.var.db, c.var.companyId, c.var.auth.clientId, filters);
    const url = new URL(`/v1/calendar/${token}.ics`, c.req.url).toString();
    return created(c, "Calendar feed created", {
      feed_id: row.feed_id,
      url,
      filters: row.filters,
      created_at: row.created_at,
    });
  },
);

calendarFeedsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/calendar-feeds",
    operationId: "listCalendarFeeds",
    scope: "items:read",
    tags,
    summary: "List calendar feeds",
    description:
      "Extension. The company's feeds (every client's), by feed_id, without their URLs " + "(shown only at creation).",
    request: { query: ListFeedsQuery },
    responses: { 200: jsonResponse(CalendarFeedListEnvelope, "A page of calendar feeds") },
  }),
  async (c) => page(c, await listFeeds(c.var.db, c.var.companyId, c.req.valid("query"))),
);

calendarFeedsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/calendar-feeds/{feed_id}",
    operationId: "deleteCalendarFeed",
    scope: "items:read",
    tags,
    summary: "Revoke a calendar feed",
    description: `Extension. The feed's URL answers 404 from the next request on (every request of the feed reads its row). Another company's feed is 404. ${SCOPE_NOTE}`,
    request: { params: FeedParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Feed revoked") },
  }),
  async (c) => {
    await deleteFeed(c.var.db, c.var.companyId, c.req.valid("param").feed_id);
    return done(c, "Calendar feed revoked");
  },
);

// The feed itself. Its path ends in `.ics` after the parameter, which a Hono route expresses as a
// regex parameter; the OpenAPI operation is registered on its own with the documented path.
const FEED_OPERATION = "getCalendarFeed";

calendarFeedsRouter.openAPIRegistry.registerPath({
  method: "get",
  path: "/v1/calendar/{token}.ics",
  operationId: FEED_OPERATION,
  security: [],
  tags,
  summary: "A calendar feed (iCalendar; no authentication)",
  description: [
    "The feed's items as an iCalendar object (RFC 5545), `text/calendar; " +
      "charset=utf-8`, for calendar applications to subscribe to. " +
      "No Authorization header: the token in the URL is the credential. An unknown or " +
      "revoked token is 404. Counted against the anonymous rate limit of the caller's " +
      "address.",
    `One all-day VEVENT per item, on its expiry date, ordered by expiry date then item id, at most ${MAX_FEED_EVENTS.toLocaleString("en-US")} (the earliest). ` +
      "UID `item-<item_id>-<company_id>@expiry-reminder` (stable); SUMMARY the title; " +
      "DESCRIPTION `Type: …`, `Folder: …`, `Document type: …`, " +
      "`Status: completed`, `Archived: yes` (each when it applies), then a blank line " +
      "and the notes; STATUS CONFIRMED, or CANCELLED for a completed item; " +
      "DTSTAMP and LAST-MODIFIED the item's last change. One VALARM (DISPLAY) per " +
      "queued reminder, at its instant (TRIGGER;VALUE=DATE-TIME, UTC).",
    "Strong ETag: If-None-Match answers 304 after reading only version numbers. " +
      "`Cache-Control: private, no-cache`; the calendar suggests a refresh every hour " +
      "(REFRESH-INTERVAL, X-PUBLISHED-TTL).",
  ].join("\n\n"),
  request: {
    params: z.object({
      token: z.string().openapi({
        param: { name: "token", in: "path" },
        example: "q3oX0r2mJ5Qk1Zb7nWf8cV4dE6gH9iL0pAsTuYxKzR",
        description: "The feed's token (43 base64url characters) from the url of POST /v1/calendar-feeds",
      }),
    }),
  },
  parameters: [sharedParameters.ifNoneMatch, sharedParameters.d1Bookmark],
  responses: {
    200: {
      description: "The calendar",
      headers: { "Cache-Control": { description: `\`${CACHE_CONTROL}\``, schema: { type: "string" } } },
      content: {
        "text/calendar": {
          schema: z.string().openapi({ example: "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n…\r\nEND:VCALENDAR\r\n" }),
        },
      },
    },
    304: errorResponses.notModified,
    400: jsonResponse(ApiErrorSchema, "A malformed If-None-Match or X-D1-Bookmark (Shape B, naming the header)"),
    404: jsonResponse(ApiErrorSchema, "No feed has this token: unknown, or revoked (Shape B)"),
    414: errorResponses.uriTooLong,
    429: errorResponses.tooManyRequests,
  },
});

calendarFeedsRouter.get("/v1/calendar/:token{[A-Za-z0-9_-]+\\.ics}", named(FEED_OPERATION), async (c) => {
  const token = c.req.param("token").slice(0, -".ics".length);
  const ifNoneMatch = requestTags(c, "If-None-Match");
  const shard = await feedShard(c.env, token);
  if (shard === null) throw notFound("Calendar feed");
  const session = requestSession(c, shard);
  const answer = await serveFeed(c.env, session.d1, token, ifNoneMatch);
  bookmarkOnAnswer(c, session);
  if (!answer) throw notFound("Calendar feed");
  const headers = { "Cache-Control": CACHE_CONTROL, ETag: answer.etag };
  if (answer.status === 304) return c.body(null, 304, headers);
  return c.body(answer.body, 200, { ...headers, "Content-Type": ICS_TYPE });
});
