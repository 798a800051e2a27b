import type { SQL } from "drizzle-orm";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { commit, messagesOf, type Committed, type Statement, type WriteContext } from "./commit";
import type * as schema from "./schema";

/**
 * The one database handle: drizzle's builder for reads and for building write statements, the same
 * session for statements written in SQL (`d1`), and `commit`, the one way to write
 * (src/db/commit.ts: what travels with each write). Handlers get the request's as `c.var.db`.
 */
export type Db = DrizzleD1Database<typeof schema> & {
  /** The same session, for statements written in SQL (docs/data-layer.md says when). */
  readonly d1: D1Database;
  /** Sends `statements` as one D1 batch, one transaction, with what the handle's write context adds. */
  commit<const T extends readonly Statement[]>(statements: T): Promise<Committed<T>>;
  /**
   * A handle on the shard's primary with the same write context, for a read that must see a write
   * made in another session meanwhile (the company clock's). Outside a request: this handle.
   */
  primary(): Db;
};

/**
 * A handle over a D1 database or session. `context`: what its commits carry (none: the statements
 * alone). Built per request, so drizzle without the schema: that builds drizzle's relational-query
 * config (about 0.2 ms), and no query uses `db.query`.
 */
export function database(d1: D1Database, context?: WriteContext, primary?: () => D1Database): Db {
  const db = drizzle(d1) as unknown as Db;
  return Object.assign(db, {
    d1,
    commit: <const T extends readonly Statement[]>(statements: T) => commit(d1, statements, context),
    primary: () => (primary ? database(primary(), context) : db),
  });
}

const dialect = new SQLiteAsyncDialect();

/** A drizzle fragment as SQL text, for a statement written by hand; it must bind no parameter (columns render as "table"."column"). */
export function sqlText(fragment: SQL): string {
  const { sql, params } = dialect.sqlToQuery(fragment);
  if (params.length > 0) throw new Error(`sqlText: the fragment binds ${params.length} parameters`);
  return sql;
}

/**
 * Whether `err` (or its cause) is a UNIQUE violation naming `marker`: SQLite names the columns
 * of a column index (`contacts.email_key`) and the index itself for an expression index.
 */
export function isUniqueViolation(err: unknown, marker: string): boolean {
  const text = messagesOf(err);
  return text.includes("UNIQUE constraint failed") && text.includes(marker);
}

export function isForeignKeyViolation(err: unknown): boolean {
  return messagesOf(err).includes("FOREIGN KEY constraint failed");
}
