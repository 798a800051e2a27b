// Conditional requests (RFC 9110 §13): strong ETags on single-record reads, If-None-Match → 304,
// If-Match on PATCH and DELETE → 412 when the record has changed. The ETag is a hash of the exact
// JSON a GET answers; the write is guarded by the row version read before that JSON, inside the
// write's own batch (src/db/write-guards.ts), so two writers holding one ETag cannot both succeed.
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import type { AppBindings } from "../env";
import { sha256Hex } from "./bytes";
import { guardedWrites } from "./context";
import { apiError } from "./errors";

/** `"<32 hex characters>"`: the first 128 bits of the SHA-256 of the body. */
export async function etagOf(body: string | Uint8Array): Promise<string> {
  return `"${(await sha256Hex(body)).slice(0, 32)}"`;
}

/** The entity tags of an If-Match / If-None-Match header; `*` stands alone. */
function entityTags(header: string): string[] {
  return header.split(",").map((tag) => tag.trim()).filter(Boolean);
}

/** If-None-Match uses the weak comparison: `W/"x"` matches `"x"`. */
export function noneMatch(header: string, etag: string): boolean {
  return entityTags(header).some((tag) => tag === "*" || tag.replace(/^W\//, "") === etag);
}

/**
 * The request's If-Match names a representation (an entity tag), not just "any" (`*`): its write is
 * then bound to the state that tag was checked against (`checkIfMatch`).
 */
export function ifMatchNamesTag(c: Context): boolean {
  return entityTags(c.req.header("If-Match") ?? "").some((tag) => tag !== "*");
}

/** If-Match uses the strong comparison: a weak tag never matches. */
export function ifMatchHolds(header: string, etag: string): boolean {
  return entityTags(header).some((tag) => tag === "*" || tag === etag);
}

/**
 * GET of one record: the response gets its ETag, and If-None-Match naming it answers 304 with no
 * body (HEAD too).
 */
export const etagged: MiddlewareHandler<AppBindings> = async (c, next) => {
  await next();
  if (c.res.status !== 200) return;
  const etag = await etagOf(new Uint8Array(await c.res.clone().arrayBuffer()));
  const ifNoneMatch = c.req.header("If-None-Match");
  if (ifNoneMatch !== undefined && noneMatch(ifNoneMatch, etag)) {
    c.res = new Response(null, { status: 304, headers: { ETag: etag, "Cache-Control": "private, no-cache" } });
    return;
  }
  c.res.headers.set("ETag", etag);
  c.res.headers.set("Cache-Control", "private, no-cache");
};

/** A record that answers If-Match: how its PATCH and DELETE find it and its current representation. */
export interface ConditionalRecord<P extends z.ZodType> {
  /** For messages: "Item". */
  what: string;
  /** Its SQL table (holding `id` and `version`). */
  table: string;
  /** The operation's path parameters schema. */
  params: P;
  /** The record's row id, its version (read first) and the `data` its GET answers; throws 404 like the GET. */
  load(c: Context<AppBindings>, params: z.output<P>): Promise<{ id: number; version: number; data: unknown }>;
}

export const conditionalRecord = <P extends z.ZodType>(record: ConditionalRecord<P>) => record;

/**
 * PATCH / DELETE of a record: with If-Match, the record's current ETag must be one listed (or `*`),
 * else 412 with the current ETag; the write then requires the version read with it. Without
 * If-Match the operation runs as always. A malformed path id is left to the operation (400).
 */
export function checkIfMatch<P extends z.ZodType>(record: ConditionalRecord<P>): MiddlewareHandler<AppBindings> {
  return async (c, next) => {
    const header = c.req.header("If-Match");
    if (header === undefined) return next();
    const params = record.params.safeParse(c.req.param());
    if (!params.success) return next();
    const current = await record.load(c, params.data);
    const etag = await etagOf(JSON.stringify({ success: true, data: current.data }));
    if (!ifMatchHolds(header, etag)) {
      throw apiError(412, `${record.what} has changed since the ETag sent in If-Match (its ETag is now ${etag}): read it again and retry`, { ETag: etag });
    }
    guardedWrites(c).condition = {
      table: record.table,
      id: current.id,
      version: current.version,
      what: record.what,
      currentEtag: async () => etagOf(JSON.stringify({ success: true, data: (await record.load(c, params.data)).data })),
    };
    await next();
  };
}

/** The row's version, read before its representation (so a change in between makes the guarded write fail: 412). */
export async function rowVersion(c: Context<AppBindings>, table: string, id: number): Promise<number> {
  return (await c.var.d1.prepare(`SELECT version FROM "${table}" WHERE id = ?`).bind(id).first<number>("version")) ?? 0;
}
