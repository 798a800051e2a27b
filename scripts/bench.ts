// `npm run bench [-- --duration 10 --connections 32 --rounds 1 --json [file]]` (`--help` lists all)
//
// Throughput benchmark of the read routes under `wrangler dev`, against a throw-away local D1:
//   1. fresh temp --persist-to dir: migrations, demo seed, 10,000 contacts for company 1 and
//      2,000 for company 2 (interleaved ids, so tenancy filtering has real work to do);
//   2. `wrangler dev --port P --persist-to DIR --log-level warn` with X_LOCAL_OBSERVABILITY=false;
//   3. a demo-owner token over HTTP, one existing contact id, one checked request per route;
//   4. autocannon: a mixed server warm-up, then per route a warm-up and the measured run,
//      /health first and last; every response must be 2xx;
//   5. a table of requests/s, p50, p99 and the ratio to GET /health of the same run, and
//      whether the targets are met;
//   6. the server is stopped and the temp dir removed, whatever happened.
// Exits non-zero on errors (non-2xx, socket errors, failed setup), not on missed targets.
// Quote ratios, not absolute numbers (docs/performance.md, /work/shared/perf-baselines.md).
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { ROOT, applyMigrations, ensureDevVars, optionValue, seedLocal, startDev, stopDev, wrangler } from "./lib/local.ts";

// ---------------------------------------------------------------------------------------------
// Options

const argv = process.argv.slice(2);
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(`Usage: npm run bench -- [options]
  --duration S       measured seconds per route (default 10)
  --connections N    concurrent connections (default 32)
  --warmup S         unmeasured seconds per route before its first measured run (default 2)
  --server-warmup S  unmeasured seconds of mixed load over all routes once the server is up (default 10)
  --rounds R         measure every route R times, interleaved; the table shows medians (default 1)
  --port P           wrangler dev port (default 8900; its inspector takes P+1)
  --json [FILE]      also write the results as JSON (default .bench/bench-<timestamp>.json)`);
  process.exit(0);
}
const KNOWN_FLAGS = ["--duration", "--connections", "--warmup", "--server-warmup", "--rounds", "--port", "--json"];
for (const arg of argv) {
  if (arg.startsWith("--") && !KNOWN_FLAGS.includes(arg.split("=")[0]!)) {
    console.error(`Unknown option ${arg} (see --help)`);
    process.exit(2);
  }
}

function numberOption(name: string, fallback: number, min: number): number {
  const raw = optionValue(argv, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min) {
    console.error(`${name} must be a number >= ${min} (got ${raw})`);
    process.exit(2);
  }
  return value;
}

const DURATION = numberOption("--duration", 10, 1);
const CONNECTIONS = Math.round(numberOption("--connections", 32, 1));
const WARMUP = numberOption("--warmup", 2, 0);
const SERVER_WARMUP = numberOption("--server-warmup", 10, 0);
const ROUNDS = Math.round(numberOption("--rounds", 1, 1));
const PORT = Math.round(numberOption("--port", 8900, 1));
const INSPECTOR_PORT = PORT + 1;

