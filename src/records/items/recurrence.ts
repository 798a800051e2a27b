// The recurrence rule of an item in D1 (docs/recurrence.md): its columns as the API shows them,
// and the guarded statements of a renewal, shared by POST /renew, a completion that renews and the
// company clock's renewal at expiry.

import { and, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { ruleState } from "../../db/rule-state";
import { itemRenewals, items } from "../../db/schema";
import { parseRuleState, upcomingDates, type RecurrenceRule } from "../../lib/recurrence";
import type { ItemDetail, RecurrenceInput } from "../../schemas/items";

/** A rule as the API shows it (`recurrence` of the detail; exports too). */
export const ruleView = (rule: RecurrenceRule): NonNullable<ItemDetail["recurrence"]> => ({
  every: rule.every,
  unit: rule.unit,
  renew_on: rule.renewOn,
  until: rule.until,
  count: rule.count,
});

/** The detail's `recurrence` and `next_occurrences` of an item dated `date` with rule state `state`. */
export function recurrenceView(state: string): Pick<ItemDetail, "recurrence" | "next_occurrences"> {
  const { date, rule } = parseRuleState(state);
  if (!rule) return { recurrence: null, next_occurrences: [] };
  return {
    recurrence: ruleView(rule),
    next_occurrences: upcomingDates(rule, date),
  };
}

/**
 * The anchor a write leaves an item with, `after` being its rule's every and unit and its date
 * after the write: none without a rule; the anchor kept when the date stays and every and unit
 * stay the item's; otherwise the date. The one statement of that rule, for POST/PATCH
 * (ruleColumns, reanchorOnNewDate) and imports (src/imports/items.ts, per row in SQL).
 */
export function ruleAnchor(after: {
  every: number | SQL;
  unit: string | SQL;
  date: string | SQL;
  dateChanged: boolean | SQL;
}): SQL {
  const changed = typeof after.dateChanged === "boolean" ? sql.raw(after.dateChanged ? "1" : "0") : after.dateChanged;
  return sql`CASE WHEN ${after.every} IS NULL THEN NULL WHEN ${changed} THEN ${after.date}
    WHEN ${items.recurEvery} = ${after.every} AND ${items.recurUnit} = ${after.unit} THEN ${items.recurAnchor} ELSE ${after.date} END`;
}

/**
 * The rule columns a create or update writes. `input` null: the rule is removed. A rule keeps
 * its anchor when only its end (until, count) or renew_on changes and the date stays; otherwise
 * occurrences count from `date` (the item's date after the write).
 */
export function ruleColumns(
  input: RecurrenceInput | null,
  date: string | SQL,
  dateChanged: boolean,
): Partial<typeof items.$inferInsert> {
  if (input === null)
    return {
      recurEvery: null,
      recurUnit: null,
      recurRenewOn: null,
      recurUntil: null,
      recurCount: null,
      recurAnchor: null,
    };
  return {
    recurEvery: input.every,
    recurUnit: input.unit,
    recurRenewOn: input.renew_on,
    recurUntil: input.until ?? null,
    recurCount: input.count ?? null,
    recurAnchor: ruleAnchor({ every: input.every, unit: input.unit, date, dateChanged }) as unknown as string,
  };
}

/** A new date set by hand (PATCH expiry_date): a rule then counts its occurrences from it. */
export const reanchorOnNewDate = (date: string) =>
  ruleAnchor({
    every: sql`${items.recurEvery}`,
    unit: sql`${items.recurUnit}`,
    date,
    dateChanged: true,
  }) as unknown as string;

export type RenewalReason = "manual" | "completed" | "expired";

export interface Renewal {
  itemId: number;
  from: string;
  to: string;
  /** The item's ruleState the renewal was computed from; null: only the date is checked (a renewal by hand). */
  state: string | null;
}

/** At most this many renewals per pair of statements (one JSON parameter each). */
export const RENEWALS_PER_STATEMENT = 500;

/**
 * The two statements of renewals, for one batch (history first: it reads the item before the
 * update moves it). Each applies only to an item of the company still dated `from` (and, when
 * given, still in `state`). The date moves, the sequence is queued again (schedule_epoch), the
 * status goes back to pending; an automatic renewal uses up one of `count` and keeps the rule's
 * anchor, one by hand restarts the rule from the new date. The update returns the renewed rows.
 */
export function renewalWrites(
  db: Db,
  companyId: number,
  renewals: Renewal[],
  how: { reason: RenewalReason; userId: number },
) {
  const json = JSON.stringify(renewals.map((r) => ({ id: r.itemId, from: r.from, to: r.to, state: r.state })));
  const source = () =>
    sql`(SELECT j.value ->> '$.id' AS id, j.value ->> '$.from' AS from_date, j.value ->> '$.to' AS to_date, j.value ->> '$.state' AS state FROM json_each(${json}) AS j) AS r`;
  const applies = and(
    // `+`: not the company's index, so the planner walks the renewals and finds each item by id
    // (through the company's index it would scan every renewal for each of the company's items).
    sql`+${items.companyId} = ${companyId}`,
    sql`${items.id} = r.id`,
    sql`${items.expiryDate} = r.from_date`,
    sql`(r.state IS NULL OR ${ruleState} = r.state)`,
    // Not while the account moves to another shard (the copy must see every write): the clock
    // tries again once the move is over, on the account's new shard.
    sql`EXISTS (SELECT 1 FROM companies c JOIN accounts a ON a.id = c.account_id WHERE c.id = ${companyId} AND a.shard_state = 'active')`,
  );
  const history = db.insert(itemRenewals).select(
    (qb) =>
      qb
        .select({
          id: sql`NULL`,
          itemId: items.id,
          companyId: items.companyId,
          previousDate: items.expiryDate,
          newDate: sql`r.to_date`,
          renewedBy: sql`${how.userId}`,
          renewedAt: sql`CURRENT_TIMESTAMP`,
          reason: sql`${how.reason}`,
        })
        .from(source())
        .innerJoin(items, applies!) as never,
  );
  const automatic = how.reason !== "manual";
  const update = db
    .update(items)
    .set({
      expiryDate: sql`r.to_date`,
      reminderAnchor: sql`r.to_date`,
      scheduleEpoch: sql`${items.scheduleEpoch} + 1`,
      status: "pending",
      // The new occurrence starts unacknowledged and unsnoozed (ack_epoch alone would say so; this
      // keeps the row and its audit entry plain).
      ackEpoch: null,
      acknowledgement: null,
      snoozeEpoch: null,
      snoozedUntil: null,
      snoozeContactId: null,
      updatedAt: sql`CURRENT_TIMESTAMP`,
      ...(automatic
        ? { recurCount: sql`${items.recurCount} - 1` }
        : { recurAnchor: sql`CASE WHEN ${items.recurEvery} IS NULL THEN NULL ELSE r.to_date END` }),
    })
    .from(source())
    .where(applies)
    .returning();
  return { history, update };
}
