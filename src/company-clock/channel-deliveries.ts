// Delivery of fired reminders to channel endpoints (Slack, Teams, Google Chat, Discord, ntfy;
// docs/channels.md "Delivery"). A reminder to a channel has one delivery row (endpoint_id set,
// contact_id 0) in the outbox reminder-delivery.ts keeps for email and SMS, with the same states,
// attempts and lease; what differs:
// - pacing: each endpoint is held to its platform's rate (CHANNEL_RATES) by channel_pace, a GCRA
//   "theoretical arrival time" per endpoint. A run leases what each endpoint may send now and moves
//   the rest of its ready deliveries to the instant it may send again, so the alarm sleeps till then;
// - the answer: a 429 waits its Retry-After (and the endpoint sends nothing else before it), a 404
//   or 410 disables the channel in D1 with the `channel.disabled` webhook event in the same batch,
//   other 3xx/4xx fail at once, 5xx and timeouts are retried like email;
// - the sends are not awaited by the alarm: each records its own outcome when its answer comes, so an
//   endpoint that hangs (5 s at most) holds up no other endpoint's next message.
// Exactly once as email: keyed rows claimed with the reminder; a crash after the platform accepted a
// message but before its outcome was written repeats that one message after the lease.

import { type ChannelPayload, channelMessage } from "../channels/messages";
import { type ChannelTarget, sendToChannel, type SendOutcome } from "../channels/send";
import type { ChannelType } from "../channels/urls";
import { CHANNEL_TYPES } from "../channels/urls";
import type { Env } from "../env";
import { speechFor } from "../i18n/language";
import { recipientLinks } from "../lib/recipient-links";
import { eachInPool } from "../lib/pool";
import { retryAfterDelay, todayIn } from "../lib/time";
import { allowsPrivateUrls } from "../webhooks/urls";
import { decryptSecret } from "../webhooks/secrets";
import { COMPANY_SENDER_SQL, COMPANY_TEMPLATES_SQL, senderOf, templatesOf } from "./company-facts";
import type { ClockContext } from "./context";
import { MAX_DELIVERY_ATTEMPTS, retryDelay } from "./reminder-delivery";
import type { ReminderItemType } from "./reminder-email";
import { sendGate } from "./send-gate";
import { armAlarm } from "./time";
import { pump } from "./webhooks";

/**
 * Each platform's documented rate for one webhook: a message every `intervalMs`, in bursts of at
 * most `burst`. Slack: about 1 a second per incoming webhook. Teams: the Workflows webhook follows
 * the connectors' 4 a second and 60 per 30 s. Google Chat: 60 messages a minute per space. Discord:
 * 5 per 2 s per webhook, 30 a minute per channel. ntfy (ntfy.sh's defaults, and a self-hosted
 * server's): bursts of 60, then 1 per 5 s.
 */
export const CHANNEL_RATES: Record<ChannelType, { intervalMs: number; burst: number }> = {
  slack: { intervalMs: 1_000, burst: 1 },
  teams: { intervalMs: 1_000, burst: 1 },
  google_chat: { intervalMs: 1_000, burst: 1 },
  discord: { intervalMs: 2_000, burst: 5 },
  ntfy: { intervalMs: 5_000, burst: 60 },
};

/** Most deliveries leased per run (over every endpoint); more ready re-arm the alarm at once. */
const CHANNEL_BATCH = 100;
/** Sends in flight from one run. */
const CONCURRENCY = 20;
/** How long a delivery is leased to the run sending it (a run that dies leaves it to be retried after this). */
const LEASE_MS = 60_000;
/** A 429 without a usable Retry-After waits this long; one asking more than MAX_THROTTLE_MS waits that. */
const DEFAULT_THROTTLE_MS = 5_000;
const MAX_THROTTLE_MS = 3_600_000;
/** A delivery throttled this many times fails (a platform that always answers 429). */
export const MAX_THROTTLES = 100;

