// The reminders engine of the company clock: items' D1 snapshots applied to their reminders (queue,
// hold, resume, move, forget), changes the object has not seen replayed (repair), and due
// reminders claimed (queued -> sent, with their deliveries and webhook events). The clock mirrors
// what it needs of each item (title, anchor date, schedule epoch, held) from snapshots it reads
// itself, so a sync can be repeated any number of times (docs/reminders.md).

import { defaultChannels } from "./channels";
import { settle, type ClockContext } from "./context";
import type { Applied } from "./handoff/bookkeeping";
import { pendingItems, readSnapshots, SYNC_BATCH, type PulledEvent, type Snapshots } from "./handoff/snapshots";
import { VIEWS_PER_BATCH } from "./handoff/views";
import { type CurrentReminders, currentOf, invalidateFired, reminderView, viewRows } from "./reminder-views";
import {
  forgetItem,
  mirrorRenewal,
  getMeta,
  itemMirror,
  queueSequence,
  sequenceReminders,
  expiryReminder,
  snoozeReminder,
  insertReminders,
  reanchor,
  reconcile,
  rezone,
  setExpiry,
  setMeta,
  setSnooze,
  zoneOf,
  type ReminderRow,
} from "./store";
import { pump, recordEvent } from "./webhooks";

/** Reminders claimed per transaction; an alarm run claims up to CLAIM_BATCHES_PER_RUN of them, more re-arm the alarm at once. */
export const CLAIM_BATCH = 1000;
export const CLAIM_BATCHES_PER_RUN = 20;
/** Pages of SYNC_BATCH pending changes an alarm or sweep wake applies before re-arming (a backlog drains continuously). */
const REPAIR_PAGES = 4;
/** Entries kept in the triggered feed (the newest). */
export const TRIGGERED_KEEP = 10_000;

/** Queued reminders (the hidden item.expired rows aside). */
export const queuedCount = (sql: SqlStorage): number =>
  sql.exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE state = 'queued' AND origin <> 'expiry'").one().n;

/**
 * Applies the D1 state of `itemIds` (0: the company's settings): queue, hold, resume, move or
 * forget reminders. Idempotent; an older snapshot than the one applied is ignored. `given`: the
 * state of the first batch as the Worker's write read it.
 */
export async function sync(clock: ClockContext, itemIds: number[], given?: Snapshots): Promise<void> {
  let pulled: PulledEvent[] | null = null;
  for (let i = 0; i < itemIds.length; i += SYNC_BATCH) {
    const ids = [...new Set(itemIds.slice(i, i + SYNC_BATCH))];
    // A snapshot the Worker read with its write (same round trip) is as good as one read now: an
    // older one than the object applied is ignored below like any other.
    const snapshot =
      i === 0 && given
        ? given
        : await readSnapshots(
            (await clock.db()).d1,
            clock.companyId,
            ids.filter((id) => id !== 0),
          );
    pulled ??= snapshot.events;
    const { applied, fresh } = applySnapshot(clock, snapshot, ids, Date.now());
    const views = viewRows(
      clock,
      applied
        .filter((a) => !a.gone && a.itemId !== 0)
        .slice(0, VIEWS_PER_BATCH)
        .map((a) => a.itemId),
      fresh,
    );
    // Webhook events D1 triggers recorded with the change were read in the same round trip.
    if (i === 0) await pump(clock, pulled ?? []);
    await settle(clock, { applied, views });
  }
}