function jsonOutputPath(): string | undefined {
  const i = argv.findIndex((a) => a === "--json" || a.startsWith("--json="));
  if (i < 0) return undefined;
  const arg = argv[i]!;
  if (arg.startsWith("--json=")) return resolve(arg.slice("--json=".length));
  const next = argv[i + 1];
  if (next && !next.startsWith("--")) return resolve(next);
  return join(ROOT, ".bench", `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
}
const JSON_OUT = jsonOutputPath();

// ---------------------------------------------------------------------------------------------
// Data volume and targets

const COMPANY1_CONTACTS = 10_000;
const COMPANY2_CONTACTS = 2_000;
/** A common first-name prefix: Maria, Mark, Martin, Marta (and any word starting with it). */
const SEARCH_PREFIX = "mar";
const LIST_OFFSET = 5_000;
const TARGETS = { point: 0.5, list: 0.4, structure: 0.4 };
/** One statement stays well below D1's 100 KB statement limit. */
const MAX_STATEMENT_BYTES = 90_000;

const FIRST_NAMES = [
  "James", "Mary", "John", "Patricia", "Robert", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
  "William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen",
  "Maria", "Mark", "Martin", "Marta", "Anna", "Lukas", "Sofia", "Mateo", "Chloé", "Noah",
  "Emma", "Olivia", "Liam", "Zoë", "Hugo", "Léa", "Ines", "Yusuf", "Aiko", "Priya",
];
const LAST_NAMES = [
  "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Wilson",
  "Anderson", "Taylor", "Thomas", "Moore", "Jackson", "White", "Harris", "Clark", "Lewis", "Walker",
  "Young", "King", "Wright", "Lopez", "Hill", "Scott", "Green", "Adams", "Baker", "Nelson",
  "Müller", "Schmidt", "Dubois", "Rossi", "Nakamura", "Kowalski", "Novak", "Svensson", "O'Brien", "Fernández",
  "Patel", "Singh", "Kim", "Nguyen", "Silva", "Costa", "Jansen", "Berg", "Horvat", "Popescu",
];
const DOMAINS = ["example.com", "example.org", "mail.example.net", "corp.example", "demo.example"];
const COUNTRIES: Array<[iso: string, code: string]> = [
  ["US", "+1"], ["GB", "+44"], ["DE", "+49"], ["FR", "+33"], ["IT", "+39"], ["ES", "+34"], ["IN", "+91"], ["JP", "+81"],
];

/** Deterministic PRNG (mulberry32), so every run benchmarks the same data. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sqlText = (value: string) => `'${value.replace(/'/g, "''")}'`;
const asciiLower = (value: string) =>
  value.normalize("NFD").replace(/[\u0300-\u036f]/g, "").replace(/[^A-Za-z]/g, "").toLowerCase();

/**
 * The contacts as multi-row INSERTs with explicit ids 1..12,000: every sixth id belongs to
 * company 2, so company 1's rows are spread over the table as in a shared production table.
 */
function buildContactStatements(): { statements: string[]; company1Ids: number[]; company2Ids: number[] } {
  const random = prng(20261117);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const company1Ids: number[] = [];
  const company2Ids: number[] = [];
  const rows: string[] = [];
  const total = COMPANY1_CONTACTS + COMPANY2_CONTACTS;
  const start = Date.parse("2024-01-01T00:00:00Z");
  for (let id = 1; id <= total; id++) {
    const inCompany2 = company2Ids.length < COMPANY2_CONTACTS && (id % 6 === 0 || company1Ids.length >= COMPANY1_CONTACTS);
    const [companyId, deptId] = inCompany2 ? [2, 2] : [1, 1];
    (inCompany2 ? company2Ids : company1Ids).push(id);
    const first = pick(FIRST_NAMES);
    const last = pick(LAST_NAMES);
    const email = `${asciiLower(first)}.${asciiLower(last)}${id}@${pick(DOMAINS)}`;
    const [iso, code] = pick(COUNTRIES);
    const phone = String(Math.floor(200_000_000 + random() * 799_999_999));
    const created = new Date(start + id * 47 * 60_000).toISOString().slice(0, 19).replace("T", " ");
    rows.push(
      `(${id}, ${companyId}, ${deptId}, NULL, ${sqlText(first)}, ${sqlText(last)}, ${sqlText(email)}, ${sqlText(email.toLowerCase())}, ` +
        `${sqlText(code)}, ${sqlText(iso)}, ${sqlText(code)}, ${sqlText(phone)}, ${sqlText(created)}, ${sqlText(created)})`,
    );
  }
  const head =
    "INSERT INTO contacts (id, company_id, dept_id, group_id, first_name, last_name, email, email_key, country_code, iso, mobile_code, phone_number, created_at, updated_at) VALUES\n";
  const statements: string[] = [];
  let batch: string[] = [];
  let bytes = Buffer.byteLength(head);
  for (const row of rows) {
    const size = Buffer.byteLength(row) + 2;
    if (batch.length > 0 && bytes + size > MAX_STATEMENT_BYTES) {
      statements.push(head + batch.join(",\n"));
      batch = [];
      bytes = Buffer.byteLength(head);
    }
    batch.push(row);
    bytes += size;
  }
  if (batch.length > 0) statements.push(head + batch.join(",\n"));
  return { statements, company1Ids, company2Ids };
}

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, no bundled types): the part of its API used here.

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
  statusCodeStats: Record<string, { count: number }>;
  requests: { total: number; average: number };
  latency: { p50: number; p99: number; average: number; max: number };
}
interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
  timeout?: number;
  /** Cycled through by every connection. */
  requests?: Array<{ path: string }>;
}
type Autocannon = (options: AutocannonOptions) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