const isChannelType = (value: string): value is ChannelType => (CHANNEL_TYPES as readonly string[]).includes(value);

type Leased = {
  reminder_id: number;
  channel: string;
  endpoint_id: number;
  attempts: number;
  /** Of those attempts, how many the platform throttled (429). */
  throttled: number;
  item_id: number;
  /** Who the message is for: the reminder's contact (else the item's, read from D1). */
  contact_id: number | null;
};

type Outcome =
  | { state: "sent"; recipient: string }
  | { state: "no_recipient" | "skipped" | "failed"; recipient: string | null; error: string }
  | { state: "suppressed"; recipient: string | null; error: string; wholeChannel?: boolean }
  | { state: "retry"; recipient: string | null; error: string; throttleMs?: number }
  | { state: "disable"; recipient: string | null; error: string; reason: string; status: number | null };

/**
 * How many of `ready` deliveries an endpoint may send at `now`, and the instant its next one may
 * go after those, by its rate (GCRA: `tat` is the instant the endpoint's bucket is empty again).
 */
export function paceAt(
  tat: number | null,
  now: number,
  rate: { intervalMs: number; burst: number },
  ready: number,
): { count: number; tat: number; nextAt: number } {
  const slack = (rate.burst - 1) * rate.intervalMs;
  let t = Math.max(tat ?? now, now);
  let count = 0;
  while (count < ready && t - slack <= now) {
    count++;
    t += rate.intervalMs;
  }
  return { count, tat: t, nextAt: Math.max(t - slack, now) };
}

/**
 * The endpoints with deliveries ready by ?1, how many each, the first one's instant and their pace:
 * grouped in the order of deliveries_channel_next (named: on an empty table the planner prefers
 * deliveries_next and a sort).
 */
export const READY_SQL = `SELECT d.endpoint_id, d.channel, count(*) AS n, min(d.next_at) AS due, p.tat
  FROM deliveries AS d INDEXED BY deliveries_channel_next
  LEFT JOIN channel_pace AS p ON p.endpoint_id = d.endpoint_id
  WHERE d.state = 'pending' AND d.endpoint_id IS NOT NULL AND d.next_at <= ? GROUP BY d.endpoint_id`;
/** An endpoint's ready deliveries, oldest first: endpoint, the instant, how many. */
export const ENDPOINT_LEASE_SQL = `SELECT d.reminder_id, d.channel, d.endpoint_id, d.attempts, d.throttled, r.item_id, r.contact_id
  FROM deliveries AS d JOIN reminders AS r ON r.reminder_id = d.reminder_id
  WHERE d.state = 'pending' AND d.endpoint_id = ? AND d.next_at <= ? ORDER BY d.next_at, d.reminder_id LIMIT ?`;
/** An endpoint's waiting deliveries moved to its next turn: the instant, the endpoint, the instant. */
export const DEFER_SQL =
  "UPDATE deliveries SET next_at = ? WHERE state = 'pending' AND endpoint_id = ? AND next_at < ?";

/**
 * Endpoints that may send within this much of one another send together: one run, one instant, a
 * random order. Without it an endpoint throttled by a 429 comes due a few ms after the others (its
 * Retry-After counts from the answer) and sends alone, after them, every time: a receiver refusing
 * "one request in ten" over all endpoints then refuses that one every second.
 */
const GATHER_MS = 50;
/** Added to every platform's interval: a send leaves a few ms off its plan and arrives with the network's jitter. */
export const PACE_MARGIN_MS = 10;

/** The interval and burst an endpoint of `channel` is held to. */
function rateOf(channel: string): { intervalMs: number; burst: number } {
  const rate = CHANNEL_RATES[isChannelType(channel) ? channel : "slack"];
  return { intervalMs: rate.intervalMs + PACE_MARGIN_MS, burst: rate.burst };
}

