import type { OpenAPIHono } from "@hono/zod-openapi";
import { RESOURCE_SCOPES } from "./auth/scopes";
import type { AppBindings } from "./env";

const DESCRIPTION = `Tracks dated items (expirations, due dates, appointments, events), sends reminders about them,
and keeps the contacts, groups and other records around them.

Authentication: obtain a token from \`POST /v1/oauth/token\` with client credentials and send it as
\`Authorization: Bearer <token>\`. Each operation lists the scope it needs; \`*\` grants every scope.
The exception is \`PUT /v1/uploads\`: it takes the raw file bytes (at most 95 MiB) and is authenticated only
by the single-use upload token from \`POST /v1/uploads\` in the \`X-Upload-Token\` header.

Errors come in two shapes. Shape A (\`error\`, \`error_description\`, \`required_scope\`) for authentication
and scope problems; Shape B (\`success: false\`, \`msg\`) for everything else. Record timestamps are UTC,
formatted \`YYYY-MM-DD HH:MM:SS\`. Request bodies must be \`application/json\`; unknown body fields are
rejected (400). See docs/api-notes.md for the decisions taken where the contract is silent.

Request limits (checked before authentication): bodies at most 64 KiB (65536 bytes), 8 KiB (8192 bytes)
at \`POST /v1/oauth/token\`; larger is 413 (Shape B; Shape A \`invalid_request\` at the token endpoint, as
all its errors are). The URL (path and query string) is at most 8192 characters (414). Bodies are UTF-8:
a \`charset\` other than \`utf-8\` is 415, bytes that are not valid UTF-8 are 400, and JSON nested deeper
than 32 levels is 400. A query parameter given twice is 400.

Text fields refuse lone surrogates, control characters (multi-line fields allow tab, CR and LF) and,
when required, values that are empty once white space and invisible characters are removed (400 naming
the field). Accepted text is trimmed and normalised to Unicode NFC. Error messages quote client input
cut to 80 characters.

Every path answers another HTTP method with 405 (Shape B) and an \`Allow\` header listing the methods
it supports; an unknown path is 404. A write that loses a race with a concurrent change to the same
records answers 409 (Shape B) and changes nothing: retry it.

Every response carries \`X-Request-Id\` (the client's own when sane, else a new UUID); error bodies of
both shapes repeat it as \`request_id\`.

Rate limits (docs/rate-limits.md): a read costs 1 unit, a search (\`q\`) 5, a write 2; an API client may
spend 1,200 units a minute and 300 in any 10 seconds, a company's clients together 3,000 a minute, and
requests without a valid token 300 a minute per address. Over a limit: 429 (Shape B) with
\`Retry-After\`. Every response describes the policies in \`RateLimit-Policy\` and \`RateLimit\`
(draft-ietf-httpapi-ratelimit-headers). Ten wrong secrets for a client_id within 15 minutes lock it
out of the token endpoint (429) until the window ends.

Writes take an \`Idempotency-Key\` (docs/idempotency.md): a repeat of the same request within 24 h gets
the stored answer with \`Idempotent-Replayed: true\` and no new effect; the same key on another
request is 422, a repeat while the first runs is 409.

Single-record reads answer a strong \`ETag\` (\`If-None-Match\` → 304); \`If-Match\` on their PATCH and
DELETE applies the change only while the record is unchanged (412 otherwise, nothing written). Both headers
are parsed by RFC 9110's grammar: a malformed one is 400 naming it, never read as \`*\`.`;

