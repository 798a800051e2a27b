import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { shardOfCompany } from "../db/directory";
import { primarySession } from "../db/session";
import { isCalendarDate, localToInstant, type CalendarUnit } from "../lib/time";
import { readSnapshots, recordSync, pendingItems, SYNC_BATCH, type Applied, type PulledEvent, type Snapshots } from "./d1";
import { INVALIDATE_BATCH, VIEWS_PER_BATCH, deleteViewsStatement, invalidRows, writeViewsStatement, type ViewRow } from "./views";
import { deliverDue, type Transports, defaultTransports } from "./delivery";
import {
  appliedResult,
  forgetItem,
  getMeta,
  hold,
  insertReminder,
  itemMirror,
  migrate,
  nextWake,
  queuedRevision,
  queueSequence,
  reanchor,
  recordApplied,
  reminder,
  resume,
  rezone,
  setExpiry,
  setMeta,
  type Channel,
  type DeliveryState,
  type ReminderRow,
} from "./store";
import { DEFAULT_HOUR, stepDate } from "./steps";
import { availableChannels } from "./channels";
import { isFailure, MAX_FEED_EVENTS, type Failure } from "./rpc";
import { fetchTransport, type WebhookTransport } from "../webhooks/delivery";
import { deleteTaken, pullEvents as pullD1Events } from "../webhooks/outbox";
import {
  deliverWebhooks,
  deliveryOf,
  deliveryView,
  fanOut,
  listDeliveries,
  pruneWebhooks,
  recordEvent,
  storePulled,
  type WebhookDeliveryView,
} from "./webhook-engine";

/** Reminders claimed per transaction; an alarm run claims up to CLAIM_BATCHES_PER_RUN of them, more re-arm the alarm at once. */
export const CLAIM_BATCH = 1000;
export const CLAIM_BATCHES_PER_RUN = 20;
/** Pages of SYNC_BATCH pending changes an alarm or sweep wake applies before re-arming (a backlog drains continuously). */
const REPAIR_PAGES = 4;
/** Waiting (queued or held) reminders an item may have. */
export const MAX_WAITING_PER_ITEM = 100;
/** The latest instant an alarm may be set to (the runtime refuses dates after 2189). */
export const LATEST_ALARM = Date.UTC(2180, 0, 1);
/** Entries kept in the triggered feed (the newest). */
export const TRIGGERED_KEEP = 10_000;
/** Views one merged bookkeeping batch carries at most; the others are not mirrored (their reads ask the object). */
const VIEWS_PER_RECORD = 100;

interface PendingRecord {
  applied: Applied[];
  views: ViewRow[];
  wakeup: number | null | undefined;
  done: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function newRecord(): PendingRecord {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  done.catch(() => {}); // a caller that has not awaited yet must not make it unhandled
  return { applied: [], views: [], wakeup: undefined, done, resolve, reject };
}

/** One mark per item, the highest version (an UPDATE ... FROM with two rows for one item takes either). */
function mergeApplied(applied: Applied[]): Applied[] {
  const byItem = new Map<number, Applied>();
  for (const a of applied) {
    const known = byItem.get(a.itemId);
    if (!known || a.version > known.version) byItem.set(a.itemId, a);
  }
  return [...byItem.values()];
}

/**
 * The instant the alarm is armed at for work due at `due`: strictly after `now`, never after
 * LATEST_ALARM (a later reminder is reached by an alarm at the limit that finds nothing due and
 * arms again). An alarm set at or before now from inside alarm() is reported to be dropped when the
 * handler returns (local workerd) or run tens of seconds late (production); one 1 ms ahead chains
 * at once (workerd #6866). `alarmInstant(Date.now())` is the soonest re-arm.
 */
export function alarmInstant(due: number, now = Date.now()): number {
  return Math.min(Math.max(due, now + 1), LATEST_ALARM);
}


export interface ReminderTime {
  date?: string;
  hour?: string;
  period?: number;
  unit?: CalendarUnit;
  rtype?: 1 | 2;
}
export interface ReminderInput extends ReminderTime {
  contactId?: number | null;
  channels?: Channel[];
}

export interface DeliveryView {
  channel: string;
  state: DeliveryState;
  attempts: number;
  recipient: string | null;
  last_error: string | null;
  delivered_at: string | null;
  next_attempt_at: string | null;
}
export interface ReminderView {
  reminder_id: number;
  date: string;
  hour: string;
  sent: boolean;
  state: "queued" | "held" | "sent";
  origin: "sequence" | "manual";
  due_at: string;
  period: number | null;
  unit: CalendarUnit | null;
  rtype: number | null;
  contact_id: number;
  channels: string[];
  sent_at: string | null;
  deliveries: DeliveryView[];
}
export type ItemReminders = { queued: ReminderView[]; sent: ReminderView[] };
export interface TriggeredView {
  reminder_id: number;
  item_id: number;
  title: string;
  date: string;
  hour: string;
  due_at: string;
  sent_at: string;
}

interface ResolvedTime {
  date: string;
  hour: string;
  dueAt: number;
  relative: { period: number; unit: CalendarUnit; rtype: number } | null;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The reminders of one company (SQLite-backed; addressed by `schedulerFor`). Every mutation runs
 * in one storage transaction and ends by arming the single alarm at the earliest of the next due
 * reminder and the next delivery attempt. D1 holds the items: the object mirrors what it needs
 * (title, anchor date, schedule epoch, held) from snapshots it reads itself, so a sync can be
 * repeated any number of times (see docs/reminders.md).
 */
export class ReminderScheduler extends DurableObject<Env> {
  /** How deliveries leave; replaced only by tests that need a failing transport. */
  transports: Transports;
  /** How webhook deliveries leave (fetch, 5 s timeout); replaced by tests, which capture the requests. */
  webhookTransport: WebhookTransport = fetchTransport;
  /** Items whose reminders a call is changing (their D1 view invalidated, the change not yet made): no view of them is written. */
  private readonly changing = new Map<number, number>();
  /** Bookkeeping waiting for the D1 write in flight (`recording`): calls made meanwhile share the next one. */
  private nextRecord: PendingRecord | null = null;
  private recording = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.transports = defaultTransports(env);
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  private get sql() {
    return this.ctx.storage.sql;
  }