/**
 * Leases what each endpoint may send by the run's instant (`sendAt`: now, or a few ms on to gather
 * the endpoints due then); moves each endpoint's other ready deliveries to its next turn.
 */
function leaseChannels(sql: SqlStorage, now: number): { leased: Leased[]; more: boolean; sendAt: number } {
  const horizon = now + GATHER_MS;
  const ready = sql
    .exec<{ endpoint_id: number; channel: string; n: number; due: number; tat: number | null }>(READY_SQL, horizon)
    .toArray()
    .map((e) => {
      const rate = rateOf(e.channel);
      // When it may send: its first delivery is due and its rate allows one.
      const allowedAt = Math.max(e.due, (e.tat ?? 0) - (rate.burst - 1) * rate.intervalMs);
      return { ...e, rate, allowedAt };
    });
  const gathered = ready.filter((e) => e.allowedAt <= horizon);
  const sendAt = Math.max(now, ...gathered.map((e) => e.allowedAt));
  const leased: Leased[] = [];
  let more = false;
  // In a random order: endpoints sending in the same run reach the platform in that order, and a
  // limit counted over all of them (one request in ten refused) must not fall on the same one each time.
  for (const e of shuffled(ready)) {
    const room = CHANNEL_BATCH - leased.length;
    if (e.allowedAt > horizon) {
      sql.exec(DEFER_SQL, e.allowedAt, e.endpoint_id, e.allowedAt);
      continue;
    }
    if (room <= 0) {
      more = true;
      continue;
    }
    const planned = paceAt(e.tat, sendAt, e.rate, Math.min(e.n, room));
    const rows = sql.exec<Leased>(ENDPOINT_LEASE_SQL, e.endpoint_id, sendAt, planned.count).toArray();
    const pace = paceAt(e.tat, sendAt, e.rate, rows.length);
    for (const d of rows)
      sql.exec(
        "UPDATE deliveries SET attempts = attempts + 1, next_at = ? WHERE reminder_id = ? AND channel = ? AND contact_id = 0",
        now + LEASE_MS,
        d.reminder_id,
        d.channel,
      );
    leased.push(...rows);
    if (rows.length > 0)
      sql.exec(
        "INSERT INTO channel_pace (endpoint_id, tat) VALUES (?, ?) ON CONFLICT (endpoint_id) DO UPDATE SET tat = excluded.tat",
        e.endpoint_id,
        pace.tat,
      );
    if (e.n > rows.length) {
      if (rows.length === room) more = true;
      // The rest wait for the endpoint's rate: the alarm sleeps till then instead of spinning.
      else sql.exec(DEFER_SQL, pace.nextAt, e.endpoint_id, pace.nextAt);
    }
  }
  return { leased, more, sendAt };
}

/**
 * A send leaving later than planned (the run's D1 read took a while): the endpoint's next turn
 * counts from when it left, so two sends are never closer than its interval.
 */
function paceFromSend(storage: DurableObjectStorage, d: Leased, at: number): void {
  storage.transactionSync(() => {
    storage.sql.exec(
      "UPDATE channel_pace SET tat = max(tat, ?) WHERE endpoint_id = ?",
      at + rateOf(d.channel).intervalMs,
      d.endpoint_id,
    );
  });
}

