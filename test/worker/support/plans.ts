import { env } from "cloudflare:workers";

/** SQLite's query plan of a drizzle query, one step per line. */
export async function queryPlan(
  query: { toSQL(): { sql: string; params: unknown[] } } | { sql: string; params: unknown[] },
): Promise<string> {
  const { sql, params } = "toSQL" in query ? query.toSQL() : query;
  const rows = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail).join("\n");
}

/** The plan's steps that scan `table` without an index. */
export function fullScansOf(table: string, plan: string): string[] {
  const scan = new RegExp(`^SCAN ${table}( |$)`);
  return plan.split("\n").filter((d) => scan.test(d) && !/USING (COVERING )?INDEX/.test(d));
}