  /** The object serves one company; it records which on first use and refuses any other. */
  private claimCompany(companyId: number): void {
    const known = getMeta(this.sql, "company_id");
    if (known === null) setMeta(this.sql, "company_id", String(companyId));
    else if (Number(known) !== companyId) throw new Error(`reminder scheduler of company ${known} called for company ${companyId}`);
  }

  private zone(): string {
    return getMeta(this.sql, "timezone") ?? "UTC";
  }

  /** What the object holds, for operators and tests. */
  /**
   * The company's shard, on its primary: the object decides from these reads what to queue and
   * fire, so a replica's past state must never be one of them (docs/scale.md "Which reads use the
   * primary"). The shard comes from the directory (cached for a minute) and follows a moved account.
   */
  private async db(companyId: number): Promise<D1Database> {
    return primarySession(this.env, await shardOfCompany(this.env, companyId));
  }

  async status(companyId: number): Promise<{ companyId: number; queued: number; alarm: number | null }> {
    this.claimCompany(companyId);
    const queued = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE state = 'queued' AND origin <> 'expiry'").one().n;
    return { companyId, queued, alarm: await this.ctx.storage.getAlarm() };
  }

  // ---- sync with D1 ----

  /**
   * Applies the D1 state of `itemIds` (0: the company's settings): queue, hold, resume, move or
   * forget reminders. Idempotent; an older snapshot than the one applied is ignored.
   */
  async sync(companyId: number, itemIds: number[], given?: Snapshots): Promise<void> {
    this.claimCompany(companyId);
    let pulled: PulledEvent[] | null = null;
    for (let i = 0; i < itemIds.length; i += SYNC_BATCH) {
      const ids = [...new Set(itemIds.slice(i, i + SYNC_BATCH))];
      // A snapshot the Worker read with its write (same round trip) is as good as one read now: an
      // older one than the object applied is ignored below like any other.
      const snapshot = i === 0 && given ? given : await readSnapshots((await this.db(companyId)), companyId, ids.filter((id) => id !== 0));
      pulled ??= snapshot.events;
      const now = Date.now();
      const applied: Applied[] = [];
      this.ctx.storage.transactionSync(() => {
        const sql = this.sql;
        const zoneVersion = Number(getMeta(sql, "zone_version") ?? -1);
        if (snapshot.company.exists && snapshot.company.version > zoneVersion) {
          if (getMeta(sql, "timezone") !== snapshot.company.timezone) {
            if (getMeta(sql, "timezone") !== null) rezone(sql, snapshot.company.timezone);
            setMeta(sql, "timezone", snapshot.company.timezone);
          }
          setMeta(sql, "zone_version", String(snapshot.company.version));
        }
        if (ids.includes(0)) applied.push({ itemId: 0, version: snapshot.company.version, gone: false });
        const zone = this.zone();
        const channels = this.defaultChannels();
        for (const item of snapshot.items) {
          const mirror = itemMirror(sql, item.itemId);
          if (mirror && item.version > 0 && item.version <= mirror.version) {
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
              "INSERT INTO items (item_id, version, title, anchor, epoch, held, gone) VALUES (?, ?, '', '', 0, 0, 1) ON CONFLICT (item_id) DO UPDATE SET version = excluded.version, gone = 1",
              item.itemId,
              item.version,
            );
            applied.push({ itemId: item.itemId, version: item.version, gone: true });
            continue;
          }
          if (mirror?.gone) continue;
          if (!mirror || item.epoch > mirror.epoch) {
            // New to the object, or renewed: the sequence is queued for the (new) date.
            if (mirror) sql.exec("DELETE FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND origin = 'sequence'", item.itemId);
            if (mirror && item.anchor !== mirror.anchor) reanchor(sql, item.itemId, item.anchor, zone, now);
            queueSequence(sql, item.itemId, item.anchor, item.steps, zone, channels, item.held, now);
          } else if (item.anchor !== mirror.anchor) {
            reanchor(sql, item.itemId, item.anchor, zone, now);
          }
          // item.expired: queued at 00:00 local of the item's date (a new date or a renewal moves it).
          if (!mirror || mirror.expiry !== item.expiry || item.epoch > mirror.epoch) setExpiry(sql, item.itemId, item.expiry, zone, item.held, now);
          if (mirror && !mirror.held && item.held) hold(sql, item.itemId);
          if (mirror && mirror.held && !item.held) resume(sql, item.itemId, now);
          sql.exec(
            `INSERT INTO items (item_id, version, title, anchor, epoch, held, gone, expiry) VALUES (?, ?, ?, ?, ?, ?, 0, ?)
             ON CONFLICT (item_id) DO UPDATE SET version = excluded.version, title = excluded.title, anchor = excluded.anchor,
               epoch = excluded.epoch, held = excluded.held, expiry = excluded.expiry`,
            item.itemId,
            item.version,
            item.title,
            item.anchor,
            item.epoch,
            item.held ? 1 : 0,
            item.expiry,
          );
          applied.push({ itemId: item.itemId, version: item.version, gone: false });
        }
      });
      const views = this.viewRows(applied.filter((a) => !a.gone && a.itemId !== 0).slice(0, VIEWS_PER_BATCH).map((a) => a.itemId));
      // Webhook events D1 triggers recorded with the change were read in the same round trip.
      if (i === 0) await this.pump(companyId, pulled ?? []);
      await this.afterChange(companyId, applied, false, views);
    }
  }