/** `list` in a random order (Fisher–Yates), as a new array. */
function shuffled<T>(list: T[]): T[] {
  const out = [...list];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Endpoint {
  id: number;
  type: ChannelType;
  name: string;
  language: string | null;
  disabled: boolean;
  disabledReason: string | null;
  urlCiphertext: string;
  tokenCiphertext: string | null;
}

interface ItemFacts {
  present: boolean;
  epoch: number;
  title: string;
  itemType: ReminderItemType;
  documentType: string | null;
  expiryDate: string;
  notes: string | null;
  /** The contact it is for (null: none, or deleted). */
  contact: { firstName: string | null; lastName: string | null; channels: string | null } | null;
}

const ITEMS_SQL = `SELECT t.value ->> 0 AS reminder_id, i.id IS NOT NULL AS present, i.schedule_epoch AS epoch, i.title, i.item_type,
    i.expiry_date, i.notes, d.name AS document_type, c.id AS contact_id, c.first_name, c.last_name, c.channels
  FROM json_each(?2) AS t
  LEFT JOIN items AS i ON i.id = t.value ->> 1 AND i.company_id = ?1
  LEFT JOIN document_types AS d ON d.id = i.document_type_id
  LEFT JOIN contacts AS c ON c.id = coalesce(t.value ->> 2, i.contact_id) AND c.company_id = ?1`;

const ENDPOINTS_SQL = `SELECT id, type, name, language, disabled, disabled_reason, url_ciphertext, token_ciphertext
  FROM channel_endpoints WHERE company_id = ?1 AND id IN (SELECT value FROM json_each(?2))`;

/** The D1 facts of a run's deliveries, in one batch: the company, its templates, the endpoints, the items and who they are for. */
async function channelFacts(d1: D1Database, companyId: number, leased: Leased[]) {
  const [company, templates, endpoints, items] = await d1.batch<Record<string, unknown>>([
    d1.prepare(COMPANY_SENDER_SQL).bind(companyId),
    d1.prepare(COMPANY_TEMPLATES_SQL).bind(companyId),
    d1.prepare(ENDPOINTS_SQL).bind(companyId, JSON.stringify([...new Set(leased.map((d) => d.endpoint_id))])),
    d1.prepare(ITEMS_SQL).bind(companyId, JSON.stringify(leased.map((d) => [d.reminder_id, d.item_id, d.contact_id]))),
  ]);
  const byEndpoint = new Map<number, Endpoint>();
  for (const r of endpoints!.results)
    if (isChannelType(String(r.type)))
      byEndpoint.set(Number(r.id), {
        id: Number(r.id),
        type: r.type as ChannelType,
        name: String(r.name),
        language: (r.language as string | null) || null,
        disabled: r.disabled === 1,
        disabledReason: (r.disabled_reason as string | null) ?? null,
        urlCiphertext: String(r.url_ciphertext),
        tokenCiphertext: (r.token_ciphertext as string | null) ?? null,
      });
  const byReminder = new Map<number, ItemFacts>();
  for (const r of items!.results)
    byReminder.set(Number(r.reminder_id), {
      present: r.present === 1,
      epoch: Number(r.epoch ?? 0),
      title: String(r.title ?? ""),
      itemType: (r.item_type as ReminderItemType) ?? "exp",
      documentType: (r.document_type as string | null) ?? null,
      expiryDate: String(r.expiry_date ?? ""),
      notes: (r.notes as string | null) ?? null,
      contact:
        r.contact_id === null
          ? null
          : {
              firstName: (r.first_name as string | null) || null,
              lastName: (r.last_name as string | null) || null,
              channels: (r.channels as string | null) ?? null,
            },
    });
  return {
    company: senderOf(company!.results[0]),
    templates: templatesOf(templates!.results),
    endpoints: byEndpoint,
    items: byReminder,
  };
}

type Facts = Awaited<ReturnType<typeof channelFacts>>;

/** The disabled_reason a platform's answer gives the channel. */
const platformReason = (status: number) =>
  `the platform answered HTTP ${status} to a reminder: the webhook ${status === 410 ? "is gone" : "no longer exists"}`;

/** What one answer (or its absence) makes of the delivery. */
export function outcomeOf(sent: SendOutcome, recipient: string, now: number): Outcome {
  if (sent.delivered) return { state: "sent", recipient };
  const status = sent.status;
  const error = (sent.error ?? "not delivered") + (sent.body ? `: ${sent.body.slice(0, 200)}` : "");
  if (status === null && sent.error?.startsWith("not sent:"))
    return { state: "disable", recipient, error, reason: sent.error, status };
  if (status === 404 || status === 410)
    return { state: "disable", recipient, error, reason: platformReason(status), status };
  if (status === 429)
    return {
      state: "retry",
      recipient,
      error,
      throttleMs: retryAfterDelay(sent.retry_after, now, MAX_THROTTLE_MS) ?? DEFAULT_THROTTLE_MS,
    };
  if (status === null || status >= 500 || status === 408) return { state: "retry", recipient, error };
  return { state: "failed", recipient, error };
}

/** A delivery ready to leave: where to and what; or its outcome when it is not to be sent. */
type Prepared =
  | { outcome: Outcome }
  | { target: ChannelTarget; payload: ChannelPayload; recipient: string; outcome?: undefined };

/** One delivery's send gate and channel state, then its message (the URL decrypted, the links signed). */
async function prepareOne(d: Leased, facts: Facts, env: Env, companyId: number): Promise<Prepared> {
  const outcome = (o: Outcome): Prepared => ({ outcome: o });
  const endpoint = facts.endpoints.get(d.endpoint_id);
  if (!endpoint)
    return outcome({ state: "no_recipient", recipient: null, error: `channel ${d.endpoint_id} no longer exists` });
  const item = facts.items.get(d.reminder_id);
  if (!item?.present)
    return outcome({ state: "skipped", recipient: null, error: "the item was deleted before delivery" });
  if (endpoint.disabled)
    return outcome({
      state: "suppressed",
      recipient: endpoint.name,
      error: `channel_disabled: ${endpoint.disabledReason ?? "the channel is disabled"}`.slice(0, 300),
      wholeChannel: true,
    });
  const stopped = item.contact
    ? sendGate({ channel: "chat", emailStatus: "active", channels: item.contact.channels })
    : null;
  if (stopped) return outcome({ state: "suppressed", recipient: endpoint.name, error: stopped.slice(0, 300) });
  let url: string;
  let token: string | null;
  try {
    url = await decryptSecret(endpoint.urlCiphertext, env.WEBHOOK_SECRETS_KEY);
    token =
      endpoint.tokenCiphertext === null ? null : await decryptSecret(endpoint.tokenCiphertext, env.WEBHOOK_SECRETS_KEY);
  } catch {
    return outcome({
      state: "failed",
      recipient: endpoint.name,
      error:
        "the channel's URL cannot be decrypted (WEBHOOK_SECRETS_KEY changed since it was saved): set its url again",
    });
  }
  const speech = speechFor(endpoint.language, facts.company.language);
  // The channel's own links: anyone in the channel may open them; an action names the channel (docs/recipient-journey.md).
  const target = {
    companyId,
    itemId: d.item_id,
    contactId: 0,
    channelId: endpoint.id,
    epoch: item.epoch,
    itemDate: item.expiryDate,
  };
  const links = await recipientLinks(env, target);
  const name = item.contact ? [item.contact.firstName, item.contact.lastName].filter(Boolean).join(" ") || null : null;
  const payload = channelMessage(endpoint.type, {
    speech,
    template: facts.templates.get(speech.language) ?? null,
    companyName: facts.company.name,
    itemId: d.item_id,
    itemTitle: item.title,
    itemType: item.itemType,
    documentType: item.documentType,
    expiryDate: item.expiryDate,
    today: todayIn(facts.company.timezone),
    dateFormat: facts.company.dateFormat,
    recipientFirstName: item.contact?.firstName ?? null,
    recipientLastName: item.contact?.lastName ?? null,
    recipientName: name,
    notes: item.notes,
    links,
  });
  return { target: { type: endpoint.type, url, token }, payload, recipient: endpoint.name };
}

/** Writes one delivery's outcome (and, for a throttle or a disabled channel, its endpoint's) in one transaction. */
function recordOutcome(storage: DurableObjectStorage, d: Leased, outcome: Outcome): void {
  const done = Date.now();
  const sql = storage.sql;
  const where = [d.reminder_id, d.channel] as const;
  const attempt = d.attempts + 1;
  storage.transactionSync(() => {
    switch (outcome.state) {
      case "sent":
        sql.exec(
          "UPDATE deliveries SET state = 'sent', recipient = ?, delivered_at = ?, changed_at = ?, last_error = NULL, next_at = NULL " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = 0",
          outcome.recipient,
          done,
          done,
          ...where,
        );
        return;
      case "retry": {
        // A throttle is not a failure: it spends none of the MAX_DELIVERY_ATTEMPTS failed attempts.
        const throttled = d.throttled + (outcome.throttleMs !== undefined ? 1 : 0);
        const failures = attempt - throttled;
        const failed =
          outcome.throttleMs !== undefined ? throttled >= MAX_THROTTLES : failures >= MAX_DELIVERY_ATTEMPTS;
        const wait = outcome.throttleMs ?? retryDelay(failures);
        sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = ?, changed_at = ?, throttled = ? " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = 0",
          failed ? "failed" : "pending",
          outcome.recipient,
          outcome.error.slice(0, 300),
          failed ? null : done + wait,
          done,
          throttled,
          ...where,
        );
        // The platform throttles the whole endpoint: nothing else goes to it before its Retry-After.
        if (outcome.throttleMs !== undefined)
          sql.exec(
            "INSERT INTO channel_pace (endpoint_id, tat) VALUES (?, ?) ON CONFLICT (endpoint_id) DO UPDATE SET tat = max(tat, excluded.tat)",
            d.endpoint_id,
            done + outcome.throttleMs,
          );
        return;
      }
      case "disable":
      case "suppressed": {
        const state = outcome.state === "disable" ? "failed" : "suppressed";
        sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = NULL, changed_at = ? " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = 0",
          state,
          outcome.recipient,
          outcome.error.slice(0, 300),
          done,
          ...where,
        );
        // The channel is disabled: its other waiting deliveries are not sent either (one in flight still
        // records its own outcome when its answer comes).
        const reason = outcome.state === "disable" ? outcome.reason : outcome.wholeChannel ? outcome.error : null;
        if (reason !== null)
          sql.exec(
            "UPDATE deliveries SET state = 'suppressed', recipient = ?, last_error = ?, next_at = NULL, changed_at = ? " +
              "WHERE endpoint_id = ? AND state = 'pending'",
            outcome.recipient,
            (reason.startsWith("channel_disabled: ") ? reason : `channel_disabled: ${reason}`).slice(0, 300),
            done,
            d.endpoint_id,
          );
        return;
      }
      default:
        sql.exec(
          "UPDATE deliveries SET state = ?, recipient = ?, last_error = ?, next_at = NULL, changed_at = ? " +
            "WHERE reminder_id = ? AND channel = ? AND contact_id = 0",
          outcome.state,
          outcome.recipient,
          outcome.error.slice(0, 300),
          done,
          ...where,
        );
    }
  });
}

