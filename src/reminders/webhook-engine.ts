// Webhook events and deliveries inside the company's Durable Object (docs/webhooks.md): events
// enter the `events` table (born in the object's own transactions, or taken from D1's
// webhook_events outbox), are fanned out to the endpoints subscribed (one `webhook_deliveries` row
// each, with its message id), and are delivered by the alarm in bounded batches with retries.

import type { Env } from "../env";
import {
  attemptDelivery,
  MAX_WEBHOOK_ATTEMPTS,
  newMessageId,
  payloadBody,
  webhookRetryDelay,
  type AttemptOutcome,
  type WebhookTransport,
} from "../webhooks/delivery";
import { endpointsStatement, FAILING_DISABLE_MS, itemEntriesStatement, recordHealth, subscribes, toEndpoints, type Endpoint, type EndpointHealth } from "../webhooks/outbox";
import type { PulledEvent } from "./d1";

/** Deliveries attempted per alarm run, and at once; more ready re-arm the alarm at once. */
export const WEBHOOK_BATCH = 50;
const WEBHOOK_CONCURRENCY = 10;
/** Events fanned out per run. */
const FAN_OUT_BATCH = 500;
/** A delivery is leased to the run sending it for this long (a run that dies leaves it to be retried). */
const LEASE_MS = 60_000;
/** While D1 cannot be read, fan-out and delivery are tried again after this. */
const D1_RETRY_MS = 30_000;
/** Delivered and failed deliveries (and their events) are kept this long for GET .../deliveries. */
export const DELIVERY_KEEP_MS = 30 * 24 * 3_600_000;

export type DeliveryStateName = "pending" | "delivered" | "failed";

export interface WebhookDeliveryView {
  delivery_id: number;
  message_id: string;
  event_type: string;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  state: DeliveryStateName;
  delivered_at: string | null;
  created_at: string;
}

type DeliveryRow = {
  delivery_id: number;
  event_id: number;
  endpoint_id: number;
  message_id: string;
  type: string;
  state: DeliveryStateName;
  attempts: number;
  next_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: number | null;
  created_at: number;
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function deliveryView(d: DeliveryRow): WebhookDeliveryView {
  return {
    delivery_id: d.delivery_id,
    message_id: d.message_id,
    event_type: d.type,
    attempts: d.attempts,
    last_status: d.last_status,
    last_error: d.last_error,
    next_attempt_at: d.state === "pending" ? iso(d.next_at) : null,
    state: d.state,
    delivered_at: iso(d.delivered_at),
    created_at: new Date(d.created_at).toISOString(),
  };
}

/** Records an event born in the object (call inside the transaction that caused it). */
export function recordEvent(
  sql: SqlStorage,
  event: { type: string; data: string | null; itemId?: number | null; endpointId?: number | null; now: number },
): number {
  return sql
    .exec<{ event_id: number }>(
      "INSERT INTO events (type, data, item_id, endpoint_id, state, next_at, created_at) VALUES (?, ?, ?, ?, 'new', ?, ?) RETURNING event_id",
      event.type,
      event.data,
      event.itemId ?? null,
      event.endpointId ?? null,
      event.now,
      event.now,
    )
    .one().event_id;
}

/** Stores events taken from D1 (a repeated pull is ignored: source_id is unique). */
export function storePulled(storage: DurableObjectStorage, pulled: PulledEvent[], now: number): void {
  if (pulled.length === 0) return;
  storage.transactionSync(() => {
    for (const e of pulled) {
      storage.sql.exec(
        "INSERT OR IGNORE INTO events (type, data, source_id, state, next_at, created_at) VALUES (?, ?, ?, 'new', ?, ?)",
        e.type,
        e.data,
        e.id,
        now,
        e.created_at,
      );
    }
  });
}

type NewEvent = {
  event_id: number;
  type: string;
  data: string | null;
  item_id: number | null;
  endpoint_id: number | null;
};

/**
 * One delivery per (new event, endpoint subscribed to its type); a webhook.test goes to its one
 * endpoint. Events of the object that carry an item get its entry from D1 first. An event nobody
 * is subscribed to is dropped. Returns false when D1 could not be read (tried again later).
 */
export async function fanOut(storage: DurableObjectStorage, env: Env, d1: D1Database, companyId: number, now = Date.now()): Promise<boolean> {
  const sql = storage.sql;
  const fresh = sql.exec<NewEvent>("SELECT event_id, type, data, item_id, endpoint_id FROM events WHERE state = 'new' AND next_at <= ? ORDER BY event_id LIMIT ?", now, FAN_OUT_BATCH).toArray();
  if (fresh.length === 0) return true;
  let endpoints: Endpoint[];
  const entries = new Map<number, string>();
  try {
    const itemIds = [...new Set(fresh.filter((e) => e.item_id !== null && e.endpoint_id === null).map((e) => e.item_id!))];
    const [endpointRows, entryRows] = await d1.batch([endpointsStatement(d1, companyId), itemEntriesStatement(d1, companyId, itemIds)]);
    endpoints = await toEndpoints(endpointRows!.results, env.WEBHOOK_SECRETS_KEY, now);
    for (const r of entryRows!.results as Array<{ item_id: number; entry: string }>) entries.set(r.item_id, r.entry);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "webhook fan-out deferred: D1 unavailable", companyId, error: String(error) }));
    storage.transactionSync(() => {
      sql.exec("UPDATE events SET next_at = ? WHERE state = 'new' AND next_at <= ?", now + D1_RETRY_MS, now);
    });
    return false;
  }
  storage.transactionSync(() => {
    for (const e of fresh) {
      // Another fan-out (a concurrent call while this one read D1) may have taken it meanwhile.
      const still = sql.exec<{ n: number }>("SELECT count(*) AS n FROM events WHERE event_id = ? AND state = 'new'", e.event_id).one().n;
      if (still === 0) continue;
      const targets =
        e.endpoint_id !== null ? endpoints.filter((p) => p.id === e.endpoint_id) : endpoints.filter((p) => p.enabled && subscribes(p, e.type));
      if (targets.length === 0) {
        sql.exec("DELETE FROM events WHERE event_id = ?", e.event_id);
        continue;
      }
      let data = e.data;
      if (e.item_id !== null && e.endpoint_id === null) {
        const entry = entries.get(e.item_id) ?? null;
        // reminder.sent: {reminder, item}; item.expired: the item entry (an item deleted meanwhile: its id).
        data = e.type === "reminder.sent" ? `{"reminder":${data ?? "null"},"item":${entry ?? "null"}}` : (entry ?? JSON.stringify({ item_id: e.item_id }));
      }
      sql.exec("UPDATE events SET state = 'fanned', data = ?, next_at = NULL WHERE event_id = ?", data ?? "{}", e.event_id);
      for (const target of targets) {
        sql.exec(
          "INSERT INTO webhook_deliveries (event_id, endpoint_id, message_id, type, state, attempts, next_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)",
          e.event_id,
          target.id,
          newMessageId(),
          e.type,
          now,
          now,
        );
      }
    }
  });
  return true;
}