/** Every tag an operation uses, with its description (the OpenAPI test checks that none is missing). */
export const TAGS = [
  { name: "Authentication", description: "Client-credentials tokens and token inspection." },
  { name: "Contacts", description: "People that reminders go to; email is unique per company." },
  { name: "Contact groups", description: "Groups of contacts within a department; one default group per department." },
  {
    name: "Companies",
    description: "The account's companies, their quotas, profile and settings; writes by the " + "account owner only.",
  },
  { name: "Departments", description: "Departments of a company, with usage counters; account owner only." },
  {
    name: "Document types",
    description: "Kinds of tracked documents with custom field definitions; account owner only.",
  },
  {
    name: "Items",
    description: "Tracked dated records (expirations, due dates, appointments, events) and their " + "state.",
  },
  {
    name: "Reminder sequences",
    description:
      "A company's named sets of reminder steps (period, unit, before/after, hour) " +
      "queued for its items; exactly one default.",
  },
  {
    name: "Reminder templates",
    description:
      "A company's wording of its reminder emails per language (subject, intro, footer) with " +
      "placeholders, and a preview of the email.",
  },
  { name: "Folders", description: "A company's folder tree for items." },
  { name: "Tags", description: "Per-company tag names attached to items." },
  {
    name: "Reminders",
    description:
      "Reminders of items, fired at their minute in the company's time zone by a " +
      "per-company scheduler, and delivered by email (and SMS where configured). " +
      "Scopes: items:read to read, items:write to change.",
  },
  {
    name: "Tasks",
    description:
      "To-dos of a company with a due time (UTC), status workflow, priority, owner and " +
      "assignee (a user or a contact).",
  },
  {
    name: "Drive",
    description:
      "File uploads (a session, then the bytes with a single-use upload token), the " +
      "company's files, and item attachments.",
  },
  {
    name: "Channels",
    description:
      "Reminders where teams already talk: a company's Slack, Microsoft Teams (Workflows), Google " +
      "Chat, Discord and ntfy incoming webhooks, managed by the account owner (scopes channels:read " +
      "/ channels:write). Each type accepts only its platform's URLs; URLs and tokens are stored " +
      "encrypted and shown once. See docs/channels.md.",
  },
  {
    name: "Webhooks",
    description:
      "Signed event delivery (Standard Webhooks) to a company's HTTPS endpoints, " +
      "managed by the account owner (scopes webhooks:read / webhooks:write): " +
      "endpoints, secret rotation, test events, deliveries and retries. The event " +
      "catalogue is the WebhookEventType schema (and GET /v1/webhook-event-types); " +
      "each POSTed body is a WebhookPayload {type, timestamp, data}. See " +
      "docs/webhooks.md.",
  },
  {
    name: "Imports",
    description:
      "Items and contacts from a CSV, JSON or NDJSON file, run as a job (202, then GET " +
      "its status, counts, progress and row errors): dry runs, on_error=abort|skip, " +
      "strict dates, updates by external_id (items) or email (contacts), quotas, " +
      "reminders queued as for a POST. See docs/imports.md.",
  },
  {
    name: "Calendar feeds",
    description:
      "A company's items as iCalendar (RFC 5545) subscriptions: feeds with the item " +
      "list's filters, managed with items:read; the feed itself is fetched without a " +
      "token header, its URL being its credential.",
  },
  {
    name: "Audit log",
    description:
      "Who changed what: every change of the account's resources, with the API client, " +
      "user, request id and operationId behind it and the fields before and after; " +
      "read by the account owner (scope audit:read). See docs/audit-log.md.",
  },
  { name: "System", description: "Liveness of the service; no authentication." },
];

const header = (description: string, example?: string) => ({
  description,
  schema: { type: "string" as const, ...(example && { example }) },
});

/** Response headers of every response, and of some (registered as components, referenced from each response). */
const HEADERS = {
  XRequestId: header(
    "The request's id: the client's own X-Request-Id when it sent a sane one (1 to " +
      "128 of A-Z a-z 0-9 . _ : @ + = / -), else a new UUID. Also in every error body " +
      "as `request_id`.",
  ),
  RateLimitPolicy: header(
    "The quota policies the request was counted against " +
      '(draft-ietf-httpapi-ratelimit-headers), e.g. `"client";q=1200;w=60, ' +
      '"client-burst";q=300;w=10, "company";q=3000;w=60`. Absent when rate limits are ' +
      "off.",
  ),
  RateLimit: header(
    "The policy closest to its quota: remaining units `r` and seconds `t` until its " +
      'window resets, e.g. `"client";r=1187;t=42`. Absent when rate limits are off.',
  ),
  ETag: header(
    "Strong entity tag of the representation: send it in If-None-Match (304) or in " +
      "If-Match on PATCH and DELETE (412 when it changed).",
  ),
  XD1Bookmark: header(
    "An opaque consistency token (D1 read replication, docs/scale.md): the state of " +
      "the account's database this answer saw. Send it back in the `X-D1-Bookmark` " +
      "request header to read at least that state (your own writes) on any replica.",
  ),
  IdempotentReplayed: header(
    "`true` when this is the stored response of an earlier request with the same " + "Idempotency-Key (no new effect).",
  ),
};

const ENTITY_TAG_GRAMMAR =
  'RFC 9110: `*` alone, or a comma-separated list of entity tags, each `"…"` or ' +
  '`W/"…"` (printable characters other than `"` inside the quotes); ' +
  "white space around the commas and empty list elements are allowed. Anything " +
  "else (`*` in a list, an unquoted or unterminated tag, text after a tag) is 400 " +
  "(Shape B) naming the header. " +
  "A list holding no tag (`,`) matches nothing; an empty field value is as if the header were absent.";