// ---------------------------------------------------------------------------------------------
// Run

interface RouteSpec {
  key: string;
  label: string;
  path: string;
  auth: boolean;
  target?: number;
}

interface RouteResult {
  key: string;
  label: string;
  path: string;
  requests: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  warmupNon2xx: number;
  warmupErrors: number;
  /** Share of the machine other processes used during the measured run (undefined off Linux). */
  otherCpu?: number;
  /** Share of the machine autocannon (this process) used during the measured run. */
  loadGeneratorCpu?: number;
  round: number;
  ratio?: number;
  target?: number;
}

/** One table row: a route over all its measured runs. */
interface RouteSummary {
  key: string;
  label: string;
  runs: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  non2xx: number;
  errors: number;
  otherCpu?: number;
  target?: number;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
const pct = (share: number) => `${(share * 100).toFixed(0)}%`;

function summarize(route: RouteSpec, runs: RouteResult[], override: { label?: string; ratio?: number } = {}): RouteSummary {
  const ratios = runs.map((r) => r.ratio ?? 0);
  const cpu = runs.map((r) => r.otherCpu).filter((x): x is number => x !== undefined);
  return {
    key: route.key,
    label: override.label ?? route.label,
    runs: runs.length,
    requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
    p50: median(runs.map((r) => r.p50)),
    p99: Math.max(...runs.map((r) => r.p99)),
    ratio: override.ratio ?? median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    non2xx: runs.reduce((n, r) => n + r.non2xx + r.warmupNon2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors + r.warmupErrors, 0),
    otherCpu: cpu.length ? Math.max(...cpu) : undefined,
    target: route.target,
  };
}

const log = (message: string) => console.log(`[bench] ${message}`);
const base = `http://127.0.0.1:${PORT}`;

function wranglerVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, "node_modules", "wrangler", "package.json"), "utf8")) as { version: string };
  return pkg.version;
}

async function getJson(path: string, token?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, body };
}

async function fetchToken(): Promise<string> {
  const res = await fetch(`${base}/v1/oauth/token`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ grant_type: "client_credentials", client_id: "demo-owner", client_secret: "demo-owner-secret" }),
  });
  const body = (await res.json()) as { access_token?: string };
  if (res.status !== 200 || !body.access_token) throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
  return body.access_token;
}

function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(`check failed: ${message}`);
}

/** One request per route before the load: correct answers, expected totals, tenancy. */
async function preflight(token: string, contactId: number, otherCompanyId: number): Promise<Record<string, unknown>> {
  const health = await getJson("/health");
  expect(health.status === 200, `/health answered ${health.status}`);
  const point = await getJson(`/v1/contacts/${contactId}`, token);
  expect(point.status === 200 && point.body?.data?.contact_id === contactId, `GET /v1/contacts/${contactId}: ${point.status}`);
  const foreign = await getJson(`/v1/contacts/${otherCompanyId}`, token);
  expect(foreign.status === 404, `company 2's contact ${otherCompanyId} must be 404 for company 1, got ${foreign.status}`);
  const list = await getJson("/v1/contacts?limit=50", token);
  expect(list.status === 200 && list.body?.data?.length === 50, `list: ${list.status}`);
  expect(list.body.meta.total === COMPANY1_CONTACTS, `list meta.total ${list.body.meta.total} != ${COMPANY1_CONTACTS}`);
  const search = await getJson(`/v1/contacts?limit=50&q=${SEARCH_PREFIX}`, token);
  expect(search.status === 200 && search.body?.data?.length === 50, `search: ${search.status}`);
  const offset = await getJson(`/v1/contacts?limit=50&offset=${LIST_OFFSET}`, token);
  expect(offset.status === 200 && offset.body?.data?.length === 50, `offset list: ${offset.status}`);
  const companies = await getJson("/v1/companies", token);
  const company1 = companies.body?.data?.find((c: { companyid: number }) => c.companyid === 1);
  expect(companies.status === 200 && company1?.contacts_used === COMPANY1_CONTACTS, `companies: ${companies.status}, contacts_used ${company1?.contacts_used}`);
  const departments = await getJson("/v1/departments", token);
  const general = departments.body?.data?.find((d: { isdefault: number }) => d.isdefault === 1);
  expect(departments.status === 200 && general?.contacts_used === COMPANY1_CONTACTS, `departments: ${departments.status}, contacts_used ${general?.contacts_used}`);
  return {
    listTotal: list.body.meta.total,
    searchTotal: search.body.meta.total,
    offsetFirstId: offset.body.data[0].contact_id,
  };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): how much of the machine went to processes other than this
