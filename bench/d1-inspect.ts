// The local D1 databases as files (bench/measure-d1.ts, docs/scale.md "Measured inputs"): which
// SQLite file under `--persist-to` is which shard, how big it is (page_count × page_size, and per
// table from dbstat), a consistent copy of it, and the time SQLite takes to run a statement on it.
//
// Why statements are replayed here: under `wrangler dev` every D1 result's `meta.duration` (and so
// the d1_ms of the request log, D1_STATS=on) is 0. Local D1 is a Durable Object in workerd that
// times the SQLite call with performance.now(), and workerd only advances its clocks on I/O (a
// Spectre mitigation), so a synchronous SQLite call always takes "0 ms". The statements a request
// runs are captured by a tracing entry point (`writeTraceWorker`: the service itself, its D1
// bindings wrapped to print each statement and its bound values), then each is run again here,
// against a copy of the database taken before the run, with Node's SQLite and a real clock.
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT, shardBindingNames, writeWorkerVariant } from "../scripts/lib/local.ts";
import { DatabaseSync, type Database } from "../scripts/lib/node-sqlite.ts";
import { originShardOfCompany } from "../src/db/id-blocks.ts";

const D1_DIR = ["v3", "d1", "miniflare-D1DatabaseObject"];

/** The SQLite file of every shard under `persistTo`, by shard number (from the company ids each holds). */
export function shardFiles(persistTo: string): Map<number, string> {
  const dir = join(persistTo, ...D1_DIR);
  const files = new Map<number, string>();
  if (!existsSync(dir)) return files;
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
    const path = join(dir, name);
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const row = db.prepare("SELECT min(id) AS id FROM companies").get() as { id: number | null } | undefined;
      if (row?.id != null) files.set(originShardOfCompany(row.id), path);
    } catch {
      // not a migrated database of ours
    } finally {
      db.close();
    }
  }
  return files;
}

export function shardFile(persistTo: string, shard: number): string {
  const file = shardFiles(persistTo).get(shard);
  if (!file) throw new Error(`no local D1 file holds shard ${shard} under ${persistTo}`);
  return file;
}

export interface DbSize {
  /** page_count × page_size: what D1 reports as the database's size. */
  bytes: number;
  pageSize: number;
  pageCount: number;
  freePages: number;
  /** Bytes per table or index (dbstat), largest first. */
  objects: Record<string, number>;
}

/** The database's size as SQLite sees it (the WAL included: the file itself stays small until a checkpoint). */
export function dbSize(file: string): DbSize {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const pragma = (name: string) => Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0] ?? 0);
    const pageSize = pragma("page_size");
    const pageCount = pragma("page_count");
    const freePages = pragma("freelist_count");
    const rows = db
      .prepare("SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC")
      .all() as Array<{ name: string; bytes: number }>;
    return {
      bytes: pageSize * pageCount,
      pageSize,
      pageCount,
      freePages,
      objects: Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)])),
    };
  } finally {
    db.close();
  }
}

