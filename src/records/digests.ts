// The company's digests (GET /v1/digests, docs/reminders.md "Digests"): read from the company clock,
// which keeps them (an indexed keyset range), with the contacts' names from D1 in one query for the page.
import type { Db } from "../db/client";
import type { Env } from "../env";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { clockFor } from "../company-clock/handoff/worker";
import type { DigestCursor } from "../company-clock/api";
import type { Digest, ListDigestsInput } from "../schemas/digests";

export async function listDigests(
  db: Db,
  env: Env,
  companyId: number,
  query: ListDigestsInput,
): Promise<{ rows: Digest[]; meta: { limit: number; next_cursor: string | null } }> {
  let after: DigestCursor | undefined;
  if (query.cursor !== undefined) {
    const match = decodeCursor(query.cursor, /^(\d{4}-\d{2}-\d{2})~(\d{1,16})~((?:daily|weekly):[0-9W-]{8,10})$/);
    after = [match[1]!, Number(match[2]), match[3]!];
  }
  const { rows, next } = await clockFor(env, companyId).digests(companyId, {
    contactId: query.contact_id,
    since: query.since,
    state: query.state,
    after,
    limit: query.limit,
  });
  const names = new Map<number, string>();
  if (rows.length > 0) {
    const found = await db.d1
      .prepare(
        "SELECT id, trim(first_name || ' ' || last_name) AS name FROM contacts WHERE company_id = ?1 AND id IN (SELECT value FROM json_each(?2))",
      )
      .bind(companyId, JSON.stringify([...new Set(rows.map((r) => r.contact_id))]))
      .all<{ id: number; name: string }>();
    for (const row of found.results) names.set(Number(row.id), row.name);
  }
  return {
    rows: rows.map((r) => ({
      contact: { contact_id: r.contact_id, name: names.get(r.contact_id) ?? null },
      kind: r.period.startsWith("weekly:") ? "weekly" : "daily",
      period: r.period.slice(r.period.indexOf(":") + 1),
      date: r.date,
      state: r.state,
      items: r.items,
      recipient: r.recipient,
      message_id: r.message_id,
      reason: r.last_error,
      attempts: r.attempts,
      created_at: new Date(r.created_at).toISOString(),
      at: new Date(r.changed_at).toISOString(),
    })),
    meta: { limit: query.limit, next_cursor: next ? encodeCursor(...next) : null },
  };
}
