// The company clock: one SQLite-backed Durable Object per company (named `company:<id>`, reached
// through clockFor in handoff/worker.ts), whose single alarm runs its engines: reminders
// (reminders.ts, item-reminders.ts), their delivery (reminder-delivery.ts) and webhooks
// (webhooks.ts, webhook-deliveries.ts). The class only receives: each RPC method and the alarm
// hand the call to the engines with a ClockContext (context.ts). Its storage is store.ts; when
// the alarm runs is time.ts; what it reads from and tells D1 is handoff/ (docs/company-clock.md).

import { DurableObject } from "cloudflare:workers";
import type { Env } from "../env";
import { fetchTransport, type WebhookTransport } from "../webhooks/delivery";
import type { BounceReport, CompanyClockRpc, DigestListQuery, ProblemQuery, ReminderInput } from "./api";
import { flushContactMarks, problemDeliveries, recordBounce } from "./bounces";
import { deliverChannels } from "./channel-deliveries";
import { companyDb, settle, type ClockContext } from "./context";
import { deliverDigests, digestsChecked, listDigests, planDigests, refreshDigests } from "./digests";
import { Bookkeeping, forgetInD1 } from "./handoff/bookkeeping";
import type { Snapshots } from "./handoff/snapshots";
import { addReminder, deleteReminder, feedAlarms, itemReminders, triggered, updateReminder } from "./item-reminders";
import { defaultTransports, deliverDue, type Transports } from "./reminder-delivery";
import { fireDue, queuedCount, repair, sync } from "./reminders";
import { RENEWAL_RETRY_MS, postponeDueRenewals, renew } from "./renewals";
import { claimCompany, knownCompany, migrate, queuedRevision } from "./store";
import { armSoonest, overdue } from "./time";
import { deliverWebhooks, listDeliveries, pruneWebhooks, retryDelivery } from "./webhook-deliveries";
import { pump, testWebhook } from "./webhooks";
import type { AuditActor } from "../db/commit";

const logError = (msg: string, companyId: number, error: unknown) =>
  console.error(JSON.stringify({ level: "error", msg, companyId, error: String(error) }));

