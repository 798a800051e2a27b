// Who a fired reminder goes to (docs/reminders.md, "Recipients and escalation"): read from D1 when
// it fires, by the delivery run that follows its claim. A reminder names a contact, a contact group
// (every contact of it with an address for the channel, de-duplicated by address, the first
// MAX_GROUP_RECIPIENTS by contact id) or nobody (the item's contact at that moment). Each recipient
// then becomes its own delivery. One D1 batch for a whole run's reminders, whatever their number.

import { MAX_GROUP_RECIPIENTS } from "./sequence-steps";

/** A fired reminder's delivery whose recipients are to be resolved (its placeholder row, contact 0). */
export interface Unresolved {
  reminderId: number;
  channel: string;
  itemId: number;
  contactId: number | null;
  groupId: number | null;
}

/** The recipients of one (reminder, channel), or why there are none. */
export type Resolution =
  | { kind: "contacts"; contactIds: number[] }
  | { kind: "none"; state: "no_recipient" | "skipped"; error: string };

const key = (reminderId: number, channel: string) => `${reminderId}:${channel}`;

// The address a contact is reached at on a channel, for de-duplication: email lower-cased, a phone
// number's digits (with its + and country code). '' when the contact has none.
const ADDRESS = `CASE t.channel WHEN 'email' THEN lower(trim(c.email))
    ELSE replace(replace(replace(replace(replace(trim(c.mobile_code || c.phone_number), ' ', ''), '-', ''), '(', ''), ')', ''), '.', '') END`;

/** Each target: whether its item is still there, and its one contact (the reminder's, else the item's) when it names no group. */
const TARGETS = `SELECT t.value ->> 0 AS reminder_id, t.value ->> 1 AS channel, i.id IS NOT NULL AS present,
    t.value ->> 4 AS group_id, g.id IS NOT NULL AS group_present, c.id AS contact_id, t.value ->> 3 AS named_contact
  FROM json_each(?2) AS t
  LEFT JOIN items AS i ON i.id = t.value ->> 2 AND i.company_id = ?1
  LEFT JOIN contact_groups AS g ON g.id = t.value ->> 4 AND g.company_id = ?1
  LEFT JOIN contacts AS c ON t.value ->> 4 IS NULL AND c.id = coalesce(t.value ->> 3, i.contact_id) AND c.company_id = ?1`;

/** The groups' contacts with an address for the channel, one per address (the lowest id), the first MAX_GROUP_RECIPIENTS (contacts_company_group_idx). */
const GROUP_MEMBERS = `WITH t AS (SELECT value ->> 0 AS reminder_id, value ->> 1 AS channel, value ->> 4 AS group_id FROM json_each(?2) WHERE value ->> 4 IS NOT NULL),
  reached AS (SELECT t.reminder_id, t.channel, c.id AS contact_id, ${ADDRESS} AS address
    FROM t JOIN contacts AS c ON c.company_id = ?1 AND c.group_id = t.group_id),
  distinct_addresses AS (SELECT reminder_id, channel, min(contact_id) AS contact_id FROM reached WHERE address <> '' GROUP BY reminder_id, channel, address),
  ranked AS (SELECT reminder_id, channel, contact_id, row_number() OVER (PARTITION BY reminder_id, channel ORDER BY contact_id) AS n FROM distinct_addresses)
  SELECT reminder_id, channel, contact_id FROM ranked WHERE n <= ?3 ORDER BY reminder_id, channel, contact_id`;

/** The recipients of each target, by `reminderId:channel`. */
export async function resolveRecipients(
  d1: D1Database,
  companyId: number,
  targets: Unresolved[],
): Promise<Map<string, Resolution>> {
  const json = JSON.stringify(targets.map((t) => [t.reminderId, t.channel, t.itemId, t.contactId, t.groupId]));
  const [found, members] = await d1.batch([
    d1.prepare(TARGETS).bind(companyId, json),
    d1.prepare(GROUP_MEMBERS).bind(companyId, json, MAX_GROUP_RECIPIENTS),
  ]);
  const byGroupTarget = new Map<string, number[]>();
  for (const m of members!.results as Array<{ reminder_id: number; channel: string; contact_id: number }>) {
    const k = key(Number(m.reminder_id), m.channel);
    byGroupTarget.set(k, [...(byGroupTarget.get(k) ?? []), Number(m.contact_id)]);
  }
  const resolved = new Map<string, Resolution>();
  for (const r of found!.results as Array<{
    reminder_id: number;
    channel: string;
    present: number;
    group_id: number | null;
    group_present: number;
    contact_id: number | null;
    named_contact: number | null;
  }>) {
    const k = key(Number(r.reminder_id), r.channel);
    const address = r.channel === "email" ? "an email address" : "a phone number";
    if (r.present !== 1)
      resolved.set(k, { kind: "none", state: "skipped", error: "the item was deleted before delivery" });
    else if (r.group_id !== null) {
      const ids = byGroupTarget.get(k) ?? [];
      if (ids.length > 0) resolved.set(k, { kind: "contacts", contactIds: ids });
      else if (r.group_present !== 1)
        resolved.set(k, { kind: "none", state: "no_recipient", error: `contact group ${r.group_id} no longer exists` });
      else
        resolved.set(k, {
          kind: "none",
          state: "no_recipient",
          error: `contact group ${r.group_id} has no contact with ${address}`,
        });
    } else if (r.contact_id !== null) resolved.set(k, { kind: "contacts", contactIds: [Number(r.contact_id)] });
    else if (r.named_contact !== null)
      resolved.set(k, { kind: "none", state: "no_recipient", error: `contact ${r.named_contact} no longer exists` });
    else
      resolved.set(k, {
        kind: "none",
        state: "no_recipient",
        error: "no recipient: the item has no contact and the reminder names none",
      });
  }
  return resolved;
}

export const resolutionKey = key;
