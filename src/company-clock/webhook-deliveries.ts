// Webhook deliveries out of the company clock (docs/webhooks.md): the alarm attempts the ready ones
// in bounded batches, each leased first, with retries and endpoint health; the API lists them and
// retries one. The events they carry are fanned out by webhooks.ts.

import type { Env } from "../env";
import {
  attemptDelivery,
  MAX_WEBHOOK_ATTEMPTS,
  payloadBody,
  webhookRetryDelay,
  type AttemptOutcome,
  type WebhookTransport,
} from "../webhooks/delivery";
import {
  endpointsStatement,
  FAILING_DISABLE_MS,
  recordHealth,
  toEndpoints,
  type Endpoint,
  type EndpointHealth,
} from "../webhooks/outbox";
import type { Failure, WebhookDeliveryState, WebhookDeliveryView } from "./api";
import { settle, type ClockContext } from "./context";
import { appliedResult, recordApplied } from "./store";
import { armAlarm } from "./time";
import { eachInPool } from "../lib/pool";
import { D1_RETRY_MS } from "./webhooks";
import type { Db } from "../db/client";
import { allowsPrivateUrls, checkWebhookUrl } from "../webhooks/urls";
import type { AuditActor } from "../db/commit";
import { recordAudit } from "./audit-outbox";

/** Deliveries attempted per alarm run, and at once; more ready re-arm the alarm at once. */
export const WEBHOOK_BATCH = 50;
const WEBHOOK_CONCURRENCY = 10;
/** A delivery is leased to the run sending it for this long (a run that dies leaves it to be retried). */
const LEASE_MS = 60_000;
/** Delivered and failed deliveries (and their events) are kept this long for GET .../deliveries. */
export const DELIVERY_KEEP_MS = 30 * 24 * 3_600_000;

type DeliveryRow = {
  delivery_id: number;
  event_id: number;
  endpoint_id: number;
  message_id: string;
  type: string;
  state: WebhookDeliveryState;
  attempts: number;
  next_at: number | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: number | null;
  created_at: number;
};

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function deliveryView(d: DeliveryRow): WebhookDeliveryView {
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

type Leased = DeliveryRow & { data: string; event_created_at: number };

/**
 * Attempts up to WEBHOOK_BATCH ready deliveries, WEBHOOK_CONCURRENCY at a time. Each is leased
 * first (attempt counted), so two runs never send it at once. A deleted endpoint's deliveries are
 * dropped, a disabled one's fail; an endpoint failing everything for FAILING_DISABLE_MS is disabled.
 * The sends are not awaited by the caller's run: `sending` settles once their outcomes and the
 * endpoints' health are recorded, so a receiver that hangs (5 s a send) holds up no other work of
 * the clock (reminders firing, channel messages keeping their pace).
 */
export async function deliverWebhooks(
  storage: DurableObjectStorage,
  env: Env,
  db: Db,
  companyId: number,
  transport: WebhookTransport,
): Promise<{ more: boolean; sending: Promise<void> }> {
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
    for (const d of leased)
      sql.exec(
        "UPDATE webhook_deliveries SET attempts = attempts + 1, next_at = ? WHERE " + "delivery_id = ?",
        now + LEASE_MS,
        d.delivery_id,
      );
  });
  if (leased.length === 0) return { more: false, sending: Promise.resolve() };

  let endpoints: Map<number, Endpoint>;
  try {
    const { results } = await endpointsStatement(db.d1, companyId).all();
    endpoints = new Map((await toEndpoints(results, env.WEBHOOK_SECRETS_KEY)).map((e) => [e.id, e]));
  } catch (error) {
    // Not an attempt: given back, tried again later.
    console.error(
      JSON.stringify({
        level: "error",
        msg: "webhook delivery deferred: D1 unavailable",
        companyId,
        error: String(error),
      }),
    );
    storage.transactionSync(() => {
      for (const d of leased)
        sql.exec(
          "UPDATE webhook_deliveries SET attempts = attempts - 1, next_at = ? WHERE " + "delivery_id = ?",
          now + D1_RETRY_MS,
          d.delivery_id,
        );
    });
    return { more: false, sending: Promise.resolve() };
  }
  const sending = sendLeased(storage, env, db, companyId, transport, leased, endpoints).catch((error) =>
    console.error(JSON.stringify({ level: "error", msg: "webhook sends", companyId, error: String(error) })),
  );
  if (leased.length >= WEBHOOK_BATCH) return { more: true, sending };
  // The leased ones wait for their answers (their next_at is the lease's end).
  const ready = sql
    .exec<{ n: number }>(
      "SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'pending' AND " + "next_at <= ?",
      Date.now(),
    )
    .one().n;
  return { more: ready > 0, sending };
}

