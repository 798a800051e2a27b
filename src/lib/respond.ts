import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

// @hono/zod-openapi checks a handler's return type against every declared response; the
// envelope helpers serve all routes, so their bodies are checked by the tests instead.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type EnvelopeResponse = any;

/** The success envelope: `{ success: true, msg?, data?, meta? }`. */
export function ok<T>(
  c: Context,
  data: T,
  options: { msg?: string; meta?: Record<string, unknown>; status?: ContentfulStatusCode } = {},
): EnvelopeResponse {
  const body = {
    success: true as const,
    ...(options.msg !== undefined && { msg: options.msg }),
    data,
    ...(options.meta !== undefined && { meta: options.meta }),
  };
  return c.json(body, options.status ?? 200);
}

/** Success with only a message (deletes). */
export function okMessage(c: Context, msg: string): EnvelopeResponse {
  return c.json({ success: true as const, msg }, 200);
}
