// D1_STATS=on: counts a request's D1 work (queries, rows read and written, D1's own duration) from
// each result's `meta`, for the request's log line; a measuring run reads it for
// docs/scale.md. Off by default: it costs a wrapper per statement.

export interface D1Stats {
  queries: number;
  rowsRead: number;
  rowsWritten: number;
  /** Sum of D1's `meta.duration` (ms): time inside the database, not the round trip. */
  ms: number;
}

function add(stats: D1Stats, result: D1Result | undefined): void {
  stats.queries++;
  stats.rowsRead += result?.meta?.rows_read ?? 0;
  stats.rowsWritten += result?.meta?.rows_written ?? 0;
  stats.ms += result?.meta?.duration ?? 0;
}

const READ = /^\s*(select|with)\b/i;
const WRITE_IN_CTE = /\b(insert\s+into|update\s+\S+\s+set|delete\s+from)\b/i;

/**
 * `d1` with every statement's result counted into `stats`. first() goes through all(), which
 * carries meta; raw() (drizzle's selects) keeps its own rows, since all() would merge columns of the
 * same name, and a read's meta comes from running it once more with all().
 */
export function countedDatabase(d1: D1Database, stats: D1Stats): D1Database {
  const wrap = (sql: string, inner: D1PreparedStatement): D1PreparedStatement => {
    const all = async () => {
      const result = await inner.all();
      add(stats, result);
      return result;
    };
    return {
      inner,
      bind: (...values: unknown[]) => wrap(sql, inner.bind(...values)),
      all,
      run: async () => {
        const result = await inner.run();
        add(stats, result);
        return result;
      },
      first: async (column?: string) => {
        const row = ((await all()).results[0] ?? null) as Record<string, unknown> | null;
        return column === undefined ? row : (row?.[column] ?? null);
      },
      raw: async (options?: { columnNames?: boolean }) => {
        const rows = options?.columnNames ? await inner.raw({ columnNames: true }) : await inner.raw();
        if (READ.test(sql) && !WRITE_IN_CTE.test(sql)) add(stats, await inner.all());
        else add(stats, undefined);
        return rows;
      },
    } as unknown as D1PreparedStatement;
  };
  return {
    ...d1,
    prepare: (sql: string) => wrap(sql, d1.prepare(sql)),
    batch: async <T>(statements: D1PreparedStatement[]) => {
      const results = await d1.batch<T>(
        statements.map((s) => (s as unknown as { inner?: D1PreparedStatement }).inner ?? s),
      );
      for (const result of results) add(stats, result);
      return results;
    },
  } as D1Database;
}
