// D1 sessions (read replication, docs/scale.md "Sessions and bookmarks"). Every request runs its
// queries in one session of its account's shard: a GET may start on any replica
// ("first-unconstrained"), a write starts on the primary ("first-primary"), and a client that sends
// back the X-D1-Bookmark of an earlier response starts at least there (it reads what it wrote).
// The Durable Object and the cron sweep always use the primary (primarySession).
import type { Context } from "hono";
import type { AppBindings, Env } from "../env";
import { badRequest } from "../lib/errors";
import { noteOnLog, setResponseHeader } from "../lib/request-context";
import { countedDatabase, type D1Stats } from "./query-stats";
import type { RequestSession } from "./request-session";
import { shardDatabase } from "./shards";

export const BOOKMARK_HEADER = "X-D1-Bookmark";
/** Longest X-D1-Bookmark accepted: ours are `<shard>:` and a D1 bookmark of under 100 characters. */
export const MAX_BOOKMARK_CHARS = 200;

// `<shard>:<D1 bookmark>`; a D1 bookmark is hex groups (`0000002a-00000001-00004f91-<32 hex>`).
const BOOKMARK = /^(\d{1,2}):([0-9a-f]{8}(?:-[0-9a-f]{8}){2}-[0-9a-f]{16,64})$/;

/**
 * The D1 bookmark inside a client's X-D1-Bookmark for `shard`: null without one, or when it names
 * another shard (the account moved since: the session starts on the new shard's primary).
 * Throws 400 for anything this service did not issue.
 */
export function bookmarkFor(header: string | undefined, shard: number): string | null {
  if (header === undefined) return null;
  const match = header.length <= MAX_BOOKMARK_CHARS ? BOOKMARK.exec(header.trim()) : null;
  if (!match) {
    throw badRequest(
      `${BOOKMARK_HEADER} must be a bookmark from an earlier response's ${BOOKMARK_HEADER} header, sent back unchanged`,
    );
  }
  return Number(match[1]) === shard ? match[2]! : null;
}

/** Methods that only read: their session may start on a replica; a moving (read-only) account still answers them. */
export const READS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS"]);

/** The request's session on its account's shard, from its X-D1-Bookmark (400 when malformed). */
export function requestSession(c: Context<AppBindings>, shard: number): RequestSession {
  const bookmark = bookmarkFor(c.req.header(BOOKMARK_HEADER), shard);
  return openRequestSession(c.env, shard, { write: !READS.has(c.req.method), bookmark });
}

/** Answers the session's bookmark in X-D1-Bookmark (when it ran a query), and its D1 work in the log line (D1_STATS=on). */
export function answerBookmark(c: Context<AppBindings>, session: RequestSession): void {
  const bookmark = session.bookmark();
  if (bookmark) setResponseHeader(c, BOOKMARK_HEADER, bookmark);
  if (session.stats) noteOnLog(c, { ...statsNote(session.stats), d1_shard: session.shard });
}

/** The same, from a handler before it answers (routes without a bearer token: uploads, feeds, tokens). */
export function bookmarkOnAnswer(c: Context<AppBindings>, session: RequestSession): void {
  const bookmark = session.bookmark();
  if (bookmark) c.header(BOOKMARK_HEADER, bookmark);
  if (session.stats) noteOnLog(c, { ...statsNote(session.stats), d1_shard: session.shard });
}

const statsNote = (stats: D1Stats) => ({
  d1_queries: stats.queries,
  d1_rows_read: stats.rowsRead,
  d1_rows_written: stats.rowsWritten,
  d1_ms: Math.round(stats.ms * 1000) / 1000,
});

/** The request's session on `shard`: from the client's bookmark, else replica-first for reads, primary-first for writes. */
export function openRequestSession(
  env: Env,
  shard: number,
  options: { write: boolean; bookmark: string | null },
): RequestSession {
  const constraint = options.bookmark ?? (options.write ? "first-primary" : "first-unconstrained");
  const session = shardDatabase(env, shard).withSession(constraint);
  const d1 = asDatabase(session);
  const stats = env.D1_STATS === "on" ? newStats() : undefined;
  return {
    shard,
    stats,
    d1: stats ? countedDatabase(d1, stats) : d1,
    bookmark: () => {
      const bookmark = session.getBookmark();
      return bookmark ? `${shard}:${bookmark}` : null;
    },
  };
}

/** A session on the shard's primary: for reads that decide what happens next (reminders firing, the sweep). */
export const primarySession = (env: Env, shard: number): D1Database =>
  asDatabase(shardDatabase(env, shard).withSession("first-primary"));

const newStats = (): D1Stats => ({ queries: 0, rowsRead: 0, rowsWritten: 0, ms: 0 });

/** A session typed as the D1Database the query helpers take (a session has no exec or dump). */
function asDatabase(session: D1DatabaseSession): D1Database {
  return {
    prepare: (sql: string) => session.prepare(sql),
    batch: <T>(statements: D1PreparedStatement[]) => session.batch<T>(statements),
    exec: () => Promise.reject(new Error("exec is not available in a D1 session")),
    dump: () => Promise.reject(new Error("dump is not available in a D1 session")),
    withSession: () => session,
  } as unknown as D1Database;
}
