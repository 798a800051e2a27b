// What the Worker sees of the company clock: the RPC methods it may call (CompanyClockRpc: the
// object implements it and the COMPANY_CLOCK binding is typed by it), their answers and refusals.
// Imports nothing that imports src/env.ts, so env.ts names the binding's type without a circle.

import type { CalendarUnit } from "../lib/time";
import type { Snapshots } from "./handoff/snapshots";
import type { Channel, DeliveryState } from "./store";
import type { AuditActor } from "../db/commit";

/** A refusal the Durable Object returns (RPC keeps plain objects; thrown errors lose their status). */
export type Failure = { error: { status: 400 | 404 | 409; msg: string } };
export const isFailure = (value: unknown): value is Failure =>
  typeof value === "object" && value !== null && "error" in value;

/** The most events (items) a calendar feed holds, and the most item ids `feedAlarms` reads reminders for. */
export const MAX_FEED_EVENTS = 5_000;

export interface ReminderTime {
  date?: string;
  hour?: string;
  period?: number;
  unit?: CalendarUnit;
  rtype?: 1 | 2;
}
export interface ReminderInput extends ReminderTime {
  /** null: the item's contact; undefined: unchanged (PATCH) or the item's contact. A contact or a group, not both. */
  contactId?: number | null;
  groupId?: number | null;
  /** A channel endpoint (then channels is its type): null: contacts again; undefined: unchanged (PATCH) or none. */
  channelId?: number | null;
  always?: boolean;
  unlessAck?: boolean;
  channels?: Channel[];
}

