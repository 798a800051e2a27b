// The D1 reads of a digest run: the contacts due on a day through contacts_company_digest_idx (the
// contacts on a digest only, in id order for the plan's cursor), and each contact's items through
// items_contact_date_idx (no scan of the company's contacts or items).
import { expect, it } from "vitest";
import { DIGEST_ITEMS, PLAN_PAGE_SQL } from "../../src/company-clock/digests";
import { fullScansOf, queryPlan } from "./helpers";

it("a digest run's page of contacts reads the digest index in id order; its items come from each contact's range", async () => {
  const page = await queryPlan({ sql: PLAN_PAGE_SQL, params: [1, 0, "monday", 2000] });
  expect(page).toMatch(/SEARCH contacts USING INDEX contacts_company_digest_idx \(company_id=\? AND (rowid|id)>\?\)/);
  expect(page).not.toMatch(/TEMP B-TREE/);
  const items = await queryPlan({ sql: DIGEST_ITEMS, params: [1, '[[4,"2026-12-30"]]', "[[4,9]]", 200] });
  expect(items).toMatch(
    /SEARCH i USING (COVERING )?INDEX items_contact_date_idx \(contact_id=\? AND archived=\? AND company_id=\? AND expiry_date<\?\)/,
  );
  expect(fullScansOf("items", items)).toEqual([]);
  expect(fullScansOf("contacts", page)).toEqual([]);
});
