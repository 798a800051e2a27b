// The D1 side of webhook delivery, as the company clock (src/company-clock/)
// sees it: the events D1 triggers wrote to `webhook_events` (taken, then deleted), the company's
// endpoints with their signing secrets decrypted, the item entries events carry, and the endpoint
// health marks (failing_since, disabled after FAILING_DISABLE_MS). Each function is one round trip.

import type { Db } from "../db/client";
import { decryptSecret } from "./secrets";

/** An endpoint failing every delivery for this long is disabled at its next failure. */
export const FAILING_DISABLE_MS = 5 * 24 * 3_600_000;
export const DISABLED_REASON = "failing for 5 days";

/**
 * The item list entry (GET /v1/items) as SQL: `i` the items row, `d` its document type. The D1
 * webhook event triggers (scripts/triggers/hand-written.ts) build the same object from `new.` / `old.`.
 */
export const ITEM_ENTRY_SQL = `json_object('item_id', i.id, 'title', i.title, 'item_type', i.item_type,
  'document_type', coalesce(d.name, ''), 'document_type_id', coalesce(i.document_type_id, 0), 'deptid', i.dept_id,
  'expiry_date', i.expiry_date, 'status', i.status, 'folder_id', coalesce(i.folder_id, 0),
  'active', json(CASE WHEN i.archived = 0 THEN 'true' ELSE 'false' END))`;

export interface Endpoint {
  id: number;
  url: string;
  /** Subscribed types, or ["*"]. */
  events: string[];
  enabled: boolean;
  /** The current secret, then the previous one while it still signs (24 h after a rotation). */
  secrets: string[];
  failingSince: number | null;
}

interface EndpointRow {
  id: number;
  url: string;
  events: string;
  enabled: number;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  previous_secret_expires_at: number | null;
  failing_since: number | null;
}

export const subscribes = (endpoint: Endpoint, type: string) =>
  endpoint.events.includes("*") || endpoint.events.includes(type);

const plain = new Map<string, Promise<string>>();
function decrypt(ciphertext: string, key: string | undefined): Promise<string> {
  let secret = plain.get(ciphertext);
  if (!secret) {
    secret = decryptSecret(ciphertext, key);
    secret.catch(() => plain.delete(ciphertext));
    if (plain.size > 500) plain.clear();
    plain.set(ciphertext, secret);
  }
  return secret;
}

