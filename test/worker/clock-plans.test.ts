// Plans of the company clock's per-item statements: each finds the item's rows through
// reminders_item. A plan through reminders_due reads every waiting reminder of the company, and
// made each new item's sync slower as the company grew.
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { SNOOZE_AT_SQL } from "../../src/company-clock/store";
import { digestPageQuery, FOLDED_SQL, LEASE_SQL } from "../../src/company-clock/digests";
import { PROBLEM_PAGE_SQL, SOFT_COUNT_SQL, SUPPRESSED_AMONG_SQL } from "../../src/company-clock/bounces";
import { DEFER_SQL, ENDPOINT_LEASE_SQL, READY_SQL } from "../../src/company-clock/channel-deliveries";
import { createAccount, createItem, env } from "./helpers";

/** The object's plan of a statement, its steps joined by " | ". */
const planIn =
  (state: DurableObjectState) =>
  (sql: string, ...args: unknown[]) =>
    state.storage.sql
      .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...(args as SqlStorageValue[]))
      .toArray()
      .map((r) => r.detail)
      .join(" | ");

it("the snooze instant of an item is read through the item's index, not the company's waiting reminders", async () => {
  const account = await createAccount();
  const item = await createItem(account.ownerToken, { expiry_date: "2031-06-30" });
  const plan = await runInDurableObject(clockFor(env, account.companyId), (_instance, state) =>
    state.storage.sql
      .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${SNOOZE_AT_SQL}`, item.item_id)
      .toArray()
      .map((r) => r.detail),
  );
  expect(plan.join(" | ")).toMatch(/SEARCH reminders USING INDEX reminders_item \(item_id=\?/);
});

it("bounces: the problem list is an ordered range of deliveries_problems per state, the suppression and soft-bounce reads are indexed", async () => {
  const account = await createAccount();
  const plans = await runInDurableObject(clockFor(env, account.companyId), (_instance, state) => {
    const plan = planIn(state);
    return {
      page: plan(PROBLEM_PAGE_SQL, "bounced", 0, 1, 1, 1, 50),
      suppressed: plan(SUPPRESSED_AMONG_SQL, '["a@example.com"]'),
      soft: plan(SOFT_COUNT_SQL, "a@example.com", 0),
    };
  });
  expect(plans.page).toMatch(/SEARCH d USING INDEX deliveries_problems \(state=\? AND/);
  expect(plans.page).not.toMatch(/TEMP B-TREE|SCAN d/);
  expect(plans.page).toMatch(/SEARCH r USING INTEGER PRIMARY KEY/);
  expect(plans.suppressed).toMatch(
    /SEARCH suppressed_addresses USING (COVERING )?INDEX sqlite_autoindex_suppressed_addresses_1/,
  );
  expect(plans.soft).toMatch(
    /SEARCH bounces USING (COVERING )?INDEX bounces_address \(address=\? AND kind=\? AND at>\?\)/,
  );
});

it("digests: the list is a range of digests_recent, leases of digests_next, folded reminders of deliveries_folded", async () => {
  const account = await createAccount();
  const plans = await runInDurableObject(clockFor(env, account.companyId), (_instance, state) => {
    const plan = planIn(state);
    const page = (query: Parameters<typeof digestPageQuery>[0]) => {
      const statement = digestPageQuery(query);
      return plan(statement.sql, ...statement.params);
    };
    return {
      first: page({ limit: 50 }),
      next: page({ limit: 50, after: ["2026-11-30", 7, "daily:2026-11-30"] }),
      contact: page({ limit: 50, contactId: 7 }),
      lease: plan(LEASE_SQL, 0, 100),
      folded: plan(FOLDED_SQL, "[1,2]"),
    };
  });
  expect(plans.first).toMatch(/SCAN digests USING INDEX digests_recent/);
  expect(plans.next).toMatch(/SEARCH digests USING INDEX digests_recent \(date</);
  for (const p of [plans.first, plans.next]) expect(p).not.toMatch(/TEMP B-TREE/);
  expect(plans.contact).toMatch(/digests USING (COVERING )?INDEX (sqlite_autoindex_digests_1|digests_recent)/);
  expect(plans.lease).toMatch(/SEARCH digests USING INDEX digests_next \(state=\? AND next_at<\?\)/);
  expect(plans.folded).toMatch(/SEARCH d USING (COVERING )?INDEX deliveries_folded \(contact_id=\?\)/);
});

it("channel deliveries: the ready endpoints, an endpoint's lease and its deferral are ranges of deliveries_channel_next", async () => {
  const account = await createAccount();
  const plans = await runInDurableObject(clockFor(env, account.companyId), (_instance, state) => {
    const plan = planIn(state);
    return {
      ready: plan(READY_SQL, 0),
      lease: plan(ENDPOINT_LEASE_SQL, 3, 0, 10),
      defer: plan(
        DEFER_SQL.replace(/^UPDATE deliveries SET next_at = \? WHERE/, "SELECT 1 FROM deliveries WHERE"),
        3,
        0,
      ),
    };
  });
  expect(plans.ready).toMatch(/SEARCH d USING (COVERING )?INDEX deliveries_channel_next \(state=\?/);
  expect(plans.ready).not.toMatch(/TEMP B-TREE|SCAN d/);
  expect(plans.lease).toMatch(
    /SEARCH d USING INDEX deliveries_channel_next \(state=\? AND endpoint_id=\? AND next_at<\?\)/,
  );
  expect(plans.lease).not.toMatch(/SCAN d/);
  expect(plans.defer).toMatch(
    /SEARCH deliveries USING (COVERING )?INDEX deliveries_channel_next \(state=\? AND endpoint_id=\? AND next_at<\?\)/,
  );
});
