// Conditional requests (RFC 9110 §13): strong ETags on single-record reads, If-None-Match → 304,
// If-Match on PATCH and DELETE → 412 when the record has changed. The ETag is a hash of the exact
// JSON a GET answers; the write is guarded by the row version read before that JSON, inside the
// write's own batch (src/db/commit.ts), so two writers holding one ETag cannot both succeed.
import type { Context, MiddlewareHandler } from "hono";
import type { z } from "zod";
import type { AppBindings } from "../env";
import { sha256Hex } from "./bytes";
import { writeContext } from "./context";
import { apiError } from "./errors";

/** `"<32 hex characters>"`: the first 128 bits of the SHA-256 of the body. */
export async function etagOf(body: string | Uint8Array): Promise<string> {
  return `"${(await sha256Hex(body)).slice(0, 32)}"`;
}

export type ConditionalHeader = "If-Match" | "If-None-Match";

/** `*` (any current representation), or the listed entity tags as sent (`"x"`, `W/"x"`). */
export type EntityTags = "*" | string[];

const isOws = (code: number) => code === 0x20 || code === 0x09;
/** etagc (RFC 9110 §8.8.3): %x21 / %x23-7E / obs-text; any character past ASCII stands for obs-text bytes. */
const isEtagc = (code: number) => code === 0x21 || (code >= 0x23 && code <= 0x7e) || code >= 0x80;

/**
 * Parses an If-Match / If-None-Match value by RFC 9110's grammar: `"*"` alone, or a list of entity
 * tags (`"…"` or `W/"…"`), elements separated by commas with optional white space around them; empty
 * elements are skipped, as the list rule (§5.6.1.2) asks of a recipient. Anything else, `*` inside a
 * list included, is 400 naming the header. A list with no tag (`,`) matches nothing. (An empty field
 * value never gets here: the runtime drops empty header fields, so it is as if absent.)
 */
export function parseEntityTags(value: string, header: ConditionalHeader): EntityTags {
  let i = 0;
  const end = value.length;
  const skipOws = () => {
    while (i < end && isOws(value.charCodeAt(i))) i++;
  };
  skipOws();
  if (value[i] === "*") {
    i++;
    skipOws();
    if (i === end) return "*";
    throw malformed(header);
  }
  const tags: string[] = [];
  for (;;) {
    skipOws();
    if (i === end) return tags;
    if (value[i] === ",") {
      i++;
      continue;
    }
    const start = i;
    if (value.startsWith("W/", i)) i += 2;
    if (value[i] !== '"') throw malformed(header);
    i++;
    while (i < end && isEtagc(value.charCodeAt(i))) i++;
    if (value[i] !== '"') throw malformed(header);
    i++;
    tags.push(value.slice(start, i));
    skipOws();
    if (i < end && value[i] !== ",") throw malformed(header);
  }
}

const malformed = (header: ConditionalHeader) =>
  apiError(
    400,
    `${header} must be * alone or a comma-separated list of entity tags, each "…" or W/"…" (RFC 9110 §13.1): send the ETag exactly as received`,
  );

/** The request's If-Match / If-None-Match, parsed (400 when malformed); undefined without the header. */
export function requestTags(c: Context, header: ConditionalHeader): EntityTags | undefined {
  const value = c.req.header(header);
  return value === undefined ? undefined : parseEntityTags(value, header);
}

const opaque = (tag: string) => (tag.startsWith("W/") ? tag.slice(2) : tag);

/** If-None-Match uses the weak comparison: `W/"x"` matches `"x"`. */
export function noneMatch(tags: EntityTags, etag: string): boolean {
  return tags === "*" || tags.some((tag) => opaque(tag) === opaque(etag));
}

/**
 * The request's If-Match names a representation (an entity tag), not just "any" (`*`): its write is
 * then bound to the state that tag was checked against (`checkIfMatch`).
 */
export function ifMatchNamesTag(c: Context): boolean {
  const tags = requestTags(c, "If-Match");
  return tags !== undefined && tags !== "*" && tags.length > 0;
}

/** If-Match uses the strong comparison: a weak tag never matches. */
export function ifMatchHolds(tags: EntityTags, etag: string): boolean {
  return tags === "*" || (!etag.startsWith("W/") && tags.includes(etag));
}

/**
 * GET of one record: the response gets its ETag, and If-None-Match naming it answers 304 with no
 * body (HEAD too).
 */
export const etagged: MiddlewareHandler<AppBindings> = async (c, next) => {
  const ifNoneMatch = requestTags(c, "If-None-Match");
  await next();
  if (c.res.status !== 200) return;
  const etag = await etagOf(new Uint8Array(await c.res.clone().arrayBuffer()));
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
    const header = requestTags(c, "If-Match");
    if (header === undefined) return next();
    const params = record.params.safeParse(c.req.param());
    if (!params.success) return next();
    const current = await record.load(c, params.data);
    const etag = await etagOf(JSON.stringify({ success: true, data: current.data }));
    if (!ifMatchHolds(header, etag)) {
      throw apiError(
        412,
        `${record.what} has changed since the ETag sent in If-Match (its ETag is now ${etag}): read it again and retry`,
        { ETag: etag },
      );
    }
    writeContext(c).condition = {
      table: record.table,
      id: current.id,
      version: current.version,
      what: record.what,
      currentEtag: async () =>
        etagOf(JSON.stringify({ success: true, data: (await record.load(c, params.data)).data })),
    };
    await next();
  };
}

/** The row's version, read before its representation (so a change in between makes the guarded write fail: 412). */
export async function rowVersion(c: Context<AppBindings>, table: string, id: number): Promise<number> {
  return (
    (await c.var.db.d1.prepare(`SELECT version FROM "${table}" WHERE id = ?`).bind(id).first<number>("version")) ?? 0
  );
}