/** Sends the leased deliveries, then records their outcomes and the endpoints' health. */
async function sendLeased(
  storage: DurableObjectStorage,
  env: Env,
  db: Db,
  companyId: number,
  transport: WebhookTransport,
  leased: Leased[],
  endpoints: Map<number, Endpoint>,
): Promise<void> {
  const sql = storage.sql;

  const outcomes = new Map<number, AttemptOutcome | "dropped" | "disabled" | { refused: string }>();
  const allowPrivate = allowsPrivateUrls(env);
  const send = async (d: Leased) => {
    const endpoint = endpoints.get(d.endpoint_id);
    if (!endpoint) return void outcomes.set(d.delivery_id, "dropped");
    if (!endpoint.enabled && d.type !== "webhook.test") return void outcomes.set(d.delivery_id, "disabled");
    // The URL rules again at send time: a URL saved while they allowed it (a loopback URL with
    // WEBHOOKS_ALLOW_PRIVATE_URLS on, since turned off) is not called.
    const target = checkWebhookUrl(endpoint.url, allowPrivate);
    if (!target.ok) return void outcomes.set(d.delivery_id, { refused: target.msg });
    outcomes.set(
      d.delivery_id,
      await attemptDelivery(transport, endpoint, d.message_id, payloadBody(d.type, d.event_created_at, d.data)),
    );
  };
  // A pool, not chunks: a receiver that hangs holds one slot for its 5 s, not a whole chunk.
  await eachInPool(leased, WEBHOOK_CONCURRENCY, send);

  const done = Date.now();
  const health: EndpointHealth = { succeeded: [], failed: [], disable: [], refused: [] };
  storage.transactionSync(() => {
    for (const d of leased) {
      const outcome = outcomes.get(d.delivery_id)!;
      const attempt = d.attempts + 1;
      if (outcome === "dropped") {
        sql.exec("DELETE FROM webhook_deliveries WHERE delivery_id = ?", d.delivery_id);
      } else if (outcome === "disabled") {
        sql.exec(
          "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts - 1, " +
            "last_error = 'the endpoint is disabled', next_at = NULL WHERE delivery_id = ?",
          d.delivery_id,
        );
      } else if ("refused" in outcome) {
        // Not an attempt (nothing was sent), and no retry: the endpoint is disabled below.
        sql.exec(
          "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts - 1, last_status = NULL, " +
            "last_error = ?, next_at = NULL WHERE delivery_id = ?",
          `not sent: ${refusedReason(outcome.refused)}`.slice(0, 300),
          d.delivery_id,
        );
        health.refused.push({ id: d.endpoint_id, reason: refusedReason(outcome.refused) });
      } else if (outcome.ok) {
        sql.exec(
          "UPDATE webhook_deliveries SET state = 'delivered', last_status = ?, last_error " +
            "= NULL, delivered_at = ?, next_at = NULL WHERE delivery_id = ?",
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
        if (endpoint.failingSince !== null && endpoint.failingSince <= done - FAILING_DISABLE_MS)
          health.disable.push(d.endpoint_id);
      }
    }
    // A success clears an endpoint's failing mark even if another of its deliveries failed in the same run.
    health.failed = health.failed.filter((id) => !health.succeeded.includes(id));
    health.disable = health.disable.filter((id) => !health.succeeded.includes(id));
    for (const id of new Set([...health.disable, ...health.refused.map((r) => r.id)])) {
      sql.exec(
        "UPDATE webhook_deliveries SET state = 'failed', last_error = " +
          "coalesce(last_error, 'the endpoint is disabled'), next_at = NULL WHERE " +
          "endpoint_id = ? AND state = 'pending'",
        id,
      );
    }
  });
  try {
    await recordHealth(db, companyId, health, done);
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "webhook endpoint health not recorded", companyId, error: String(error) }),
    );
  }
  // Retries may be due before the alarm the run left.
  await armAlarm(storage);
}

