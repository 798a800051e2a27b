import { z } from "@hono/zod-openapi";
import { VIAS } from "../lib/actors";
import { cleanText, integerString, keysetPageQuery, nullableEnum } from "../lib/schemas";

/** What the log keeps (docs/audit-log.md, "Retention"): the cron job deletes older entries. */
export const RETENTION_DAYS = 365;
export const MAX_PAGE = 200;

/** Every resource type an entry may name (the trigger generator's, plus the token endpoint's `api_client`). */
export const AUDIT_RESOURCE_TYPES = [
  "api_client",
  "calendar_feed",
  "channel",
  "company",
  "contact",
  "contact_group",
  "department",
  "document_type",
  "file",
  "folder",
  "import",
  "item",
  "reminder",
  "reminder_sequence",
  "reminder_template",
  "tag",
  "task",
  "upload_session",
  "webhook",
] as const;

export const AUDIT_ACTIONS = [
  "created",
  "updated",
  "deleted",
  "token_issued",
  "token_refused",
  "tested",
  "retried",
] as const;

const INSTANT =
  /^(\d{4})-(\d{2})-(\d{2})(T([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,3})?)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))?$/;

/** A real calendar date (no February 30th), alone or with a time and offset. */
function isInstant(value: string): boolean {
  const match = INSTANT.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** An optional `since` / `until` query parameter: a date (UTC midnight) or an RFC 3339 date-time. */
export const instant = (field: string) =>
  cleanText(field)
    .max(40, { error: `${field} must be at most 40 characters` })
    .refine(isInstant, {
      error: `${field} must be a date (YYYY-MM-DD, UTC midnight) or an RFC 3339 date-time such as 2026-11-24T09:30:00Z`,
    })
    .optional();

export const ListAuditQuery = z.object({
  resource_type: z
    .enum(AUDIT_RESOURCE_TYPES, { error: `resource_type must be one of: ${AUDIT_RESOURCE_TYPES.join(", ")}` })
    .optional()
    .openapi({ param: { name: "resource_type", in: "query" }, description: "Only entries of this kind of resource" }),
  resource_id: cleanText("resource_id")
    .max(64, { error: "resource_id must be at most 64 characters" })
    .optional()
    .openapi({
      param: { name: "resource_id", in: "query" },
      description:
        "Only entries of this resource (needs resource_type): an item id, a task's " + "public id, a client_id, ...",
    }),
  client_id: cleanText("client_id")
    .max(128, { error: "client_id must be at most 128 characters" })
    .optional()
    .openapi({ param: { name: "client_id", in: "query" }, description: "Only what this API client did" }),
  action: z
    .enum(AUDIT_ACTIONS, { error: `action must be one of: ${AUDIT_ACTIONS.join(", ")}` })
    .optional()
    .openapi({ param: { name: "action", in: "query" } }),
  company_id: integerString("company_id must be a positive integer", 1)
    .optional()
    .openapi({
      param: { name: "company_id", in: "query" },
      description: "Only entries of this company of the account (default: every company)",
    }),
  since: instant("since").openapi({
    param: { name: "since", in: "query" },
    description: "Entries at or after this instant",
    example: "2026-11-01T00:00:00Z",
  }),
  until: instant("until").openapi({
    param: { name: "until", in: "query" },
    description: "Entries before this instant",
    example: "2026-12-01T00:00:00Z",
  }),
  ...keysetPageQuery(MAX_PAGE),
});

// Any JSON value per field, null included: `additionalProperties: true` (zod's `unknown` would publish
// `{nullable: true}` without a type, which OpenAPI 3.0 linters refuse).
const Changes = z
  .record(z.string(), z.unknown())
  .openapi({ additionalProperties: true })
  .nullable()
  .openapi({
    description: "The fields that changed, by their API names (null: the resource did not exist " + "on this side)",
  });

export const AuditEntrySchema = z
  .object({
    audit_id: z.number().int().openapi({ example: 981 }),
    at: z.string().openapi({
      example: "2026-11-24T09:30:12.345Z",
      description: "When the change was committed (UTC, RFC 3339, milliseconds)",
    }),
    actor: z
      .object({
        client_id: z.string().nullable().openapi({
          example: "demo-owner",
          description: "null: the service itself (an automatic renewal, the operator's CLI)",
        }),
        user_id: z.number().int().nullable().openapi({ example: 1 }),
        company_id: z
          .number()
          .int()
          .nullable()
          .openapi({ example: 1, description: "The company of the actor's token" }),
        contact_id: z
          .number()
          .int()
          .nullable()
          .openapi({
            example: null,
            description:
              "The contact who acted as a reminder's recipient, from the page its email links " +
              "to (`via: link`; no client then); null otherwise",
          }),
        channel_id: z
          .number()
          .int()
          .nullable()
          .openapi({
            example: null,
            description:
              "The channel endpoint (GET /v1/channels/{channel_id}) whose reminder message's links " +
              "were used: someone in that channel acted (`via` is the channel's type; no client then); " +
              "null otherwise",
          }),
        via: nullableEnum(VIAS).openapi({
          example: "api",
          description:
            "How the actor acted: `api` (a request with a bearer token, or the token " +
            "endpoint), `link` (a recipient's page from a reminder email), `slack`, `teams`, " +
            "`google_chat`, `discord` or `ntfy` (the page from the links of a reminder posted to a " +
            "channel of that type: `channel_id`); null: the service itself",
        }),
      })
      .openapi("AuditActor"),
    company_id: z.number().int().openapi({ example: 1, description: "The company the resource belongs to" }),
    request_id: z
      .string()
      .nullable()
      .openapi({ example: "3f2b8c1e-6a0d-4d52-9a8e-2b7f0c5d1e4a", description: "The request's X-Request-Id" }),
    operation_id: z
      .string()
      .nullable()
      .openapi({ example: "updateItem", description: "The operationId of the request" }),
    resource_type: z.enum(AUDIT_RESOURCE_TYPES).openapi({ example: "item" }),
    resource_id: z.string().openapi({ example: "42" }),
    action: z.enum(AUDIT_ACTIONS).openapi({ example: "updated" }),
    before: Changes,
    after: Changes,
  })
  .openapi("AuditEntry");

export const AuditPageEnvelope = z
  .object({
    success: z.literal(true),
    data: z.array(AuditEntrySchema),
    meta: z.object({
      limit: z.number().int(),
      next_cursor: z
        .string()
        .nullable()
        .openapi({ description: "Pass as `cursor` for the next (older) page; null on the last page" }),
    }),
  })
  .openapi("AuditLogPage");

export type ListAuditInput = z.infer<typeof ListAuditQuery>;
export type AuditEntry = z.infer<typeof AuditEntrySchema>;
