// The rule state of an item (docs/recurrence.md): one SQL expression shared by the API's renewals
// (src/records/items/recurrence.ts) and the company clock's snapshots. Kept apart from both so the
// clock reads it without importing the items routes.

import { sql, type SQL } from "drizzle-orm";

/**
 * The item's date, rule and archived flag as one JSON array (SQLite's json_array). A renewal is
 * computed from it and guarded by it: the write applies only while the item still says exactly
 * this, so a renewal repeated (a retried alarm, a second completion) finds nothing to do.
 */
export const ruleStateOf = (table: string) =>
  sql.raw(
    `json_array(${["expiry_date", "recur_every", "recur_unit", "recur_renew_on", "recur_until", "recur_count", "recur_anchor", "archived"].map((c) => `${table}.${c}`).join(", ")})`,
  ) as SQL<string>;
export const ruleState = ruleStateOf(`"items"`);
