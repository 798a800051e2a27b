// Webhook events inside the company clock (docs/webhooks.md): events enter the `events` table (born
// in the object's own transactions, or taken from D1's webhook_events outbox) and are fanned out to
// the endpoints subscribed, one `webhook_deliveries` row each with its message id. Delivering them
// is webhook-deliveries.ts.

import type { Env } from "../env";
import { newMessageId } from "../webhooks/delivery";
import {
  deleteTaken,
  endpointsStatement,
  itemEntriesStatement,
  pullEvents,
  subscribes,
  toEndpoints,
  type Endpoint,
} from "../webhooks/outbox";
import type { Failure } from "./api";
import { settle, type ClockContext } from "./context";
import type { PulledEvent } from "./handoff/snapshots";
import { appliedResult, recordApplied } from "./store";
import type { AuditActor } from "../db/commit";
import { recordAudit } from "./audit-outbox";

/** Events fanned out per run. */
const FAN_OUT_BATCH = 500;
/** While D1 cannot be read, fan-out and delivery are tried again after this. */
export const D1_RETRY_MS = 30_000;

/** Records an event born in the object (call inside the transaction that caused it). */
export function recordEvent(
  sql: SqlStorage,
  event: { type: string; data: string | null; itemId?: number | null; endpointId?: number | null; now: number },
): number {
  return sql
    .exec<{ event_id: number }>(
      "INSERT INTO events (type, data, item_id, endpoint_id, state, next_at, " +
        "created_at) VALUES (?, ?, ?, ?, 'new', ?, ?) RETURNING event_id",
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
        "INSERT OR IGNORE INTO events (type, data, source_id, state, next_at, " +
          "created_at) VALUES (?, ?, ?, 'new', ?, ?)",
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
export async function fanOut(
  storage: DurableObjectStorage,
  env: Env,
  d1: D1Database,
  companyId: number,
  now = Date.now(),
): Promise<boolean> {
  const sql = storage.sql;
  const fresh = sql
    .exec<NewEvent>(
      "SELECT event_id, type, data, item_id, endpoint_id FROM events WHERE state = " +
        "'new' AND next_at <= ? ORDER BY event_id LIMIT ?",
      now,
      FAN_OUT_BATCH,
    )
    .toArray();
  if (fresh.length === 0) return true;
  let endpoints: Endpoint[];
  const entries = new Map<number, string>();
  try {
    const itemIds = [
      ...new Set(fresh.filter((e) => e.item_id !== null && e.endpoint_id === null).map((e) => e.item_id!)),
    ];
    const [endpointRows, entryRows] = await d1.batch([
      endpointsStatement(d1, companyId),
      itemEntriesStatement(d1, companyId, itemIds),
    ]);
    endpoints = await toEndpoints(endpointRows!.results, env.WEBHOOK_SECRETS_KEY, now);
    for (const r of entryRows!.results as Array<{ item_id: number; entry: string }>) entries.set(r.item_id, r.entry);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "webhook fan-out deferred: D1 unavailable",
        companyId,
        error: String(error),
      }),
    );
    storage.transactionSync(() => {
      sql.exec("UPDATE events SET next_at = ? WHERE state = 'new' AND next_at <= ?", now + D1_RETRY_MS, now);
    });
    return false;
  }
  storage.transactionSync(() => {
    for (const e of fresh) {
      // Another fan-out (a concurrent call while this one read D1) may have taken it meanwhile.
      const still = sql
        .exec<{ n: number }>("SELECT count(*) AS n FROM events WHERE event_id = ? AND state = 'new'", e.event_id)
        .one().n;
      if (still === 0) continue;
      const targets =
        e.endpoint_id !== null
          ? endpoints.filter((p) => p.id === e.endpoint_id)
          : endpoints.filter((p) => p.enabled && subscribes(p, e.type));
      if (targets.length === 0) {
        sql.exec("DELETE FROM events WHERE event_id = ?", e.event_id);
        continue;
      }
      let data = e.data;
      if (e.item_id !== null && e.endpoint_id === null) {
        const entry = entries.get(e.item_id) ?? null;
        // reminder.sent: {reminder, item}; reminder.bounced: its data with the item; item.expired: the item entry (an item deleted meanwhile: its id).
        data =
          e.type === "reminder.sent"
            ? `{"reminder":${data ?? "null"},"item":${entry ?? "null"}}`
            : e.type === "reminder.bounced"
              ? `{"item":${entry ?? "null"},${(data ?? "{}").slice(1)}`
              : (entry ?? JSON.stringify({ item_id: e.item_id }));
      }
      sql.exec(
        "UPDATE events SET state = 'fanned', data = ?, next_at = NULL WHERE event_id = ?",
        data ?? "{}",
        e.event_id,
      );
      for (const target of targets) {
        sql.exec(
          "INSERT INTO webhook_deliveries (event_id, endpoint_id, message_id, type, state, " +
            "attempts, next_at, created_at) VALUES (?, ?, ?, ?, 'pending', 0, ?, ?)",
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

/**
 * Takes the events D1 recorded for the company (`pulled`, or read now), stores them, deletes them
 * from D1, and fans out every new event. Never throws for D1 trouble: what was not taken stays
 * in D1, what was not fanned out is tried again by the alarm.
 */
export async function pump(clock: ClockContext, pulled?: PulledEvent[]): Promise<void> {
  const { companyId } = clock;
  const now = Date.now();
  let events = pulled;
  if (events === undefined) {
    try {
      events = await pullEvents((await clock.db()).d1, companyId);
    } catch (error) {
      console.error(
        JSON.stringify({ level: "error", msg: "webhook events not pulled from D1", companyId, error: String(error) }),
      );
      events = [];
    }
  }
  storePulled(clock.storage, events, now);
  if (events.length > 0) {
    try {
      await deleteTaken(
        await clock.db(),
        companyId,
        events.map((e) => e.id),
      );
    } catch (error) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "taken webhook events not deleted from D1 (a repeat is ignored)",
          companyId,
          error: String(error),
        }),
      );
    }
  }
  await fanOut(clock.storage, clock.env, (await clock.db()).d1, companyId, now);
}

/** A webhook.test event to one endpoint (subscribed or not), delivered by the alarm at once. */
export async function testWebhook(
  clock: ClockContext,
  endpointId: number,
  requestKey?: string,
  actor?: AuditActor,
): Promise<{ delivery_id: number; message_id: string } | Failure> {
  const { sql } = clock;
  const now = Date.now();
  let eventId = 0;
  clock.storage.transactionSync(() => {
    // A repeat of a keyed request answers for the event it recorded, and records no other.
    eventId = appliedResult<{ eventId: number }>(sql, requestKey)?.eventId ?? 0;
    if (eventId) return;
    const data = JSON.stringify({
      webhook_id: endpointId,
      message: "A test event sent by POST /v1/webhooks/{webhook_id}/test",
    });
    eventId = recordEvent(sql, { type: "webhook.test", data, endpointId, now });
    recordAudit(
      sql,
      actor,
      {
        resourceType: "webhook",
        resourceId: endpointId,
        action: "tested",
        before: null,
        after: { event_type: "webhook.test" },
      },
      now,
    );
    recordApplied(sql, requestKey, { eventId }, now);
  });
  await fanOut(clock.storage, clock.env, (await clock.db()).d1, clock.companyId, now);
  const row = sql
    .exec<{ delivery_id: number; message_id: string }>(
      "SELECT delivery_id, message_id FROM webhook_deliveries WHERE event_id = ? AND " + "endpoint_id = ?",
      eventId,
      endpointId,
    )
    .toArray()[0];
  await settle(clock);
  if (!row) {
    const waiting = sql.exec<{ n: number }>("SELECT count(*) AS n FROM events WHERE event_id = ?", eventId).one().n;
    // Still new: D1 could not be read; the alarm fans it out, but there is no delivery to name yet.
    if (waiting > 0) throw new Error("webhook endpoints could not be read; the test event is queued");
    return { error: { status: 404, msg: "Webhook endpoint not found" } };
  }
  return row;
}
