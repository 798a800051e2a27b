// Every item list query reads through an index (no scan of the items table), and the page of
// every filter but `q` comes out of its index already in (expiry_date, id) order (no sort step).
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { itemListQueries } from "../../src/records/items/queries";
import { ListItemsQuery } from "../../src/schemas/items";
import { env, fullScansOf, queryPlan } from "./helpers";

const db = database(env.DB);

const plan = queryPlan;
const fullScanOfItems = (text: string) => fullScansOf("items", text);

// [label, query string, the index the page's ids come from (null: the FTS path, which sorts)]
const cases: Array<[string, string, string | null]> = [
  ["unfiltered", "", "items_company_date_idx"],
  ["archived=true", "archived=true", "items_company_date_idx"],
  ["status", "status=pending", "items_company_status_date_idx"],
  ["status + period", "status=pending&period=next_30_days", "items_company_status_date_idx"],
  ["item_type", "item_type=due", "items_company_kind_date_idx"],
  ["document type", "document_type_id=3", "items_type_date_idx"],
  ["department", "deptid=1", "items_dept_date_idx"],
  ["folder", "folder_id=2", "items_folder_date_idx"],
  ["no folder", "folder_id=0", "items_folder_date_idx"],
  ["contact", "contact_id=4", "items_contact_date_idx"],
  ["acknowledged", "acknowledged=true", "items_company_ack_date_idx"],
  ["not acknowledged", "acknowledged=false", "items_company_ack_date_idx"],
  ["acknowledged, archived", "acknowledged=false&archived=true", "items_company_ack_date_idx"],
  ["cursor", "cursor=MjAzMC0wMS0wMX4xMg", "items_company_date_idx"],
  ["deep offset", "offset=20000", "items_company_date_idx"],
  ["q", "q=insp", null],
  ["q, a long word", "q=inspection", null],
  ["q + status", "q=insp&status=pending", null],
  ["q + cursor", "q=insp&cursor=MjAzMC0wMS0wMX4xMg", null],
];

describe("query plans of the item list", () => {
  for (const [label, search, index] of cases) {
    it(`${label}: ${index ? `ids from ${index} in its order, read from the index alone` : "ids through the FTS index"}; indexed total`, async () => {
      const query = ListItemsQuery.parse(Object.fromEntries(new URLSearchParams(search)));
      const built = itemListQueries(db, 1, query, "2026-11-21")!;
      const ids = await plan(built.ids);
      expect(fullScanOfItems(ids), ids).toEqual([]);
      if (index) {
        expect(ids, ids).toMatch(new RegExp(`SEARCH items USING COVERING INDEX ${index} `));
        expect(ids, ids).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      } else {
        // The company's matches stream from items_search in list order: no sort, no other company's postings.
        expect(ids, ids).toMatch(/SCAN items_search VIRTUAL TABLE INDEX/);
        // Only a filter beyond q and archived reads the row of each match (an offset then skips rows, else postings).
        if (/status=/.test(search)) expect(ids, ids).toMatch(/SEARCH items USING INTEGER PRIMARY KEY/);
        else expect(ids, ids).not.toMatch(/ items /);
        expect(ids, ids).not.toMatch(/USE TEMP B-TREE/);
      }
      const page = await plan(built.page);
      expect(fullScanOfItems(page), page).toEqual([]);
      // Only the page's rows are read, by id (never a walk of the company's index).
      expect(page.split("\n")[0], page).toMatch(/^SEARCH items USING INTEGER PRIMARY KEY \(rowid=\?\)/);
      const total = await plan(built.total);
      expect(fullScanOfItems(total), total).toEqual([]);
      if (index && index !== "items_company_date_idx" && label !== "deep offset")
        expect(total, total).toMatch(new RegExp(`COVERING INDEX ${index}`));
    });
  }

  it("a search's total reads the index alone unless another filter needs the row", async () => {
    for (const [search, joined] of [
      ["q=insp", false],
      ["q=inspection&archived=any", false],
      ["q=insp&status=pending", true],
    ] as const) {
      const query = ListItemsQuery.parse(Object.fromEntries(new URLSearchParams(search)));
      const total = await plan(itemListQueries(db, 1, query, "2026-11-21")!.total);
      expect(total, total).toMatch(/SCAN items_search VIRTUAL TABLE INDEX/);
      if (joined) expect(total, total).toMatch(/SEARCH items USING INTEGER PRIMARY KEY/);
      else expect(total, total).not.toMatch(/ items /);
    }
  });

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
    ["contacts", "dept_id"],
    ["contact_groups", "dept_id"],
    ["document_types", "dept_id"],
    ["folders", "dept_id"],
    ["document_type_fields", "type_id"],
  ] as const) {
    it(`${child}.${column} is searched through an index`, async () => {
      const text = await plan({ toSQL: () => ({ sql: `SELECT 1 FROM ${child} WHERE ${column} = ?`, params: [1] }) });
      expect(text, text).toMatch(/^SEARCH /m);
      expect(text, text).not.toMatch(/^SCAN /m);
    });
  }
});
