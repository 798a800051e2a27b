import type { Context } from "hono";

// Typed success envelopes. Each returns `c.json(body, <literal status>)`, so @hono/zod-openapi
// checks the body against the schema the route publishes for that status: a handler whose body
// breaks its documented response fails `tsc`.

/** 200 `{success, data}`: a read. */
export const ok = <T>(c: Context, data: T) => c.json({ success: true as const, data }, 200);

/** 201 `{success, msg, data}`: a record created. */
export const created = <T>(c: Context, msg: string, data: T) => c.json({ success: true as const, msg, data }, 201);

/** 200 `{success, msg, data}`: a record changed. */
export const updated = <T>(c: Context, msg: string, data: T) => c.json({ success: true as const, msg, data }, 200);

/** 200 `{success, msg}`: a change with nothing to return (deletes). */
export const done = (c: Context, msg: string) => c.json({ success: true as const, msg }, 200);

/** 200 `{success, data: [...], meta}`: a page of a list (see `listPage` in src/db/pages.ts). */
export const page = <T, M>(c: Context, result: { rows: T[]; meta: M }) =>
  c.json({ success: true as const, data: result.rows, meta: result.meta }, 200);