// benchmark and its wrangler dev during a measurement. On a shared 2-core machine that is what
// makes one run differ from the next; a route measured while others took CPU is flagged.

interface CpuSample {
  busy: number;
  total: number;
  /** This process (autocannon runs in it) plus the dev server's process group. */
  ours: number;
  /** This process alone. */
  self: number;
}

function readProcStat(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** utime + stime (clock ticks) of this process and of every process in the dev server's group. */
function ourTicks(serverGroup: number | undefined): { ours: number; self: number } {
  let ticks = 0;
  let self = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readProcStat(`/proc/${entry}/stat`);
    if (!stat) continue;
    // Fields after "pid (comm)": state ppid pgrp ... utime(14) stime(15), counted from 1.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const pid = Number(entry);
    const pgrp = Number(fields[2]);
    if (pid === process.pid || (serverGroup !== undefined && pgrp === serverGroup)) {
      const used = Number(fields[11]) + Number(fields[12]);
      ticks += used;
      if (pid === process.pid) self = used;
    }
  }
  return { ours: ticks, self };
}

function cpuSample(serverGroup: number | undefined): CpuSample | undefined {
  const line = readProcStat("/proc/stat")?.split("\n")[0];
  if (!line?.startsWith("cpu ")) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait!, ...ourTicks(serverGroup) };
}

/** Share of the whole machine used by the load generator (this process) between two samples. */
function selfCpuShare(before: CpuSample | undefined, after: CpuSample | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return (after.self - before.self) / (after.total - before.total);
}

/** Share of the whole machine (all cores) used by other processes between two samples. */
function otherCpuShare(before: CpuSample | undefined, after: CpuSample | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  const others = after.busy - before.busy - (after.ours - before.ours);
  return Math.max(0, others) / (after.total - before.total);
}

/** Above this share of the machine taken by other processes, a route's numbers are suspect. */
const CONTENDED = 0.1;