export interface DeliveryView {
  channel: string;
  /** The recipient (a contact of the company); null while not resolved yet, or when there was nobody. */
  contact_id: number | null;
  /** The channel endpoint of a delivery to one; null for a contact's. */
  channel_id: number | null;
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
  origin: "sequence" | "manual" | "snooze";
  due_at: string;
  period: number | null;
  unit: CalendarUnit | null;
  rtype: number | null;
  contact_id: number;
  group_id: number | null;
  channel_id: number | null;
  always: boolean;
  unless_acknowledged: boolean;
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

export type WebhookDeliveryState = "pending" | "delivered" | "failed";
export interface WebhookDeliveryView {
  delivery_id: number;
  message_id: string;
  event_type: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  state: WebhookDeliveryState;
  delivered_at: string | null;
  created_at: string;
}

/** A report the email() handler verified, for one email delivery (docs/bounces.md). */
export interface BounceReport {
  reminderId: number;
  contactId: number;
  kind: "hard" | "soft" | "complaint";
  status: string;
  reason: string;
  /** The failed recipients the report names (empty: it names none). */
  recipients: string[];
}
export type BounceResult =
  | {
      outcome: "recorded";
      state: "bounced" | "complained";
      suppressed: boolean;
      /** null: a digest's report. */
      itemId: number | null;
      address: string;
      at: string;
    }
  | { outcome: "duplicate" }
  | { outcome: "refused"; reason: string };

export interface ProblemQuery {
  state?: "bounced" | "complained" | "suppressed" | "failed";
  /** Epoch ms: changes at or after it. */
  since?: number;
  /** The last row of the previous page. */
  after?: { at: number; reminderId: number; contactId: number };
  limit: number;
}
export type ProblemDeliveryRow = {
  reminder_id: number;
  item_id: number;
  contact_id: number;
  /** A channel endpoint's delivery (contact_id 0); null: a contact's. */
  endpoint_id: number | null;
  channel: string;
  state: DeliveryState;
  recipient: string | null;
  reason: string | null;
  bounce_kind: string | null;
  bounce_status: string | null;
  attempts: number;
  changed_at: number;
};

export const DIGEST_STATES = [
  "pending",
  "sent",
  "bounced",
  "complained",
  "empty",
  "suppressed",
  "no_recipient",
  "skipped",
  "failed",
] as const;
export type DigestState = (typeof DIGEST_STATES)[number];
/** The last row of a page of digests: its date, contact and period. */
export type DigestCursor = [string, number, string];
export interface DigestListQuery {
  contactId?: number;
  /** A local date: digests of that day or later. */
  since?: string;
  state?: DigestState;
  after?: DigestCursor;
  limit: number;
}
export type DigestRow = {
  contact_id: number;
  period: string;
  date: string;
  state: DigestState;
  attempts: number;
  items: number | null;
  recipient: string | null;
  message_id: string | null;
  last_error: string | null;
  created_at: number;
  changed_at: number;
};

/**
 * The clock's RPC methods. Each names the company it is called for (the object refuses another
 * company's); `syncFirst`: the item's D1 changes are applied before; `requestKey` (a request with an
 * Idempotency-Key): the change is recorded under it with its answer in the same transaction, and a
 * repeat gets that answer without changing anything.
 */
export interface CompanyClockRpc extends Rpc.DurableObjectBranded {
  /** What the object holds, for operators and tests. */
  status(companyId: number): Promise<{ companyId: number; queued: number; alarm: number | null }>;
  /**
   * Applies the D1 state of `itemIds` (0: the company's settings): queue, hold, resume, move or
   * forget reminders. Idempotent; an older snapshot than the one applied is ignored. `given`: that
   * state as the Worker's write batch read it.
   */
  sync(companyId: number, itemIds: number[], given?: Snapshots): Promise<void>;
  /** The item's reminders; `fill`: its D1 view is written before answering (GET /v1/items/{id}). */
  itemReminders(
    companyId: number,
    itemId: number,
    syncFirst: boolean,
    fill?: boolean,
  ): Promise<ItemReminders | Failure>;
  addReminder(
    companyId: number,
    itemId: number,
    input: ReminderInput,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ): Promise<ReminderView | Failure>;
  updateReminder(
    companyId: number,
    itemId: number,
    reminderId: number,
    input: ReminderInput,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ): Promise<ReminderView | Failure>;
  deleteReminder(
    companyId: number,
    itemId: number,
    reminderId: number,
    syncFirst: boolean,
    requestKey?: string,
    actor?: AuditActor,
  ): Promise<{ deleted: true } | Failure>;
  /** The triggered feed, newest first. */
  triggered(companyId: number, limit: number): TriggeredView[];
  /** The revision of the company's queued reminders (a calendar feed's ETag carries it). */
  queuedRevision(companyId: number): number;
  /** The instants of the queued reminders of `itemIds`, by item, with the revision they were read at. */
  feedAlarms(
    companyId: number,
    itemIds: number[],
    syncFirst: number[],
  ): Promise<{ revision: number; alarms: Record<number, number[]> }>;
  /** From the cron sweep: replays unseen changes and makes sure an overdue company's alarm runs. */
  wake(companyId: number): Promise<void>;
  /** After a task or file write: takes the webhook events D1 recorded and arms the alarm to deliver them. */
  pullEvents(companyId: number): Promise<void>;
  /** A webhook.test event to one endpoint (subscribed or not), delivered by the alarm at once. */
  testWebhook(
    companyId: number,
    endpointId: number,
    requestKey?: string,
    actor?: AuditActor,
  ): Promise<{ delivery_id: number; message_id: string } | Failure>;
  /** The endpoint's deliveries, newest first. */
  webhookDeliveries(
    companyId: number,
    endpointId: number,
    page: { limit: number; offset: number },
  ): { rows: WebhookDeliveryView[]; total: number };
  /** A failed or pending delivery is attempted again at once (same message id); 400 for a delivered one. */
  retryWebhookDelivery(
    companyId: number,
    endpointId: number,
    deliveryId: number,
    requestKey?: string,
    actor?: AuditActor,
  ): Promise<WebhookDeliveryView | Failure>;
  /** A verified bounce or complaint for one of the company's email deliveries (the email() handler). */
  recordBounce(companyId: number, report: BounceReport): Promise<BounceResult>;
  /** Problem deliveries (bounced, complained, suppressed, failed), newest change first. */
  problemDeliveries(companyId: number, query: ProblemQuery): ProblemDeliveryRow[];
  /** After a write that changes a contact's digest or the company's digest hour or zone: the next digest run rescheduled. */
  refreshDigests(companyId: number): Promise<void>;
  /** The company's digests, newest day first (GET /v1/digests). */
  digests(companyId: number, query: DigestListQuery): { rows: DigestRow[]; next: DigestCursor | null };
  /** The company is deleted: everything goes, the alarm too. */
  forgetCompany(companyId: number): Promise<void>;
}