  /** Channels a reminder gets when none are given: those this deployment can deliver (email). */
  private defaultChannels(): Channel[] {
    return availableChannels(this.env).includes("email") ? ["email"] : [];
  }

  /** Arms the alarm for the earliest work and tells D1 what was applied and when to wake the company. */
  private async afterChange(companyId: number, applied: Applied[] = [], inAlarm = false, views: ViewRow[] = []): Promise<void> {
    const wake = nextWake(this.sql);
    // Inside the alarm handler the alarm that fired may still be reported: always set it there.
    const current = inAlarm ? null : await this.ctx.storage.getAlarm();
    const now = Date.now();
    const alarmAt = wake === null ? null : alarmInstant(wake, now);
    // Overdue work and an alarm already due: that alarm runs it. Setting it again would only move
    // it later (a stream of calls could keep pushing it back); a lost alarm is the sweep's job.
    const alreadyDue = alarmAt !== null && wake! <= now && current !== null && current <= alarmAt;
    if (alarmAt === null) {
      if (current !== null) await this.ctx.storage.deleteAlarm();
    } else if (current !== alarmAt && !alreadyDue) {
      await this.ctx.storage.setAlarm(alarmAt);
    }
    const written = getMeta(this.sql, "wakeup");
    const changed = String(wake) !== written;
    if (applied.length > 0 || changed || views.length > 0) {
      // Bookkeeping only: if D1 cannot take it now, the outbox rows stay pending (a replay is a
      // no-op) and the wakeup is written with the next change; the reminders themselves are safe.
      try {
        await this.record(companyId, applied, changed ? wake : undefined, views);
      } catch (error) {
        console.error(JSON.stringify({ level: "error", msg: "reminder bookkeeping in D1 failed", companyId, error: String(error) }));
      }
    }
  }

  /**
   * One D1 batch at a time: what calls record while one is in flight goes, merged, into the next
   * (under a burst of item writes the object sends one bookkeeping batch per round trip, not per
   * call). Resolves once the caller's part is written.
   */
  private record(companyId: number, applied: Applied[], wakeup: number | null | undefined, views: ViewRow[]): Promise<void> {
    const next = (this.nextRecord ??= newRecord());
    next.applied.push(...applied);
    next.views.push(...views.slice(0, Math.max(0, VIEWS_PER_RECORD - next.views.length)));
    // Computed later than what is already in it: the company's current next wakeup.
    if (wakeup !== undefined) next.wakeup = wakeup;
    if (!this.recording) void this.flushRecords(companyId);
    return next.done;
  }

  private async flushRecords(companyId: number): Promise<void> {
    this.recording = true;
    try {
      while (this.nextRecord) {
        const batch = this.nextRecord;
        this.nextRecord = null;
        try {
          await recordSync((await this.db(companyId)), companyId, mergeApplied(batch.applied), batch.wakeup, batch.views);
          if (batch.wakeup !== undefined) setMeta(this.sql, "wakeup", String(batch.wakeup));
          batch.resolve();
        } catch (error) {
          batch.reject(error);
        }
      }
    } finally {
      this.recording = false;
    }
  }

  // ---- reminders of an item ----

  /** The item is known here (synced first when asked or when new: `synced`, its view then written), or 404. */
  private async ensureItem(companyId: number, itemId: number, syncFirst: boolean): Promise<Failure | { synced: boolean }> {
    this.claimCompany(companyId);
    const mirror = itemMirror(this.sql, itemId);
    // A deleted item stays deleted (its tombstone): no D1 round trip for it.
    if (mirror?.gone) return { error: { status: 404, msg: "Item not found" } };
    const synced = syncFirst || !mirror;
    if (synced) await this.sync(companyId, [itemId]);
    const now = itemMirror(this.sql, itemId);
    return now && !now.gone ? { synced } : { error: { status: 404, msg: "Item not found" } };
  }