/** One batch of snapshots applied in one transaction; what was applied, for the outbox. */
function applySnapshot(
  clock: ClockContext,
  snapshot: Snapshots,
  ids: number[],
  now: number,
): { applied: Applied[]; fresh: Map<number, CurrentReminders> } {
  const applied: Applied[] = [];
  // New items' reminders as inserted: their views need no read back.
  const fresh = new Map<number, CurrentReminders>();
  clock.storage.transactionSync(() => {
    const sql = clock.sql;
    const zoneVersion = Number(getMeta(sql, "zone_version") ?? -1);
    if (snapshot.company.exists && snapshot.company.version > zoneVersion) {
      if (getMeta(sql, "timezone") !== snapshot.company.timezone) {
        if (getMeta(sql, "timezone") !== null) {
          rezone(sql, snapshot.company.timezone);
          // A snooze's instant moved with its reminder: what it holds moves too.
          for (const { item_id } of sql
            .exec<{ item_id: number }>(
              "SELECT DISTINCT item_id FROM reminders WHERE origin = 'snooze' AND state IN " + "('queued', 'held')",
            )
            .toArray()) {
            reconcile(sql, item_id, now);
          }
        }
        setMeta(sql, "timezone", snapshot.company.timezone);
      }
      setMeta(sql, "zone_version", String(snapshot.company.version));
    }
    if (ids.includes(0)) applied.push({ itemId: 0, version: snapshot.company.version, gone: false });
    const zone = zoneOf(sql);
    const channels = defaultChannels(clock.env);
    for (const item of snapshot.items) {
      const mirror = itemMirror(sql, item.itemId);
      if (mirror && item.version > 0 && item.version <= mirror.version) {
        // Already applied. The renewal row is still refreshed from the same state: a renewal D1
        // refused must not keep a row the object wrote before it knew better.
        if (item.present && !mirror.gone && item.version === mirror.version)
          mirrorRenewal(sql, item.itemId, item.rule, zone);
        applied.push({ itemId: item.itemId, version: item.version, gone: !item.present });
        continue;
      }
      if (!item.present && !mirror) {
        // Never seen here (an unknown id, another company's, or created and deleted between
        // two syncs): nothing to forget, no tombstone to keep; only a pending outbox row to clear.
        if (item.version > 0) applied.push({ itemId: item.itemId, version: item.version, gone: true });
        continue;
      }
      if (!item.present) {
        forgetItem(sql, item.itemId);
        sql.exec(
          "INSERT INTO items (item_id, version, title, anchor, epoch, held, gone) VALUES " +
            "(?, ?, '', '', 0, 0, 1) ON CONFLICT (item_id) DO UPDATE SET version = " +
            "excluded.version, gone = 1",
          item.itemId,
          item.version,
        );
        applied.push({ itemId: item.itemId, version: item.version, gone: true });
        continue;
      }
      if (mirror?.gone) continue;
      const snooze = { until: item.snoozedUntil, contactId: item.snoozeContactId };
      // Neither completed nor archived, acknowledged or snoozed: nothing of it is to be held.
      const unheld = !item.held && !item.acknowledged && item.snoozedUntil === null;
      if (!mirror) {
        // New to the object: nothing of it is stored here yet, so its reminders (sequence,
        // item.expired, snooze) go in together, without the deletes a change needs.
        const rows = sequenceReminders(item.itemId, item.anchor, item.steps, zone, channels, now);
        const expiry = expiryReminder(item.itemId, item.expiry, zone, now);
        const snoozed = snoozeReminder(item.itemId, snooze, zone, channels, now);
        const stored = insertReminders(sql, [...rows, ...(expiry ? [expiry] : []), ...(snoozed ? [snoozed] : [])]);
        if (unheld)
          fresh.set(
            item.itemId,
            currentOf(
              stored.filter((r) => r.origin !== "expiry"),
              new Map(),
            ),
          );
      } else {
        const renewed = item.epoch > mirror.epoch;
        if (renewed) {
          // Renewed: the sequence is queued for the new date.
          sql.exec(
            "DELETE FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND " + "origin = 'sequence'",
            item.itemId,
          );
          if (item.anchor !== mirror.anchor) reanchor(sql, item.itemId, item.anchor, zone, now);
          queueSequence(sql, item.itemId, item.anchor, item.steps, zone, channels, now);
        } else if (item.anchor !== mirror.anchor) {
          reanchor(sql, item.itemId, item.anchor, zone, now);
        }
        // item.expired: queued at 00:00 local of the item's date (a new date or a renewal moves it).
        if (mirror.expiry !== item.expiry || renewed) setExpiry(sql, item.itemId, item.expiry, zone, now);
        // The snooze's reminder is replaced only when the snooze changed: one already sent is not sent again.
        if (renewed || mirror.snooze_until !== item.snoozedUntil || mirror.snooze_contact !== item.snoozeContactId)
          setSnooze(sql, item.itemId, snooze, zone, channels, now);
      }
      mirrorRenewal(sql, item.itemId, item.rule, zone);
      sql.exec(
        `INSERT INTO items (item_id, version, title, anchor, epoch, held, gone, expiry, acked, snooze_until, snooze_contact) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)
         ON CONFLICT (item_id) DO UPDATE SET version = excluded.version, title = excluded.title, anchor = excluded.anchor,
           epoch = excluded.epoch, held = excluded.held, expiry = excluded.expiry, acked = excluded.acked,
           snooze_until = excluded.snooze_until, snooze_contact = excluded.snooze_contact`,
        item.itemId,
        item.version,
        item.title,
        item.anchor,
        item.epoch,
        item.held ? 1 : 0,
        item.expiry,
        item.acknowledged ? 1 : 0,
        item.snoozedUntil,
        item.snoozeContactId,
      );
      // Completed or archived, acknowledged, snoozed: its waiting reminders held or queued accordingly
      // (a new item that is none of these has nothing to hold).
      if (mirror || !unheld) reconcile(sql, item.itemId, now);
      applied.push({ itemId: item.itemId, version: item.version, gone: false });
    }
  });
  return { applied, fresh };
}