/** disabled_reason of an endpoint whose URL the rules refuse at send time, and its deliveries' last_error after "not sent: ". */
const refusedReason = (rule: string) => `url not allowed on this deployment: ${rule}`;

/** Old finished deliveries go, and events no delivery refers to any more (bounded per run). */
export function pruneWebhooks(storage: DurableObjectStorage, now = Date.now()): void {
  storage.transactionSync(() => {
    storage.sql.exec(
      "DELETE FROM webhook_deliveries WHERE delivery_id IN (SELECT delivery_id FROM " +
        "webhook_deliveries WHERE created_at < ? AND state <> 'pending' LIMIT 500)",
      now - DELIVERY_KEEP_MS,
    );
    storage.sql.exec(
      `DELETE FROM events WHERE event_id IN (SELECT e.event_id FROM events e WHERE e.state = 'fanned' AND e.created_at < ?
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.event_id) LIMIT 500)`,
      now - DELIVERY_KEEP_MS,
    );
  });
}

export function listDeliveries(
  sql: SqlStorage,
  endpointId: number,
  limit: number,
  offset: number,
): { rows: WebhookDeliveryView[]; total: number } {
  const total = sql
    .exec<{ n: number }>("SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?", endpointId)
    .one().n;
  const rows = sql
    .exec<DeliveryRow>(
      "SELECT * FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY delivery_id " + "DESC LIMIT ? OFFSET ?",
      endpointId,
      limit,
      offset,
    )
    .toArray()
    .map(deliveryView);
  return { rows, total };
}

function deliveryOf(sql: SqlStorage, endpointId: number, deliveryId: number): DeliveryRow | undefined {
  return sql
    .exec<DeliveryRow>(
      "SELECT * FROM webhook_deliveries WHERE delivery_id = ? AND endpoint_id = ?",
      deliveryId,
      endpointId,
    )
    .toArray()[0];
}

/** A failed or pending delivery is attempted again at once (same message id); 400 for a delivered one. */
export async function retryDelivery(
  clock: ClockContext,
  endpointId: number,
  deliveryId: number,
  requestKey?: string,
  actor?: AuditActor,
): Promise<WebhookDeliveryView | Failure> {
  const { sql } = clock;
  const earlier = appliedResult<WebhookDeliveryView>(sql, requestKey);
  if (earlier) return earlier;
  const current = deliveryOf(sql, endpointId, deliveryId);
  if (!current) return { error: { status: 404, msg: "Delivery not found" } };
  if (current.state === "delivered")
    return { error: { status: 400, msg: `Delivery ${deliveryId} was already delivered` } };
  const now = Date.now();
  let view: WebhookDeliveryView | undefined;
  clock.storage.transactionSync(() => {
    // A failed delivery gets one more attempt (failed again if it fails: it has had its 8); a pending one is attempted now.
    sql.exec("UPDATE webhook_deliveries SET state = 'pending', next_at = ? WHERE delivery_id = ?", now, deliveryId);
    view = deliveryView(deliveryOf(sql, endpointId, deliveryId)!);
    recordAudit(
      sql,
      actor,
      {
        resourceType: "webhook",
        resourceId: endpointId,
        action: "retried",
        before: { delivery_state: current.state },
        after: { delivery_id: deliveryId, delivery_state: "pending" },
      },
      now,
    );
    recordApplied(sql, requestKey, view, now);
  });
  await settle(clock);
  return view!;
}