  /**
   * The item's reminders. `fill` (GET /v1/items/{id}, whose D1 view could not be trusted): the view
   * is written to D1 before answering, unless the sync just wrote it.
   */
  async itemReminders(companyId: number, itemId: number, syncFirst: boolean, fill = false): Promise<ItemReminders | Failure> {
    const ensured = await this.ensureItem(companyId, itemId, syncFirst);
    if (isFailure(ensured)) return ensured;
    const current = this.remindersOf(itemId);
    if (fill && !ensured.synced) {
      const views = this.viewRows([itemId], current);
      if (views.length > 0) await this.writeViews(companyId, views);
    }
    return current.reminders;
  }

  /** The item's reminders as GET shows them, and the earliest instant they can change without a call (null: never). */
  private remindersOf(itemId: number): { reminders: ItemReminders; staleAt: number | null } {
    const rows = this.sql
      .exec<ReminderRow>(
        `SELECT * FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND origin <> 'expiry'
         UNION ALL SELECT * FROM (SELECT * FROM reminders WHERE item_id = ? AND state = 'sent' AND origin <> 'expiry' ORDER BY sent_at DESC, reminder_id DESC LIMIT 100)`,
        itemId,
        itemId,
      )
      .toArray();
    const deliveries = this.deliveriesOf(rows.filter((r) => r.state === "sent").map((r) => r.reminder_id));
    const views = rows.map((r) => this.view(r, deliveries.get(r.reminder_id) ?? []));
    // What changes by itself: a queued reminder fires at its due_at, a pending delivery is attempted
    // at its next attempt. Held reminders change only with their item (a D1 change: its version).
    let staleAt: number | null = null;
    const earliest = (at: number) => (staleAt = staleAt === null ? at : Math.min(staleAt, at));
    for (const r of rows) if (r.state === "queued") earliest(r.due_at);
    for (const list of deliveries.values()) for (const d of list) if (d.state === "pending") earliest(d.next_attempt_at ? Date.parse(d.next_attempt_at) : 0);
    return {
      reminders: {
        queued: views.filter((v) => !v.sent).sort((a, b) => a.due_at.localeCompare(b.due_at) || a.reminder_id - b.reminder_id),
        sent: views.filter((v) => v.sent),
      },
      staleAt,
    };
  }

  // ---- the items' reminder views in D1 (src/reminders/views.ts) ----

  /** The next generation of the views this object writes: later computed, higher. */
  private nextGen(): number {
    const gen = Number(getMeta(this.sql, "view_gen") ?? 0) + 1;
    setMeta(this.sql, "view_gen", String(gen));
    return gen;
  }

  /** Views of the items as they are now (`current`: already computed for a single item), except items being changed. */
  private viewRows(itemIds: number[], current?: ReturnType<ReminderScheduler["remindersOf"]>): ViewRow[] {
    const zone = getMeta(this.sql, "zone_version");
    const rows: ViewRow[] = [];
    let gen = 0;
    for (const itemId of itemIds) {
      const mirror = itemMirror(this.sql, itemId);
      if (!mirror || mirror.gone || this.changing.has(itemId)) continue;
      const { reminders, staleAt } = current ?? this.remindersOf(itemId);
      gen ||= this.nextGen();
      rows.push({ itemId, reminders: JSON.stringify(reminders), version: mirror.version, zoneVersion: zone === null ? -1 : Number(zone), gen, staleAt });
    }
    return rows;
  }

  /** Best effort: a view not written only sends the next read to the object. */
  private async writeViews(companyId: number, views: ViewRow[]): Promise<void> {
    try {
      await writeViewsStatement((await this.db(companyId)), companyId, views).run();
    } catch (error) {
      console.error(JSON.stringify({ level: "error", msg: "reminder view not written", companyId, error: String(error) }));
    }
  }

  /**
   * A change to an item's reminders made here (no D1 change announces it): its D1 view is
   * invalidated first, so once the change is visible no reader trusts the old view (a failure to
   * invalidate refuses the change: it throws), then `change` runs (synchronously), then the new
   * view is written with the bookkeeping.
   */
  private async changeReminders<T>(companyId: number, itemId: number, change: () => T): Promise<T> {
    this.changing.set(itemId, (this.changing.get(itemId) ?? 0) + 1);
    let result: T;
    try {
      await writeViewsStatement((await this.db(companyId)), companyId, invalidRows([itemId], this.nextGen())).run();
      result = change();
    } finally {
      const left = this.changing.get(itemId)! - 1;
      if (left > 0) this.changing.set(itemId, left);
      else this.changing.delete(itemId);
    }
    await this.afterChange(companyId, [], false, this.viewRows([itemId]));
    return result;
  }

