// GET /v1/calendar/{token}.ics: a feed's items as an iCalendar object (docs/api-notes.md, "Calendar
// feeds"). Raw D1 SQL: one item filter shared by every statement, and a recursive CTE for the
// folders on the items' paths.
//
// The ETag is not a hash of the body: it is computed from what the body is made of, so that a 304
// reads no item content. It hashes the feed (id, filters), the company's name, the company's record
// revision (company_revisions.records, moved by triggers on every insert, update and delete of its
// items, folders and document types: one point read), how many of its changes the reminder engine
// has still to apply, and the revision of its queued reminders (bumped by triggers in its Durable
// Object on every change to them). Those determine the body, so the ETag changes whenever the body
// would (and also when a record outside the feed changes: a refetch, never a stale calendar). A 200
// reads the fingerprint in the same D1 batch as the rows it renders, and the revision in the same
// Durable Object turn as the alarms.
import { shardOfCompany } from "../../db/directory";
import { isShard } from "../../db/shards";
import type { Env } from "../../env";
import { sha256Hex } from "../../lib/bytes";
import { etagOf, noneMatch, type EntityTags } from "../../lib/conditional";
import { escapeText, icalDate, icalText, icalTimestamp, icalUtc, itemUid } from "../../lib/ical";
import { addDays } from "../../lib/time";
import { MAX_FEED_EVENTS } from "../../company-clock/api";
import { clockFor } from "../../company-clock/handoff/worker";
import { SYNC_BATCH } from "../../company-clock/handoff/snapshots";
import { parseFilters } from "./queries";
import type { FeedFilters } from "../../schemas/calendar-feeds";

/** Changes whenever the rendering does, so that a new deployment's bodies get new ETags. */
const FEED_FORMAT = "ics-1";
// `c<company id, base 36>_<43 base64url>` (the company says which shard to read), or the 43
// characters alone: a feed made before shards existed, on shard 0.
const TOKEN = /^(?:c([0-9a-z]{1,8})_)?[A-Za-z0-9_-]{43}$/;

/** The shard to read a token's feed from; null for a malformed token. */
export async function feedShard(env: Env, token: string): Promise<number | null> {
  const match = TOKEN.exec(token);
  if (!match) return null;
  if (match[1] === undefined) return 0;
  const shard = await shardOfCompany(env, parseInt(match[1], 36));
  return isShard(env, shard) ? shard : null;
}

/** What a token's feed is: immutable while the feed exists (feeds are not edited, tokens are random). */
interface Feed {
  id: number;
  companyId: number;
  /** As stored (part of the ETag). */
  filtersJson: string;
  filters: FeedFilters;
}

/**
 * Feeds by token hash, per isolate, so that a request needs a single D1 round trip. It holds only
 * what never changes: every request still reads the feed's row in its own batch (`stillThere`), so
 * a revoked feed is 404 from the next request on.
 */
const feeds = new Map<string, Feed>();
const MAX_CACHED_FEEDS = 10_000;

async function feedOf(d1: D1Database, tokenHash: string): Promise<Feed | null> {
  const cached = feeds.get(tokenHash);
  if (cached) return cached;
  const row = await d1
    .prepare("SELECT id, company_id AS companyId, filters AS filtersJson FROM calendar_feeds WHERE token_hash = ?")
    .bind(tokenHash)
    .first<Omit<Feed, "filters">>();
  if (!row) return null;
  if (feeds.size >= MAX_CACHED_FEEDS) feeds.delete(feeds.keys().next().value!);
  const feed = { ...row, filters: parseFilters(row.filtersJson) };
  feeds.set(tokenHash, feed);
  return feed;
}

/** The feed's row, still there, and its company's name (the calendar's name). */
const stillThere = (d1: D1Database, tokenHash: string) =>
  d1
    .prepare("SELECT c.name FROM calendar_feeds f JOIN companies c ON c.id = f.company_id " + "WHERE f.token_hash = ?")
    .bind(tokenHash);

/**
 * The feed's items: `WHERE` over `items i` with numbered parameters (?1 the company, ?2 the bound),
 * ordered by expiry date and id, at most MAX_FEED_EVENTS. Each filter has an index led by its column
 * or by (company_id, archived, …) that ends in (expiry_date, id), as for GET /v1/items.
 */
