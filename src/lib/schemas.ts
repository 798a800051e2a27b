import { z } from "@hono/zod-openapi";

/** Options of the text builders. */
export interface TextOptions {
  /** Multi-line text (notes, descriptions): tab, line feed and carriage return are allowed. */
  multiline?: boolean;
}

// C0 controls, DEL and C1 controls; the multi-line set spares \t \n \r.
const CONTROL = /[\u0000-\u001F\u007F-\u009F]/;
const CONTROL_MULTILINE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
// What renders as nothing: white space, format characters (zero-width space and joiners, BOM,
// bidi marks, soft hyphen) and the other default-ignorable code points (e.g. Hangul fillers).
const INVISIBLE = /[\s\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;

/** True when `text` has at least one character that is not white space or invisible. */
export function hasVisibleText(text: string): boolean {
  return text.replace(INVISIBLE, "") !== "";
}

/**
 * A string field's shared hygiene, which every text field (body or query) starts from: refuses
 * lone surrogates and control characters (400 naming the field), then normalises to NFC and trims.
 * Length and other checks chained after it see the normalised text.
 */
export function cleanText(field: string, options: TextOptions = {}) {
  const control = options.multiline ? CONTROL_MULTILINE : CONTROL;
  return z
    .string()
    .refine((s) => s.isWellFormed(), {
      error: `${field} must be well-formed Unicode text (no lone surrogates)`,
      abort: true,
    })
    .refine((s) => !control.test(s), { error: `${field} must not contain control characters`, abort: true })
    .overwrite((s) => s.normalize("NFC").trim());
}

/** Required text with a length cap and messages that name the field: not empty, not invisible only. */
export function requiredText(field: string, max: number, options: TextOptions = {}) {
  return cleanText(field, options)
    .min(1, { error: `${field} must not be empty`, abort: true })
    .refine(hasVisibleText, { error: `${field} must not be empty (it holds only invisible characters)`, abort: true })
    .max(max, { error: `${field} must be at most ${max} characters` });
}

/** Optional text (may be empty) with a length cap. */
export function optionalText(field: string, max: number, options: TextOptions = {}) {
  return cleanText(field, options)
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

/** `0` or `1` flags in requests (`isdefault`), published as an integer enum. */
export function flagField(field: string) {
  return z
    .union([z.literal(0), z.literal(1)], { error: `${field} must be 0 or 1` })
    .openapi({ type: "integer", enum: [0, 1] });
}

/** `0` or `1` flags in responses. */
export const Flag = z.union([z.literal(0), z.literal(1)]).openapi({ type: "integer", enum: [0, 1] });

/** A stored 0/1 column as a `Flag`. */
export const toFlag = (value: number): 0 | 1 => (value === 1 ? 1 : 0);

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

export const searchQuery = cleanText("q")
  .max(200, { error: "q must be at most 200 characters" })
  .optional()
  .openapi({ param: { name: "q", in: "query" } });

/**
 * An enum that may also be null, published as `nullable: true` with only the values in `enum`:
 * zod-to-openapi also lists `null` there, which client generators turn into code that does not
 * compile (`z.enum([..., null])`).
 */
export function nullableEnum<const T extends readonly [string, ...string[]]>(values: T) {
  return z
    .enum(values)
    .nullable()
    .openapi({ enum: [...values] });
}

export const Timestamp = z
  .string()
  .openapi({ example: "2026-11-20 09:30:00", description: "UTC, YYYY-MM-DD HH:MM:SS" });

export const PageMeta = z
  .object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int() })
  .openapi("PageMeta");

/** A paginated list envelope: `{ success, data: [item], meta: {total, limit, offset} }`. */
export function pageEnvelope<T extends z.ZodType>(item: T, name: string) {
  return z.object({ success: z.literal(true), data: z.array(item), meta: PageMeta }).openapi(name);
}

/** A list with `q` whose total is counted up to 1,000 matches (MAX_EXACT_SEARCH_TOTAL): meta adds `total_exact`. */
export function searchPageEnvelope<T extends z.ZodType>(item: T, name: string) {
  return z
    .object({
      success: z.literal(true),
      data: z.array(item),
      meta: PageMeta.extend({
        total_exact: z.boolean().openapi({
          description: "false when a search (q) has more than 1,000 matches: total is then that lower " + "bound",
        }),
      }),
    })
    .openapi(name);
}

/** `limit` (1 to `max`, default 50) and `cursor` (`meta.next_cursor`) of a list read in keyset pages. */
export function keysetPageQuery(max: number) {
  return {
    limit: integerString(`limit must be an integer from 1 to ${max}`, 1, max)
      .default(50)
      .openapi({ param: { name: "limit", in: "query" }, example: 50, default: 50 }),
    cursor: cleanText("cursor")
      .max(100, { error: "cursor is invalid" })
      .optional()
      .openapi({ param: { name: "cursor", in: "query" }, description: "`meta.next_cursor` of the previous page" }),
  };
}
