// The D1 handoff, writing side: what the company clock tells D1 after a change. The outbox rows it
// applied (reminder_sync.synced_version), the items' reminder views (item_reminder_views) and the
// company's next wakeup (reminder_wakeups, for the cron sweep), in one batch; calls made while one
// batch is in flight share the next (Bookkeeping). All of it is bookkeeping: if D1 cannot take it,
// the outbox rows stay pending (a replay is a no-op) and the reminders themselves are safe.

import type { Db } from "../../db/client";
import { getMeta, setMeta } from "../store";
import { deleteViewsStatement, writeViewsStatement, type ViewRow } from "./views";

export interface Applied {
  itemId: number;
  version: number;
  gone: boolean;
}

/**
 * Records what the object applied (a later change keeps its row pending: synced_version only
 * grows, and only to the version that was read), the items' reminder views (in the same batch, so
 * a view and the synced_version it matches commit together) and, when it changed, the company's
 * next wakeup.
 */
export async function recordSync(
  handle: Db,
  companyId: number,
  applied: Applied[],
  wakeup: number | null | undefined,
  views: ViewRow[] = [],
): Promise<void> {
  const db = handle.d1;
  const statements: D1PreparedStatement[] = [];
  if (views.length > 0) statements.push(writeViewsStatement(db, companyId, views));
  if (applied.length > 0) {
    const marks = JSON.stringify(applied.map((a) => [a.itemId, a.version]));
    statements.push(
      db
        .prepare(
          // The marks are materialised first: otherwise SQLite walks the company's whole outbox
          // with a JSON scan inside (seconds at 20,000 items); this way each mark is a key lookup.
          `WITH m AS MATERIALIZED (SELECT value ->> 0 AS item_id, value ->> 1 AS version FROM json_each(?2))
           UPDATE reminder_sync SET synced_version = max(synced_version, m.version)
           FROM m WHERE reminder_sync.company_id = ?1 AND reminder_sync.item_id = m.item_id`,
        )
        .bind(companyId, marks),
    );
    const gone = applied.filter((a) => a.gone).map((a) => a.itemId);
    if (gone.length > 0) {
      statements.push(
        db
          .prepare(
            "DELETE FROM reminder_sync WHERE company_id = ?1 AND item_id IN (SELECT value " +
              "FROM json_each(?2)) AND version <= synced_version",
          )
          .bind(companyId, JSON.stringify(gone)),
        deleteViewsStatement(db, companyId, gone),
      );
    }
  }
  if (wakeup !== undefined) statements.push(wakeupStatement(db, companyId, wakeup));
  await handle.commit(statements);
}

function wakeupStatement(db: D1Database, companyId: number, wakeup: number | null): D1PreparedStatement {
  return wakeup === null
    ? db.prepare("DELETE FROM reminder_wakeups WHERE company_id = ?").bind(companyId)
    : db
        .prepare(
          "INSERT INTO reminder_wakeups (company_id, due_at) VALUES (?, ?) ON CONFLICT " +
            "(company_id) DO UPDATE SET due_at = excluded.due_at",
        )
        .bind(companyId, wakeup);
}

/** Views one merged bookkeeping batch carries at most; the others are not mirrored (their reads ask the object). */
const VIEWS_PER_RECORD = 100;

interface PendingRecord {
  applied: Applied[];
  views: ViewRow[];
  wakeup: number | null | undefined;
  done: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function newRecord(): PendingRecord {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  done.catch(() => {}); // a caller that has not awaited yet must not make it unhandled
  return { applied: [], views: [], wakeup: undefined, done, resolve, reject };
}

/** One mark per item, the highest version (an UPDATE ... FROM with two rows for one item takes either). */
function mergeApplied(applied: Applied[]): Applied[] {
  const byItem = new Map<number, Applied>();
  for (const a of applied) {
    const known = byItem.get(a.itemId);
    if (!known || a.version > known.version) byItem.set(a.itemId, a);
  }
  return [...byItem.values()];
}

/** The object's bookkeeping writes to D1: one batch in flight at a time, later calls merged into the next. */
export class Bookkeeping {
  /** Bookkeeping waiting for the D1 write in flight (`recording`): calls made meanwhile share the next one. */
  private nextRecord: PendingRecord | null = null;
  private recording = false;

  constructor(
    private readonly storage: DurableObjectStorage,
    /** The company's shard, on its primary. */
    private readonly db: (companyId: number) => Promise<Db>,
  ) {}

  /**
   * Tells D1 what was applied, the items' views and, when it changed, the company's next wakeup
   * `wake` (null: none). Never throws: if D1 cannot take it now, the outbox rows stay pending (a
   * replay is a no-op) and the wakeup is written with the next change.
   */
  async note(companyId: number, wake: number | null, applied: Applied[] = [], views: ViewRow[] = []): Promise<void> {
    const written = getMeta(this.storage.sql, "wakeup");
    const changed = String(wake) !== written;
    if (applied.length === 0 && !changed && views.length === 0) return;
    try {
      await this.record(companyId, applied, changed ? wake : undefined, views);
    } catch (error) {
      console.error(
        JSON.stringify({ level: "error", msg: "reminder bookkeeping in D1 failed", companyId, error: String(error) }),
      );
    }
  }

  /**
   * One D1 batch at a time: what calls record while one is in flight goes, merged, into the next
   * (under a burst of item writes the object sends one bookkeeping batch per round trip, not per
   * call). Resolves once the caller's part is written.
   */
  private record(
    companyId: number,
    applied: Applied[],
    wakeup: number | null | undefined,
    views: ViewRow[],
  ): Promise<void> {
    const next = (this.nextRecord ??= newRecord());
    next.applied.push(...applied);
    next.views.push(...views.slice(0, Math.max(0, VIEWS_PER_RECORD - next.views.length)));
    // Computed later than what is already in it: the company's current next wakeup.
    if (wakeup !== undefined) next.wakeup = wakeup;
    if (!this.recording) void this.flush(companyId);
    return next.done;
  }

  private async flush(companyId: number): Promise<void> {
    this.recording = true;
    try {
      while (this.nextRecord) {
        const batch = this.nextRecord;
        this.nextRecord = null;
        try {
          await recordSync(await this.db(companyId), companyId, mergeApplied(batch.applied), batch.wakeup, batch.views);
          if (batch.wakeup !== undefined) setMeta(this.storage.sql, "wakeup", String(batch.wakeup));
          batch.resolve();
        } catch (error) {
          batch.reject(error);
        }
      }
    } finally {
      this.recording = false;
    }
  }
}

/** A deleted company: its wakeup, its outbox rows and its items' views go from D1. */
export async function forgetInD1(db: Db, companyId: number): Promise<void> {
  await db.commit([
    db.d1.prepare("DELETE FROM reminder_wakeups WHERE company_id = ?").bind(companyId),
    db.d1.prepare("DELETE FROM reminder_sync WHERE company_id = ?").bind(companyId),
    deleteViewsStatement(db.d1, companyId, "all"),
  ]);
}