const PARAMETERS = {
  D1Bookmark: {
    name: "X-D1-Bookmark",
    in: "header" as const,
    required: false,
    description:
      "The `X-D1-Bookmark` of an earlier answer, sent back unchanged: this request " +
      "then reads at least the state that answer saw (read-your-writes across " +
      "requests, whichever replica serves it). " +
      "Without it a read may be served by a nearby replica a moment behind the " +
      "primary; a write always starts on the primary. Opaque; anything this service " +
      "did not issue is 400. " +
      "A bookmark of another database (the account moved since) is ignored. See " +
      "docs/scale.md. No example is given: a copied one would pin a read to a state " +
      "that is not yours.",
    schema: { type: "string" as const, maxLength: 200 },
  },
  IdempotencyKey: {
    name: "Idempotency-Key",
    in: "header" as const,
    required: false,
    description:
      "A unique key for this write (a UUID v4 is ideal; 1 to 255 printable ASCII " +
      "characters, bare or as a quoted string). The first request with the key runs; " +
      "for 24 h a repeat with the same method, path and body gets the stored status " +
      "and body with `Idempotent-Replayed: true` and changes nothing; the same key " +
      "on another request is 422; a repeat while the first still runs is 409. Keys are " +
      "scoped to the API client. See docs/idempotency.md. " +
      "No example is given: tools that fill in examples (the /docs page's Test " +
      "Request) would send the same key with every write.",
    schema: { type: "string" as const, minLength: 1, maxLength: 255 },
  },
  IfMatch: {
    name: "If-Match",
    in: "header" as const,
    required: false,
    description:
      "Apply the change only if the record's current ETag is one of these (or `*`): " +
      'otherwise 412 and nothing is written. Strong comparison: a weak tag (`W/"…"`) ' +
      "never matches. " +
      ENTITY_TAG_GRAMMAR,
    schema: { type: "string" as const, example: '"9b74c9897bac770ffc029102a200c5de"' },
  },
  IfNoneMatch: {
    name: "If-None-Match",
    in: "header" as const,
    required: false,
    description:
      "304 Not Modified (no body) when the current ETag is one of these (or `*`). Weak " +
      'comparison: `W/"x"` matches `"x"`. ' +
      ENTITY_TAG_GRAMMAR,
    schema: { type: "string" as const, example: '"9b74c9897bac770ffc029102a200c5de"' },
  },
};

type Operation = {
  parameters?: Array<{ $ref?: string }>;
  responses: Record<string, { headers?: Record<string, unknown> }>;
};

/** Adds the common headers to every response of the document (and the replay and ETag headers where they apply). */
function addResponseHeaders(paths: Record<string, Record<string, Operation>>) {
  const ref = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const keyed = operation.parameters?.some((p) => p.$ref?.endsWith("/IdempotencyKey"));
      const tagged = operation.parameters?.some((p) => p.$ref?.endsWith("/IfNoneMatch"));
      const sessioned = operation.parameters?.some((p) => p.$ref?.endsWith("/D1Bookmark"));
      for (const [status, response] of Object.entries(operation.responses)) {
        response.headers = {
          ...response.headers,
          "X-Request-Id": ref("XRequestId"),
          "RateLimit-Policy": ref("RateLimitPolicy"),
          RateLimit: ref("RateLimit"),
          ...(keyed && status.startsWith("2") && { "Idempotent-Replayed": ref("IdempotentReplayed") }),
          ...(sessioned && status.startsWith("2") && { "X-D1-Bookmark": ref("XD1Bookmark") }),
          ...(tagged && status === "200" && { ETag: ref("ETag") }),
        };
      }
    }
  }
}

/** Builds the OpenAPI 3.0.3 document once per isolate. */
export function buildOpenApiDocument(app: OpenAPIHono<AppBindings>) {
  for (const [name, value] of Object.entries(PARAMETERS))
    app.openAPIRegistry.registerComponent("parameters", name, value);
  for (const [name, value] of Object.entries(HEADERS)) app.openAPIRegistry.registerComponent("headers", name, value);
  app.openAPIRegistry.registerComponent("securitySchemes", "oauth2", {
    type: "oauth2",
    description: "Client-credentials grant; the token is a signed JWT valid for 86400 seconds.",
    flows: {
      clientCredentials: {
        tokenUrl: "/v1/oauth/token",
        scopes: Object.fromEntries([
          ["*", "Every scope"],
          ...RESOURCE_SCOPES.map((s) => [s, `${s.replace(":", " ")} access`]),
        ]),
      },
    },
  });
  const document = app.getOpenAPIDocument({
    openapi: "3.0.3",
    info: {
      title: "Expiry-tracking and reminder API",
      version: "1.0.0",
      description: DESCRIPTION,
      contact: { name: "API support", email: "api-support@example.com" },
      license: { name: "Proprietary: API use under the service terms", url: "https://example.com/terms" },
    },
    servers: [{ url: "/", description: "This deployment" }],
    tags: TAGS,
  });
  addResponseHeaders(document.paths as unknown as Record<string, Record<string, Operation>>);
  return document;
}
