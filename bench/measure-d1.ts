// `node bench/measure-d1.ts [--items 10000 --contacts 10000 --tasks 2000 --reps 30 --port 9110 --json FILE]`
// `node bench/measure-d1.ts --check-shards [--requests 400 --port 9120]`
//
// The measured inputs of docs/scale.md and of its capacity model (bench/capacity-model.ts), under
// `wrangler dev` on a throw-away local D1:
//   1. migrations and the demo seed on both shards; then, by SQL on shard 0, contacts, items (20
//      folders, 10 document types, the default reminder sequence) and tasks for company 1, a fifth
//      as many for company 2, interleaved. The database's size (page_count × page_size, and per table
//      from dbstat, read from its SQLite file under v3/d1/) is taken before and after each, giving the
//      bytes per 1,000 contacts, items and tasks;
//   2. pass A, the service as deployed (wrangler.toml) with --var D1_STATS:on --var RATE_LIMITS:off
//      and --test-scheduled: the cron sweep is run until the reminder engine has applied every
//      seeded item (then the size again, and the Durable Object's); then each hot route, one request
//      at a time (warm-up, then --reps requests), and the request log's D1 fields of each are
//      collected (d1_queries, d1_rows_read, d1_rows_written, d1_ms, d1_shard) with the time the
//      client saw; then the sweep, idle, three times;
//   3. the server is stopped and the shard files copied: the state pass B starts from;
//   4. pass B, the same service through a tracing entry point (bench/d1-inspect.ts: its D1
//      bindings wrapped to print every statement with its bound values; D1_STATS off): each route
//      again (--trace-reps requests), the sweep, and an alarm run that fires 5 reminders by email;
//      every statement is attributed to its request, to the Durable Object, to an alarm or to the cron;
//   5. every captured statement is replayed on the copy with Node's SQLite (writes rolled back) and
//      timed: the SQLite time a statement costs, which local D1 reports as 0 (its meta.duration is
//      measured with a clock workerd freezes during synchronous work);
//   6. bench/scale-measurements.json (or --json FILE): per route the medians of queries, rows read and
//      written, d1_ms, end-to-end ms, statements, round trips, directory and Durable Object
//      statements and replayed SQLite ms; storage per 1,000 rows; the sweep; the directory read; the alarm.
// About 2–3 minutes on a 2-core machine, most of it setup and the wait for the alarm. Quote counts and ratios, not absolute times.
//
// --check-shards: the 2-shard check of the capacity model. Seeds the shard-0 demo company (1) and the
// shard-1 demo company (500001) alike, then sends both accounts a mixed workload at the same time
// (the model's daily route mix scaled to --requests each, in random order, 2 at a time per account),
// sums the logged d1_queries by d1_shard, and compares them with the model's prediction from
// bench/scale-measurements.json (per route the measured median; plus the client-row reads the 15 s
// per-isolate cache lets through); counts the directory reads in the home database from wrangler's
// local traces (they are outside the request's session, so not in its log line) against the token
// requests; checks that no request of one account touched the other shard. Prints PASS or FAIL.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { searchWords } from "../src/lib/search.ts";
import {
  multiRowInserts,
  prepareBenchState,
  prng,
  sqlText,
  stopServer,
  tempServerScope,
  wranglerVersion,
  median,
} from "./kit.ts";
import {
  dbSize,
  durableObjectFiles,
  isWrite,
  parseTraceLine,
  readRows,
  replayStatements,
  shardFile,
  shardOfBinding,
  snapshotFile,
  writeTraceWorker,
  type TracedStatement,
} from "./d1-inspect.ts";
import {
  executeSql,
  numberOption as numberOptionOf,
  optionValue,
  rejectUnknownOptions,
  shardBindingNames,
  startDev,
} from "../scripts/lib/local.ts";
import { SHARD_ONE_DEMO } from "../scripts/seed-data.ts";
import {
  DAILY_REQUESTS,
  DEFAULT_MEASUREMENTS,
  FEED_CHANGED,
  loadMeasurements,
  loggedQueries,
  type Measurements,
  type RouteMeasurement,
} from "./capacity-model.ts";

// ---------------------------------------------------------------------------------------------
// Options

const argv = process.argv.slice(2);
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(`Usage: node bench/measure-d1.ts [options]          (measure; writes bench/scale-measurements.json)
       node bench/measure-d1.ts --check-shards [options] (the 2-shard check of bench/capacity-model.ts)
  --items N        items of company 1 (default 10000; company 2 gets a fifth)
  --contacts N     contacts of company 1 (default 10000)
  --tasks N        tasks of company 1 (default 2000)
  --reps N         measured requests per route in pass A (default 30)
  --trace-reps N   traced requests per route in pass B (default 5)
  --no-alarm       skip the alarm run (saves up to 80 s of waiting)
  --port P         wrangler dev port (default 9110; 9120 with --check-shards; the inspector takes P+1)
  --json FILE      where to write the measurements (default bench/scale-measurements.json)
  --requests N     --check-shards: requests per account (default 400)
  --measurements F --check-shards: the measurements the prediction uses (default bench/scale-measurements.json)`);
  process.exit(0);
}
const KNOWN = [
  "--items",
  "--contacts",
  "--tasks",
  "--reps",
  "--trace-reps",
  "--no-alarm",
  "--port",
  "--json",
  "--check-shards",
  "--requests",
  "--measurements",
];
rejectUnknownOptions(argv, KNOWN);
const numberOption = (name: string, fallback: number, min: number) =>
  numberOptionOf(argv, name, fallback, min, { integer: true });
const CHECK = argv.includes("--check-shards");
const ITEMS = numberOption("--items", CHECK ? 2_000 : 10_000, 100);
const CONTACTS = numberOption("--contacts", CHECK ? 1_000 : 10_000, 100);
const TASKS = numberOption("--tasks", CHECK ? 300 : 2_000, 100);
const REPS = numberOption("--reps", 30, 3);
const TRACE_REPS = numberOption("--trace-reps", 5, 1);
const PORT = numberOption("--port", CHECK ? 9120 : 9110, 1);
const CHECK_REQUESTS = numberOption("--requests", 400, 50);
const ALARM = !argv.includes("--no-alarm");
const JSON_OUT = resolve(optionValue(argv, "--json") ?? DEFAULT_MEASUREMENTS);
const BASE = `http://127.0.0.1:${PORT}`;