function itemFilter(feed: Feed): { where: string; params: unknown[] } {
  const f = feed.filters;
  const conditions = ["i.company_id = ?1"];
  const params: unknown[] = [feed.companyId, MAX_FEED_EVENTS];
  const add = (condition: string, value?: unknown) => {
    if (value !== undefined) params.push(value);
    conditions.push(condition.replace("?", `?${params.length}`));
  };
  if (!f.include_archived) add("i.archived = 0");
  if (f.status !== "any") add("i.status = ?", f.status);
  if (f.item_type !== "all") add("i.item_type = ?", f.item_type);
  if (f.deptid !== undefined) add("i.dept_id = ?", f.deptid);
  if (f.contact_id !== undefined) add("i.contact_id = ?", f.contact_id);
  if (f.folder_id === 0) add("i.folder_id IS NULL");
  else if (f.folder_id !== undefined) add("i.folder_id = ?", f.folder_id);
  return { where: conditions.join(" AND "), params };
}

const ORDER = "ORDER BY i.expiry_date, i.id LIMIT ?2";
/** The folders on the paths of the items in `fi`: theirs and every ancestor. */
const FOLDER_PATHS = `path(id) AS (SELECT folder_id FROM fi WHERE folder_id IS NOT NULL
  UNION SELECT f.parent_id FROM folders f JOIN path p ON f.id = p.id WHERE f.company_id = ?1 AND f.parent_id <> 0)`;

interface Fingerprint {
  records: number | null;
  pending: number;
}

/**
 * Two point reads: the company's record revision, and how many of its changes its reminder engine
 * has still to apply (up to SYNC_BATCH + 1): while that number moves, the ETag does too, so each
 * fetch applies the next batch of them.
 */
function fingerprintStatement(d1: D1Database, feed: Feed): D1PreparedStatement {
  return d1
    .prepare(
      `SELECT (SELECT records FROM company_revisions WHERE company_id = ?1) AS records,
         (SELECT count(*) FROM (SELECT 1 FROM reminder_sync WHERE company_id = ?1 AND version > synced_version LIMIT ${SYNC_BATCH + 1})) AS pending`,
    )
    .bind(feed.companyId);
}

const etagFor = (feed: Feed, companyName: string, fingerprint: Fingerprint | undefined, revision: number) =>
  etagOf(JSON.stringify([FEED_FORMAT, feed.id, feed.filtersJson, companyName, fingerprint ?? null, revision]));

export interface FeedItem {
  id: number;
  title: string;
  notes: string;
  item_type: string;
  expiry_date: string;
  status: string;
  archived: number;
  folder_id: number | null;
  document_type: string | null;
  created_at: string;
  updated_at: string;
}
export interface FeedFolder {
  id: number;
  parent_id: number;
  name: string;
}

export type FeedAnswer = { status: 304; etag: string } | { status: 200; etag: string; body: string };

/**
 * The answer for a token: null when no feed has it (malformed, unknown or revoked). With
 * If-None-Match: one D1 statement (beside the feed's row) and, side by side, the Durable Object's
 * revision give the current ETag, and a match is 304. Otherwise one D1 batch (one transaction)
 * reads the fingerprint, the items, the folders on their paths and the feed's items whose changes
 * the reminder engine has still to apply; the Durable Object applies those (at most SYNC_BATCH) and
 * answers the items' queued reminders with the revision, in one turn.
 */
export async function serveFeed(
  env: Env,
  d1: D1Database,
  token: string,
  ifNoneMatch: EntityTags | undefined,
): Promise<FeedAnswer | null> {
  const tokenHash = await sha256Hex(token);
  const feed = await feedOf(d1, tokenHash);
  if (!feed) return null;
  const clock = clockFor(env, feed.companyId);
  const gone = () => {
    feeds.delete(tokenHash);
    return null;
  };
  if (ifNoneMatch !== undefined) {
    const [[row, fingerprint], revision] = await Promise.all([
      d1.batch<unknown>([stillThere(d1, tokenHash), fingerprintStatement(d1, feed)]),
      clock.queuedRevision(feed.companyId),
    ]);
    const company = row!.results[0] as { name: string } | undefined;
    if (!company) return gone();
    const etag = await etagFor(feed, company.name, fingerprint!.results[0] as Fingerprint | undefined, revision);
    if (noneMatch(ifNoneMatch, etag)) return { status: 304, etag };
  }
  const { where, params } = itemFilter(feed);
  const [row, fingerprint, items, folders, pending] = await d1.batch<unknown>([
    stillThere(d1, tokenHash),
    fingerprintStatement(d1, feed),
    d1
      .prepare(
        `SELECT i.id, i.title, i.notes, i.item_type, i.expiry_date, i.status, i.archived, i.folder_id, d.name AS document_type, i.created_at, i.updated_at
       FROM items i LEFT JOIN document_types d ON d.id = i.document_type_id WHERE ${where} ${ORDER}`,
      )
      .bind(...params),
    d1
      .prepare(
        `WITH RECURSIVE fi AS MATERIALIZED (SELECT i.folder_id FROM items i WHERE ${where} ${ORDER}), ${FOLDER_PATHS}
       SELECT id, parent_id, name FROM folders WHERE id IN (SELECT id FROM path)`,
      )
      .bind(...params),
    // 0 stands for the company's settings (a time zone change moves the reminders).
    d1
      .prepare(
        `SELECT item_id FROM reminder_sync WHERE company_id = ?1 AND version > synced_version
         AND (item_id = 0 OR item_id IN (SELECT i.id FROM items i WHERE ${where} ${ORDER})) LIMIT ${SYNC_BATCH}`,
      )
      .bind(...params),
  ]);
  const company = row!.results[0] as { name: string } | undefined;
  if (!company) return gone();
  const rows = items!.results as FeedItem[];
  const syncFirst = (pending!.results as Array<{ item_id: number }>).map((r) => r.item_id);
  const { revision, alarms } = await clock.feedAlarms(
    feed.companyId,
    rows.map((r) => r.id),
    syncFirst,
  );
  return {
    status: 200,
    etag: await etagFor(feed, company.name, fingerprint!.results[0] as Fingerprint | undefined, revision),
    body: renderFeed(
      { companyId: feed.companyId, companyName: company.name },
      rows,
      folders!.results as FeedFolder[],
      alarms,
    ),
  };
}