/** Applies up to REPAIR_PAGES pages of pending changes; true when more remain (the caller re-arms). */
export async function repair(clock: ClockContext): Promise<boolean> {
  for (let page = 0; page < REPAIR_PAGES; page++) {
    const pending = await pendingItems((await clock.db()).d1, clock.companyId);
    if (pending.length > 0) await sync(clock, pending);
    if (pending.length < SYNC_BATCH) return false;
  }
  return true;
}

/**
 * Claims everything due (CLAIM_BATCH per transaction, up to CLAIM_BATCHES_PER_RUN), then fences
 * the fired items' D1 views. True when more may be due (the caller re-arms at once).
 */
export async function fireDue(clock: ClockContext): Promise<boolean> {
  const now = Date.now();
  let claimed = 0;
  const fired = new Set<number>();
  for (let batch = 0; batch < CLAIM_BATCHES_PER_RUN; batch++) {
    claimed = claimDue(clock, now, fired);
    if (claimed < CLAIM_BATCH) break;
  }
  if (fired.size > 0) await invalidateFired(clock, [...fired]);
  return claimed >= CLAIM_BATCH;
}

/**
 * queued -> sent for every reminder due by `now` (up to CLAIM_BATCH), its triggered entry and its
 * deliveries, in one transaction: a repeated alarm finds nothing left to claim.
 */
function claimDue(clock: ClockContext, now: number, fired: Set<number>): number {
  let claimed = 0;
  clock.storage.transactionSync(() => {
    const sql = clock.sql;
    const due = sql
      .exec<ReminderRow & { title: string | null }>(
        `SELECT r.*, i.title FROM reminders r LEFT JOIN items i ON i.item_id = r.item_id
         WHERE r.state = 'queued' AND r.due_at <= ? ORDER BY r.due_at, r.reminder_id LIMIT ?`,
        now,
        CLAIM_BATCH,
      )
      .toArray();
    for (const r of due) {
      if (r.origin === "expiry") {
        // The item's date has come (it is still open, or the row would be held): item.expired.
        sql.exec("DELETE FROM reminders WHERE reminder_id = ?", r.reminder_id);
        recordEvent(sql, { type: "item.expired", data: null, itemId: r.item_id, now });
        continue;
      }
      sql.exec(
        "UPDATE reminders SET state = 'sent', sent_at = ? WHERE reminder_id = ? AND " + "state = 'queued'",
        now,
        r.reminder_id,
      );
      fired.add(r.item_id);
      // reminder.sent for every fired reminder; the item's entry is added from D1 at fan-out.
      const { deliveries: _none, ...sentView } = reminderView({ ...r, state: "sent", sent_at: now }, []);
      recordEvent(sql, { type: "reminder.sent", data: JSON.stringify(sentView), itemId: r.item_id, now });
      sql.exec(
        "INSERT OR IGNORE INTO triggered (reminder_id, item_id, title, date, hour, " +
          "due_at, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        r.reminder_id,
        r.item_id,
        r.title ?? "",
        r.date,
        r.hour,
        r.due_at,
        now,
      );
      for (const channel of JSON.parse(r.channels) as string[]) {
        // The webhook channel is the reminder.sent event above; it has no delivery row of its own.
        if (channel === "webhook") continue;
        // contact_id 0: its recipients are resolved by the delivery run that follows (reminder-delivery.ts);
        // a reminder to a channel endpoint has that one delivery (channel-deliveries.ts).
        sql.exec(
          "INSERT OR IGNORE INTO deliveries (reminder_id, channel, contact_id, state, " +
            "attempts, next_at, endpoint_id) VALUES (?, ?, 0, 'pending', 0, ?, ?)",
          r.reminder_id,
          channel,
          now,
          r.channel_id,
        );
      }
      // The snooze is over: what it held before its instant is dropped (its time has passed), the rest goes on.
      if (r.origin === "snooze") reconcile(sql, r.item_id, now);
    }
    claimed = due.length;
    if (claimed > 0) {
      sql.exec(
        "DELETE FROM triggered WHERE reminder_id IN (SELECT reminder_id FROM triggered " +
          "ORDER BY sent_at DESC, reminder_id DESC LIMIT -1 OFFSET ?)",
        TRIGGERED_KEEP,
      );
    }
  });
  return claimed;
}
