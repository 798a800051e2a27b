import type { SQL } from "drizzle-orm";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type * as schema from "./schema";

export type Db = DrizzleD1Database<typeof schema>;

/**
 * A drizzle handle over a D1 database or a request's session. Built per request, so without the
 * schema: that builds drizzle's relational-query config (about 0.2 ms), and no query uses `db.query`.
 */
export const getDb = (d1: D1Database): Db => drizzle(d1) as unknown as Db;

const dialect = new SQLiteAsyncDialect();

/** A drizzle fragment as SQL text, for a statement written by hand; it must bind no parameter (columns render as "table"."column"). */
export function sqlText(fragment: SQL): string {
  const { sql, params } = dialect.sqlToQuery(fragment);
  if (params.length > 0) throw new Error(`sqlText: the fragment binds ${params.length} parameters`);
  return sql;
}

function messagesOf(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; current && depth < 5; depth++) {
    parts.push(String((current as Error).message ?? current));
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(" | ");
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