  private deliveriesOf(reminderIds: number[]): Map<number, DeliveryView[]> {
    const byReminder = new Map<number, DeliveryView[]>();
    if (reminderIds.length === 0) return byReminder;
    const rows = this.sql
      .exec<{ reminder_id: number; channel: string; state: DeliveryState; attempts: number; recipient: string | null; last_error: string | null; delivered_at: number | null; next_at: number | null }>(
        "SELECT * FROM deliveries WHERE reminder_id IN (SELECT value FROM json_each(?)) ORDER BY channel",
        JSON.stringify(reminderIds),
      )
      .toArray();
    for (const d of rows) {
      const list = byReminder.get(d.reminder_id) ?? [];
      list.push({
        channel: d.channel,
        state: d.state,
        attempts: d.attempts,
        recipient: d.recipient,
        last_error: d.last_error,
        delivered_at: iso(d.delivered_at),
        next_attempt_at: d.state === "pending" ? iso(d.next_at) : null,
      });
      byReminder.set(d.reminder_id, list);
    }
    return byReminder;
  }

  private view(r: ReminderRow, deliveries: DeliveryView[]): ReminderView {
    return {
      reminder_id: r.reminder_id,
      date: r.date,
      hour: r.hour,
      sent: r.state === "sent",
      state: r.state,
      origin: r.origin as ReminderView["origin"],
      due_at: new Date(r.due_at).toISOString(),
      period: r.period,
      unit: r.unit,
      rtype: r.rtype,
      contact_id: r.contact_id ?? 0,
      channels: JSON.parse(r.channels) as string[],
      sent_at: iso(r.sent_at),
      deliveries,
    };
  }

  /** The local date, hour and instant of a reminder time, or a 400 when it has passed or is not a time. */
  private resolveTime(anchor: string, time: ReminderTime, now: number): ResolvedTime | Failure {
    const hour = time.hour ?? DEFAULT_HOUR;
    let date: string;
    let relative: { period: number; unit: CalendarUnit; rtype: number } | null = null;
    if (time.period !== undefined) {
      relative = { period: time.period, unit: time.unit!, rtype: time.rtype! };
      date = stepDate(anchor, { period: time.period, unit: time.unit!, type: time.rtype! });
    } else {
      date = time.date!;
    }
    if (!isCalendarDate(date)) return { error: { status: 400, msg: `The reminder date ${date} is out of range (years 1900 to 9999)` } };
    const zone = this.zone();
    const dueAt = localToInstant(date, hour, zone);
    if (dueAt <= now) return { error: { status: 400, msg: `The reminder time ${date} ${hour} (${zone}) has already passed` } };
    return { date, hour, dueAt, relative };
  }

  /**
   * `requestKey` (a request with an Idempotency-Key): the change is recorded under it with its
   * answer in the same transaction, and a repeat gets that answer without changing anything.
   */
  async addReminder(companyId: number, itemId: number, input: ReminderInput, syncFirst: boolean, requestKey?: string): Promise<ReminderView | Failure> {
    this.claimCompany(companyId);
    const earlier = appliedResult<ReminderView>(this.sql, requestKey);
    if (earlier) return earlier;
    const missing = await this.ensureItem(companyId, itemId, syncFirst);
    if (isFailure(missing)) return missing;
    return this.changeReminders(companyId, itemId, (): ReminderView | Failure => {
      const mirror = itemMirror(this.sql, itemId);
      if (!mirror || mirror.gone) return { error: { status: 404, msg: "Item not found" } };
      const now = Date.now();
      const time = this.resolveTime(mirror.anchor, input, now);
      if (isFailure(time)) return time;
      let created: ReminderView | undefined;
      let failure: Failure | null = null;
      this.ctx.storage.transactionSync(() => {
        created = appliedResult<ReminderView>(this.sql, requestKey);
        if (created) return;
        const waiting = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM reminders WHERE item_id = ? AND state IN ('queued', 'held') AND origin <> 'expiry'", itemId).one().n;
        if (waiting >= MAX_WAITING_PER_ITEM) {
          failure = { error: { status: 400, msg: `An item may have at most ${MAX_WAITING_PER_ITEM} queued reminders` } };
          return;
        }
        const id = insertReminder(this.sql, {
          itemId,
          origin: "manual",
          date: time.date,
          hour: time.hour,
          dueAt: time.dueAt,
          relative: time.relative,
          contactId: input.contactId ?? null,
          channels: input.channels ?? this.defaultChannels(),
          held: mirror.held === 1,
          now,
        });
        created = this.view(reminder(this.sql, itemId, id)!, []);
        recordApplied(this.sql, requestKey, created, now);
      });
      return failure ?? created!;
    });
  }