const started = Date.now();
const log = (message: string) => console.log(`[measure-d1 +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);

// ---------------------------------------------------------------------------------------------
// Seeding (SQL, like the benchmarks)

interface CompanyRef {
  companyId: number;
  accountId: number;
  userId: number;
  deptId: number;
}
const COMPANY_1: CompanyRef = { companyId: 1, accountId: 1, userId: 1, deptId: 1 };
const COMPANY_2: CompanyRef = { companyId: 2, accountId: 2, userId: 3, deptId: 2 };
const SHARD_ONE: CompanyRef = {
  companyId: SHARD_ONE_DEMO.companyId,
  accountId: SHARD_ONE_DEMO.accountId,
  userId: SHARD_ONE_DEMO.userId,
  deptId: SHARD_ONE_DEMO.departmentId,
};

const FIRST = [
  "James",
  "Mary",
  "John",
  "Patricia",
  "Robert",
  "Jennifer",
  "Maria",
  "Mark",
  "Martin",
  "Marta",
  "Anna",
  "Lukas",
  "Sofia",
  "Chloé",
  "Noah",
  "Zoë",
  "Hugo",
  "Léa",
  "Yusuf",
  "Priya",
];
const LAST = [
  "Smith",
  "Johnson",
  "Garcia",
  "Miller",
  "Davis",
  "Wilson",
  "Taylor",
  "Müller",
  "Schmidt",
  "Dubois",
  "Rossi",
  "Nakamura",
  "Kowalski",
  "O'Brien",
  "Fernández",
  "Patel",
  "Singh",
  "Nguyen",
  "Silva",
  "Berg",
];
const SUBJECTS = [
  "Inspection",
  "Inspector visit",
  "Insurance",
  "License",
  "Permit",
  "Certificate",
  "Contract",
  "Lease",
  "Warranty",
  "Registration",
  "Maintenance",
  "Calibration",
  "Audit",
  "Training",
  "Safety check",
];
const OBJECTS = [
  "fire extinguishers",
  "elevator",
  "company van",
  "forklift",
  "boiler",
  "office lease",
  "server room",
  "delivery truck",
  "HVAC system",
  "alarm system",
];
const PLACES = [
  "Building A",
  "Building B",
  "Warehouse 2",
  "Head office",
  "Plant Nord",
  "Depot Süd",
  "Branch Lyon",
  "Store 14",
];
const NOTES = [
  "",
  "",
  "Renew with the city office",
  "Contact the supplier 30 days ahead",
  "Copy kept in the safe",
  "Budget approved",
  "Call Müller GmbH for a quote",
];
const TASK_WORDS = ["renew", "inspect", "review", "call", "send", "sign", "update", "check"];
const TASK_STATUSES = ["open", "todo", "in_progress", "review", "completed", "canceled"];
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const ascii = (v: string) =>
  v
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^A-Za-z]/g, "")
    .toLowerCase();

/** Rows of `main` with every sixth row of `other` (a fifth as many), as in a shared production table. */
function interleave<T>(main: T[], other: T[]): T[] {
  const out: T[] = [];
  let j = 0;
  for (let i = 0; i < main.length; i++) {
    out.push(main[i]!);
    if (i % 5 === 4 && j < other.length) out.push(other[j++]!);
  }
  while (j < other.length) out.push(other[j++]!);
  return out;
}

function limitStatements(companies: CompanyRef[]): string[] {
  return companies.flatMap((c) => [
    `UPDATE accounts SET max_documents = 100000000, max_contacts = 100000000 WHERE id = ${c.accountId}`,
    `UPDATE companies SET documents_limit = 100000000, contacts_limit = 100000000 WHERE id = ${c.companyId}`,
  ]);
}

function structureStatements(c: CompanyRef): string[] {
  const folders = Array.from(
    { length: 20 },
    (_, i) => `(${c.companyId}, ${c.deptId}, 0, ${sqlText(`Site ${i + 1}`)}, ${sqlText(`site ${i + 1}`)})`,
  );
  const types = [
    "Certificate",
    "Contract",
    "Insurance policy",
    "Inspection report",
    "License",
    "Permit",
    "Lease",
    "Warranty",
    "Registration",
    "Audit report",
  ].map(
    (name) =>
      `(${c.accountId}, ${c.companyId}, ${c.deptId}, ${sqlText(name)}, ${sqlText(name.toLowerCase())}, ${c.userId})`,
  );
  return [
    `INSERT INTO folders (company_id, dept_id, parent_id, name, name_key) VALUES ${folders.join(", ")}`,
    `INSERT INTO document_types (account_id, company_id, dept_id, name, name_key, created_by) VALUES ${types.join(", ")}`,
  ];
}

function contactRows(c: CompanyRef, n: number, seed: number): string[] {
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  return Array.from({ length: n }, (_, i) => {
    const first = pick(FIRST);
    const last = pick(LAST);
    const email = `${ascii(first)}.${ascii(last)}.${c.companyId}.${i}@example.com`;
    const phone = String(Math.floor(200_000_000 + random() * 799_999_999));
    return (
      `(${c.companyId}, ${c.deptId}, ${sqlText(first)}, ${sqlText(last)}, ${sqlText(email)}, ${sqlText(email)}, '+44', 'GB', '+44', ` +
      `${sqlText(phone)}, ${sqlText(searchWords(first, last, email, phone))})`
    );
  });
}
const CONTACT_HEAD =
  "INSERT INTO contacts (company_id, dept_id, first_name, last_name, email, " +
  "email_key, country_code, iso, mobile_code, phone_number, search_words) VALUES\n";

function itemRows(c: CompanyRef, n: number, seed: number, folderIds: number[], typeIds: number[]): string[] {
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  return Array.from({ length: n }, (_, i) => {
    const pending = random() < 0.8;
    // Pending items expire 40 days ahead or later: no reminder of theirs is due during the run.
    const expiry = isoDay(
      today + (pending ? 40 + Math.floor(random() * 1000) : Math.floor(random() * 1000) - 700) * 86_400_000,
    );
    const title = `${pick(SUBJECTS)} – ${pick(OBJECTS)}, ${pick(PLACES)}`;
    const notes = `${pick(NOTES)} Record ${i}.`;
    const folder = folderIds.length > 0 && random() < 0.7 ? String(pick(folderIds)) : "NULL";
    const type = typeIds.length > 0 && random() < 0.9 ? String(pick(typeIds)) : "NULL";
    return (
      `(${c.companyId}, ${c.deptId}, ${type}, ${folder}, ${sqlText(title)}, ${sqlText(notes)}, '${pick(["exp", "due", "apt", "evt"])}', '${expiry}', ` +
      `'${pending ? "pending" : "completed"}', ${!pending && random() < 0.25 ? 1 : 0}, ${c.userId}, ${sqlText(searchWords(title, notes))})`
    );
  });
}
const ITEM_HEAD =
  "INSERT INTO items (company_id, dept_id, document_type_id, folder_id, title, " +
  "notes, item_type, expiry_date, status, archived, created_by, search_words) " +
  "VALUES\n";

function taskRows(c: CompanyRef, n: number, seed: number): string[] {
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: n }, (_, i) => {
    const publicId = `tsk_${c.companyId}_${i}_${Array.from({ length: 12 }, () => chars[Math.floor(random() * chars.length)]).join("")}`;
    const due = `${isoDay(Date.UTC(2026, 0, 1) + Math.floor(random() * 730) * 86_400_000)} 09:00:00`;
    const title = `${pick(TASK_WORDS)} ${pick(OBJECTS)} ${i}`;
    const description = `${pick(TASK_WORDS)} the ${pick(OBJECTS)} before it lapses`;
    return (
      `(${sqlText(publicId)}, ${c.companyId}, ${sqlText(title)}, ${sqlText(description)}, ${sqlText(pick(TASK_STATUSES))}, 'normal', ${sqlText(due)}, ` +
      `${c.userId}, NULL, NULL, ${c.userId}, ${sqlText(searchWords(title, description))})`
    );
  });
}
const TASK_HEAD =
  "INSERT INTO tasks (public_id, company_id, title, description, status, priority, " +
  "due_at, owner_id, assignee_type, assignee_id, created_by, search_words) VALUES\n";

interface SeedResult {
  sizes: Array<{ step: string; bytes: number }>;
  rows: { contacts: number; items: number; tasks: number };
  objects: Record<string, number>;
}

/** Seeds `main` (and `other`, a fifth as many rows, interleaved) on a shard, measuring the database after each step. */
function seedShard(
  persistTo: string,
  shard: number,
  main: CompanyRef,
  other: CompanyRef | undefined,
  counts: { items: number; contacts: number; tasks: number },
): SeedResult {
  const target = { persistTo, binding: shardBindingNames()[shard]! };
  const file = shardFile(persistTo, shard);
  const companies = other ? [main, other] : [main];
  const sizes: Array<{ step: string; bytes: number }> = [{ step: "migrated and demo seed", bytes: dbSize(file).bytes }];
  const step = (name: string, statements: string[]) => {
    const t = Date.now();
    executeSql(target, statements);
    sizes.push({ step: name, bytes: dbSize(file).bytes });
    log(`shard ${shard}: ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
  };
  step("limits, folders and document types", [...limitStatements(companies), ...structureStatements(main)]);
  const folderIds = readRows<{ id: number }>(
    file,
    "SELECT id FROM folders WHERE company_id = ? ORDER BY id",
    main.companyId,
  ).map((r) => r.id);
  const typeIds = readRows<{ id: number }>(
    file,
    "SELECT id FROM document_types WHERE company_id = ? ORDER BY id",
    main.companyId,
  ).map((r) => r.id);
  const fifth = (n: number) => (other ? Math.floor(n / 5) : 0);
  step(
    "contacts",
    multiRowInserts(
      CONTACT_HEAD,
      interleave(
        contactRows(main, counts.contacts, 11 + shard),
        other ? contactRows(other, fifth(counts.contacts), 12) : [],
      ),
    ),
  );
  step("items", [
    ...multiRowInserts(
      ITEM_HEAD,
      interleave(
        itemRows(main, counts.items, 21 + shard, folderIds, typeIds),
        other ? itemRows(other, fifth(counts.items), 22, [], []) : [],
      ),
    ),
    // Every item on its company's default reminder sequence (5 steps), as items created through the API are.
    ...companies.map(
      (c) =>
        `UPDATE items SET seq_id = (SELECT id FROM reminder_sequences WHERE company_id = ${c.companyId} AND is_default = 1) WHERE company_id = ${c.companyId}`,
    ),
  ]);
  step(
    "tasks",
    multiRowInserts(
      TASK_HEAD,
      interleave(taskRows(main, counts.tasks, 31 + shard), other ? taskRows(other, fifth(counts.tasks), 32) : []),
    ),
  );
  // The seed's changes are 2 minutes old: the first sweep hands them all to the reminder engine.
  executeSql(target, ["UPDATE reminder_sync SET changed_at = changed_at - 120"]);
  const rows = {
    contacts: counts.contacts + fifth(counts.contacts),
    items: counts.items + fifth(counts.items),
    tasks: counts.tasks + fifth(counts.tasks),
  };
  const objects = Object.fromEntries(Object.entries(dbSize(file).objects).slice(0, 15));
  return { sizes, rows, objects };
}