function parseEvents(json: string): string[] {
  try {
    const value = JSON.parse(json) as unknown;
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

const ENDPOINT_COLUMNS =
  "id, url, events, enabled, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, failing_since";

export function endpointsStatement(db: D1Database, companyId: number): D1PreparedStatement {
  return db
    .prepare(`SELECT ${ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE company_id = ? ORDER BY id`)
    .bind(companyId);
}

/** Rows of endpointsStatement as endpoints, secrets decrypted (an unreadable secret leaves the endpoint without secrets). */
export async function toEndpoints(rows: unknown[], key: string | undefined, now = Date.now()): Promise<Endpoint[]> {
  return Promise.all(
    (rows as EndpointRow[]).map(async (r) => {
      const secrets: string[] = [];
      try {
        secrets.push(await decrypt(r.secret_ciphertext, key));
        if (r.previous_secret_ciphertext && (r.previous_secret_expires_at ?? 0) > now)
          secrets.push(await decrypt(r.previous_secret_ciphertext, key));
      } catch (error) {
        console.error(
          JSON.stringify({
            level: "error",
            msg: "webhook secret could not be decrypted",
            endpointId: r.id,
            error: String(error),
          }),
        );
      }
      return {
        id: r.id,
        url: r.url,
        events: parseEvents(r.events),
        enabled: r.enabled === 1,
        secrets,
        failingSince: r.failing_since,
      };
    }),
  );
}

/** The company's endpoints (enabled or not), with decrypted secrets. */
export async function readEndpoints(db: D1Database, companyId: number, key: string | undefined): Promise<Endpoint[]> {
  const { results } = await endpointsStatement(db, companyId).all();
  return toEndpoints(results, key);
}

/** The item entries of `itemIds` (absent: deleted), as JSON text by item id. */
export function itemEntriesStatement(db: D1Database, companyId: number, itemIds: number[]): D1PreparedStatement {
  return db
    .prepare(
      // CROSS JOIN keeps json_each outer: with a plain JOIN and no ANALYZE statistics, SQLite walked
      // every item of the company through items_company_sequence_idx (7.8 ms at 12,000 items, 0.04 ms this way).
      `SELECT i.id AS item_id, ${ITEM_ENTRY_SQL} AS entry FROM json_each(?2) AS j
       CROSS JOIN items i ON i.id = j.value AND i.company_id = ?1 LEFT JOIN document_types d ON d.id = i.document_type_id`,
    )
    .bind(companyId, JSON.stringify(itemIds));
}

/** The events D1 triggers recorded for the company, oldest first (the object takes them, then `deleteTaken`). */
export async function pullEvents(
  db: D1Database,
  companyId: number,
  limit = 200,
): Promise<Array<{ id: number; type: string; data: string; created_at: number }>> {
  const { results } = await db
    .prepare("SELECT id, type, data, created_at FROM webhook_events WHERE company_id = ? ORDER BY id LIMIT ?")
    .bind(companyId, limit)
    .all<{ id: number; type: string; data: string; created_at: number }>();
  return results;
}

/** Deletes the D1 events the object has stored (after its transaction committed: at-least-once, a repeat is ignored by source_id). */
export async function deleteTaken(db: Db, companyId: number, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  await db.commit([
    db.d1
      .prepare("DELETE FROM webhook_events WHERE company_id = ? AND id IN (SELECT value FROM " + "json_each(?))")
      .bind(companyId, JSON.stringify(ids)),
  ]);
}

export interface EndpointHealth {
  /** Endpoints that succeeded (failing_since cleared). */
  succeeded: number[];
  /** Endpoints that failed (failing_since set if unset). */
  failed: number[];
  /** Endpoints to disable (failing for FAILING_DISABLE_MS). */
  disable: number[];
  /** Endpoints whose URL the rules refused at send time: disabled with that reason. */
  refused: Array<{ id: number; reason: string }>;
}

/** Records what a delivery run learned about the company's endpoints (one batch; nothing when nothing changed). */
export async function recordHealth(handle: Db, companyId: number, health: EndpointHealth, now: number): Promise<void> {
  const db = handle.d1;
  const statements: D1PreparedStatement[] = [];
  const ids = (list: number[]) => JSON.stringify([...new Set(list)]);
  if (health.succeeded.length > 0) {
    statements.push(
      db
        .prepare(
          "UPDATE webhook_endpoints SET failing_since = NULL WHERE company_id = ? AND " +
            "failing_since IS NOT NULL AND id IN (SELECT value FROM json_each(?))",
        )
        .bind(companyId, ids(health.succeeded)),
    );
  }
  if (health.failed.length > 0) {
    statements.push(
      db
        .prepare(
          "UPDATE webhook_endpoints SET failing_since = ? WHERE company_id = ? AND " +
            "failing_since IS NULL AND id IN (SELECT value FROM json_each(?))",
        )
        .bind(now, companyId, ids(health.failed)),
    );
  }
  // An endpoint whose URL the rules refuse at send time is disabled whatever its failures.
  for (const [id, reason] of new Map(health.refused.map((r) => [r.id, r.reason]))) {
    statements.push(
      db
        .prepare(
          `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = CURRENT_TIMESTAMP
           WHERE company_id = ? AND id = ? AND enabled = 1`,
        )
        .bind(reason.slice(0, 300), companyId, id),
    );
  }
  if (health.disable.length > 0) {
    statements.push(
      db
        .prepare(
          `UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = CURRENT_TIMESTAMP
           WHERE company_id = ? AND enabled = 1 AND failing_since <= ? AND id IN (SELECT value FROM json_each(?))`,
        )
        .bind(DISABLED_REASON, companyId, now - FAILING_DISABLE_MS, ids(health.disable)),
    );
  }
  await handle.commit(statements);
}

/** Whether the company has an enabled endpoint subscribed to `type` (reminders with channels ["webhook"] need one for reminder.sent). */
export async function hasSubscriber(db: D1Database, companyId: number, type: string): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT 1 AS ok FROM webhook_endpoints e WHERE e.company_id = ? AND e.enabled = 1
       AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', ?)) LIMIT 1`,
    )
    .bind(companyId, type)
    .first<{ ok: number }>();
  return row !== null;
}

/** Whether `endpointId` is an endpoint of the company (the deliveries routes answer 404 otherwise). */
export async function endpointOfCompany(
  db: D1Database,
  companyId: number,
  endpointId: number,
): Promise<{ enabled: boolean } | null> {
  const row = await db
    .prepare("SELECT enabled FROM webhook_endpoints WHERE id = ? AND company_id = ?")
    .bind(endpointId, companyId)
    .first<{ enabled: number }>();
  return row ? { enabled: row.enabled === 1 } : null;
}
