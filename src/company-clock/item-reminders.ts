// The reminders of one item as the API reads and edits them (GET, POST, PATCH, DELETE
// /v1/items/{id}/reminders), the triggered feed and the calendar feeds' alarms. Each edit is made
// here (no D1 change announces it) under changeReminders' fence of the item's D1 view.

import { isCalendarDate, localToInstant, type CalendarUnit } from "../lib/time";
import {
  isFailure,
  MAX_FEED_EVENTS,
  type Failure,
  type ItemReminders,
  type ReminderInput,
  type ReminderTime,
  type ReminderView,
  type TriggeredView,
} from "./api";
import { defaultChannels } from "./channels";
import type { AuditActor } from "../db/commit";
import { changedFields, recordAudit } from "./audit-outbox";
import type { ClockContext } from "./context";
import { SYNC_BATCH } from "./handoff/snapshots";
import { changeReminders, reminderView, remindersOf, viewRows, writeViews } from "./reminder-views";
import { sync } from "./reminders";
import { DEFAULT_HOUR, stepDate } from "./sequence-steps";
import {
  appliedResult,
  insertReminder,
  itemMirror,
  queuedRevision,
  recordApplied,
  reconcile,
  reminder,
  zoneOf,
} from "./store";

/** Waiting (queued or held) reminders an item may have. */
export const MAX_WAITING_PER_ITEM = 100;

interface ResolvedTime {
  date: string;
  hour: string;
  dueAt: number;
  relative: { period: number; unit: CalendarUnit; rtype: number } | null;
}

/** The item is known here (synced first when asked or when new: `synced`, its view then written), or 404. */
async function ensureItem(
  clock: ClockContext,
  itemId: number,
  syncFirst: boolean,
): Promise<Failure | { synced: boolean }> {
  const mirror = itemMirror(clock.sql, itemId);
  // A deleted item stays deleted (its tombstone): no D1 round trip for it.
  if (mirror?.gone) return { error: { status: 404, msg: "Item not found" } };
  const synced = syncFirst || !mirror;
  if (synced) await sync(clock, [itemId]);
  const now = itemMirror(clock.sql, itemId);
  return now && !now.gone ? { synced } : { error: { status: 404, msg: "Item not found" } };
}

/**
 * The item's reminders. `fill` (GET /v1/items/{id}, whose D1 view could not be trusted): the view
 * is written to D1 before answering, unless the sync just wrote it.
 */
export async function itemReminders(
  clock: ClockContext,
  itemId: number,
  syncFirst: boolean,
  fill: boolean,
): Promise<ItemReminders | Failure> {
  const ensured = await ensureItem(clock, itemId, syncFirst);
  if (isFailure(ensured)) return ensured;
  const current = remindersOf(clock.sql, itemId);
  if (fill && !ensured.synced) {
    const views = viewRows(clock, [itemId], current);
    if (views.length > 0) await writeViews(clock, views);
  }
  return current.reminders;
}

/** The local date, hour and instant of a reminder time, or a 400 when it has passed or is not a time. */
function resolveTime(sql: SqlStorage, anchor: string, time: ReminderTime, now: number): ResolvedTime | Failure {
  const hour = time.hour ?? DEFAULT_HOUR;
  let date: string;
  let relative: { period: number; unit: CalendarUnit; rtype: number } | null = null;
  if (time.period !== undefined) {
    relative = { period: time.period, unit: time.unit!, rtype: time.rtype! };
    date = stepDate(anchor, { period: time.period, unit: time.unit!, type: time.rtype! });
  } else {
    date = time.date!;
  }
  if (!isCalendarDate(date))
    return { error: { status: 400, msg: `The reminder date ${date} is out of range (years 1900 to 9999)` } };
  const zone = zoneOf(sql);
  const dueAt = localToInstant(date, hour, zone);
  if (dueAt <= now)
    return { error: { status: 400, msg: `The reminder time ${date} ${hour} (${zone}) has already passed` } };
  return { date, hour, dueAt, relative };
}

/**
 * An edit of the item's reminders. `requestKey` (a request with an Idempotency-Key): the change is
 * recorded under it with its answer in the same transaction, and a repeat gets that answer without
 * changing anything. Otherwise the item must be known here, and `edit` runs under changeReminders'
 * fence of its D1 view.
 */
async function editReminders<T>(
  clock: ClockContext,
  itemId: number,
  syncFirst: boolean,
  requestKey: string | undefined,
  edit: () => T | Failure,
): Promise<T | Failure> {
  const earlier = appliedResult<T>(clock.sql, requestKey);
  if (earlier) return earlier;
  const missing = await ensureItem(clock, itemId, syncFirst);
  if (isFailure(missing)) return missing;
  return changeReminders(clock, itemId, edit);
}

/** What an entry shows of a reminder (docs/audit-log.md). */
const auditView = (itemId: number, view: ReminderView) => ({
  item_id: itemId,
  date: view.date,
  hour: view.hour,
  period: view.period,
  unit: view.unit,
  rtype: view.rtype,
  contact_id: view.contact_id,
  group_id: view.group_id,
  channel_id: view.channel_id,
  always: view.always,
  unless_acknowledged: view.unless_acknowledged,
  channels: view.channels,
});

