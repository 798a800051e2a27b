// The company's problem deliveries (GET /v1/deliveries, docs/bounces.md): read from the company
// clock, which keeps them (an indexed keyset range), completed with the items' titles and the
// contacts' names from D1 in one query for the page.
import type { Db } from "../db/client";
import type { Env } from "../env";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { clockFor } from "../company-clock/handoff/worker";
import type { ListDeliveriesInput, ProblemDelivery } from "../schemas/deliveries";

const instantMs = (value: string) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);

export async function listProblemDeliveries(
  db: Db,
  env: Env,
  companyId: number,
  query: ListDeliveriesInput,
): Promise<{ rows: ProblemDelivery[]; meta: { limit: number; next_cursor: string | null } }> {
  let after: { at: number; reminderId: number; contactId: number } | undefined;
  if (query.cursor !== undefined) {
    const match = decodeCursor(query.cursor, /^(\d{1,15})~(\d{1,16})~(\d{1,16})$/);
    after = { at: Number(match[1]), reminderId: Number(match[2]), contactId: Number(match[3]) };
  }
  const rows = await clockFor(env, companyId).problemDeliveries(companyId, {
    state: query.state,
    since: query.since !== undefined ? instantMs(query.since) : undefined,
    after,
    limit: query.limit + 1,
  });
  const more = rows.length > query.limit;
  const pageRows = rows.slice(0, query.limit);
  const names = new Map<string, string | null>();
  if (pageRows.length > 0) {
    const found = await db.d1
      .prepare(
        `SELECT 'i' || i.id AS k, i.title AS name FROM items i
           WHERE i.company_id = ?1 AND i.id IN (SELECT value FROM json_each(?2))
         UNION ALL
         SELECT 'c' || c.id, trim(c.first_name || ' ' || c.last_name) FROM contacts c
           WHERE c.company_id = ?1 AND c.id IN (SELECT value FROM json_each(?3))`,
      )
      .bind(
        companyId,
        JSON.stringify([...new Set(pageRows.map((r) => r.item_id))]),
        JSON.stringify([...new Set(pageRows.flatMap((r) => (r.endpoint_id === null ? [r.contact_id] : [])))]),
      )
      .all<{ k: string; name: string | null }>();
    for (const row of found.results) names.set(row.k, row.name);
  }
  const last = pageRows[pageRows.length - 1];
  return {
    rows: pageRows.map((r) => ({
      reminder_id: r.reminder_id,
      channel: r.channel as ProblemDelivery["channel"],
      state: r.state as ProblemDelivery["state"],
      item: { item_id: r.item_id, title: names.get(`i${r.item_id}`) ?? null },
      contact:
        r.endpoint_id === null
          ? { contact_id: r.contact_id, name: names.get(`c${r.contact_id}`) ?? null, address: r.recipient }
          : null,
      channel_endpoint: r.endpoint_id === null ? null : { channel_id: r.endpoint_id, name: r.recipient },
      reason: r.reason,
      bounce:
        r.bounce_kind && r.bounce_status
          ? { kind: r.bounce_kind as "hard" | "soft" | "complaint", status: r.bounce_status }
          : null,
      attempts: r.attempts,
      at: new Date(r.changed_at).toISOString(),
    })),
    meta: {
      limit: query.limit,
      next_cursor: more && last ? encodeCursor(last.changed_at, last.reminder_id, last.contact_id) : null,
    },
  };
}