/** The company clocks' SQLite files (Durable Objects) under `persistTo`: size, and the rows of their items and reminders tables. */
export function durableObjectFiles(
  persistTo: string,
): Array<{ file: string; bytes: number; items: number; reminders: number }> {
  const base = join(persistTo, "v3", "do");
  if (!existsSync(base)) return [];
  const found: Array<{ file: string; bytes: number; items: number; reminders: number }> = [];
  for (const dir of readdirSync(base).filter((d) => d.endsWith("-CompanyClock"))) {
    for (const name of readdirSync(join(base, dir))) {
      if (!name.endsWith(".sqlite") || name === "metadata.sqlite") continue;
      const file = join(base, dir, name);
      const db = new DatabaseSync(file, { readOnly: true });
      try {
        const count = (table: string) => {
          try {
            return Number((db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
          } catch {
            return 0;
          }
        };
        found.push({ file, bytes: dbSize(file).bytes, items: count("items"), reminders: count("reminders") });
      } finally {
        db.close();
      }
    }
  }
  return found.sort((a, b) => b.bytes - a.bytes);
}

/** Runs a read on the database file (read-only). */
export function readRows<T>(file: string, sql: string, ...params: Array<string | number | null>): T[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

/** Copies a shard's database (file and WAL) while nothing writes to it (the dev server stopped). */
export function snapshotFile(file: string, dir: string, name: string): string {
  mkdirSync(dir, { recursive: true });
  const target = join(dir, `${name}.sqlite`);
  copyFileSync(file, target);
  if (existsSync(`${file}-wal`) && statSync(`${file}-wal`).size > 0) copyFileSync(`${file}-wal`, `${target}-wal`);
  return target;
}

// ---------------------------------------------------------------------------------------------
// Tracing entry point

/** One statement the service ran: `tag` is `worker:<X-Request-Id>`, `do` (the company clock, a Durable Object), `do-alarm#<n>` (its alarm run n) or `cron`. */
export interface TracedStatement {
  tag: string;
  /** The D1 binding (DB, DB_1, …). */
  db: string;
  sql: string;
  args: unknown[];
  /** How it ran: all, run, first, raw, or `batch#<n>` (statements of one D1 batch: one round trip, one transaction). */
  via: string;
}

const TRACE_ENTRY = (
  srcIndex: string,
) => `// Generated by bench/d1-inspect.ts: the service with its D1 bindings wrapped so that every
// statement is printed (console.info, one JSON line) with its bound values. Measurement only.
import worker, { CompanyClock as Clock, ImportWorkflow } from ${JSON.stringify(srcIndex)};
export { ImportWorkflow };

const plain = (v) => (typeof v === "boolean" ? (v ? 1 : 0) : v instanceof ArrayBuffer || ArrayBuffer.isView(v) ? { blob: v.byteLength } : v);
function emit(tag, db, via, sql, args) {
  console.info(JSON.stringify({ msg: "d1-trace", tag: typeof tag === "function" ? tag() : tag, db, via, sql, args: args.map(plain) }));
}
function statement(tag, db, sql, inner, args) {
  const run = (via, call) => { emit(tag, db, via, sql, args); return call(); };
  return {
    __trace: { sql, args, inner },
    bind: (...values) => statement(tag, db, sql, inner.bind(...values), values),
    all: () => run("all", () => inner.all()),
    run: () => run("run", () => inner.run()),
    first: (column) => run("first", () => (column === undefined ? inner.first() : inner.first(column))),
    raw: (options) => run("raw", () => (options === undefined ? inner.raw() : inner.raw(options))),
  };
}
let batches = 0;
function batch(tag, db, target, statements) {
  const via = "batch#" + ++batches;
  for (const s of statements) if (s.__trace) emit(tag, db, via, s.__trace.sql, s.__trace.args);
  return target.batch(statements.map((s) => (s.__trace ? s.__trace.inner : s)));
}
function session(tag, db, real) {
  return {
    prepare: (sql) => statement(tag, db, sql, real.prepare(sql), []),
    batch: (statements) => batch(tag, db, real, statements),
    getBookmark: () => real.getBookmark(),
  };
}
function database(tag, db, real) {
  return {
    prepare: (sql) => statement(tag, db, sql, real.prepare(sql), []),
    batch: (statements) => batch(tag, db, real, statements),
    withSession: (constraint) => session(tag, db, real.withSession(constraint)),
    exec: (sql) => real.exec(sql),
    dump: () => real.dump(),
  };
}
function traced(env, tag) {
  const out = Object.assign({}, env);
  for (const name of String(env.D1_SHARDS ?? "DB").split(/[\\s,]+/).filter(Boolean)) {
    if (env[name]) out[name] = database(tag, name, env[name]);
  }
  return out;
}

// The object's statements are tagged "do", those of an alarm run "do-alarm#<n>".
let alarms = 0;
export class CompanyClock extends Clock {
  constructor(ctx, env) {
    const holder = { tag: "do" };
    super(ctx, traced(env, () => holder.tag));
    this.traceHolder = holder;
  }
  async alarm(...args) {
    this.traceHolder.tag = "do-alarm#" + ++alarms;
    try {
      return await super.alarm(...args);
    } finally {
      this.traceHolder.tag = "do";
    }
  }
}

export default {
  fetch: (request, env, ctx) => worker.fetch(request, traced(env, "worker:" + (request.headers.get("X-Request-Id") ?? "")), ctx),
  scheduled: (controller, env, ctx) => worker.scheduled(controller, traced(env, "cron"), ctx),
};
`;

/** A wrangler config in `dir` that runs the service through the tracing entry point (writeWorkerVariant). Returns the config's path. */
export function writeTraceWorker(dir: string): string {
  return writeWorkerVariant(dir, "trace-entry.js", TRACE_ENTRY(join(ROOT, "src", "index.ts")));
}

/** A `d1-trace` line of the tracing entry point's output, else undefined. */
export function parseTraceLine(line: string): TracedStatement | undefined {
  if (!line.startsWith("{") || !line.includes('"msg":"d1-trace"')) return undefined;
  try {
    const parsed = JSON.parse(line) as TracedStatement & { msg: string };
    return { tag: parsed.tag, db: parsed.db, sql: parsed.sql, args: parsed.args, via: parsed.via };
  } catch {
    return undefined;
  }
}

/** The shard a binding name stands for (its place in D1_SHARDS). */
export function shardOfBinding(binding: string): number {
  return shardBindingNames().indexOf(binding);
}

// ---------------------------------------------------------------------------------------------
// Replay

const WRITE = /^\s*(insert|update|delete|replace)\b/i;
const WRITE_IN_CTE = /\b(insert\s+into|update\s+\S+\s+set|delete\s+from)\b/i;
export const isWrite = (sql: string) => WRITE.test(sql) || (/^\s*with\b/i.test(sql) && WRITE_IN_CTE.test(sql));

export interface ReplayResult {
  /** Median time (ms) to prepare and run the statement to its last row. */
  ms: number;
  rows: number;
  error?: string;
}

/**
 * Times each statement on the database `file` (a snapshot: writes run inside a transaction that is
 * rolled back, so every run sees the same state): the median of `iterations` runs of prepare +
 * execute to the last row, with process.hrtime. What D1 reports as meta.duration is the same work,
 * inside SQLite, on Cloudflare's machines.
 */
export function replayStatements(
  file: string,
  statements: Array<{ sql: string; args: unknown[] }>,
  iterations = 15,
): ReplayResult[] {
  const db: Database = new DatabaseSync(file);
  try {
    db.exec("PRAGMA foreign_keys = ON");
    return statements.map(({ sql, args }) => {
      const params = args.map((a) => (a !== null && typeof a === "object" ? null : a)) as Array<string | number | null>;
      const write = isWrite(sql);
      const times: number[] = [];
      let rows = 0;
      try {
        for (let i = 0; i < iterations; i++) {
          if (write) db.exec("BEGIN");
          try {
            const t = process.hrtime.bigint();
            const stmt = db.prepare(sql);
            const result = stmt.all(...params);
            times.push(Number(process.hrtime.bigint() - t) / 1e6);
            rows = result.length;
          } finally {
            if (write) db.exec("ROLLBACK");
          }
        }
      } catch (error) {
        return { ms: times.length ? medianOf(times) : 0, rows, error: String(error) };
      }
      return { ms: medianOf(times), rows };
    });
  } finally {
    db.close();
  }
}

function medianOf(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