export async function addReminder(
  clock: ClockContext,
  itemId: number,
  input: ReminderInput,
  syncFirst: boolean,
  requestKey?: string,
  actor?: AuditActor,
): Promise<ReminderView | Failure> {
  const { sql } = clock;
  return editReminders(clock, itemId, syncFirst, requestKey, (): ReminderView | Failure => {
    const mirror = itemMirror(sql, itemId);
    if (!mirror || mirror.gone) return { error: { status: 404, msg: "Item not found" } };
    const now = Date.now();
    const time = resolveTime(sql, mirror.anchor, input, now);
    if (isFailure(time)) return time;
    let created: ReminderView | undefined;
    let failure: Failure | null = null;
    clock.storage.transactionSync(() => {
      created = appliedResult<ReminderView>(sql, requestKey);
      if (created) return;
      const waiting = sql
        .exec<{ n: number }>(
          "SELECT count(*) AS n FROM reminders WHERE item_id = ? AND state IN ('queued', " +
            "'held') AND origin <> 'expiry'",
          itemId,
        )
        .one().n;
      if (waiting >= MAX_WAITING_PER_ITEM) {
        failure = { error: { status: 400, msg: `An item may have at most ${MAX_WAITING_PER_ITEM} queued reminders` } };
        return;
      }
      const id = insertReminder(sql, {
        itemId,
        origin: "manual",
        date: time.date,
        hour: time.hour,
        dueAt: time.dueAt,
        relative: time.relative,
        to: {
          contactId: input.contactId ?? null,
          groupId: input.groupId ?? null,
          channelId: input.channelId ?? null,
          always: input.always === true,
          unlessAck: input.unlessAck === true,
        },
        channels: input.channels ?? defaultChannels(clock.env),
        now,
      });
      // Held while the item is completed, archived, acknowledged (unless `always`) or snoozed past it.
      reconcile(sql, itemId, now);
      created = reminderView(reminder(sql, itemId, id)!, []);
      recordAudit(
        sql,
        actor,
        {
          resourceType: "reminder",
          resourceId: id,
          action: "created",
          before: null,
          after: auditView(itemId, created),
        },
        now,
      );
      recordApplied(sql, requestKey, created, now);
    });
    return failure ?? created!;
  });
}

export async function updateReminder(
  clock: ClockContext,
  itemId: number,
  reminderId: number,
  input: ReminderInput,
  syncFirst: boolean,
  requestKey?: string,
  actor?: AuditActor,
): Promise<ReminderView | Failure> {
  const { sql } = clock;
  return editReminders(clock, itemId, syncFirst, requestKey, (): ReminderView | Failure => {
    const current = reminder(sql, itemId, reminderId);
    if (!current) return { error: { status: 404, msg: "Reminder not found" } };
    if (current.state === "sent")
      return { error: { status: 400, msg: `Reminder ${reminderId} was already sent and cannot be changed` } };
    const mirror = itemMirror(sql, itemId)!;
    const timeGiven =
      input.date !== undefined ||
      input.period !== undefined ||
      input.hour !== undefined ||
      input.unit !== undefined ||
      input.rtype !== undefined;
    let time: ResolvedTime | null = null;
    if (timeGiven) {
      // Fields not sent keep their values; a relative reminder stays relative unless a date is sent.
      const merged: ReminderTime =
        input.date !== undefined
          ? { date: input.date, hour: input.hour ?? current.hour }
          : input.period !== undefined || current.period !== null
            ? {
                period: input.period ?? current.period ?? undefined,
                unit: input.unit ?? current.unit ?? undefined,
                rtype: (input.rtype ?? current.rtype ?? undefined) as 1 | 2 | undefined,
                hour: input.hour ?? current.hour,
              }
            : { date: current.date, hour: input.hour ?? current.hour };
      if (merged.period !== undefined && (merged.unit === undefined || merged.rtype === undefined)) {
        return { error: { status: 400, msg: "A relative reminder needs period, unit and rtype" } };
      }
      const resolved = resolveTime(sql, mirror.anchor, merged, Date.now());
      if (isFailure(resolved)) return resolved;
      time = resolved;
    }
    let updated: ReminderView | undefined;
    clock.storage.transactionSync(() => {
      updated = appliedResult<ReminderView>(sql, requestKey);
      if (updated) return;
      if (time) {
        sql.exec(
          "UPDATE reminders SET date = ?, hour = ?, due_at = ?, period = ?, unit = ?, " +
            "rtype = ? WHERE reminder_id = ? AND state <> 'sent'",
          time.date,
          time.hour,
          time.dueAt,
          time.relative?.period ?? null,
          time.relative?.unit ?? null,
          time.relative?.rtype ?? null,
          reminderId,
        );
      }
      // A new recipient replaces the other kind: a contact clears the group and the other way round.
      if (input.contactId !== undefined)
        sql.exec(
          "UPDATE reminders SET contact_id = ?, group_id = NULL WHERE reminder_id = ? AND " + "state <> 'sent'",
          input.contactId,
          reminderId,
        );
      if (input.groupId !== undefined)
        sql.exec(
          "UPDATE reminders SET group_id = ?, contact_id = NULL WHERE reminder_id = ? AND " + "state <> 'sent'",
          input.groupId,
          reminderId,
        );
      // A channel endpoint replaces contacts as receivers (its type is then the reminder's channels); null: contacts again.
      if (input.channelId !== undefined)
        sql.exec(
          "UPDATE reminders SET channel_id = ? WHERE reminder_id = ? AND state <> 'sent'",
          input.channelId,
          reminderId,
        );
      if (input.always !== undefined || input.unlessAck !== undefined) {
        // One rule at most: setting one clears the other.
        const always = input.always ?? (input.unlessAck ? false : current.always === 1);
        const unlessAck = input.unlessAck ?? (input.always ? false : current.unless_ack === 1);
        sql.exec(
          "UPDATE reminders SET always = ?, unless_ack = ? WHERE reminder_id = ? AND state " + "<> 'sent'",
          always ? 1 : 0,
          unlessAck ? 1 : 0,
          reminderId,
        );
      }
      if (input.channels !== undefined)
        sql.exec(
          "UPDATE reminders SET channels = ? WHERE reminder_id = ? AND state <> 'sent'",
          JSON.stringify(input.channels),
          reminderId,
        );
      reconcile(sql, itemId, Date.now());
      updated = reminderView(reminder(sql, itemId, reminderId)!, []);
      const [before, after] = changedFields(auditView(itemId, reminderView(current, [])), auditView(itemId, updated));
      if (Object.keys(after).length > 0)
        recordAudit(
          sql,
          actor,
          { resourceType: "reminder", resourceId: reminderId, action: "updated", before, after },
          Date.now(),
        );
      recordApplied(sql, requestKey, updated, Date.now());
    });
    return updated!;
  });
}

