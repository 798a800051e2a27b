// New rows of a table written from one JSON parameter: `INSERT … SELECT … FROM json_each(?)`, any
// number of rows in one statement under D1's 100-parameter cap. The shape the resources' writers
// share (src/records/items/writer.ts, src/records/contacts.ts): each says, for every column of its
// table, how a new row gets it, and a guard that decides which rows are written.
import { getTableColumns, getTableName } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

/** For every column of a table (by drizzle key): its SQL over `r` (the row's JSON is `r.v`), or null for the table's own (an autoincrement id). */
export type ColumnsMade<T extends SQLiteTable> = { [K in keyof T["$inferSelect"]]: string | null };

/** A field of a row's JSON, by name: `r.v ->> '$.name'`. */
export const jsonField = (name: string, row = "r.v") => `${row} ->> '$.${name}'`;

/**
 * The statement's text, with one `?`, the rows' JSON array. `made`: each column's expression over
 * `r` (`r.v` the row, `r.k` its place, and `first`'s names, computed from `j.value` first); `more`:
 * other values the guard reads, over `r` too; `guard`: which rows are written, over `n` (every
 * column and `more` by name). Rows are written in the array's order; `returning`: `RETURNING *`.
 */
export function jsonRowsInsert<T extends SQLiteTable>(
  table: T,
  made: ColumnsMade<T>,
  options: { guard: string; returning: boolean; first?: Record<string, string>; more?: Record<string, string> },
): string {
  const columns = Object.entries(getTableColumns(table)).flatMap(([key, column]) => {
    const expression = made[key as keyof ColumnsMade<T>];
    return expression === null ? [] : [{ name: column.name, expression }];
  });
  const named = (entries: Record<string, string> = {}) =>
    Object.entries(entries).map(([name, expression]) => `${expression} AS ${name}`);
  const inner = [...columns.map((c) => `${c.expression} AS ${c.name}`), ...named(options.more), "r.k AS k"];
  const source = ["j.key AS k", "j.value AS v", ...named(options.first)];
  return `INSERT INTO ${getTableName(table)} (${columns.map((c) => c.name).join(", ")})
    SELECT ${columns.map((c) => `n.${c.name}`).join(", ")}
    FROM (
      SELECT ${inner.join(",\n        ")}
      FROM (SELECT ${source.join(", ")} FROM json_each(?) AS j) AS r
    ) AS n
    WHERE ${options.guard}
    ORDER BY n.k${options.returning ? "\n    RETURNING *" : ""}`;
}

/** A row of `RETURNING *` (column names) as the table's drizzle row (its keys). */
export function rowOf<T extends SQLiteTable>(table: T, raw: Record<string, unknown>): T["$inferSelect"] {
  const row: Record<string, unknown> = {};
  for (const [key, column] of Object.entries(getTableColumns(table))) row[key] = raw[column.name];
  return row as T["$inferSelect"];
}
