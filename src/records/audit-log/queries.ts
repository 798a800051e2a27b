import { and, asc, desc, eq, gte, inArray, lt, or, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { auditLog } from "../../db/schema";
import { isChannelVia } from "../../lib/actors";
import { decodeCursor, encodeCursor } from "../../lib/cursor";
import { badRequest } from "../../lib/errors";
import type { AuditEntry, ListAuditInput } from "../../schemas/audit-log";

type AuditRow = typeof auditLog.$inferSelect;

function auditCursorKey(cursor: string): { at: number; id: number } {
  const match = decodeCursor(cursor, /^(\d{1,15})~([1-9]\d{0,15})$/);
  return { at: Number(match[1]), id: Number(match[2]) };
}

/** `since` / `until`: a date is its UTC midnight. */
const instantMs = (value: string) => Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);

const parse = (json: string | null): Record<string, unknown> | null =>
  json === null ? null : (JSON.parse(json) as Record<string, unknown>);

export function auditEntry(row: AuditRow): AuditEntry {
  // contact_id holds the recipient who acted from a reminder's links: a channel endpoint when `via`
  // is a channel's type (src/db/commit.ts, AuditActor.channelId), else a contact.
  const byChannel = isChannelVia(row.via);
  return {
    audit_id: row.id,
    at: new Date(row.at).toISOString(),
    actor: {
      client_id: row.clientId,
      user_id: row.userId,
      company_id: row.actorCompanyId,
      contact_id: byChannel ? null : row.contactId,
      channel_id: byChannel ? row.contactId : null,
      via: row.via as AuditEntry["actor"]["via"],
    },
    company_id: row.companyId,
    request_id: row.requestId,
    operation_id: row.operationId,
    resource_type: row.resourceType as AuditEntry["resource_type"],
    resource_id: row.resourceId,
    action: row.action as AuditEntry["action"],
    before: parse(row.before),
    after: parse(row.after),
  };
}

/** A page of the account's log, newest first: one indexed range read (the filters pick the index). */
export async function listAuditLog(db: Db, accountId: number, query: ListAuditInput) {
  if (query.resource_id !== undefined && query.resource_type === undefined) {
    throw badRequest("resource_id needs resource_type (ids are per kind of resource)");
  }
  const conditions: Array<SQL | undefined> = [eq(auditLog.accountId, accountId)];
  if (query.resource_type !== undefined) conditions.push(eq(auditLog.resourceType, query.resource_type));
  if (query.resource_id !== undefined) conditions.push(eq(auditLog.resourceId, query.resource_id));
  if (query.client_id !== undefined) conditions.push(eq(auditLog.clientId, query.client_id));
  if (query.action !== undefined) conditions.push(eq(auditLog.action, query.action));
  if (query.company_id !== undefined) conditions.push(eq(auditLog.companyId, query.company_id));
  if (query.since !== undefined) conditions.push(gte(auditLog.at, instantMs(query.since)));
  if (query.until !== undefined) conditions.push(lt(auditLog.at, instantMs(query.until)));
  if (query.cursor !== undefined) {
    const last = auditCursorKey(query.cursor);
    conditions.push(or(lt(auditLog.at, last.at), and(eq(auditLog.at, last.at), lt(auditLog.id, last.id))));
  }
  const rows = await db
    .select()
    .from(auditLog)
    .where(and(...conditions))
    .orderBy(desc(auditLog.at), desc(auditLog.id))
    .limit(query.limit + 1);
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    rows: page.map(auditEntry),
    meta: { limit: query.limit, next_cursor: more && last ? encodeCursor(last.at, last.id) : null },
  };
}

/** Deletes entries older than `cutoffMs`, at most `max` per call (the cron job; docs/audit-log.md). */
export async function pruneAuditLog(db: Db, cutoffMs: number, max: number): Promise<number> {
  const oldest = db
    .select({ id: auditLog.id })
    .from(auditLog)
    .where(lt(auditLog.at, cutoffMs))
    .orderBy(asc(auditLog.at))
    .limit(max);
  const [result] = await db.commit([db.delete(auditLog).where(inArray(auditLog.id, oldest))]);
  return result.meta.changes ?? 0;
}