export async function deleteReminder(
  clock: ClockContext,
  itemId: number,
  reminderId: number,
  syncFirst: boolean,
  requestKey?: string,
  actor?: AuditActor,
): Promise<{ deleted: true } | Failure> {
  const { sql } = clock;
  return editReminders(clock, itemId, syncFirst, requestKey, (): { deleted: true } | Failure => {
    const current = reminder(sql, itemId, reminderId);
    if (!current) return { error: { status: 404, msg: "Reminder not found" } };
    if (current.state === "sent")
      return { error: { status: 400, msg: `Reminder ${reminderId} was already sent and stays in the history` } };
    clock.storage.transactionSync(() => {
      if (appliedResult(sql, requestKey)) return;
      const deleted = sql.exec(
        "DELETE FROM reminders WHERE reminder_id = ? AND state <> 'sent' AND origin <> " + "'expiry'",
        reminderId,
      ).rowsWritten;
      if (deleted > 0) {
        recordAudit(
          sql,
          actor,
          {
            resourceType: "reminder",
            resourceId: reminderId,
            action: "deleted",
            before: auditView(itemId, reminderView(current, [])),
            after: null,
          },
          Date.now(),
        );
      }
      recordApplied(sql, requestKey, { deleted: true }, Date.now());
    });
    return { deleted: true };
  });
}

/** The triggered feed (GET /v1/reminders/triggered), newest first. */
export function triggered(sql: SqlStorage, limit: number): TriggeredView[] {
  return sql
    .exec<{
      reminder_id: number;
      item_id: number;
      title: string;
      date: string;
      hour: string;
      due_at: number;
      sent_at: number;
    }>("SELECT * FROM triggered ORDER BY sent_at DESC, reminder_id DESC LIMIT ?", limit)
    .toArray()
    .map((t) => ({ ...t, due_at: new Date(t.due_at).toISOString(), sent_at: new Date(t.sent_at).toISOString() }));
}

/**
 * The instants of the queued reminders of `itemIds` (at most MAX_FEED_EVENTS), by item, with the
 * revision they were read at (in the same turn, so the two agree). `syncFirst`: items whose D1
 * changes the object has not applied yet (at most SYNC_BATCH), applied first.
 */
export async function feedAlarms(
  clock: ClockContext,
  itemIds: number[],
  syncFirst: number[],
): Promise<{ revision: number; alarms: Record<number, number[]> }> {
  if (syncFirst.length > 0) await sync(clock, syncFirst.slice(0, SYNC_BATCH));
  const rows = clock.sql.exec<{ item_id: number; due_at: number }>(
    `SELECT item_id, due_at FROM reminders WHERE item_id IN (SELECT value FROM json_each(?)) AND state = 'queued' AND origin <> 'expiry'
     ORDER BY item_id, due_at, reminder_id`,
    JSON.stringify(itemIds.slice(0, MAX_FEED_EVENTS)),
  );
  const alarms: Record<number, number[]> = {};
  for (const row of rows) (alarms[row.item_id] ??= []).push(row.due_at);
  return { revision: queuedRevision(clock.sql), alarms };
}
