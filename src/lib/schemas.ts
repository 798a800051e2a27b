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

/**
 * A decimal integer sent as text (path or query string) within [min, max]. Plain digits only:
 * `1e3`, `0x10`, `+5`, ` 5` and `1.5` are refused with `message` rather than coerced.
 */
export function integerString(message: string, min: number, max = Number.MAX_SAFE_INTEGER) {
  return z
    .string()
    .regex(/^(0|[1-9][0-9]{0,15})$/, { error: message })
    .transform(Number)
    .pipe(z.number().min(min, { error: message }).max(max, { error: message }))
    .openapi({ type: "integer", minimum: min, maximum: max });
}

/** A query-string id filter (> 0). */
export function idQuery(field: string) {
  return integerString(`${field} must be a positive integer`, 1)
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
    limit: integerString(`limit must be an integer from 1 to ${maxLimit}`, 1, maxLimit)
      .default(defaultLimit)
      .openapi({ param: { name: "limit", in: "query" }, example: defaultLimit, default: defaultLimit }),
    offset: integerString("offset must be an integer of at least 0", 0)
      .default(0)
      .openapi({ param: { name: "offset", in: "query" }, example: 0, default: 0 }),
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

/** A paginated list envelope: `{ success, data: [item], meta: {total, limit, offset} }`. */
export function pageEnvelope<T extends z.ZodType>(item: T, name: string) {
  return z.object({ success: z.literal(true), data: z.array(item), meta: PageMeta }).openapi(name);
}
