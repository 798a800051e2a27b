// Every item list query reads through an index (no scan of the items table), and the page of
// every filter but `q` comes out of its index already in (expiry_date, id) order (no sort step).
import { describe, expect, it } from "vitest";
import { getDb } from "../../src/db/client";
import { itemListQueries } from "../../src/routes/items/queries";
import { ListItemsQuery } from "../../src/routes/items/schemas";
import { env } from "./helpers";

const db = getDb(env.DB);

async function plan(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string> {
  const { sql, params } = query.toSQL();
  const rows = await env.DB.prepare(`EXPLAIN QUERY PLAN ${sql}`)
    .bind(...params)
    .all<{ detail: string }>();
  return rows.results.map((r) => r.detail).join("\n");
}

const fullScanOfItems = (text: string) => text.split("\n").filter((d) => /^SCAN items( |$)/.test(d) && !/USING (COVERING )?INDEX/.test(d));

const cases: Array<[string, string, boolean]> = [
  ["unfiltered", "", true],
  ["archived=true", "archived=true", true],
  ["status", "status=pending", true],
  ["status + period", "status=pending&period=next_30_days", true],
  ["item_type", "item_type=due", true],
  ["document type", "document_type_id=3", true],
  ["department", "deptid=1", true],
  ["folder", "folder_id=2", true],
  ["no folder", "folder_id=0", true],
  ["contact", "contact_id=4", true],
  ["cursor", "cursor=MjAzMC0wMS0wMX4xMg", true],
  ["q", "q=insp", false],
  ["q + status", "q=insp&status=pending", false],
];

describe("query plans of the item list", () => {
  for (const [label, search, ordered] of cases) {
    it(`${label}: indexed page${ordered ? " in index order" : ""}, indexed total`, async () => {
      const query = ListItemsQuery.parse(Object.fromEntries(new URLSearchParams(search)));
      const built = itemListQueries(db, 1, query, "2026-11-21")!;
      const page = await plan(built.page);
      expect(fullScanOfItems(page), page).toEqual([]);
      expect(page, page).toMatch(/SEARCH items USING (COVERING )?INDEX|SEARCH items USING INTEGER PRIMARY KEY/);
      if (ordered) expect(page, page).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      const total = await plan(built.total);
      expect(fullScanOfItems(total), total).toEqual([]);
    });
  }

  it("detects a full scan (control)", async () => {
    const text = await plan({ toSQL: () => ({ sql: "SELECT * FROM items WHERE title = ?", params: ["x"] }) });
    expect(fullScanOfItems(text)).toHaveLength(1);
  });
});

describe("foreign-key lookups", () => {
  // Deleting a parent row makes SQLite look its children up by the referencing column alone;
  // without an index led by that column it scans the child table across every company.
  for (const [child, column] of [
    ["items", "document_type_id"],
    ["items", "dept_id"],
    ["items", "contact_id"],
    ["items", "folder_id"],
    ["item_tags", "item_id"],
    ["item_tags", "tag_id"],
    ["item_renewals", "item_id"],
    ["contacts", "group_id"],
    ["document_type_fields", "type_id"],
  ] as const) {
    it(`${child}.${column} is searched through an index`, async () => {
      const text = await plan({ toSQL: () => ({ sql: `SELECT 1 FROM ${child} WHERE ${column} = ?`, params: [1] }) });
      expect(text, text).toMatch(/^SEARCH /m);
      expect(text, text).not.toMatch(/^SCAN /m);
    });
  }
});