async function measure(route: RouteSpec, token: string, serverGroup: number | undefined, warmup: boolean): Promise<RouteResult> {
  const options: AutocannonOptions = {
    url: base + route.path,
    connections: CONNECTIONS,
    duration: DURATION,
    timeout: 30,
    headers: route.auth ? { Authorization: `Bearer ${token}` } : {},
  };
  let warmNon2xx = 0;
  let warmErrors = 0;
  if (warmup && WARMUP > 0) {
    const warm = await autocannon({ ...options, duration: WARMUP });
    warmNon2xx = warm.non2xx;
    warmErrors = warm.errors;
    if (warm.non2xx > 0 || warm.errors > 0) log(`warm-up of ${route.label}: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
  }
  const before = cpuSample(serverGroup);
  const r = await autocannon(options);
  const after = cpuSample(serverGroup);
  const otherCpu = otherCpuShare(before, after);
  const loadGeneratorCpu = selfCpuShare(before, after);
  const statusCodes = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, Number(s.count)]));
  return {
    key: route.key,
    label: route.label,
    path: route.path,
    requests: r.requests.total,
    requestsPerSecond: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    statusCodes,
    warmupNon2xx: warmNon2xx,
    warmupErrors: warmErrors,
    otherCpu,
    loadGeneratorCpu,
    round: 0,
    target: route.target,
  };
}

function printTable(rows: RouteSummary[]): void {
  const header = ["route", "req/s", "p50 ms", "p99 ms", "ratio", "range", "non-2xx", "errors", "other CPU"];
  const cells = rows.map((r) => [
    r.label,
    r.requestsPerSecond.toFixed(0),
    r.p50.toFixed(0),
    r.p99.toFixed(0),
    r.ratio.toFixed(2),
    r.runs > 1 ? `${r.ratioMin.toFixed(2)}-${r.ratioMax.toFixed(2)}` : "",
    String(r.non2xx),
    String(r.errors),
    r.otherCpu === undefined ? "n/a" : `${pct(r.otherCpu)}${r.otherCpu > CONTENDED ? " !" : ""}`,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of cells) console.log(line(row));
}

/** Waits for the dev server's process group to go; SIGKILLs it after 10 s. */
async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  stopDev(child);
  const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 10_000))]);
  if (timedOut && child.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
    await exited;
  }
  // workerd may outlive its wrangler parent for a moment; make sure the group is empty.
  if (child.pid !== undefined) {
    for (let i = 0; i < 20 && groupAlive(child.pid); i++) await new Promise((r) => setTimeout(r, 250));
    if (groupAlive(child.pid)) {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const started = new Date();
  const persistTo = mkdtempSync(join(tmpdir(), "expiry-bench-"));
  const target = { persistTo };
  let child: ChildProcess | undefined;
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = true;
    log(`${signal}: stopping the server and removing ${persistTo}`);
    void (child ? stopServer(child) : Promise.resolve()).finally(() => {
      rmSync(persistTo, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    const version = wranglerVersion();
    const settings = {
      wrangler: version,
      node: process.version,
      devArgs: ["--port", String(PORT), "--persist-to", "<temp dir>", "--log-level", "warn", "--ip", "127.0.0.1", "--inspector-port", String(INSPECTOR_PORT)],
      env: { X_LOCAL_OBSERVABILITY: "false" },
      connections: CONNECTIONS,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      serverWarmupSeconds: SERVER_WARMUP,
      rounds: ROUNDS,
      data: { company1Contacts: COMPANY1_CONTACTS, company2Contacts: COMPANY2_CONTACTS, searchPrefix: SEARCH_PREFIX, listOffset: LIST_OFFSET },
    };
    log(`wrangler ${version}, Node ${process.version}; persist dir ${persistTo}`);
    log(
      `load: autocannon, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s measured per route, ${ROUNDS} round(s), ` +
        `after ${SERVER_WARMUP} s of server warm-up`,
    );
    const loadBefore = loadavg()[0]!;
    if (loadBefore > 0.5) log(`warning: 1-min load average is ${loadBefore.toFixed(2)} before starting; other work on this machine skews the numbers`);

    ensureDevVars();
    let t = Date.now();
    applyMigrations(target);
    log(`migrations applied (${((Date.now() - t) / 1000).toFixed(1)} s)`);

    t = Date.now();
    await seedLocal(target);
    log(`demo data seeded (${((Date.now() - t) / 1000).toFixed(1)} s)`);

    t = Date.now();
    const { statements, company1Ids, company2Ids } = buildContactStatements();
    // Room under the contact limits, then the contacts: one `wrangler d1 execute --file` call
    // (statements < 100 KB each), the file in the temp dir so that it goes with it.
    const sql = [
      `UPDATE companies SET contacts_limit = MAX(contacts_limit, ${COMPANY1_CONTACTS * 2}) WHERE id = 1`,
      `UPDATE companies SET contacts_limit = MAX(contacts_limit, ${COMPANY2_CONTACTS * 2}) WHERE id = 2`,
      ...statements,
    ];
    const sqlFile = join(persistTo, "bench-data.sql");
    writeFileSync(sqlFile, sql.map((s) => `${s.trim().replace(/;$/, "")};`).join("\n"));
    wrangler(["d1", "execute", "DB", "--local", "--persist-to", persistTo, "--file", sqlFile, "-y"], { quiet: true });
    const counts = JSON.parse(
      wrangler(
        ["d1", "execute", "DB", "--local", "--persist-to", persistTo, "--json", "-y", "--command",
          "SELECT id, contacts_used, contacts_limit, (SELECT COUNT(*) FROM contacts c WHERE c.company_id = companies.id) AS n FROM companies ORDER BY id"],
        { quiet: true },
      ),
    ) as Array<{ results: Array<{ id: number; contacts_used: number; contacts_limit: number; n: number }> }>;
    const companies = counts.flatMap((r) => r.results);
    log(
      `inserted ${COMPANY1_CONTACTS + COMPANY2_CONTACTS} contacts in ${statements.length} INSERTs ` +
        `(${((Date.now() - t) / 1000).toFixed(1)} s): ` +
        companies.map((c) => `company ${c.id}: ${c.n} rows, contacts_used ${c.contacts_used}/${c.contacts_limit}`).join("; "),
    );
    expect(companies.find((c) => c.id === 1)?.n === COMPANY1_CONTACTS, "company 1 contact count");
    expect(companies.find((c) => c.id === 2)?.n === COMPANY2_CONTACTS, "company 2 contact count");

    t = Date.now();
    child = await startDev(
      ["--port", String(PORT), "--persist-to", persistTo, "--log-level", "warn", "--ip", "127.0.0.1", "--inspector-port", String(INSPECTOR_PORT)],
      { port: PORT, env: { X_LOCAL_OBSERVABILITY: "false" } },
    );
    let serverOutput = "";
    child.stdout?.on("data", (chunk) => (serverOutput += chunk));
    child.stderr?.on("data", (chunk) => (serverOutput += chunk));
    log(`wrangler dev up on ${base} (${((Date.now() - t) / 1000).toFixed(1)} s): --log-level warn, X_LOCAL_OBSERVABILITY=false`);

    const token = await fetchToken();
    const listed = await getJson("/v1/contacts?limit=1&offset=4999", token);
    const contactId: number = listed.body?.data?.[0]?.contact_id;
    expect(Number.isInteger(contactId) && company1Ids.includes(contactId), `picked contact id ${contactId}`);
    const check = await preflight(token, contactId, company2Ids[Math.floor(company2Ids.length / 2)]!);
    log(`token for demo-owner; contact ${contactId}; preflight ok: ${JSON.stringify(check)}`);

    const health: RouteSpec = { key: "health", label: "GET /health", path: "/health", auth: false };
    const routes: RouteSpec[] = [
      { key: "point", label: `GET /v1/contacts/${contactId}`, path: `/v1/contacts/${contactId}`, auth: true, target: TARGETS.point },
      { key: "list", label: "GET /v1/contacts?limit=50", path: "/v1/contacts?limit=50", auth: true, target: TARGETS.list },
      { key: "search", label: `GET /v1/contacts?limit=50&q=${SEARCH_PREFIX}`, path: `/v1/contacts?limit=50&q=${SEARCH_PREFIX}`, auth: true },
      { key: "offset", label: `GET /v1/contacts?limit=50&offset=${LIST_OFFSET}`, path: `/v1/contacts?limit=50&offset=${LIST_OFFSET}`, auth: true },
      // Counters, not scans: the company holding 10,000 contacts lists as cheaply as an empty one.
      { key: "companies", label: "GET /v1/companies", path: "/v1/companies", auth: true, target: TARGETS.structure },
      { key: "departments", label: "GET /v1/departments", path: "/v1/departments", auth: true, target: TARGETS.structure },
    ];
    if (SERVER_WARMUP > 0) {
      // A fresh wrangler dev is slower for its first seconds under load (JIT in both workerd
      // processes); without this the first route measured, /health, tends to come out low.
      log(`server warm-up: ${SERVER_WARMUP} s of mixed load over all routes ...`);
      const warm = await autocannon({
        url: base,
        connections: CONNECTIONS,
        duration: SERVER_WARMUP,
        timeout: 30,
        headers: { Authorization: `Bearer ${token}` },
        requests: [health, ...routes].map((r) => ({ path: r.path })),
      });
      if (warm.non2xx > 0 || warm.errors > 0) throw new Error(`server warm-up: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
    }

    // Each round: /health, then every route; one more /health at the end. A route's ratio in a
    // round is against the mean of the /health runs just before and just after that round, so
    // drift during the run moves it little; with --rounds > 1 the table shows the median.
    const all: RouteResult[] = [];
    const run = async (route: RouteSpec, round: number, warmup: boolean): Promise<RouteResult> => {
      log(`${route.label}${ROUNDS > 1 ? ` (round ${round + 1})` : ""} ...`);
      const result = await measure(route, token, child!.pid, warmup);
      result.round = round;
      all.push(result);
      const cpu =
        result.otherCpu === undefined
          ? ""
          : `; machine CPU: other processes ${pct(result.otherCpu)}, autocannon ${pct(result.loadGeneratorCpu ?? 0)}`;
      log(`  ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}${cpu}`);
      return result;
    };
    const healthRuns: RouteResult[] = [];
    const roundResults: RouteResult[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      healthRuns.push(await run(health, round, round === 0));
      const results: RouteResult[] = [];
      for (const route of routes) results.push(await run(route, round, round === 0));
      roundResults.push(results);
    }
    healthRuns.push(await run({ ...health, label: "GET /health (closing)" }, ROUNDS, false));
    for (let round = 0; round < ROUNDS; round++) {
      const baseline = (healthRuns[round]!.requestsPerSecond + healthRuns[round + 1]!.requestsPerSecond) / 2;
      for (const r of roundResults[round]!) r.ratio = r.requestsPerSecond / baseline;
    }
    const healthMean = mean(healthRuns.map((r) => r.requestsPerSecond));
    for (const r of healthRuns) r.ratio = r.requestsPerSecond / healthMean;
    const healthSpread = Math.max(...healthRuns.map((r) => r.requestsPerSecond)) / Math.min(...healthRuns.map((r) => r.requestsPerSecond)) - 1;
    const summary: RouteSummary[] = [summarize(health, healthRuns, { label: `GET /health (${healthRuns.length} runs)`, ratio: 1 })];
    for (const [i, route] of routes.entries()) summary.push(summarize(route, roundResults.map((rs) => rs[i]!)));
    const loadAfter = loadavg()[0]!;

    console.log("");
    console.log(
      `Results ${started.toISOString()} — wrangler ${version} dev, --log-level warn, X_LOCAL_OBSERVABILITY=false; ` +
        `autocannon ${CONNECTIONS} connections, ${DURATION} s per route per round, ${ROUNDS} round(s), ` +
        `${WARMUP} s warm-up per route, ${SERVER_WARMUP} s server warm-up; ${COMPANY1_CONTACTS} + ${COMPANY2_CONTACTS} contacts`,
    );
    console.log(
      `ratio = route req/s / mean of the GET /health runs around its round (all /health runs: ${healthRuns.map((r) => r.requestsPerSecond.toFixed(0)).join(", ")} req/s, ` +
        `spread ${pct(healthSpread)}); 1-min load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
    );
    console.log(
      `${ROUNDS > 1 ? "req/s: mean over rounds; p50: median; p99: max; ratio: median, range min-max. " : ""}` +
        "other CPU: the largest share of the machine that processes other than this benchmark and its wrangler dev used during a measured run of the route",
    );
    console.log("");
    printTable(summary);
    console.log("");

    const targetResults = summary
      .filter((r) => r.target !== undefined)
      .map((r) => ({ route: r.label, target: r.target!, ratio: r.ratio, met: r.ratio >= r.target! }));
    for (const t of targetResults) {
      console.log(`target ${t.route}: ratio ${t.ratio.toFixed(2)} ${t.met ? ">=" : "<"} ${t.target.toFixed(2)} -> ${t.met ? "MET" : "MISSED"}`);
    }
    const contended = all.filter((r) => r.otherCpu !== undefined && r.otherCpu > CONTENDED);
    const clean = contended.length === 0 && healthSpread <= 0.1;
    if (!clean) {
      console.log(
        `note: not a clean run: ${contended.length} measurement(s) with other processes above ${pct(CONTENDED)} of the CPU; ` +
          `/health runs spread ${pct(healthSpread)} (perf-baselines.md: 1-8% on one server). ` +
          `Ratios are uncertain by about that much; ${ROUNDS === 1 ? "use --rounds 3 or " : ""}run again on an idle machine.`,
      );
    }

    const failed = all.filter((r) => r.non2xx + r.warmupNon2xx > 0 || r.errors + r.warmupErrors > 0 || r.requests === 0);
    for (const r of failed) {
      console.error(
        `ERROR ${r.label} (round ${r.round + 1}): ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors, ` +
          `${r.timeouts} timeouts; warm-up: ${r.warmupNon2xx} non-2xx, ${r.warmupErrors} errors`,
      );
    }
    if (failed.length > 0 && serverOutput.trim()) console.error(`wrangler dev output:\n${serverOutput.slice(-4000)}`);

    if (JSON_OUT) {
      mkdirSync(dirname(JSON_OUT), { recursive: true });
      const report = {
        date: started.toISOString(),
        settings,
        loadAverage: { before: loadBefore, after: loadAfter },
        preflight: check,
        healthSpread,
        clean,
        summary,
        targets: targetResults,
        measurements: all,
      };
      writeFileSync(JSON_OUT, JSON.stringify(report, null, 2) + "\n");
      log(`results written to ${JSON_OUT}`);
    }
    return failed.length > 0 ? 1 : 0;
  } finally {
    if (!interrupted) {
      if (child) await stopServer(child);
      rmSync(persistTo, { recursive: true, force: true });
      log("server stopped, temp dir removed");
    }
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[bench] failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