  async updateReminder(
    companyId: number,
    itemId: number,
    reminderId: number,
    input: ReminderInput,
    syncFirst: boolean,
    requestKey?: string,
  ): Promise<ReminderView | Failure> {
    this.claimCompany(companyId);
    const earlier = appliedResult<ReminderView>(this.sql, requestKey);
    if (earlier) return earlier;
    const missing = await this.ensureItem(companyId, itemId, syncFirst);
    if (isFailure(missing)) return missing;
    return this.changeReminders(companyId, itemId, (): ReminderView | Failure => {
      const current = reminder(this.sql, itemId, reminderId);
      if (!current) return { error: { status: 404, msg: "Reminder not found" } };
      if (current.state === "sent") return { error: { status: 400, msg: `Reminder ${reminderId} was already sent and cannot be changed` } };
      const mirror = itemMirror(this.sql, itemId)!;
      const timeGiven = input.date !== undefined || input.period !== undefined || input.hour !== undefined || input.unit !== undefined || input.rtype !== undefined;
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
        const resolved = this.resolveTime(mirror.anchor, merged, Date.now());
        if (isFailure(resolved)) return resolved;
        time = resolved;
      }
      let updated: ReminderView | undefined;
      this.ctx.storage.transactionSync(() => {
        const sql = this.sql;
        updated = appliedResult<ReminderView>(sql, requestKey);
        if (updated) return;
        if (time) {
          sql.exec(
            "UPDATE reminders SET date = ?, hour = ?, due_at = ?, period = ?, unit = ?, rtype = ? WHERE reminder_id = ? AND state <> 'sent'",
            time.date,
            time.hour,
            time.dueAt,
            time.relative?.period ?? null,
            time.relative?.unit ?? null,
            time.relative?.rtype ?? null,
            reminderId,
          );
        }
        if (input.contactId !== undefined) sql.exec("UPDATE reminders SET contact_id = ? WHERE reminder_id = ? AND state <> 'sent'", input.contactId, reminderId);
        if (input.channels !== undefined) sql.exec("UPDATE reminders SET channels = ? WHERE reminder_id = ? AND state <> 'sent'", JSON.stringify(input.channels), reminderId);
        updated = this.view(reminder(sql, itemId, reminderId)!, []);
        recordApplied(sql, requestKey, updated, Date.now());
      });
      return updated!;
    });
  }

  async deleteReminder(companyId: number, itemId: number, reminderId: number, syncFirst: boolean, requestKey?: string): Promise<{ deleted: true } | Failure> {
    this.claimCompany(companyId);
    if (appliedResult(this.sql, requestKey)) return { deleted: true };
    const missing = await this.ensureItem(companyId, itemId, syncFirst);
    if (isFailure(missing)) return missing;
    return this.changeReminders(companyId, itemId, (): { deleted: true } | Failure => {
      const current = reminder(this.sql, itemId, reminderId);
      if (!current) return { error: { status: 404, msg: "Reminder not found" } };
      if (current.state === "sent") return { error: { status: 400, msg: `Reminder ${reminderId} was already sent and stays in the history` } };
      this.ctx.storage.transactionSync(() => {
        if (appliedResult(this.sql, requestKey)) return;
        this.sql.exec("DELETE FROM reminders WHERE reminder_id = ? AND state <> 'sent' AND origin <> 'expiry'", reminderId);
        recordApplied(this.sql, requestKey, { deleted: true }, Date.now());
      });
      return { deleted: true };
    });
  }

  triggered(companyId: number, limit: number): TriggeredView[] {
    this.claimCompany(companyId);
    return this.sql
      .exec<{ reminder_id: number; item_id: number; title: string; date: string; hour: string; due_at: number; sent_at: number }>(
        "SELECT * FROM triggered ORDER BY sent_at DESC, reminder_id DESC LIMIT ?",
        limit,
      )
      .toArray()
      .map((t) => ({ ...t, due_at: new Date(t.due_at).toISOString(), sent_at: new Date(t.sent_at).toISOString() }));
  }

  // ---- calendar feeds (src/routes/calendar-feeds/feed.ts) ----

  /** The revision of the company's queued reminders: a feed's ETag carries it, so a 304 reads only this. */
  queuedRevision(companyId: number): number {
    this.claimCompany(companyId);
    return queuedRevision(this.sql);
  }

  /**
   * The instants of the queued reminders of `itemIds` (at most MAX_FEED_EVENTS), by item, with the
   * revision they were read at (in the same turn, so the two agree). `syncFirst`: items whose D1
   * changes the object has not applied yet (at most SYNC_BATCH), applied first.
   */
  async feedAlarms(companyId: number, itemIds: number[], syncFirst: number[]): Promise<{ revision: number; alarms: Record<number, number[]> }> {
    this.claimCompany(companyId);
    if (syncFirst.length > 0) await this.sync(companyId, syncFirst.slice(0, SYNC_BATCH));
    const rows = this.sql.exec<{ item_id: number; due_at: number }>(
      `SELECT item_id, due_at FROM reminders WHERE item_id IN (SELECT value FROM json_each(?)) AND state = 'queued' AND origin <> 'expiry'
       ORDER BY item_id, due_at, reminder_id`,
      JSON.stringify(itemIds.slice(0, MAX_FEED_EVENTS)),
    );
    const alarms: Record<number, number[]> = {};
    for (const row of rows) (alarms[row.item_id] ??= []).push(row.due_at);
    return { revision: queuedRevision(this.sql), alarms };
  }

  // ---- firing ----