/**
 * The channel disabled in D1 after the platform said its webhook is gone (or its URL is no longer
 * allowed), and `channel.disabled` for the webhook endpoints that want it, in one batch: the UPDATE
 * is guarded by `disabled = 0`, the event by its change, so a repeat disables and announces nothing.
 */
async function disableChannel(clock: ClockContext, endpointId: number, reason: string, status: number | null) {
  const db = await clock.db();
  const d1 = db.d1;
  const [changed] = await db.commit([
    d1
      .prepare(
        `UPDATE channel_endpoints SET disabled = 1, disabled_reason = ?3, updated_at = CURRENT_TIMESTAMP
         WHERE id = ?1 AND company_id = ?2 AND disabled = 0 RETURNING id`,
      )
      .bind(endpointId, clock.companyId, reason.slice(0, 300)),
    // Right after the UPDATE: changes() is its count (trigger writes are not counted).
    d1
      .prepare(
        `INSERT INTO webhook_events (company_id, type, data, created_at)
         SELECT e.company_id, 'channel.disabled',
           json_object('channel', json_object('channel_id', e.id, 'type', e.type, 'name', e.name, 'url', e.url_hint,
               'has_access_token', json(CASE WHEN e.token_ciphertext IS NULL THEN 'false' ELSE 'true' END), 'language', e.language,
               'disabled', json('true'), 'disabled_reason', e.disabled_reason, 'created_at', e.created_at, 'updated_at', e.updated_at),
             'status', ?3),
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
         FROM channel_endpoints AS e
         WHERE changes() = 1 AND e.id = ?1 AND e.company_id = ?2
           AND EXISTS (SELECT 1 FROM webhook_endpoints AS w WHERE w.company_id = e.company_id AND w.enabled = 1
             AND EXISTS (SELECT 1 FROM json_each(w.events) WHERE value IN ('*', 'channel.disabled')))`,
      )
      .bind(endpointId, clock.companyId, status),
  ]);
  if ((changed as { results?: unknown[] } | undefined)?.results?.length) await pump(clock);
}