type Leased = DeliveryRow & { data: string; event_created_at: number };

/**
 * Attempts up to WEBHOOK_BATCH ready deliveries, WEBHOOK_CONCURRENCY at a time. Each is leased
 * first (attempt counted), so two runs never send it at once. A deleted endpoint's deliveries are
 * dropped, a disabled one's fail; an endpoint failing everything for FAILING_DISABLE_MS is disabled.
 */
export async function deliverWebhooks(storage: DurableObjectStorage, env: Env, d1: D1Database, companyId: number, transport: WebhookTransport): Promise<{ more: boolean }> {
  const sql = storage.sql;
  const now = Date.now();
  let leased: Leased[] = [];
  storage.transactionSync(() => {
    leased = sql
      .exec<Leased>(
        `SELECT d.*, e.data, e.created_at AS event_created_at FROM webhook_deliveries d JOIN events e ON e.event_id = d.event_id
         WHERE d.state = 'pending' AND d.next_at <= ? ORDER BY d.next_at LIMIT ?`,
        now,
        WEBHOOK_BATCH,
      )
      .toArray();
    for (const d of leased) sql.exec("UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ? WHERE delivery_id = ?", now + LEASE_MS, d.delivery_id);
  });
  if (leased.length === 0) return { more: false };

  let endpoints: Map<number, Endpoint>;
  try {
    const { results } = await endpointsStatement(d1, companyId).all();
    endpoints = new Map((await toEndpoints(results, env.WEBHOOK_SECRETS_KEY)).map((e) => [e.id, e]));
  } catch (error) {
    // Not an attempt: given back, tried again later.
    console.error(JSON.stringify({ level: "error", msg: "webhook delivery deferred: D1 unavailable", companyId, error: String(error) }));
    storage.transactionSync(() => {
      for (const d of leased) sql.exec("UPDATE webhook_deliveries SET attempts = attempts - 1, next_at = ? WHERE delivery_id = ?", now + D1_RETRY_MS, d.delivery_id);
    });
    return { more: false };
  }

  const outcomes = new Map<number, AttemptOutcome | "dropped" | "disabled">();
  const send = async (d: Leased) => {
    const endpoint = endpoints.get(d.endpoint_id);
    if (!endpoint) return void outcomes.set(d.delivery_id, "dropped");
    if (!endpoint.enabled && d.type !== "webhook.test") return void outcomes.set(d.delivery_id, "disabled");
    outcomes.set(d.delivery_id, await attemptDelivery(transport, endpoint, d.message_id, payloadBody(d.type, d.event_created_at, d.data)));
  };
  for (let i = 0; i < leased.length; i += WEBHOOK_CONCURRENCY) await Promise.all(leased.slice(i, i + WEBHOOK_CONCURRENCY).map(send));

  const done = Date.now();
  const health: EndpointHealth = { succeeded: [], failed: [], disable: [] };
  storage.transactionSync(() => {
    for (const d of leased) {
      const outcome = outcomes.get(d.delivery_id)!;
      const attempt = d.attempts + 1;
      if (outcome === "dropped") {
        sql.exec("DELETE FROM webhook_deliveries WHERE delivery_id = ?", d.delivery_id);
      } else if (outcome === "disabled") {
        sql.exec(
          "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts - 1, last_error = 'the endpoint is disabled', next_at = NULL WHERE delivery_id = ?",
          d.delivery_id,
        );
      } else if (outcome.ok) {
        sql.exec(
          "UPDATE webhook_deliveries SET state = 'delivered', last_status = ?, last_error = NULL, delivered_at = ?, next_at = NULL WHERE delivery_id = ?",
          outcome.status,
          done,
          d.delivery_id,
        );
        health.succeeded.push(d.endpoint_id);
      } else {
        const delay = attempt >= MAX_WEBHOOK_ATTEMPTS ? null : webhookRetryDelay(attempt);
        sql.exec(
          "UPDATE webhook_deliveries SET state = ?, last_status = ?, last_error = ?, next_at = ? WHERE delivery_id = ?",
          delay === null ? "failed" : "pending",
          outcome.status,
          outcome.error.slice(0, 300),
          delay === null ? null : done + delay,
          d.delivery_id,
        );
        const endpoint = endpoints.get(d.endpoint_id)!;
        health.failed.push(d.endpoint_id);
        if (endpoint.failingSince !== null && endpoint.failingSince <= done - FAILING_DISABLE_MS) health.disable.push(d.endpoint_id);
      }
    }
    // A success clears an endpoint's failing mark even if another of its deliveries failed in the same run.
    health.failed = health.failed.filter((id) => !health.succeeded.includes(id));
    health.disable = health.disable.filter((id) => !health.succeeded.includes(id));
    for (const id of new Set(health.disable)) {
      sql.exec(
        "UPDATE webhook_deliveries SET state = 'failed', last_error = coalesce(last_error, 'the endpoint is disabled'), next_at = NULL WHERE endpoint_id = ? AND state = 'pending'",
        id,
      );
    }
  });
  try {
    await recordHealth(d1, companyId, health, done);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "webhook endpoint health not recorded", companyId, error: String(error) }));
  }
  if (leased.length >= WEBHOOK_BATCH) return { more: true };
  const ready = sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'pending' AND next_at <= ?", Date.now()).one().n;
  return { more: ready > 0 };
}