export class CompanyClock extends DurableObject<Env> implements CompanyClockRpc {
  /** How deliveries leave; replaced only by tests that need a failing transport. */
  transports: Transports;
  /** How webhook deliveries leave (fetch, 5 s timeout); replaced by tests, which capture the requests. */
  webhookTransport: WebhookTransport = fetchTransport;
  /** How channel messages leave (fetch); replaced by tests that stand in for a platform. */
  channelFetch: typeof fetch = (input, init) => fetch(input, init);
  /** The channel and webhook sends alarm runs started, settled once each recorded its outcome (for tests). */
  channelSending: Promise<void> = Promise.resolve();
  webhookSending: Promise<void> = Promise.resolve();
  /** Items whose reminders a call is changing (their D1 view invalidated, the change not yet made). */
  private readonly changing = new Map<number, number>();
  private readonly bookkeeping: Bookkeeping;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.transports = defaultTransports(env);
    this.bookkeeping = new Bookkeeping(ctx.storage, (companyId) => companyDb(env, companyId));
    ctx.blockConcurrencyWhile(async () => migrate(ctx.storage));
  }

  /** The engines' view of this call; the object serves one company and refuses any other. */
  private clock(companyId: number): ClockContext {
    const { storage } = this.ctx;
    claimCompany(storage.sql, companyId);
    const env = this.env;
    return {
      storage,
      sql: storage.sql,
      env,
      companyId,
      db: (context) => companyDb(env, companyId, context),
      changing: this.changing,
      bookkeeping: this.bookkeeping,
    };
  }

  async status(companyId: number): Promise<{ companyId: number; queued: number; alarm: number | null }> {
    const clock = this.clock(companyId);
    return { companyId, queued: queuedCount(clock.sql), alarm: await this.ctx.storage.getAlarm() };
  }

  // ---- reminders ----

  /**
   * After the Worker's write: its items' D1 state applied. A renewal that became due with it (a
   * rule set on a long-past date, an item restored after its instant) is made before answering, so
   * the request's response already shows it.
   */
  async sync(companyId: number, itemIds: number[], given?: Snapshots): Promise<void> {
    const clock = this.clock(companyId);
    await sync(clock, itemIds, given);
    await this.renew(clock);
    await this.checkDigests(clock);
  }

  /**
   * An object that never read the digest settings does so once: contacts chose digests before
   * digests were sent (issue 34 stored the preference first), and nothing has asked it since.
   */
  private async checkDigests(clock: ClockContext): Promise<void> {
    if (digestsChecked(clock.sql)) return;
    try {
      await refreshDigests(clock);
    } catch (error) {
      logError("digest settings not read (tried again at the next call)", clock.companyId, error);
    }
  }

  /** The renewals engine's run, its new D1 state applied by the reminders engine; true when more are due. */
  private async renew(clock: ClockContext): Promise<boolean> {
    return renew(clock, (itemIds) => sync(clock, itemIds));
  }

  async itemReminders(companyId: number, itemId: number, syncFirst: boolean, fill = false) {
    return itemReminders(this.clock(companyId), itemId, syncFirst, fill);
  }

  async addReminder(
    companyId: number,
    itemId: number,
    input: ReminderInput,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ) {
    return addReminder(this.clock(companyId), itemId, input, syncFirst, requestKey, actor);
  }

  async updateReminder(
    companyId: number,
    itemId: number,
    reminderId: number,
    input: ReminderInput,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ) {
    return updateReminder(this.clock(companyId), itemId, reminderId, input, syncFirst, requestKey, actor);
  }

  async deleteReminder(
    companyId: number,
    itemId: number,
    reminderId: number,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ) {
    return deleteReminder(this.clock(companyId), itemId, reminderId, syncFirst, requestKey, actor);
  }

  triggered(companyId: number, limit: number) {
    return triggered(this.clock(companyId).sql, limit);
  }

  // ---- calendar feeds (src/records/calendar-feeds/feed.ts) ----

  queuedRevision(companyId: number): number {
    return queuedRevision(this.clock(companyId).sql);
  }

  async feedAlarms(companyId: number, itemIds: number[], syncFirst: number[]) {
    return feedAlarms(this.clock(companyId), itemIds, syncFirst);
  }

  // ---- webhooks (docs/webhooks.md) ----

  async pullEvents(companyId: number): Promise<void> {
    const clock = this.clock(companyId);
    await pump(clock);
    await settle(clock);
  }

  async testWebhook(companyId: number, endpointId: number, requestKey?: string, actor?: AuditActor) {
    return testWebhook(this.clock(companyId), endpointId, requestKey, actor);
  }

  webhookDeliveries(companyId: number, endpointId: number, page: { limit: number; offset: number }) {
    return listDeliveries(this.clock(companyId).sql, endpointId, page.limit, page.offset);
  }

  async retryWebhookDelivery(
    companyId: number,
    endpointId: number,
    deliveryId: number,
    requestKey?: string,
    actor?: AuditActor,
  ) {
    return retryDelivery(this.clock(companyId), endpointId, deliveryId, requestKey, actor);
  }

  // ---- bounces (docs/bounces.md) ----

  async recordBounce(companyId: number, report: BounceReport) {
    return recordBounce(this.clock(companyId), report);
  }

  problemDeliveries(companyId: number, query: ProblemQuery) {
    return problemDeliveries(this.clock(companyId).sql, query);
  }

  // ---- digests (digests.ts) ----

  async refreshDigests(companyId: number): Promise<void> {
    await refreshDigests(this.clock(companyId));
  }

  digests(companyId: number, query: DigestListQuery) {
    return listDigests(this.clock(companyId).sql, query);
  }

  // ---- time ----

  async wake(companyId: number): Promise<void> {
    const clock = this.clock(companyId);
    const more = await repair(clock);
    await pump(clock);
    // Set even when an alarm is reported: the sweep is here because that one may be lost.
    if (more || overdue(clock.sql)) await armSoonest(clock.storage);
    else await settle(clock);
  }

  /**
   * One run of the clock: each step does a bounded amount of work and says whether it left some
   * (`more`); then the alarm is re-armed at once, or for the earliest work left.
   */
  override async alarm(): Promise<void> {
    const companyId = knownCompany(this.ctx.storage.sql);
    if (companyId === null) return;
    const clock = this.clock(companyId);
    const more: boolean[] = [];
    // Changes D1 has and the object has not seen go first, so that nothing fires for a deleted
    // item and nothing is missed for a new one. A D1 outage must not stop firing.
    try {
      more.push(await repair(clock));
    } catch (error) {
      logError("reminder repair failed", companyId, error);
    }
    // Renewals of recurring items at expiry act on the repaired mirror before reminders fire (a
    // renewed item's sequence is queued for its new date). A D1 outage must not stop firing either.
    try {
      more.push(await this.renew(clock));
    } catch (error) {
      postponeDueRenewals(clock.sql, Date.now() + RENEWAL_RETRY_MS);
      logError("renewals not written (tried again in a minute)", companyId, error);
    }
    // Everything due is claimed (each batch its own transaction) before any delivery, so slow
    // providers do not delay firing.
    more.push(await fireDue(clock));
    // Contacts' email_status of the addresses bounces suppressed since the last run (bounces.ts).
    try {
      more.push(await flushContactMarks(clock));
    } catch (error) {
      logError("contact email_status not written (kept for the next alarm)", companyId, error);
    }
    // Events D1 recorded (items, tasks, files) join those just born here; then both are fanned out.
    try {
      await pump(clock);
    } catch (error) {
      logError("webhook events not taken", companyId, error);
    }
    more.push((await deliverDue(clock.storage, this.env, (await clock.db()).d1, companyId, this.transports)).more);
    // Channel messages are sent without holding this run (each records its outcome when answered);
    // waitUntil keeps the object running till they are (compatibility date 2026-10-01 or later).
    const channels = await deliverChannels(clock, this.channelFetch);
    this.channelSending = Promise.all([this.channelSending, channels.sending]).then(() => undefined);
    this.ctx.waitUntil(channels.sending);
    more.push(channels.more);
    await this.checkDigests(clock);
    // Digests are planned after reminders were delivered (folded into them), then sent. A D1 outage
    // postpones the plan by a minute (its own retry) and must not stop the rest.
    try {
      more.push(await planDigests(clock));
    } catch (error) {
      logError("digest plan not read (tried again in a minute)", companyId, error);
    }
    more.push((await deliverDigests(clock.storage, this.env, (await clock.db()).d1, companyId, this.transports)).more);
    // Webhook sends do not hold this run either (a receiver that hangs costs its own deliveries 5 s).
    const hooks = await deliverWebhooks(clock.storage, this.env, await clock.db(), companyId, this.webhookTransport);
    this.webhookSending = Promise.all([this.webhookSending, hooks.sending]).then(() => undefined);
    this.ctx.waitUntil(hooks.sending);
    more.push(hooks.more);
    pruneWebhooks(clock.storage);
    // Re-armed last: a setAlarm() before a throw would suppress the runtime's retries.
    if (more.includes(true)) await armSoonest(clock.storage);
    else await settle(clock, { inAlarm: true });
  }

  /** The company is deleted: everything goes, the alarm too. */
  async forgetCompany(companyId: number): Promise<void> {
    const clock = this.clock(companyId);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    migrate(this.ctx.storage);
    await forgetInD1(await clock.db(), companyId);
  }
}