  /** From the cron sweep: replays unseen changes and makes sure an overdue company's alarm runs. */
  async wake(companyId: number): Promise<void> {
    this.claimCompany(companyId);
    const more = await this.repair(companyId);
    await this.pump(companyId);
    const wake = nextWake(this.sql);
    // Set even when an alarm is reported: the sweep is here because that one may be lost.
    if (more || (wake !== null && wake <= Date.now())) await this.ctx.storage.setAlarm(alarmInstant(Date.now()));
    else await this.afterChange(companyId);
  }

  /** Applies up to REPAIR_PAGES pages of pending changes; true when more remain (the caller re-arms). */
  private async repair(companyId: number): Promise<boolean> {
    for (let page = 0; page < REPAIR_PAGES; page++) {
      const pending = await pendingItems((await this.db(companyId)), companyId);
      if (pending.length > 0) await this.sync(companyId, pending);
      if (pending.length < SYNC_BATCH) return false;
    }
    return true;
  }

  override async alarm(): Promise<void> {
    const known = getMeta(this.sql, "company_id");
    if (known === null) return;
    const companyId = Number(known);
    // Changes D1 has and the object has not seen go first, so that nothing fires for a deleted
    // item and nothing is missed for a new one. A D1 outage must not stop firing.
    let moreToRepair = false;
    try {
      moreToRepair = await this.repair(companyId);
    } catch (error) {
      console.error(JSON.stringify({ level: "error", msg: "reminder repair failed", companyId, error: String(error) }));
    }
    // Everything due is claimed (each batch its own transaction) before any delivery, so slow
    // providers do not delay firing.
    const now = Date.now();
    let claimed = 0;
    const fired = new Set<number>();
    for (let batch = 0; batch < CLAIM_BATCHES_PER_RUN; batch++) {
      claimed = this.claimDue(now, fired);
      if (claimed < CLAIM_BATCH) break;
    }
    if (fired.size > 0) await this.invalidateFired(companyId, [...fired]);
    // Events D1 recorded (items, tasks, files) join those just born here; then both are fanned out.
    try {
      await this.pump(companyId);
    } catch (error) {
      console.error(JSON.stringify({ level: "error", msg: "webhook events not taken", companyId, error: String(error) }));
    }
    const delivered = await deliverDue(this.ctx.storage, this.env, await this.db(companyId), companyId, this.transports);
    const hooks = await deliverWebhooks(this.ctx.storage, this.env, await this.db(companyId), companyId, this.webhookTransport);
    pruneWebhooks(this.ctx.storage);
    // Re-armed last: a setAlarm() before a throw would suppress the runtime's retries.
    if (moreToRepair || claimed >= CLAIM_BATCH || delivered.more || hooks.more) {
      await this.ctx.storage.setAlarm(alarmInstant(Date.now()));
      return;
    }
    await this.afterChange(companyId, [], true);
  }

