// What a trigger declaration says, and the one way it becomes SQL. The catalogue (catalogue.ts)
// lists every trigger of the database; scripts/gen-triggers.ts renders it into migrations and
// docs/triggers.md.

/** The families, in the order the catalogue creates them (SQLite fires a table's triggers for one event latest-created first). */
export const FAMILIES = [
  "key check",
  "version",
  "search",
  "business rule",
  "counter",
  "reminder sync",
  "revision",
  "webhook event",
  "audit",
] as const;
export type Family = (typeof FAMILIES)[number];

export type Row = "new" | "old";

export interface Trigger {
  name: string;
  family: Family;
  table: string;
  /** Default AFTER. */
  timing?: "BEFORE" | "AFTER";
  event: "INSERT" | "UPDATE" | "DELETE";
  /** UPDATE OF these columns only. */
  columns?: readonly string[];
  /** The condition besides the shard-move guard (SQL). */
  when?: string;
  /**
   * Skipped while the row's company is listed in `shard_moves` (an account move copies or removes
   * its rows: docs/scale.md). Every trigger that writes another table skips; only the search-index,
   * key-check and version triggers run, since they keep the row's own table and index.
   */
  skipsShardMoves: boolean;
  /** What it does, in words (docs/triggers.md). */
  effect: string;
  /** Its statements, without the final semicolons. */
  body: readonly string[];
}

/** The row a trigger reads its company from: the old one for a delete, else the new. */
export const rowOf = (t: Pick<Trigger, "event">): Row => (t.event === "DELETE" ? "old" : "new");

/** The column holding a row's company (`companies` is the company). */
export const companyColumn = (table: string) => (table === "companies" ? "id" : "company_id");

export const shardMoveGuard = (t: Pick<Trigger, "table" | "event">) =>
  `NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = ${rowOf(t)}.${companyColumn(t.table)})`;

/** Milliseconds since the epoch, now. */
export const NOW_MS = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";

const quoted = (name: string) => `\`${name}\``;

/** The trigger's CREATE statement, without its final semicolon (as sqlite_master keeps it). */
export function renderTrigger(t: Trigger): string {
  const event = t.columns ? `UPDATE OF ${t.columns.map(quoted).join(", ")}` : t.event;
  const guard = t.skipsShardMoves ? shardMoveGuard(t) : undefined;
  const condition = t.when && guard ? `(${t.when}) AND ${guard}` : (t.when ?? guard);
  const when = condition ? `\n  WHEN ${condition}` : "";
  const body = t.body.map((statement) => `${statement.replace(/^/gm, "  ")};\n`).join("");
  return `CREATE TRIGGER ${quoted(t.name)} ${t.timing ?? "AFTER"} ${event} ON ${quoted(t.table)}${when}\nBEGIN\n${body}END`;
}

/** The SQL with every run of whitespace outside string literals made one space: how live and catalogue are compared. */
export function normalise(sql: string): string {
  return sql
    .trim()
    .replace(/;$/, "")
    .split(/('(?:[^']|'')*')/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/\s+/g, " ")))
    .join("");
}

/**
 * Triggers on one table for one timing and event fire latest-created first, so their order is part
 * of what they do (an audit entry's place relative to the entries its triggers cause). Keyed from
 * the CREATE statement, which live triggers give too.
 */
export function firingGroup(sql: string): string {
  const m = /^CREATE TRIGGER `?\w+`? (BEFORE|AFTER) (INSERT|UPDATE|DELETE)\b.*? ON `?(\w+)`?/is.exec(normalise(sql));
  if (!m) throw new Error(`not a trigger this catalogue renders: ${sql.slice(0, 80)}`);
  return `${m[3]} ${m[1]} ${m[2]}`.toLowerCase();
}
