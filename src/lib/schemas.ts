import { z } from "@hono/zod-openapi";

/** Non-empty trimmed text with a length cap and messages that name the field. */
export function requiredText(field: string, max: number) {
  return z
    .string()
    .trim()
    .min(1, { error: `${field} must not be empty` })
    .max(max, { error: `${field} must be at most ${max} characters` });
}

/** Optional trimmed text (may be empty) with a length cap. */
export function optionalText(field: string, max: number) {
  return z
    .string()
    .trim()
    .max(max, { error: `${field} must be at most ${max} characters` })
    .optional();
}

/** A JSON integer id (> 0). */
export function idField(field: string) {
  return z
    .number()
    .int({ error: `${field} must be an integer` })
    .positive({ error: `${field} must be a positive integer` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${field} is too large` });
}

/** A query-string integer id (> 0). */
export function idQuery(field: string) {
  return z.coerce
    .number({ error: `${field} must be a positive integer` })
    .int({ error: `${field} must be a positive integer` })
    .positive({ error: `${field} must be a positive integer` })
    .max(Number.MAX_SAFE_INTEGER, { error: `${field} must be a positive integer` })
    .optional()
    .openapi({ param: { name: field, in: "query" } });
}

/** `0` or `1` flags (`isdefault`). */
export function flagField(field: string) {
  return z.union([z.literal(0), z.literal(1)], { error: `${field} must be 0 or 1` });
}

/** `limit`/`offset` query parameters. */
export function paginationQuery(maxLimit: number, defaultLimit: number) {
  return {
    limit: z.coerce
      .number({ error: `limit must be an integer from 1 to ${maxLimit}` })
      .int({ error: `limit must be an integer from 1 to ${maxLimit}` })
      .min(1, { error: `limit must be an integer from 1 to ${maxLimit}` })
      .max(maxLimit, { error: `limit must be an integer from 1 to ${maxLimit}` })
      .default(defaultLimit)
      .openapi({ param: { name: "limit", in: "query" }, example: defaultLimit }),
    offset: z.coerce
      .number({ error: "offset must be an integer of at least 0" })
      .int({ error: "offset must be an integer of at least 0" })
      .min(0, { error: "offset must be an integer of at least 0" })
      .max(Number.MAX_SAFE_INTEGER, { error: "offset is too large" })
      .default(0)
      .openapi({ param: { name: "offset", in: "query" }, example: 0 }),
  };
}

export const searchQuery = z
  .string()
  .trim()
  .max(200, { error: "q must be at most 200 characters" })
  .optional()
  .openapi({ param: { name: "q", in: "query" } });

export const Timestamp = z.string().openapi({ example: "2026-11-20 09:30:00", description: "UTC, YYYY-MM-DD HH:MM:SS" });

export const PageMeta = z
  .object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .openapi("PageMeta");
