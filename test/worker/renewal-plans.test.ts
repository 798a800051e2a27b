// The plans of the renewal statements (src/records/items/recurrence.ts renewalWrites): the renewals
// are walked once and each item found by its id. Through the company's index instead, every
// renewal would be re-read for each of the company's items (10,000 items x 500 renewals per
// statement made the clock's renewal at expiry take minutes; docs/performance.md).
import { expect, it } from "vitest";
import { database } from "../../src/db/client";
import { renewalWrites } from "../../src/records/items/recurrence";
import { env } from "./helpers";

it("renewal writes scan the renewals once and find items by primary key", async () => {
  const db = database(env.DB);
  const renewals = [1, 2, 3].map((itemId) => ({ itemId, from: "2026-01-01", to: "2026-02-01", state: "[]" }));
  const { history, update } = renewalWrites(db, 1, renewals, { reason: "expired", userId: 0 });
  for (const statement of [history, update]) {
    const { sql, params } = statement.toSQL();
    const plan = (
      await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .bind(...params)
        .all<{ detail: string }>()
    ).results.map((r) => r.detail);
    expect(plan[0], plan.join(" | ")).toMatch(/^SCAN j VIRTUAL TABLE/);
    expect(
      plan.filter((d) => /\bitems\b/.test(d)),
      plan.join(" | "),
    ).toEqual(["SEARCH items USING INTEGER PRIMARY KEY (rowid=?)"]);
  }
});