/**
 * One run: leases what the endpoints' rates allow and starts sending it. `sending` settles when
 * every send of the run has recorded its outcome (the alarm does not wait for it; tests may).
 */
export async function deliverChannels(
  clock: ClockContext,
  fetcher: typeof fetch = fetch,
): Promise<{ more: boolean; sending: Promise<void> }> {
  let batch: { leased: Leased[]; more: boolean; sendAt: number } = { leased: [], more: false, sendAt: 0 };
  clock.storage.transactionSync(() => {
    batch = leaseChannels(clock.sql, Date.now());
  });
  const { leased, more, sendAt } = batch;
  if (leased.length === 0) return { more, sending: Promise.resolve() };
  let facts: Facts;
  try {
    facts = await channelFacts((await clock.db()).d1, clock.companyId, leased);
  } catch (error) {
    for (const d of leased)
      recordOutcome(clock.storage, d, {
        state: "retry",
        recipient: null,
        error: `delivery details unavailable: ${String(error)}`,
      });
    return { more, sending: Promise.resolve() };
  }
  const sending = (async () => {
    // Every message is made first, then they leave at the run's instant in the run's (random)
    // order: the endpoints due by then send together (GATHER_MS).
    const prepared = await Promise.all(
      leased.map((d) =>
        prepareOne(d, facts, clock.env, clock.companyId).catch(
          (error): Prepared => ({ outcome: { state: "retry", recipient: null, error: `not sent: ${String(error)}` } }),
        ),
      ),
    );
    const wait = sendAt - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const allowPrivate = allowsPrivateUrls(clock.env);
    await eachInPool(
      leased.map((d, i) => ({ d, ready: prepared[i]! })),
      CONCURRENCY,
      async ({ d, ready }) => {
        let outcome: Outcome;
        if (ready.outcome) outcome = ready.outcome;
        else {
          paceFromSend(clock.storage, d, Date.now());
          const sent = await sendToChannel(ready.target, ready.payload, { allowPrivate, fetcher });
          outcome = outcomeOf(sent, ready.recipient, Date.now());
        }
        recordOutcome(clock.storage, d, outcome);
        if (outcome.state === "disable") {
          try {
            await disableChannel(clock, d.endpoint_id, outcome.reason, outcome.status);
          } catch (error) {
            console.error(
              JSON.stringify({
                level: "error",
                msg: "channel not disabled (D1)",
                companyId: clock.companyId,
                error: String(error),
              }),
            );
          }
        }
      },
    );
    // Retries and throttles may be due before the alarm the run left.
    await armAlarm(clock.storage);
  })().catch((error) =>
    console.error(
      JSON.stringify({ level: "error", msg: "channel sends", companyId: clock.companyId, error: String(error) }),
    ),
  );
  return { more, sending };
}