const TYPE_LABELS: Record<string, string> = { exp: "Expiration", due: "Due date", apt: "Appointment", evt: "Event" };

/**
 * DESCRIPTION of an item's event: `Type: …`, then `Folder: a/b` and `Document type: …` when it has
 * them, `Status: completed` and `Archived: yes` when so, then a blank line and the notes (if any).
 */
export function eventDescription(item: FeedItem, folderPath: string): string {
  const lines = [`Type: ${TYPE_LABELS[item.item_type] ?? item.item_type}`];
  if (folderPath) lines.push(`Folder: ${folderPath}`);
  if (item.document_type) lines.push(`Document type: ${item.document_type}`);
  if (item.status === "completed") lines.push("Status: completed");
  if (item.archived === 1) lines.push("Archived: yes");
  if (item.notes) lines.push("", item.notes);
  return lines.join("\n");
}

/** The iCalendar object (pure: the same rows give the same bytes). */
export function renderFeed(
  feed: { companyId: number; companyName: string },
  items: FeedItem[],
  folders: FeedFolder[],
  alarms: Record<number, number[]>,
): string {
  const byId = new Map(folders.map((f) => [f.id, f]));
  const pathOf = (folderId: number | null) => {
    const names: string[] = [];
    // Folders cannot form a loop (a move into its own subtree is refused); the bound is a guard.
    for (let f = byId.get(folderId ?? 0); f && names.length < 100; f = byId.get(f.parent_id)) names.unshift(f.name);
    return names.join("/");
  };
  const lines = [
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//Expiry Reminder API//Calendar feed//EN",
    "CALSCALE:GREGORIAN",
    "METHOD:PUBLISH",
    `X-WR-CALNAME:${escapeText(feed.companyName)}`,
    "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
    "X-PUBLISHED-TTL:PT1H",
  ];
  for (const item of items) {
    const modified = icalTimestamp(item.updated_at);
    lines.push(
      "BEGIN:VEVENT",
      `UID:${itemUid(item.id, feed.companyId)}`,
      `DTSTAMP:${modified}`,
      `DTSTART;VALUE=DATE:${icalDate(item.expiry_date)}`,
      // All day: to the next day (none after 9999-12-31, whose event then lasts its one day, RFC 5545 §3.6.1).
      ...(item.expiry_date < "9999-12-31" ? [`DTEND;VALUE=DATE:${icalDate(addDays(item.expiry_date, 1))}`] : []),
      `SUMMARY:${escapeText(item.title)}`,
      `DESCRIPTION:${escapeText(eventDescription(item, pathOf(item.folder_id)))}`,
      // A completed item's date calls for nothing more: clients strike such events through or hide them.
      `STATUS:${item.status === "completed" ? "CANCELLED" : "CONFIRMED"}`,
      "TRANSP:TRANSPARENT",
      `CREATED:${icalTimestamp(item.created_at)}`,
      `LAST-MODIFIED:${modified}`,
    );
    for (const dueAt of alarms[item.id] ?? []) {
      lines.push(
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        `DESCRIPTION:${escapeText(item.title)}`,
        `TRIGGER;VALUE=DATE-TIME:${icalUtc(dueAt)}`,
        "END:VALARM",
      );
    }
    lines.push("END:VEVENT");
  }
  lines.push("END:VCALENDAR");
  return icalText(lines);
}