  /**
   * queued -> sent for every reminder due by `now` (up to CLAIM_BATCH), its triggered entry and its
   * deliveries, in one transaction: a repeated alarm finds nothing left to claim.
   */
  private claimDue(now: number, fired: Set<number>): number {
    let claimed = 0;
    this.ctx.storage.transactionSync(() => {
      const sql = this.sql;
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
        sql.exec("UPDATE reminders SET state = 'sent', sent_at = ? WHERE reminder_id = ? AND state = 'queued'", now, r.reminder_id);
        fired.add(r.item_id);
        // reminder.sent for every fired reminder; the item's entry is added from D1 at fan-out.
        const { deliveries: _none, ...sentView } = this.view({ ...r, state: "sent", sent_at: now }, []);
        recordEvent(sql, { type: "reminder.sent", data: JSON.stringify(sentView), itemId: r.item_id, now });
        sql.exec(
          "INSERT OR IGNORE INTO triggered (reminder_id, item_id, title, date, hour, due_at, sent_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
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
          sql.exec("INSERT OR IGNORE INTO deliveries (reminder_id, channel, state, attempts, next_at) VALUES (?, ?, 'pending', 0, ?)", r.reminder_id, channel, now);
        }
      }
      claimed = due.length;
      if (claimed > 0) {
        sql.exec(
          "DELETE FROM triggered WHERE reminder_id IN (SELECT reminder_id FROM triggered ORDER BY sent_at DESC, reminder_id DESC LIMIT -1 OFFSET ?)",
          TRIGGERED_KEEP,
        );
      }
    });
    return claimed;
  }

  /**
   * The views of items whose reminders just fired. Their stale_at (at most the fired reminder's
   * due_at) already kept readers away; this is the second fence. Never throws: firing does not depend on D1.
   */
  private async invalidateFired(companyId: number, itemIds: number[]): Promise<void> {
    const rows = invalidRows(itemIds, this.nextGen());
    try {
      const statements: D1PreparedStatement[] = [];
      const d1 = await this.db(companyId);
      for (let i = 0; i < rows.length; i += INVALIDATE_BATCH) statements.push(writeViewsStatement(d1, companyId, rows.slice(i, i + INVALIDATE_BATCH)));
      await d1.batch(statements);
    } catch (error) {
      console.error(JSON.stringify({ level: "error", msg: "views of fired items not invalidated (their stale_at has passed)", companyId, error: String(error) }));
    }
  }

  // ---- webhooks (docs/webhooks.md) ----

  /**
   * Takes the events D1 recorded for the company (`pulled`, or read now), stores them, deletes them
   * from D1, and fans out every new event. Never throws for D1 trouble: what was not taken stays
   * in D1, what was not fanned out is tried again by the alarm.
   */
  private async pump(companyId: number, pulled?: PulledEvent[]): Promise<void> {
    const now = Date.now();
    let events = pulled;
    if (events === undefined) {
      try {
        events = await pullD1Events((await this.db(companyId)), companyId);
      } catch (error) {
        console.error(JSON.stringify({ level: "error", msg: "webhook events not pulled from D1", companyId, error: String(error) }));
        events = [];
      }
    }
    storePulled(this.ctx.storage, events, now);
    if (events.length > 0) {
      try {
        await deleteTaken((await this.db(companyId)), companyId, events.map((e) => e.id));
      } catch (error) {
        console.error(JSON.stringify({ level: "error", msg: "taken webhook events not deleted from D1 (a repeat is ignored)", companyId, error: String(error) }));
      }
    }
    await fanOut(this.ctx.storage, this.env, await this.db(companyId), companyId, now);
  }

  /** From the Worker after a task or file write: takes the events D1 recorded and arms the alarm to deliver them. */
  async pullEvents(companyId: number): Promise<void> {
    this.claimCompany(companyId);
    await this.pump(companyId);
    await this.afterChange(companyId);
  }

  /** A webhook.test event to one endpoint (subscribed or not), delivered by the alarm at once. */
  async testWebhook(companyId: number, endpointId: number, requestKey?: string): Promise<{ delivery_id: number; message_id: string } | Failure> {
    this.claimCompany(companyId);
    const now = Date.now();
    let eventId = 0;
    this.ctx.storage.transactionSync(() => {
      // A repeat of a keyed request answers for the event it recorded, and records no other.
      eventId = appliedResult<{ eventId: number }>(this.sql, requestKey)?.eventId ?? 0;
      if (eventId) return;
      const data = JSON.stringify({ webhook_id: endpointId, message: "A test event sent by POST /v1/webhooks/{webhook_id}/test" });
      eventId = recordEvent(this.sql, { type: "webhook.test", data, endpointId, now });
      recordApplied(this.sql, requestKey, { eventId }, now);
    });
    await fanOut(this.ctx.storage, this.env, await this.db(companyId), companyId, now);
    const row = this.sql
      .exec<{ delivery_id: number; message_id: string }>("SELECT delivery_id, message_id FROM webhook_deliveries WHERE event_id = ? AND endpoint_id = ?", eventId, endpointId)
      .toArray()[0];
    await this.afterChange(companyId);
    if (!row) {
      const waiting = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM events WHERE event_id = ?", eventId).one().n;
      // Still new: D1 could not be read; the alarm fans it out, but there is no delivery to name yet.
      if (waiting > 0) throw new Error("webhook endpoints could not be read; the test event is queued");
      return { error: { status: 404, msg: "Webhook endpoint not found" } };
    }
    return row;
  }

  /** The endpoint's deliveries, newest first. */
  webhookDeliveries(companyId: number, endpointId: number, page: { limit: number; offset: number }): { rows: WebhookDeliveryView[]; total: number } {
    this.claimCompany(companyId);
    return listDeliveries(this.sql, endpointId, page.limit, page.offset);
  }

  /** A failed or pending delivery is attempted again at once (same message id); 400 for a delivered one. */
  async retryWebhookDelivery(companyId: number, endpointId: number, deliveryId: number, requestKey?: string): Promise<WebhookDeliveryView | Failure> {
    this.claimCompany(companyId);
    const earlier = appliedResult<WebhookDeliveryView>(this.sql, requestKey);
    if (earlier) return earlier;
    const current = deliveryOf(this.sql, endpointId, deliveryId);
    if (!current) return { error: { status: 404, msg: "Delivery not found" } };
    if (current.state === "delivered") return { error: { status: 400, msg: `Delivery ${deliveryId} was already delivered` } };
    const now = Date.now();
    let view: WebhookDeliveryView | undefined;
    this.ctx.storage.transactionSync(() => {
      // A failed delivery gets one more attempt (failed again if it fails: it has had its 8); a pending one is attempted now.
      this.sql.exec("UPDATE webhook_deliveries SET state = 'pending', next_at = ? WHERE delivery_id = ?", now, deliveryId);
      view = deliveryView(deliveryOf(this.sql, endpointId, deliveryId)!);
      recordApplied(this.sql, requestKey, view, now);
    });
    await this.afterChange(companyId);
    return view!;
  }

  /** The company is deleted: everything goes, the alarm too. */
  async forgetCompany(companyId: number): Promise<void> {
    this.claimCompany(companyId);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    migrate(this.ctx.storage);
    const d1 = await this.db(companyId);
    await d1.batch([
      d1.prepare("DELETE FROM reminder_wakeups WHERE company_id = ?").bind(companyId),
      d1.prepare("DELETE FROM reminder_sync WHERE company_id = ?").bind(companyId),
      deleteViewsStatement(d1, companyId, "all"),
    ]);
  }
}