// ---------------------------------------------------------------------------------------------
// The dev server's output

interface RequestLog {
  request_id: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  d1_queries?: number;
  d1_rows_read?: number;
  d1_rows_written?: number;
  d1_ms?: number;
  d1_shard?: number;
  [key: string]: unknown;
}
type TapEvent = {
  seq: number;
  at: number;
  request?: RequestLog;
  trace?: TracedStatement;
  sweep?: Record<string, unknown>;
};

/** Reads wrangler dev's stdout and stderr line by line: request log lines, sweep lines, traced statements, in order. */
class LogTap {
  seq = 0;
  readonly events: TapEvent[] = [];
  readonly requests = new Map<string, TapEvent>();
  /** The server's last lines as they came (for an error report). */
  readonly tail: string[] = [];
  constructor(child: ChildProcess) {
    for (const stream of [child.stdout, child.stderr]) {
      let partial = "";
      stream?.on("data", (chunk: Buffer) => {
        partial += chunk.toString("utf8");
        const lines = partial.split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) this.line(line.trim());
      });
    }
  }
  private line(line: string): void {
    this.tail.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
    if (this.tail.length > 200) this.tail.shift();
    if (!line.startsWith("{")) return;
    const trace = parseTraceLine(line);
    if (trace) {
      this.events.push({ seq: ++this.seq, at: Date.now(), trace });
      return;
    }
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    if (parsed.msg === "request") {
      const event = { seq: ++this.seq, at: Date.now(), request: parsed as RequestLog };
      this.events.push(event);
      this.requests.set(String(parsed.request_id), event);
    } else if (parsed.msg === "reminder sweep") {
      this.events.push({ seq: ++this.seq, at: Date.now(), sweep: parsed });
    }
  }
  async waitFor(requestId: string, timeoutMs = 5_000): Promise<TapEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.requests.get(requestId);
      if (found) return found;
      if (Date.now() > deadline) throw new Error(`no request log line for ${requestId}`);
      await sleep(20);
    }
  }
  traces(from: number, to = Infinity): Array<TracedStatement & { seq: number }> {
    return this.events.filter((e) => e.trace && e.seq > from && e.seq < to).map((e) => ({ ...e.trace!, seq: e.seq }));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  status: number;
  ms: number;
  text: string;
  headers: Headers;
}
async function send(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; headers?: Record<string, string>; id?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  if (options.id) headers["X-Request-Id"] = options.id;
  const t = performance.now();
  const res = await fetch(BASE + path, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(60_000),
  });
  const text = await res.text();
  return { status: res.status, ms: performance.now() - t, text, headers: res.headers };
}
async function token(clientId: string, secret: string): Promise<string> {
  const res = await send("POST", "/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret },
  });
  if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${res.text}`);
  return (JSON.parse(res.text) as { access_token: string }).access_token;
}

function devArgs(persistTo: string, extra: string[]): string[] {
  return [
    "--port",
    String(PORT),
    "--persist-to",
    persistTo,
    "--ip",
    "127.0.0.1",
    "--inspector-port",
    String(PORT + 1),
    "--test-scheduled",
    "--var",
    "RATE_LIMITS:off",
    ...extra,
  ];
}

async function sweep(): Promise<void> {
  const res = await fetch(`${BASE}/__scheduled?cron=*+*+*+*+*`);
  await res.text();
}

/** Runs the sweep until the reminder engine has applied every change of the shards (or 180 s pass). */
async function converge(persistTo: string, shards: number[]): Promise<number> {
  const t = Date.now();
  const pending = () =>
    shards.reduce(
      (n, shard) =>
        n +
        readRows<{ n: number }>(
          shardFile(persistTo, shard),
          "SELECT count(*) AS n FROM reminder_sync WHERE version > synced_version",
        )[0]!.n,
      0,
    );
  let lastSweep = 0;
  for (;;) {
    const left = pending();
    if (left === 0) break;
    if (Date.now() - t > 180_000) {
      log(`warning: ${left} changes still pending after 180 s; measuring anyway`);
      break;
    }
    if (Date.now() - lastSweep > 15_000) {
      await sweep();
      lastSweep = Date.now();
      log(`sweep: ${left} item changes for the reminder engine to apply`);
    }
    await sleep(1_000);
  }
  await sleep(1_000);
  return (Date.now() - t) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Routes

interface RouteDef {
  key: string;
  label: string;
  method: "GET" | "POST" | "PATCH";
  template: string;
  status: number;
  write: boolean;
  bearer: boolean;
  request: (i: number) => { path: string; body?: unknown; headers?: Record<string, string>; token?: string };
  /** Requests sent before the measured ones (default 3). */
  warm?: number;
  /** Measured requests in pass A (default --reps). */
  reps?: number;
  /** Pass B's requests start at this index (routes whose first request differs from the next). */
  traceOffset?: number;
  before?: () => Promise<void>;
}

interface AccountContext {
  label: string;
  shard: number;
  company: CompanyRef;
  clientId: string;
  secret: string;
  token: string;
  contactIds: number[];
  itemGetIds: number[];
  itemPatchIds: number[];
  alarmItemIds: number[];
  /** Items read once each by item_get_cold (none of the other lists). */
  coldIds: number[];
  feedPath: string;
  etag: string;
}

async function accountContext(
  persistTo: string,
  label: string,
  shard: number,
  company: CompanyRef,
  clientId: string,
  secret: string,
): Promise<AccountContext> {
  const file = shardFile(persistTo, shard);
  const contactIds = readRows<{ id: number }>(
    file,
    "SELECT id FROM contacts WHERE company_id = ? ORDER BY id",
    company.companyId,
  ).map((r) => r.id);
  const pending = readRows<{ id: number }>(
    file,
    "SELECT id FROM items WHERE company_id = ? AND status = 'pending' AND archived = 0 ORDER BY id",
    company.companyId,
  ).map((r) => r.id);
  const random = prng(shard + 7);
  const pickSpread = (xs: number[], n: number, offset: number) =>
    Array.from({ length: n }, (_, i) => xs[Math.floor(((i + offset / 3 + random() * 0.3) * xs.length) / (n + 1))]!);
  const folder = readRows<{ id: number }>(
    file,
    "SELECT id FROM folders WHERE company_id = ? ORDER BY id LIMIT 1",
    company.companyId,
  )[0]!.id;
  const t = await token(clientId, secret);
  const created = await send("POST", "/v1/calendar-feeds", { token: t, body: { folder_id: folder } });
  if (created.status !== 201) throw new Error(`POST /v1/calendar-feeds: ${created.status} ${created.text}`);
  const feedPath = new URL((JSON.parse(created.text) as { data: { url: string } }).data.url).pathname;
  const context = {
    label,
    shard,
    company,
    clientId,
    secret,
    token: t,
    contactIds,
    itemGetIds: [...new Set(pickSpread(pending, 40, 0))],
    itemPatchIds: [...new Set(pickSpread(pending, 60, 1))],
    alarmItemIds: [...new Set(pickSpread(pending, 5, 2))],
    coldIds: [] as number[],
    feedPath,
    etag: "",
  };
  const taken = new Set([...context.itemGetIds, ...context.itemPatchIds, ...context.alarmItemIds]);
  context.coldIds = pending.filter((id, i) => i % 7 === 3 && !taken.has(id));
  return context;
}

/** Fetches the feed until its ETag is stable (the first fetches apply pending changes), so that If-None-Match answers 304. */
async function settleFeed(ctx: AccountContext): Promise<void> {
  for (let i = 0; i < 12; i++) {
    const res = await send("GET", ctx.feedPath, { headers: ctx.etag ? { "If-None-Match": ctx.etag } : {} });
    if (res.status === 304) return;
    if (res.status !== 200) throw new Error(`feed ${res.status}`);
    ctx.etag = res.headers.get("ETag") ?? "";
  }
  throw new Error("the feed's ETag did not settle");
}

let unique = 0;
/** The tap of the server running now: its last lines are printed when the run fails. */
let currentTap: LogTap | undefined;
function routes(ctx: AccountContext): RouteDef[] {
  const cycle = <T>(xs: T[], i: number) => xs[i % xs.length]!;
  const future = isoDay(Date.now() + 200 * 86_400_000);
  return [
    {
      key: "health",
      label: "GET /health",
      method: "GET",
      template: "/health",
      status: 200,
      write: false,
      bearer: false,
      request: () => ({ path: "/health" }),
    },
    {
      key: "token",
      label: "POST /v1/oauth/token",
      method: "POST",
      template: "/v1/oauth/token",
      status: 200,
      write: true,
      bearer: false,
      request: () => ({
        path: "/v1/oauth/token",
        body: { grant_type: "client_credentials", client_id: ctx.clientId, client_secret: ctx.secret },
      }),
    },
    {
      key: "contact_get",
      label: "GET /v1/contacts/{id}",
      method: "GET",
      template: "/v1/contacts/{id}",
      status: 200,
      write: false,
      bearer: true,
      request: (i) => ({ path: `/v1/contacts/${cycle(ctx.contactIds, i * 37 + 11)}`, token: ctx.token }),
    },
    {
      key: "contact_list",
      label: "GET /v1/contacts?limit=50",
      method: "GET",
      template: "/v1/contacts?limit=50",
      status: 200,
      write: false,
      bearer: true,
      request: () => ({ path: "/v1/contacts?limit=50", token: ctx.token }),
    },
    {
      key: "contact_search",
      label: "GET /v1/contacts?q=mar&limit=50",
      method: "GET",
      template: "/v1/contacts?q=mar&limit=50",
      status: 200,
      write: false,
      bearer: true,
      request: () => ({ path: "/v1/contacts?q=mar&limit=50", token: ctx.token }),
    },
    {
      key: "contact_create",
      label: "POST /v1/contacts",
      method: "POST",
      template: "/v1/contacts",
      status: 201,
      write: true,
      bearer: true,
      request: () => {
        const n = ++unique;
        return {
          path: "/v1/contacts",
          token: ctx.token,
          body: {
            first_name: "Nora",
            last_name: `Measure ${n}`,
            email: `nora.measure.${ctx.shard}.${n}.${started}@example.org`,
          },
        };
      },
    },
    {
      key: "item_get",
      label: "GET /v1/items/{id}",
      method: "GET",
      template: "/v1/items/{id}",
      status: 200,
      write: false,
      bearer: true,
      request: (i) => ({ path: `/v1/items/${cycle(ctx.itemGetIds, i)}`, token: ctx.token }),
      // Every id once first: its first read writes its D1 view (through the Durable Object); the measured reads are answered from it.
      warm: ctx.itemGetIds.length,
    },
    {
      key: "item_get_cold",
      label: "GET /v1/items/{id}, first read (no D1 view yet)",
      method: "GET",
      template: "/v1/items/{id}",
      status: 200,
      write: false,
      bearer: true,
      request: (i) => ({ path: `/v1/items/${ctx.coldIds[i % ctx.coldIds.length]}`, token: ctx.token }),
      warm: 0,
      // 200 first reads in pass A: they also give the bytes of an item view.
      reps: Math.min(200, Math.max(REPS, ctx.coldIds.length - 50)),
      traceOffset: Math.min(200, Math.max(REPS, ctx.coldIds.length - 50)) + 1,
    },
    {
      key: "item_list",
      label: "GET /v1/items?limit=50",
      method: "GET",
      template: "/v1/items?limit=50",
      status: 200,
      write: false,
      bearer: true,
      request: () => ({ path: "/v1/items?limit=50", token: ctx.token }),
    },
    {
      key: "item_search",
      label: "GET /v1/items?q=insp&limit=50",
      method: "GET",
      template: "/v1/items?q=insp&limit=50",
      status: 200,
      write: false,
      bearer: true,
      request: () => ({ path: "/v1/items?q=insp&limit=50", token: ctx.token }),
    },
    {
      key: "item_create",
      label: "POST /v1/items",
      method: "POST",
      template: "/v1/items",
      status: 201,
      write: true,
      bearer: true,
      request: () => ({
        path: "/v1/items",
        token: ctx.token,
        body: { title: `Boiler inspection, measure ${++unique}`, expiry_date: future, notes: "Annual check" },
      }),
    },
    {
      key: "item_update",
      label: "PATCH /v1/items/{id}",
      method: "PATCH",
      template: "/v1/items/{id}",
      status: 200,
      write: true,
      bearer: true,
      request: (i) => ({
        path: `/v1/items/${cycle(ctx.itemPatchIds, i)}`,
        token: ctx.token,
        body: { title: `Permit renewal – site ${++unique}` },
      }),
    },
    {
      key: "task_list",
      label: "GET /v1/tasks?limit=50",
      method: "GET",
      template: "/v1/tasks?limit=50",
      status: 200,
      write: false,
      bearer: true,
      request: () => ({ path: "/v1/tasks?limit=50", token: ctx.token }),
    },
    {
      key: "feed_304",
      label: "GET /v1/calendar/{token}.ics, If-None-Match (304)",
      method: "GET",
      template: "/v1/calendar/{token}.ics",
      status: 304,
      write: false,
      bearer: false,
      request: () => ({ path: ctx.feedPath, headers: { "If-None-Match": ctx.etag } }),
      before: () => settleFeed(ctx),
    },
    {
      key: "feed_200",
      label: "GET /v1/calendar/{token}.ics (200)",
      method: "GET",
      template: "/v1/calendar/{token}.ics",
      status: 200,
      write: false,
      bearer: false,
      request: () => ({ path: ctx.feedPath }),
    },
  ];
}

// ---------------------------------------------------------------------------------------------
// Pass A: the service as deployed, D1_STATS on

interface Sample {
  status: number;
  ms: number;
  log: RequestLog;
}

async function passA(
  tap: LogTap,
  defs: RouteDef[],
): Promise<{ samples: Record<string, Sample[]>; problems: string[] }> {
  const samples: Record<string, Sample[]> = {};
  const problems: string[] = [];
  for (const def of defs) {
    await def.before?.();
    const warm = def.warm ?? 3;
    for (let i = 0; i < warm; i++) {
      const req = def.request(i);
      await send(def.method, req.path, req);
    }
    const list: Sample[] = [];
    for (let i = 0; i < (def.reps ?? REPS); i++) {
      const id = `a-${def.key}-${i}`;
      const req = def.request(warm + i);
      const res = await send(def.method, req.path, { ...req, id });
      const event = await tap.waitFor(id);
      list.push({ status: res.status, ms: res.ms, log: event.request! });
      if (res.status !== def.status)
        problems.push(`${def.label}: answered ${res.status}, expected ${def.status}: ${res.text.slice(0, 200)}`);
    }
    samples[def.key] = list;
    const med = (f: (s: Sample) => number) => median(list.map(f));
    log(
      `  ${def.label}: queries ${med((s) => s.log.d1_queries ?? NaN)}, rows read ${med((s) => s.log.d1_rows_read ?? NaN)}, written ${med((s) => s.log.d1_rows_written ?? NaN)}, ` +
        `d1_ms ${med((s) => s.log.d1_ms ?? NaN)}, ${med((s) => s.ms).toFixed(1)} ms`,
    );
  }
  return { samples, problems };
}

// ---------------------------------------------------------------------------------------------
// Pass B: traced

interface TracedRequest {
  key: string;
  worker: TracedStatement[];
  durableObject: TracedStatement[];
}
const DIRECTORY = /\bdirectory_(clients|companies|accounts)\b/;
const roundTrips = (statements: TracedStatement[]) => {
  const batches = new Set<string>();
  let single = 0;
  for (const s of statements) {
    if (s.via.startsWith("batch#")) batches.add(`${s.tag}:${s.via}`);
    else single++;
  }
  return batches.size + single;
};

async function passB(tap: LogTap, defs: RouteDef[]): Promise<{ traced: TracedRequest[]; problems: string[] }> {
  const traced: TracedRequest[] = [];
  const problems: string[] = [];
  let previous = tap.seq;
  for (const def of defs) {
    await def.before?.();
    const warm = (def.traceOffset ?? 0) + Math.min(def.warm ?? 1, def.key === "item_get" ? 0 : 1);
    for (let i = def.traceOffset ?? 0; i < warm; i++) {
      const req = def.request(i);
      await send(def.method, req.path, req);
    }
    await sleep(50);
    previous = tap.seq;
    for (let i = 0; i < TRACE_REPS; i++) {
      const id = `b-${def.key}-${i}`;
      const req = def.request(warm + i);
      const res = await send(def.method, req.path, { ...req, id });
      const event = await tap.waitFor(id);
      if (res.status !== def.status)
        problems.push(`traced ${def.label}: answered ${res.status}, expected ${def.status}`);
      const between = tap.traces(previous, event.seq);
      traced.push({
        key: def.key,
        worker: tap.traces(previous, Infinity).filter((s) => s.tag === `worker:${id}`),
        durableObject: between.filter((s) => s.tag === "do"),
      });
      previous = event.seq;
    }
  }
  return { traced, problems };
}

// ---------------------------------------------------------------------------------------------
// Measure

async function measure(): Promise<number> {
  const scope = tempServerScope("expiry-measure-d1-", log);
  const work = mkdtempSync(join(tmpdir(), "expiry-measure-d1-work-"));
  let child: ChildProcess | undefined;
  const problems: string[] = [];
  const notes: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    const persistTo = scope.persistTo;
    const seeded = seedShard(persistTo, 0, COMPANY_1, COMPANY_2, { items: ITEMS, contacts: CONTACTS, tasks: TASKS });
    const at = (step: string) => seeded.sizes.find((s) => s.step === step)!.bytes;
    const before = (step: string) => seeded.sizes[seeded.sizes.findIndex((s) => s.step === step) - 1]!.bytes;
    const perThousand = (step: string, rows: number) => ((at(step) - before(step)) * 1000) / rows;

    // ---- pass A
    let t = Date.now();
    child = await startDev(devArgs(persistTo, ["--var", "D1_STATS:on"]), {
      port: PORT,
      env: { X_LOCAL_OBSERVABILITY: "false" },
    });
    scope.setServer(child);
    let tap = new LogTap(child);
    currentTap = tap;
    log(
      `pass A: wrangler dev (wrangler.toml) up in ${((Date.now() - t) / 1000).toFixed(1)} s: D1_STATS=on, RATE_LIMITS=off, --test-scheduled`,
    );
    const convergeSeconds = await converge(persistTo, [0]);
    log(`the reminder engine applied the ${seeded.rows.items} seeded items in ${convergeSeconds.toFixed(0)} s`);
    const file0 = shardFile(persistTo, 0);
    const synced = dbSize(file0);
    const viewRows = readRows<{ n: number }>(file0, "SELECT count(*) AS n FROM item_reminder_views")[0]!.n;
    const ctx = await accountContext(
      persistTo,
      "demo-owner (shard 0)",
      0,
      COMPANY_1,
      "demo-owner",
      "demo-owner-secret",
    );
    const defs = routes(ctx);
    // The first reads of items write their D1 views: the database's growth over them is the bytes of a view.
    const viewCount = () => readRows<{ n: number }>(file0, "SELECT count(*) AS n FROM item_reminder_views")[0]!.n;
    const coldDef = defs.filter((d) => d.key === "item_get_cold");
    const [viewsBefore, bytesBefore] = [viewCount(), dbSize(file0).bytes];
    const cold = await passA(tap, coldDef);
    await sleep(1_000);
    const [viewsCold, bytesCold] = [viewCount(), dbSize(file0).bytes];
    const viewPayload =
      readRows<{ n: number | null }>(file0, "SELECT avg(length(reminders) + 40) AS n FROM item_reminder_views")[0]!.n ??
      0;
    const rest = await passA(
      tap,
      defs.filter((d) => d.key !== "item_get_cold"),
    );
    const a = { samples: { ...cold.samples, ...rest.samples }, problems: [...cold.problems, ...rest.problems] };
    problems.push(...a.problems);
    // The sweep, idle: three runs.
    const sweepFrom = tap.seq;
    for (let i = 0; i < 3; i++) {
      await sweep();
      await sleep(300);
    }
    const sweepLines = tap.events.filter((e) => e.sweep && e.seq > sweepFrom).map((e) => e.sweep!);
    const viewsAfter = dbSize(file0);
    const viewsNow = readRows<{ n: number }>(file0, "SELECT count(*) AS n FROM item_reminder_views")[0]!.n;
    await stopServer(child);
    child = undefined;

    // ---- the state pass B starts from
    const snapshots = new Map<number, string>();
    for (const shard of [0, 1])
      snapshots.set(shard, snapshotFile(shardFile(persistTo, shard), join(work, "snapshot"), `shard-${shard}`));
    const durable = durableObjectFiles(persistTo)[0];

    // ---- pass B
    t = Date.now();
    const config = writeTraceWorker(join(work, "trace-worker"));
    child = await startDev(["--config", config, ...devArgs(persistTo, [])], {
      port: PORT,
      env: { X_LOCAL_OBSERVABILITY: "false" },
    });
    scope.setServer(child);
    tap = new LogTap(child);
    currentTap = tap;
    log(`pass B: the tracing entry point up in ${((Date.now() - t) / 1000).toFixed(1)} s (D1_STATS off)`);
    ctx.token = await token(ctx.clientId, ctx.secret);
    ctx.etag = "";
    const b = await passB(tap, defs);
    problems.push(...b.problems);
    const cronFrom = tap.seq;
    await sweep();
    await sleep(500);
    const cron = tap.traces(cronFrom).filter((s) => s.tag === "cron");

    // ---- an alarm run: 5 reminders due in the next minute (UTC, company 1's zone), a contact as recipient
    // biome-ignore lint/style/useConst: assigned in the branch below
    let alarm: Measurements["alarm"];
    let alarmStatements: TracedStatement[] = [];
    if (ALARM) {
      const now = new Date();
      const due = new Date(Math.ceil((now.getTime() + 20_000) / 60_000) * 60_000);
      const hour = due.toISOString().slice(11, 16);
      const date = due.toISOString().slice(0, 10);
      for (const itemId of ctx.alarmItemIds) {
        const res = await send("POST", `/v1/items/${itemId}/reminders`, {
          token: ctx.token,
          body: { date, hour, contact_id: ctx.contactIds[3] },
        });
        if (res.status !== 201)
          problems.push(`POST /v1/items/${itemId}/reminders: ${res.status} ${res.text.slice(0, 200)}`);
      }
      const alarmFrom = tap.seq;
      log(
        `alarm: ${ctx.alarmItemIds.length} reminders due at ${hour} UTC; waiting ${((due.getTime() - Date.now()) / 1000).toFixed(0)} s for the run`,
      );
      const deadline = due.getTime() + 45_000;
      let quietSince = 0;
      while (Date.now() < deadline) {
        await sleep(1_000);
        const seen = tap.traces(alarmFrom).filter((s) => s.tag.startsWith("do-alarm#"));
        if (seen.length > 0) {
          if (seen.length === alarmStatements.length) {
            if (!quietSince) quietSince = Date.now();
            if (Date.now() - quietSince > 4_000) break;
          } else quietSince = 0;
          alarmStatements = seen;
        }
      }
      if (alarmStatements.length === 0)
        problems.push("the alarm run was not seen (no do-alarm statements within 45 s of the due time)");
    }
    await stopServer(child);
    child = undefined;

    // ---- replay
    t = Date.now();
    const replay = (statements: TracedStatement[]) => {
      const out = new Array<{ ms: number; rows: number; error?: string }>(statements.length);
      for (const binding of new Set(statements.map((s) => s.db))) {
        const indexes = statements.map((s, i) => (s.db === binding ? i : -1)).filter((i) => i >= 0);
        const results = replayStatements(
          snapshots.get(shardOfBinding(binding))!,
          indexes.map((i) => statements[i]!),
        );
        for (const [k, i] of indexes.entries()) out[i] = results[k]!;
      }
      for (const [i, r] of out.entries())
        if (r?.error) problems.push(`replay of ${statements[i]!.sql.slice(0, 80).replace(/\s+/g, " ")}…: ${r.error}`);
      return out;
    };
    const routeResults: Record<string, RouteMeasurement> = {};
    const directoryTimes: Array<{ sql: string; ms: number }> = [];
    for (const def of defs) {
      const list = a.samples[def.key]!;
      const med = (f: (s: Sample) => number | undefined) => median(list.map((s) => f(s) ?? 0));
      const mine = b.traced.filter((r) => r.key === def.key);
      const perRequest = mine.map((r) => {
        const shardSide = r.worker.filter((s) => !DIRECTORY.test(s.sql));
        const directory = r.worker.filter((s) => DIRECTORY.test(s.sql));
        const [shardTimes, directoryReplay, doTimes] = [replay(shardSide), replay(directory), replay(r.durableObject)];
        for (const [i, s] of directory.entries()) directoryTimes.push({ sql: s.sql, ms: directoryReplay[i]!.ms });
        const sum = (xs: Array<{ ms: number }>) => xs.reduce((n, x) => n + x.ms, 0);
        return {
          shardStatements: shardSide.length,
          roundTrips: roundTrips(shardSide),
          directory: directory.length,
          doStatements: r.durableObject.length,
          doRoundTrips: roundTrips(r.durableObject),
          sqlite: sum(shardTimes),
          directorySqlite: sum(directoryReplay),
          doSqlite: sum(doTimes),
          times: { shardSide, directory, durableObject: r.durableObject, shardTimes, directoryReplay, doTimes },
        };
      });
      const pm = (f: (x: (typeof perRequest)[number]) => number) => median(perRequest.map(f));
      const medianRequest = [...perRequest].sort((x, y) => x.sqlite + x.doSqlite - (y.sqlite + y.doSqlite))[
        perRequest.length >> 1
      ];
      const sample = medianRequest
        ? [
            ...medianRequest.times.directory.map((s, i) => ({
              where: `directory (${s.db})`,
              via: s.via.replace(/#\d+$/, ""),
              sql: s.sql,
              ms: medianRequest.times.directoryReplay[i]!.ms,
              rows: medianRequest.times.directoryReplay[i]!.rows,
            })),
            ...medianRequest.times.shardSide.map((s, i) => ({
              where: `shard (${s.db})`,
              via: s.via.replace(/#\d+$/, ""),
              sql: s.sql,
              ms: medianRequest.times.shardTimes[i]!.ms,
              rows: medianRequest.times.shardTimes[i]!.rows,
            })),
            ...medianRequest.times.durableObject.map((s, i) => ({
              where: `Durable Object (${s.db})`,
              via: s.via.replace(/#\d+$/, ""),
              sql: s.sql,
              ms: medianRequest.times.doTimes[i]!.ms,
              rows: medianRequest.times.doTimes[i]!.rows,
            })),
          ].map((x) => ({ ...x, sql: x.sql.replace(/\s+/g, " ").slice(0, 200), ms: Math.round(x.ms * 1000) / 1000 }))
        : [];
      const logged = list.map((s) => s.log);
      const shardsSeen = [...new Set(logged.map((l) => l.d1_shard).filter((s) => s !== undefined))];
      routeResults[def.key] = {
        label: def.label,
        method: def.method,
        path: def.template,
        write: def.write,
        status: def.status,
        bearer: def.bearer,
        log: {
          requests: list.length,
          queries: med((s) => s.log.d1_queries),
          queries_mean: list.reduce((n, s) => n + (s.log.d1_queries ?? 0), 0) / list.length,
          rows_read: med((s) => s.log.d1_rows_read),
          rows_written: med((s) => s.log.d1_rows_written),
          d1_ms: med((s) => s.log.d1_ms),
          d1_ms_max: Math.max(...list.map((s) => s.log.d1_ms ?? 0)),
          duration_ms: med((s) => s.log.duration_ms),
          shard: shardsSeen.length === 1 ? shardsSeen[0]! : null,
        },
        e2e_ms: {
          median: round(med((s) => s.ms)),
          p90: round(
            percentile(
              list.map((s) => s.ms),
              0.9,
            ),
          ),
        },
        trace:
          perRequest.length > 0
            ? {
                requests: perRequest.length,
                shard_statements: pm((x) => x.shardStatements),
                round_trips: pm((x) => x.roundTrips),
                directory_statements: pm((x) => x.directory),
                do_statements: pm((x) => x.doStatements),
                do_round_trips: pm((x) => x.doRoundTrips),
                sqlite_ms: round(
                  pm((x) => x.sqlite),
                  4,
                ),
                directory_sqlite_ms: round(
                  pm((x) => x.directorySqlite),
                  4,
                ),
                do_sqlite_ms: round(
                  pm((x) => x.doSqlite),
                  4,
                ),
                sample,
              }
            : undefined,
      };
      if (def.key !== "health") {
        const missing = list.filter((s) => s.log.d1_queries === undefined).length;
        if (missing > 0)
          problems.push(`${def.label}: ${missing} of ${list.length} request log lines have no d1_* fields`);
        const tr = routeResults[def.key]!.trace;
        if (tr && tr.shard_statements !== routeResults[def.key]!.log.queries) {
          notes.push(
            `${def.label}: the log counts ${routeResults[def.key]!.log.queries} queries, the trace ${tr.shard_statements} statements on the shard (+${tr.directory_statements} directory)`,
          );
        }
      }
    }
    const allLogs = Object.entries(a.samples)
      .filter(([k]) => k !== "health")
      .flatMap(([, list]) => list.map((x) => x.log));
    const withQueries = allLogs.filter((l) => (l.d1_queries ?? 0) > 0);
    const d1Values = [...new Set(withQueries.map((l) => l.d1_ms ?? 0))].sort((x, y) => x - y);
    if (d1Values.every((v) => Number.isInteger(v))) {
      problems.push(
        `d1_ms is useless under wrangler dev: over ${withQueries.length} requests with D1 queries it took only the values ${d1Values.join(", ")} ` +
          `(${withQueries.filter((l) => !l.d1_ms).length} were 0). Local D1 (miniflare) times each statement with performance.now() inside workerd, whose clocks only move ` +
          "between I/O, not during the synchronous SQLite call, so meta.duration is 0 (or " +
          "a whole millisecond that elapsed elsewhere). The SQLite times here are replayed " +
          "with Node's SQLite instead.",
      );
    }
    for (const def of defs) {
      const rawWrites = b.traced
        .filter((r) => r.key === def.key)
        .flatMap((r) => r.worker)
        .filter((x) => x.via === "raw" && isWrite(x.sql));
      if (rawWrites.length > 0) {
        const per = rawWrites.length / Math.max(1, b.traced.filter((r) => r.key === def.key).length);
        problems.push(
          `${def.label}: the log line's d1_rows_written (median ${routeResults[def.key]!.log.rows_written}) and d1_ms leave out ${per} write statement(s) per request run through drizzle's raw() ` +
            `(${rawWrites[0]!.sql.replace(/\s+/g, " ").slice(0, 60)}…): src/db/query-stats.ts counts a raw() write with no meta (add(stats, undefined)).`,
        );
      }
    }
    notes.push(
      "Calendar feeds read the directory (directory_companies, home database) only " +
        "when their isolate's 60 s cache misses: the traced feed requests came within a " +
        "minute of a warm-up request and show none; the capacity model assumes a miss on " +
        "every poll.",
    );
    for (const key of ["token", "feed_304", "feed_200"]) {
      const r = routeResults[key];
      if (r?.trace && r.trace.directory_statements > 0) {
        notes.push(
          `${r.label}: ${r.trace.directory_statements} directory read(s) in the home database per request (median), which the log line's d1_queries does not count (they run outside the request's session)`,
        );
      }
    }
    const cronTimes = replay(cron);
    const perShard = (binding: string) => cron.filter((s) => s.db === binding);
    const shard0 = perShard(shardBindingNames()[0]!);
    const alarmTimes = replay(alarmStatements);
    const alarmRuns = new Set(alarmStatements.map((s) => s.tag)).size;
    alarm =
      alarmStatements.length > 0
        ? {
            reminders: ctx.alarmItemIds.length,
            runs: alarmRuns,
            statements: alarmStatements.length,
            round_trips: roundTrips(alarmStatements),
            directory_statements: alarmStatements.filter((s) => DIRECTORY.test(s.sql)).length,
            sqlite_ms: round(
              alarmTimes.reduce((n, x) => n + x.ms, 0),
              4,
            ),
            statements_list: alarmStatements.map((s, i) => ({
              via: `${s.tag} ${s.via.replace(/#\d+$/, "")}`,
              sql: s.sql.replace(/\s+/g, " ").slice(0, 200),
              ms: round(alarmTimes[i]!.ms, 4),
            })),
          }
        : undefined;
    log(`replayed every statement with Node's SQLite in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const dirMedian = directoryTimes.length > 0 ? median(directoryTimes.map((d) => d.ms)) : 0;

    const measurements: Measurements = {
      generated_at: new Date(started).toISOString(),
      machine: {
        cpus: cpus().length,
        cpu_model: cpus()[0]?.model ?? "?",
        node: process.version,
        wrangler: wranglerVersion(),
        load_before: round(loadBefore, 2),
        load_after: round(loadavg()[0]!, 2),
        d1: "local D1 (miniflare SQLite) under wrangler dev; SQLite times replayed with node:sqlite on this machine",
      },
      settings: {
        items: seeded.rows.items,
        contacts: seeded.rows.contacts,
        tasks: seeded.rows.tasks,
        company_1_items: ITEMS,
        company_1_contacts: CONTACTS,
        reps: REPS,
        trace_reps: TRACE_REPS,
        alarm: ALARM,
      },
      notes: [
        `Company 1 has ${ITEMS} items (on its 5-step default sequence), ${CONTACTS} contacts and ${TASKS} tasks; company 2 a fifth as many, rows interleaved. Measured one request at a time.`,
        `The reminder engine applied the seeded items in ${convergeSeconds.toFixed(0)} s before the routes were measured; item views: ${viewRows} after that, ${viewsNow} after pass A.`,
        "log.*: medians of the request log's D1 fields (D1_STATS=on), pass A. e2e_ms: " +
          "the client's time (D1_STATS makes drizzle reads run twice, so it is on the high " +
          "side). trace.*: pass B, statements captured by the tracing entry point and " +
          "replayed with node:sqlite on a copy of the database (writes rolled back).",
        ...notes,
      ],
      problems: [...new Set(problems)],
      routes: routeResults,
      storage: {
        per_1000_items_bytes: round(perThousand("items", seeded.rows.items)),
        per_1000_contacts_bytes: round(perThousand("contacts", seeded.rows.contacts)),
        per_1000_tasks_bytes: round(perThousand("tasks", seeded.rows.tasks)),
        per_1000_items_sync_bytes: round(
          ((synced.bytes - at("tasks") - (synced.objects.item_reminder_views ?? 0)) * 1000) / seeded.rows.items,
        ),
        item_view_bytes: viewsCold > viewsBefore ? round((bytesCold - bytesBefore) / (viewsCold - viewsBefore)) : 0,
        rows: {
          ...seeded.rows,
          item_views: viewsNow,
          item_views_by_first_reads: viewsCold - viewsBefore,
          item_view_payload_bytes: round(viewPayload),
        },
        sizes: [
          ...seeded.sizes,
          { step: "reminder engine applied the items", bytes: synced.bytes },
          { step: "after pass A", bytes: viewsAfter.bytes },
        ],
        objects: seeded.objects,
        durable_object: durable
          ? {
              bytes: durable.bytes,
              items: durable.items,
              reminders: durable.reminders,
              per_1000_items_bytes: durable.items > 0 ? round((durable.bytes * 1000) / durable.items) : 0,
            }
          : { bytes: 0, items: 0, reminders: 0, per_1000_items_bytes: 0 },
      },
      sweep: {
        statements_per_shard: shard0.length,
        round_trips_per_shard: roundTrips(shard0),
        sqlite_ms_per_shard: round(
          cron.reduce((n, s, i) => n + (s.db === shardBindingNames()[0] ? cronTimes[i]!.ms : 0), 0),
          4,
        ),
        runs: sweepLines.length / shardBindingNames().length,
        log: sweepLines,
        statements: shard0.map((s) => ({
          sql: s.sql.replace(/\s+/g, " ").slice(0, 200),
          via: s.via.replace(/#\d+$/, ""),
          ms: round(cronTimes[cron.indexOf(s)]!.ms, 4),
        })),
      },
      directory: {
        read_sqlite_ms: round(dirMedian, 4),
        statements: directoryTimes.slice(0, 10).map((d) => ({ sql: d.sql, ms: round(d.ms, 4) })),
      },
      alarm,
    };
    mkdirSync(dirname(JSON_OUT), { recursive: true });
    writeFileSync(JSON_OUT, `${JSON.stringify(measurements, null, 2)}\n`);
    printSummary(measurements);
    log(`written to ${JSON_OUT}`);
    return problems.some((p) => !p.startsWith("d1_ms is 0")) ? 1 : 0;
  } finally {
    if (child) await stopServer(child);
    await scope.close();
    rmSync(work, { recursive: true, force: true });
  }
}

const round = (x: number, digits = 3) => Math.round(x * 10 ** digits) / 10 ** digits;
function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

function printSummary(m: Measurements): void {
  const rows = Object.values(m.routes).map((r) => [
    r.label,
    String(r.log.queries),
    String(r.log.rows_read),
    String(r.log.rows_written),
    String(r.log.d1_ms),
    r.trace ? `${r.trace.shard_statements}/${r.trace.round_trips}` : "",
    r.trace ? String(r.trace.directory_statements) : "",
    r.trace ? String(r.trace.do_statements) : "",
    r.trace ? r.trace.sqlite_ms.toFixed(3) : "",
    r.e2e_ms.median.toFixed(1),
  ]);
  const header = [
    "route",
    "queries",
    "rows read",
    "rows written",
    "d1_ms",
    "statements/round trips",
    "directory",
    "DO statements",
    "SQLite ms",
    "e2e ms",
  ];
  console.log(`\n| ${header.join(" | ")} |\n|${header.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`);
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
  const s = m.storage;
  console.log(
    `\nStorage: ${s.per_1000_items_bytes.toLocaleString("en-US")} bytes per 1,000 items (+${s.per_1000_items_sync_bytes.toLocaleString("en-US")} once the reminder engine applied them), ` +
      `${s.per_1000_contacts_bytes.toLocaleString("en-US")} per 1,000 contacts, ${s.per_1000_tasks_bytes.toLocaleString("en-US")} per 1,000 tasks, ${s.item_view_bytes} per item view; ` +
      `Durable Object ${s.durable_object.per_1000_items_bytes.toLocaleString("en-US")} bytes per 1,000 items (${s.durable_object.reminders} reminders for ${s.durable_object.items} items).`,
  );
  console.log(
    `Sweep: ${m.sweep.statements_per_shard} statements in ${m.sweep.round_trips_per_shard} round trips per shard, ${m.sweep.sqlite_ms_per_shard} ms SQLite.`,
  );
  console.log(`Directory read: ${m.directory.read_sqlite_ms} ms SQLite.`);
  if (m.alarm)
    console.log(
      `Alarm: ${m.alarm.runs} run(s) for ${m.alarm.reminders} reminders: ${m.alarm.statements} statements, ${m.alarm.round_trips} round trips, ${m.alarm.directory_statements} directory, ${m.alarm.sqlite_ms} ms SQLite.`,
    );
  for (const p of m.problems) console.log(`PROBLEM: ${p}`);
  for (const n of m.notes) console.log(`note: ${n}`);
}

// ---------------------------------------------------------------------------------------------
// --check-shards

function observabilityDirectoryReads(
  persistTo: string,
  fromMs: number,
  toMs: number,
): { clients: number; companies: number; accounts: number } {
  const dir = join(persistTo, "v3", "observability", "miniflare-wobs-trace-store");
  const counts = { clients: 0, companies: 0, accounts: 0 };
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  } catch {
    return counts;
  }
  for (const f of files) {
    const rows = readRows<{ q: string | null }>(
      join(dir, f),
      `SELECT json_extract(json(attributes), '$."db.query.text"') AS q FROM spans WHERE kind = 'd1' AND start_ms >= ? AND start_ms <= ?`,
      fromMs,
      toMs,
    );
    for (const { q } of rows) {
      if (!q) continue;
      if (/\bdirectory_clients\b/.test(q)) counts.clients++;
      if (/\bdirectory_companies\b/.test(q)) counts.companies++;
      if (/\bdirectory_accounts\b/.test(q)) counts.accounts++;
    }
  }
  return counts;
}

/** The model's daily mix scaled to `n` requests (largest remainders), shuffled. */
function workload(n: number, seed: number, keys: string[]): string[] {
  const mix = Object.entries(DAILY_REQUESTS).filter(([k]) => keys.includes(k));
  const total = mix.reduce((s, [, w]) => s + w, 0);
  const exact = mix.map(([k, w]) => ({ k, x: (n * w) / total }));
  const counts = exact.map((e) => ({ k: e.k, c: Math.floor(e.x), r: e.x - Math.floor(e.x) }));
  let left = n - counts.reduce((s, c) => s + c.c, 0);
  for (const c of [...counts].sort((a, b) => b.r - a.r)) if (left-- > 0) c.c++;
  const list = counts.flatMap((c) => Array.from({ length: c.c }, () => c.k));
  const random = prng(seed);
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j]!, list[i]!];
  }
  return list;
}

async function checkShards(): Promise<number> {
  let m: Measurements;
  try {
    m = loadMeasurements(resolve(optionValue(argv, "--measurements") ?? DEFAULT_MEASUREMENTS));
  } catch (error) {
    console.error(`--check-shards needs the measurements (run node bench/measure-d1.ts first): ${String(error)}`);
    return 2;
  }
  const scope = tempServerScope("expiry-check-shards-", log);
  let child: ChildProcess | undefined;
  try {
    await prepareBenchState(scope.persistTo, log);
    const persistTo = scope.persistTo;
    const counts = { items: ITEMS, contacts: CONTACTS, tasks: TASKS };
    seedShard(persistTo, 0, COMPANY_1, undefined, counts);
    seedShard(persistTo, 1, SHARD_ONE, undefined, counts);
    // Local traces on (wrangler's default): they count the directory reads, which no log line shows.
    child = await startDev(devArgs(persistTo, ["--var", "D1_STATS:on"]), { port: PORT });
    scope.setServer(child);
    const tap = new LogTap(child);
    currentTap = tap;
    log("wrangler dev up: D1_STATS=on, RATE_LIMITS=off, local traces on");
    const seconds = await converge(persistTo, [0, 1]);
    log(`the reminder engine applied both shards' items in ${seconds.toFixed(0)} s`);
    const accounts = [
      await accountContext(persistTo, "demo-owner", 0, COMPANY_1, "demo-owner", "demo-owner-secret"),
      await accountContext(persistTo, "demo-shard1", 1, SHARD_ONE, SHARD_ONE_DEMO.clientId, SHARD_ONE_DEMO.secret),
    ];
    for (const ctx of accounts) {
      // Warm: every item_get id read once (its view written), the feed's ETag settled.
      for (const id of ctx.itemGetIds) await send("GET", `/v1/items/${id}`, { token: ctx.token });
      await settleFeed(ctx);
    }
    const keys = Object.keys(m.routes);
    const startedAt = Date.now();
    const results = await Promise.all(
      accounts.map(async (ctx) => {
        const defs = new Map(routes(ctx).map((d) => [d.key, d]));
        const list = workload(CHECK_REQUESTS, 100 + ctx.shard, keys);
        const done: Array<{ key: string; status: number; id: string; at: number }> = [];
        let next = 0;
        const worker = async () => {
          for (;;) {
            const i = next++;
            if (i >= list.length) return;
            const key = list[i]!;
            const def = defs.get(key)!;
            const id = `c${ctx.shard}-${i}`;
            const req = def.request(i);
            const at = Date.now();
            const res = await send(def.method, req.path, { ...req, id });
            done.push({ key, status: res.status, id, at });
          }
        };
        await Promise.all([worker(), worker()]);
        return { ctx, done };
      }),
    );
    const endedAt = Date.now();
    await sleep(1_500);
    const problems: string[] = [];
    let pass = true;
    const perShard = new Map<
      number,
      { requests: number; actual: number; predicted: number; misses: number; routed: Record<string, number> }
    >();
    const perRoute = new Map<string, { requests: number; actual: number }>();
    for (const { ctx, done } of results) {
      const routed: Record<string, number> = {};
      let actual = 0;
      const wrongShard: string[] = [];
      for (const d of done) {
        const ev = await tap.waitFor(d.id).catch(() => undefined);
        if (!ev) {
          problems.push(`${d.id}: no log line`);
          continue;
        }
        // A revalidation answers 200 once a write has moved the ETag: the 304's statements, then the full feed's.
        const key = d.key === "feed_304" && d.status === 200 ? FEED_CHANGED : d.key;
        routed[key] = (routed[key] ?? 0) + 1;
        const expected = key === FEED_CHANGED ? 200 : m.routes[key]?.status;
        if (expected !== undefined && d.status !== expected)
          problems.push(`${ctx.label} ${key}: ${d.status} (expected ${expected})`);
        const r = ev.request!;
        if (key !== "health" && r.d1_shard !== undefined && r.d1_shard !== ctx.shard)
          wrongShard.push(`${d.id} ${r.path} on shard ${r.d1_shard}`);
        actual += r.d1_queries ?? 0;
        const pr = perRoute.get(key) ?? { requests: 0, actual: 0 };
        pr.requests++;
        pr.actual += r.d1_queries ?? 0;
        perRoute.set(key, pr);
      }
      if (wrongShard.length > 0) {
        pass = false;
        problems.push(
          `${ctx.label}: ${wrongShard.length} requests logged on another shard: ${wrongShard.slice(0, 3).join("; ")}`,
        );
      }
      // The client row is read again when the isolate's 15 s cache entry has expired: simulate it from the request times.
      let misses = 0;
      let fetchedAt = -Infinity;
      for (const d of [...done].sort((x, y) => x.at - y.at)) {
        if (!m.routes[d.key]?.bearer) continue;
        if (d.at - fetchedAt >= 15_000) {
          misses++;
          fetchedAt = d.at;
        }
      }
      const predicted = Object.entries(routed).reduce((s, [k, n]) => s + n * loggedQueries(m, k), 0) + misses;
      perShard.set(ctx.shard, { requests: done.length, actual, predicted, misses, routed });
    }
    // The local trace store is written after each invocation: give the last ones time, then count (and again once stopped).
    await sleep(3_000);
    const live = observabilityDirectoryReads(persistTo, startedAt - 1_000, endedAt + 2_000);
    await stopServer(child);
    child = undefined;
    const stopped = observabilityDirectoryReads(persistTo, startedAt - 1_000, endedAt + 2_000);
    const directory = stopped.clients >= live.clients ? stopped : live;
    const tokenRequests = [...perShard.values()].reduce((s, p) => s + (p.routed.token ?? 0), 0);
    const feedRequests = [...perShard.values()].reduce(
      (s, p) => s + (p.routed.feed_304 ?? 0) + (p.routed.feed_200 ?? 0) + (p.routed[FEED_CHANGED] ?? 0),
      0,
    );
    const minutes = Math.ceil((endedAt - startedAt) / 60_000);

    console.log(
      `\n2-shard check ${new Date(started).toISOString()}: ${CHECK_REQUESTS} requests per account, both accounts at once (2 in flight each), ${((endedAt - startedAt) / 1000).toFixed(1)} s`,
    );
    console.log(
      "\n| shard | account | requests | logged queries | predicted | difference | " +
        "queries/request | predicted | client re-reads in the prediction |",
    );
    console.log("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let totalActual = 0;
    let totalPredicted = 0;
    for (const { ctx } of results) {
      const p = perShard.get(ctx.shard)!;
      totalActual += p.actual;
      totalPredicted += p.predicted;
      const diff = (p.actual - p.predicted) / p.predicted;
      if (Math.abs(diff) > 0.1) pass = false;
      console.log(
        `| ${ctx.shard} | ${ctx.label} | ${p.requests} | ${p.actual} | ${p.predicted.toFixed(0)} | ${(diff * 100).toFixed(1)}% | ${(p.actual / p.requests).toFixed(2)} | ${(p.predicted / p.requests).toFixed(2)} | ${p.misses} |`,
      );
    }
    const share0 = perShard.get(0)!.actual / totalActual;
    const share0p = perShard.get(0)!.predicted / totalPredicted;
    if (Math.abs(share0 - share0p) > 0.05) pass = false;
    console.log(
      `\nSplit of the logged queries: shard 0 ${(share0 * 100).toFixed(1)}% (model ${(share0p * 100).toFixed(1)}%), shard 1 ${((1 - share0) * 100).toFixed(1)}% (model ${((1 - share0p) * 100).toFixed(1)}%).`,
    );
    console.log(
      `Directory reads in the home database (shard 0; outside the log lines, counted from wrangler's local traces): directory_clients ${directory.clients} ` +
        `(model: one per token request = ${tokenRequests}), directory_companies ${directory.companies} (model: at most one per company per isolate per minute: ` +
        `≤ ${2 * accounts.length * minutes} here, ${feedRequests} feed requests).`,
    );
    if (directory.clients !== tokenRequests) pass = false;
    if (directory.companies > 2 * accounts.length * minutes) pass = false;
    console.log("\nPer route, both accounts (the client re-reads fall on whichever request missed the cache):\n");
    console.log("| route | requests | logged queries | per request | model per request |");
    console.log("|---|---:|---:|---:|---:|");
    for (const [key, pr] of [...perRoute.entries()].sort((x, y) => y[1].requests - x[1].requests)) {
      const label =
        key === FEED_CHANGED
          ? "GET /v1/calendar/{token}.ics, If-None-Match, changed (200)"
          : (m.routes[key]?.label ?? key);
      console.log(
        `| ${label} | ${pr.requests} | ${pr.actual} | ${(pr.actual / pr.requests).toFixed(2)} | ${loggedQueries(m, key)} |`,
      );
    }
    for (const problem of problems) console.log(`problem: ${problem}`);
    console.log(
      `\n${pass ? "PASS" : "FAIL"}: logged queries per shard within 10% of the model, the split within 5 points, one directory read per token, ` +
        `directory company reads within the cache bound, no request on the other account's shard.`,
    );
    return pass ? 0 : 1;
  } finally {
    if (child) await stopServer(child);
    await scope.close();
  }
}

const code = await (CHECK ? checkShards() : measure()).catch((error: unknown) => {
  console.error(error);
  if (currentTap) console.error(`The server's last lines:\n${currentTap.tail.slice(-60).join("\n")}`);
  return 1;
});
process.exit(code);
