import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import * as schema from "./schema";

export type Db = DrizzleD1Database<typeof schema>;

// One drizzle wrapper per D1 binding object, built once per isolate.
const instances = new WeakMap<D1Database, Db>();

export function getDb(d1: D1Database): Db {
  let db = instances.get(d1);
  if (!db) {
    db = drizzle(d1, { schema });
    instances.set(d1, db);
  }
  return db;
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
