import { and, asc, count, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { MAX_ATTEMPTS, lostRace } from "../../db/guarded";
import { listPage } from "../../db/pages";
import { calendarFeeds, companies, contacts, departments, folders } from "../../db/schema";
import { sha256Hex, toBase64Url } from "../../lib/bytes";
import { badRequest, notFound } from "../../lib/errors";
import { refExists } from "../items/queries";
import {
  MAX_FEEDS,
  type CalendarFeedOutput,
  type CreateFeedInput,
  type FeedFilters,
} from "../../schemas/calendar-feeds";

/** The filters as stored: defaults filled in, ids only when given (key order fixed, so equal filters are equal JSON). */
export function normalizeFilters(input: CreateFeedInput): FeedFilters {
  return {
    ...(input.folder_id !== undefined && { folder_id: input.folder_id }),
    ...(input.deptid !== undefined && { deptid: input.deptid }),
    ...(input.contact_id !== undefined && { contact_id: input.contact_id }),
    item_type: input.item_type ?? "all",
    status: input.status ?? "any",
    include_archived: input.include_archived ?? false,
  };
}

export const parseFilters = (json: string): FeedFilters => normalizeFilters(JSON.parse(json) as CreateFeedInput);

const feedColumns = { id: calendarFeeds.id, filters: calendarFeeds.filters, createdAt: calendarFeeds.createdAt };

/** `created_at` (ms) as a record timestamp, UTC `YYYY-MM-DD HH:MM:SS`. */
const timestamp = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ");

export function feedOutput(row: { id: number; filters: string; createdAt: number }): CalendarFeedOutput {
  return { feed_id: row.id, filters: parseFilters(row.filters), created_at: timestamp(row.createdAt) };
}

/** The filter's references, each `EXISTS` in the company (a folder_id of 0 references nothing). */
function references(companyId: number, filters: FeedFilters): Array<[field: string, id: number, exists: SQL]> {
  const refs: Array<[string, number, SQL]> = [];
  if (filters.folder_id) refs.push(["folder_id", filters.folder_id, refExists(folders, companyId, filters.folder_id)]);
  if (filters.deptid) refs.push(["deptid", filters.deptid, refExists(departments, companyId, filters.deptid)]);
  if (filters.contact_id)
    refs.push(["contact_id", filters.contact_id, refExists(contacts, companyId, filters.contact_id)]);
  return refs;
}

/**
 * A new feed with a new token: 32 random bytes, base64url (43 characters), returned in clear only
 * here and stored as its SHA-256. One INSERT … SELECT checks, when it runs, that the company has
 * fewer than MAX_FEEDS feeds and that every id of the filters is in the company; when it inserts
 * nothing, a read names the reason (400), or, the state having changed in between, it tries again.
 */
export async function createFeed(
  db: Db,
  companyId: number,
  clientId: string,
  filters: FeedFilters,
): Promise<{ row: CalendarFeedOutput; token: string }> {
  // The company's id (base 36) first: the feed has no bearer token, and the company says which shard holds it.
  const token = `c${companyId.toString(36)}_${toBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`;
  const tokenHash = await sha256Hex(token);
  const refs = references(companyId, filters);
  const underCap = sql`(SELECT count(*) FROM ${calendarFeeds} AS q WHERE q.company_id = ${companyId}) < ${MAX_FEEDS}`;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const [[row]] = await db.commit([
      db
        .insert(calendarFeeds)
        .select(
          (qb) =>
            qb
              .select({
                id: sql`NULL`,
                companyId: sql`${companyId}`,
                clientId: sql`${clientId}`,
                tokenHash: sql`${tokenHash}`,
                filters: sql`${JSON.stringify(filters)}`,
                createdAt: sql`${Date.now()}`,
              })
              .from(companies)
              .where(and(eq(companies.id, companyId), underCap, ...refs.map(([, , exists]) => exists))) as never,
        )
        .returning(feedColumns),
    ]);
    if (row) return { row: feedOutput(row), token };
    const state = await db.get<Record<string, number>>(
      sql`SELECT (SELECT count(*) FROM ${calendarFeeds} WHERE company_id = ${companyId}) AS feeds${sql.join(
        refs.map(([field, , exists]) => sql`, ${exists} AS ${sql.identifier(field)}`),
      )}`,
    );
    const missing = refs.find(([field]) => !state?.[field]);
    if (missing) throw badRequest(`${missing[0]} ${missing[1]} does not exist`);
    if ((state?.feeds ?? 0) >= MAX_FEEDS)
      throw badRequest(`Calendar feed limit reached: a company may have at most ${MAX_FEEDS} calendar feeds`);
    // A feed was deleted meanwhile: try again.
  }
  throw lostRace("calendar feed");
}

export async function listFeeds(db: Db, companyId: number, window: { limit: number; offset: number }) {
  const where = eq(calendarFeeds.companyId, companyId);
  const result = await listPage(
    db,
    window,
    db
      .select(feedColumns)
      .from(calendarFeeds)
      .where(where)
      .orderBy(asc(calendarFeeds.id))
      .limit(window.limit)
      .offset(window.offset),
    db.select({ n: count() }).from(calendarFeeds).where(where),
  );
  return { rows: result.rows.map(feedOutput), meta: result.meta };
}

/** Revokes a feed: its row goes, so its URL is 404 from the next request on (each one reads the row). */
export async function deleteFeed(db: Db, companyId: number, feedId: number): Promise<void> {
  const [deleted] = await db.commit([
    db
      .delete(calendarFeeds)
      .where(and(eq(calendarFeeds.id, feedId), eq(calendarFeeds.companyId, companyId)))
      .returning({ id: calendarFeeds.id }),
  ]);
  if (deleted.length === 0) throw notFound("Calendar feed");
}
