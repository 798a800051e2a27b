import { count, sql, type SQL, type Subquery } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";

/** A drizzle query that can go into a batch and resolves to `T`. */
type Query<T> = BatchItem<"sqlite"> & PromiseLike<T>;

export interface PageMeta {
  total: number;
  limit: number;
  offset: number;
}

/**
 * One page of a list and its total in one D1 round trip (`db.batch`, so both read the same
 * state). `total` selects a single row `{ n }`: a `count()` over the same filter, or, for an
 * unfiltered list, a maintained counter (e.g. companies.contacts_used) so that the total costs
 * an indexed point read instead of a scan.
 */
export async function listPage<Row>(
  db: Db,
  window: { limit: number; offset: number },
  rows: Query<Row[]>,
  total: Query<Array<{ n: number }>>,
): Promise<{ rows: Row[]; meta: PageMeta }> {
  const [pageRows, totals] = (await db.batch([rows, total])) as [Row[], Array<{ n: number }>];
  return { rows: pageRows, meta: { total: totals[0]?.n ?? 0, limit: window.limit, offset: window.offset } };
}

/** A total counted up to `cap` + 1 matches: beyond `cap` it is reported as `cap` with `total_exact: false`. */
export function cappedMeta<M extends PageMeta>(meta: M, cap: number): M & { total_exact: boolean } {
  const exact = meta.total <= cap;
  return { ...meta, total: exact ? meta.total : cap, total_exact: exact };
}

/** `{ n }`: the rows `matches` selects (any select: joins, virtual tables), counted up to `cap` + 1. */
export function countUpTo(db: Db, matches: { limit(limit: number): { as(alias: string): Subquery } }, cap: number) {
  return db.select({ n: count() }).from(matches.limit(cap + 1).as("matches"));
}

/** `{ n }`: the rows of `table` matching `where`, counted up to `cap` + 1 (no cap: all of them). */
export function countMatches(db: Db, table: SQLiteTable, where: SQL | undefined, cap = Number.POSITIVE_INFINITY) {
  if (cap === Number.POSITIVE_INFINITY) return db.select({ n: count() }).from(table).where(where);
  return countUpTo(db, db.select({ one: sql`1` }).from(table).where(where), cap);
}

/** `listPage` of a list whose total is counted up to `cap` (see cappedMeta). */
export async function cappedListPage<Row>(
  db: Db,
  window: { limit: number; offset: number },
  queries: { page: Query<Row[]>; total: Query<Array<{ n: number }>>; cap: number },
): Promise<{ rows: Row[]; meta: PageMeta & { total_exact: boolean } }> {
  const result = await listPage(db, window, queries.page, queries.total);
  return { rows: result.rows, meta: cappedMeta(result.meta, queries.cap) };
}
