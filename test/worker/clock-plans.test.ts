// Plans of the company clock's per-item statements: each finds the item's rows through
// reminders_item. A plan through reminders_due reads every waiting reminder of the company, and
// made each new item's sync slower as the company grew.
import { runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import { SNOOZE_AT_SQL } from "../../src/company-clock/store";
import { createAccount, createItem, env } from "./helpers";

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
