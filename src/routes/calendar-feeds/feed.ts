// GET /v1/calendar/{token}.ics: a feed's items as an iCalendar object (docs/api-notes.md, "Calendar
// feeds"). Raw D1 SQL: one item filter shared by every statement, and a recursive CTE for the
// folders on the items' paths.
//
// The ETag is not a hash of the body: it is computed from what the body is made of, so that a 304
// reads no item content. It hashes the feed (id, filters), the company's name, the (id, version) of
// every item in the feed, of their document types and of the folders on their paths (every UPDATE
// of those rows bumps `version`; ids are never reused), and the revision of the company's queued
// reminders (bumped by triggers in its Durable Object on every change to them). Those determine the
// body, so the ETag changes whenever the body would. A 200 reads the fingerprint in the same D1
// batch as the rows it renders, and the revision in the same Durable Object turn as the alarms.
import type { Env } from "../../env";
import { sha256Hex } from "../../lib/bytes";
import { etagOf } from "../../lib/conditional";
import { escapeText, icalDate, icalText, icalTimestamp, icalUtc } from "../../lib/ical";
import { addDays } from "../../lib/time";
import { SYNC_BATCH } from "../../reminders/d1";
import { MAX_FEED_EVENTS, schedulerFor } from "../../reminders/rpc";
import { parseFilters } from "./queries";
import type { FeedFilters } from "./schemas";

/** Changes whenever the rendering does, so that a new deployment's bodies get new ETags. */
const FEED_FORMAT = "ics-1";
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export interface Feed {
  id: number;
  companyId: number;
  companyName: string;
  /** As stored (part of the ETag). */
  filtersJson: string;
  filters: FeedFilters;
}

/** The feed of a token (null for a malformed, unknown or revoked one): one indexed read, never cached. */
export async function findFeed(d1: D1Database, token: string): Promise<Feed | null> {
  if (!TOKEN.test(token)) return null;
  const row = await d1
    .prepare(
      `SELECT f.id, f.company_id AS companyId, c.name AS companyName, f.filters AS filtersJson
       FROM calendar_feeds f JOIN companies c ON c.id = f.company_id WHERE f.token_hash = ?`,
    )
    .bind(await sha256Hex(token))
    .first<Omit<Feed, "filters">>();
  return row && { ...row, filters: parseFilters(row.filtersJson) };
}

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
  items: string | null;
  types: string | null;
  folders: string | null;
}

/** `id.version` lists of the feed's items, their document types and the folders on their paths. */
function fingerprintStatement(d1: D1Database, feed: Feed): D1PreparedStatement {
  const { where, params } = itemFilter(feed);
  return d1
    .prepare(
      `WITH RECURSIVE fi AS MATERIALIZED (SELECT i.id, i.version, i.document_type_id, i.folder_id FROM items i WHERE ${where} ${ORDER}),
       ${FOLDER_PATHS}
       SELECT (SELECT group_concat(id || '.' || version) FROM fi) AS items,
         (SELECT group_concat(id || '.' || version) FROM document_types WHERE id IN (SELECT document_type_id FROM fi)) AS types,
         (SELECT group_concat(id || '.' || version) FROM folders WHERE id IN (SELECT id FROM path)) AS folders`,
    )
    .bind(...params);
}

const etagFor = (feed: Feed, fingerprint: Fingerprint | null, revision: number) =>
  etagOf(JSON.stringify([FEED_FORMAT, feed.id, feed.filtersJson, feed.companyName, fingerprint, revision]));

/** The feed's current ETag, for If-None-Match: one D1 statement and one Durable Object read, side by side. */
export async function currentEtag(env: Env, feed: Feed): Promise<string> {
  const [fingerprint, revision] = await Promise.all([
    fingerprintStatement(env.DB, feed).first<Fingerprint>(),
    schedulerFor(env, feed.companyId).queuedRevision(feed.companyId),
  ]);
  return etagFor(feed, fingerprint, revision);
}

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

/**
 * The feed's body and its ETag. One D1 batch (one transaction) reads the fingerprint, the items,
 * the folders on their paths and the company's changes not yet applied to its reminders; then the
 * Durable Object applies those of the feed's items (at most SYNC_BATCH) and answers their queued
 * reminders with the revision.
 */
export async function readFeed(env: Env, feed: Feed): Promise<{ etag: string; body: string }> {
  const { where, params } = itemFilter(feed);
  const [fingerprint, items, folders, pending] = await env.DB.batch<unknown>([
    fingerprintStatement(env.DB, feed),
    env.DB.prepare(
      `SELECT i.id, i.title, i.notes, i.item_type, i.expiry_date, i.status, i.archived, i.folder_id, d.name AS document_type, i.created_at, i.updated_at
       FROM items i LEFT JOIN document_types d ON d.id = i.document_type_id WHERE ${where} ${ORDER}`,
    ).bind(...params),
    env.DB.prepare(
      `WITH RECURSIVE fi AS MATERIALIZED (SELECT i.folder_id FROM items i WHERE ${where} ${ORDER}), ${FOLDER_PATHS}
       SELECT id, parent_id, name FROM folders WHERE id IN (SELECT id FROM path)`,
    ).bind(...params),
    env.DB.prepare(`SELECT item_id FROM reminder_sync WHERE company_id = ?1 AND version > synced_version LIMIT ${SYNC_BATCH}`).bind(feed.companyId),
  ]);
  const rows = items!.results as FeedItem[];
  const ids = new Set(rows.map((r) => r.id));
  // 0 stands for the company's settings (a time zone change moves the reminders).
  const syncFirst = (pending!.results as Array<{ item_id: number }>).map((r) => r.item_id).filter((id) => id === 0 || ids.has(id));
  const { revision, alarms } = await schedulerFor(env, feed.companyId).feedAlarms(feed.companyId, [...ids], syncFirst);
  return {
    etag: await etagFor(feed, (fingerprint!.results[0] as Fingerprint | undefined) ?? null, revision),
    body: renderFeed(feed, rows, folders!.results as FeedFolder[], alarms),
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
export function renderFeed(feed: Pick<Feed, "companyId" | "companyName">, items: FeedItem[], folders: FeedFolder[], alarms: Record<number, number[]>): string {
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
      `UID:item-${item.id}-${feed.companyId}@expiry-reminder`,
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
      lines.push("BEGIN:VALARM", "ACTION:DISPLAY", `DESCRIPTION:${escapeText(item.title)}`, `TRIGGER;VALUE=DATE-TIME:${icalUtc(dueAt)}`, "END:VALARM");
    }
    lines.push("END:VEVENT");
  }
  lines.push("END:VCALENDAR");
  return icalText(lines);
}