/** Old finished deliveries go, and events no delivery refers to any more (bounded per run). */
export function pruneWebhooks(storage: DurableObjectStorage, now = Date.now()): void {
  storage.transactionSync(() => {
    storage.sql.exec(
      "DELETE FROM webhook_deliveries WHERE delivery_id IN (SELECT delivery_id FROM webhook_deliveries WHERE created_at < ? AND state <> 'pending' LIMIT 500)",
      now - DELIVERY_KEEP_MS,
    );
    storage.sql.exec(
      `DELETE FROM events WHERE event_id IN (SELECT e.event_id FROM events e WHERE e.state = 'fanned' AND e.created_at < ?
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id) LIMIT 500)`,
      now - DELIVERY_KEEP_MS,
    );
  });
}

export function listDeliveries(sql: SqlStorage, endpointId: number, limit: number, offset: number): { rows: WebhookDeliveryView[]; total: number } {
  const total = sql.exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?", endpointId).one().n;
  const rows = sql
    .exec<DeliveryRow>("SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY delivery_id DESC LIMIT ? OFFSET ?", endpointId, limit, offset)
    .toArray()
    .map(deliveryView);
  return { rows, total };
}

export function deliveryOf(sql: SqlStorage, endpointId: number, deliveryId: number): DeliveryRow | undefined {
  return sql.exec<DeliveryRow>("SELECT * FROM webhook_deliveries WHERE delivery_id = ? AND endpoint_id = ?", deliveryId, endpointId).toArray()[0];
}
