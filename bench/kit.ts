// Shared by the benchmarks (bench/bench.ts and the other bench/*.ts suites): seeding SQL, autocannon,
// HTTP helpers, the CPU accounting of a measured run, and stopping the dev server.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, applyMigrations, ensureDevVars, seedLocal, startDev, stopDev } from "../scripts/lib/local.ts";
import { procStats, readProcFile } from "../scripts/lib/procs.ts";

// ---------------------------------------------------------------------------------------------
// Seeding SQL

/** One statement stays well below D1's 100 KB statement limit. */
export const MAX_STATEMENT_BYTES = 90_000;

/** Deterministic PRNG (mulberry32), so every run benchmarks the same data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Resolves after `ms` (at once for a negative wait: "until an instant" that has passed). */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

export const sqlText = (value: string) => `'${value.replace(/'/g, "''")}'`;

/** `head` + as many `(...)` rows per statement as fit under MAX_STATEMENT_BYTES. */
export function multiRowInserts(head: string, rows: string[]): string[] {
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
  return statements;
}

// ---------------------------------------------------------------------------------------------
// autocannon (CommonJS, no bundled types): the part of its API used here.

export interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  "2xx": number;
  statusCodeStats: Record<string, { count: number }>;
  requests: { total: number; average: number };
  latency: { p50: number; p99: number; average: number; max: number };
}
export interface AutocannonOptions {
  url: string;
  connections: number;
  duration: number;
  method?: "GET" | "POST" | "PATCH";
  headers?: Record<string, string>;
  body?: string;
  /** Replace `[<id>]` in the body with a fresh id on every request. */
  idReplacement?: boolean;
  timeout?: number;
  /** Cycled through by every connection (each from the first). */
  requests?: AutocannonRequest[];
  /** Run the load from this many worker threads (off this process's event loop). */
  workers?: number;
  /** Stop after this many requests (before `duration` runs out). */
  amount?: number;
  /** Requests per second over all connections (open loop); unset: as fast as the connections go. */
  overallRate?: number;
}
export interface AutocannonRequest {
  path?: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** Called before each send of this request; returns what to send. */
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest;
}
/** autocannon's run: a promise of its result, and an emitter of each response as it comes. */
export type AutocannonRun = Promise<AutocannonResult> & {
  /** `ms`: the response time from process.hrtime, fractional (the result's latency histogram keeps whole ms). */
  on(event: "response", listener: (client: unknown, statusCode: number, bytes: number, ms: number) => void): unknown;
};
export type Autocannon = (options: AutocannonOptions) => AutocannonRun;

/**
 * `requests` for autocannon that send `entries` in turn across all connections together, so each
 * entry gets an equal share of the load (a plain `requests` array is cycled by every connection
 * from its first entry, and a short run never reaches the last ones).
 */
export function roundRobin(entries: Array<{ path: string; headers?: Record<string, string> }>): AutocannonRequest[] {
  let next = 0;
  return [
    {
      setupRequest: (request) => {
        const entry = entries[next++ % entries.length]!;
        return { ...request, path: entry.path, headers: { ...request.headers, ...entry.headers } };
      },
    },
  ];
}
export const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

// ---------------------------------------------------------------------------------------------
// Runs

export interface RouteSpec {
  key: string;
  label: string;
  path: string;
  /** Bearer token; none for /health. */
  token?: string;
  /** POST with a JSON body; `[<id>]` in it (and in `headers`) becomes a fresh id per request. */
  post?: string;
  /** The method that sends `post` (default POST). */
  method?: "POST" | "PATCH";
  /** More request headers, e.g. an `Idempotency-Key`. */
  headers?: Record<string, string>;
  /** Sent in turn across all connections (`roundRobin`) instead of `path` and `token` (which `drain` still uses). */
  requests?: Array<{ path: string; headers: Record<string, string> }>;
  target?: number;
}

export interface RouteResult {
  key: string;
  label: string;
  path: string;
  requests: number;
  requestsPerSecond: number;
  /** autocannon's latency percentiles: whole milliseconds. */
  p50: number;
  p99: number;
  /** The same from every response's own time (sub-millisecond; `percentile`). */
  precise: { p50: number; p90: number; p99: number };
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
  /** Seconds the server then needed to finish the requests left over from the run (see drain). */
  drainSeconds: number;
  round: number;
  ratio?: number;
  target?: number;
}

export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
export function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
/** The nearest-rank percentile `p` (0..100) of `xs` (NaN for none). */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = Float64Array.from(xs).sort();
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
export const pct = (share: number) => `${(share * 100).toFixed(0)}%`;

export function wranglerVersion(): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, "node_modules", "wrangler", "package.json"), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

/** GET requests and tokens against the dev server at `base` (e.g. http://127.0.0.1:8900). */
export function httpClient(base: string) {
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

  async function fetchToken(clientId = "demo-owner", clientSecret = "demo-owner-secret"): Promise<string> {
    const res = await fetch(`${base}/v1/oauth/token`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret }),
    });
    const body = (await res.json()) as { access_token?: string };
    if (res.status !== 200 || !body.access_token)
      throw new Error(`token request failed: ${res.status} ${JSON.stringify(body)}`);
    return body.access_token;
  }
  async function postJson(path: string, token: string, payload: unknown): Promise<{ status: number; body: any }> {
    const res = await fetch(base + path, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify(payload),
    });
    const text = await res.text();
    try {
      return { status: res.status, body: JSON.parse(text) };
    } catch {
      return { status: res.status, body: text };
    }
  }
  return { getJson, postJson, fetchToken };
}

export function expect(condition: boolean, message: string): void {
  if (!condition) throw new Error(`check failed: ${message}`);
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): how much of the machine went to processes other than this
// benchmark and its wrangler dev during a measurement. On a shared 2-core machine that is what
// makes one run differ from the next; a route measured while others took CPU is flagged.

export interface CpuSample {
  busy: number;
  total: number;
  /** This process (autocannon runs in it) plus the dev server's process group. */
  ours: number;
  /** This process alone. */
  self: number;
}

/** utime + stime (clock ticks) of this process and of every process in the dev server's group. */
function ourTicks(serverGroup: number | undefined): { ours: number; self: number } {
  let ticks = 0;
  let self = 0;
  for (const { pid, fields } of procStats()) {
    if (pid === process.pid || (serverGroup !== undefined && Number(fields[2]) === serverGroup)) {
      const used = Number(fields[11]) + Number(fields[12]);
      ticks += used;
      if (pid === process.pid) self = used;
    }
  }
  return { ours: ticks, self };
}

export function cpuSample(serverGroup: number | undefined): CpuSample | undefined {
  const line = readProcFile("/proc/stat")?.split("\n")[0];
  if (!line?.startsWith("cpu ")) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1, 9)
    .map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy, total: busy + idle! + iowait!, ...ourTicks(serverGroup) };
}

/** Share of the whole machine used by the load generator (this process) between two samples. */
export function selfCpuShare(before: CpuSample | undefined, after: CpuSample | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return (after.self - before.self) / (after.total - before.total);
}

/** Share of the whole machine (all cores) used by other processes between two samples. */
export function otherCpuShare(before: CpuSample | undefined, after: CpuSample | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  const others = after.busy - before.busy - (after.ours - before.ours);
  return Math.max(0, others) / (after.total - before.total);
}

/**
 * CPU seconds used so far by the dev server's processes, by kind: `wrangler` (its Node process,
 * which receives the Worker's console output) and `workerd` (the runtime). Assumes 100 ticks/s.
 */
export function serverCpu(group: number | undefined): { wrangler: number; workerd: number } {
  const cpu = { wrangler: 0, workerd: 0 };
  if (group === undefined) return cpu;
  for (const { pid, fields } of procStats()) {
    if (Number(fields[2]) !== group) continue;
    const comm = readProcFile(`/proc/${pid}/comm`)?.trim() ?? "";
    const kind = comm === "node" ? "wrangler" : comm.startsWith("workerd") ? "workerd" : undefined;
    if (kind) cpu[kind] += (Number(fields[11]) + Number(fields[12])) / 100;
  }
  return cpu;
}

/** Above this share of the machine taken by other processes, a route's numbers are suspect. */
export const CONTENDED = 0.1;

export function requestHeaders(route: RouteSpec): Record<string, string> {
  const headers: Record<string, string> = route.token ? { Authorization: `Bearer ${route.token}` } : {};
  if (route.post !== undefined) headers["Content-Type"] = "application/json";
  return { ...headers, ...route.headers };
}

/** How `measure` loads the server: autocannon against `base`, `duration` s measured after `warmup` s. */
export interface MeasureSettings {
  base: string;
  connections: number;
  duration: number;
  warmup: number;
  log: (message: string) => void;
}

/** `measure(route, serverGroup, warmup)`: one autocannon run of a route (after its warm-up), with the CPU others used meanwhile. */
export function measurer(settings: MeasureSettings) {
  /**
   * Waits until the server has worked off what a run left behind: when autocannon stops, up to
   * `--connections` requests are still queued in wrangler dev, and for a route that takes long
   * they hold local D1 (and with it every route, /health included) for seconds, which would be
   * charged to the next route measured. One request of the route itself (GET /health after a
   * POST) answers only after them.
   */
  async function drain(route: RouteSpec): Promise<number> {
    const t = Date.now();
    const res = await fetch(settings.base + (route.post === undefined ? route.path : "/health"), {
      headers: route.token ? { Authorization: `Bearer ${route.token}` } : {},
      signal: AbortSignal.timeout(180_000),
    });
    await res.arrayBuffer();
    return (Date.now() - t) / 1000;
  }

  async function measure(route: RouteSpec, serverGroup: number | undefined, warmup: boolean): Promise<RouteResult> {
    const options: AutocannonOptions = {
      url: settings.base + (route.requests ? "" : route.path),
      connections: settings.connections,
      duration: settings.duration,
      timeout: 30,
      headers: requestHeaders(route),
      ...(route.requests ? { requests: roundRobin(route.requests) } : {}),
      ...(route.post !== undefined ? { method: route.method ?? "POST", body: route.post, idReplacement: true } : {}),
    };
    let warmNon2xx = 0;
    let warmErrors = 0;
    if (warmup && settings.warmup > 0) {
      const warm = await autocannon({ ...options, duration: settings.warmup });
      warmNon2xx = warm.non2xx;
      warmErrors = warm.errors;
      if (warm.non2xx > 0 || warm.errors > 0)
        settings.log(`warm-up of ${route.label}: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
      await drain(route);
    }
    const before = cpuSample(serverGroup);
    const times: number[] = [];
    const run = autocannon(options);
    run.on("response", (_client, _status, _bytes, ms) => times.push(ms));
    const r = await run;
    const after = cpuSample(serverGroup);
    const drainSeconds = await drain(route);
    const otherCpu = otherCpuShare(before, after);
    const loadGeneratorCpu = selfCpuShare(before, after);
    const statusCodes = Object.fromEntries(
      Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, Number(s.count)]),
    );
    return {
      key: route.key,
      label: route.label,
      path: route.path,
      requests: r.requests.total,
      requestsPerSecond: r.requests.total / r.duration,
      p50: r.latency.p50,
      p99: r.latency.p99,
      precise: { p50: percentile(times, 50), p90: percentile(times, 90), p99: percentile(times, 99) },
      non2xx: r.non2xx,
      errors: r.errors,
      timeouts: r.timeouts,
      statusCodes,
      warmupNon2xx: warmNon2xx,
      warmupErrors: warmErrors,
      otherCpu,
      loadGeneratorCpu,
      drainSeconds,
      round: 0,
      target: route.target,
    };
  }
  return { measure, drain };
}

/**
 * `wrangler dev` as the benches run it: on `port` (its inspector on port + 1), loopback only, state
 * in `persistTo`, warnings only, local observability off; `vars` are more arguments (`--var K:V`).
 */
export function startBenchServer(port: number, persistTo: string, vars: string[]): Promise<ChildProcess> {
  return startDev(
    [
      "--port",
      String(port),
      "--persist-to",
      persistTo,
      "--log-level",
      "warn",
      "--ip",
      "127.0.0.1",
      "--inspector-port",
      String(port + 1),
      ...vars,
    ],
    { port, env: { X_LOCAL_OBSERVABILITY: "false" } },
  );
}

/**
 * A throw-away `--persist-to` dir and the dev server started on it (`setServer`): `close()` stops the
 * server and removes the dir, and so does Ctrl-C (exit code 130).
 */
export function tempServerScope(prefix: string, log: (message: string) => void) {
  const persistTo = mkdtempSync(join(tmpdir(), prefix));
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
  return {
    persistTo,
    setServer(server: ChildProcess) {
      child = server;
    },
    async close() {
      if (interrupted) return;
      if (child) await stopServer(child);
      rmSync(persistTo, { recursive: true, force: true });
      log("server stopped, temp dir removed");
    },
  };
}

/** Waits for the dev server's process group to go; SIGKILLs it after 10 s. */
export async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  stopDev(child);
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), 10_000)),
  ]);
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

/**
 * The common start of a bench set: logs the versions and the 1-min load average (and warns above
 * 0.5), then .dev.vars, the migrations and the demo seed in `persistTo`. Returns that load average.
 */
export async function prepareBenchState(persistTo: string, log: (message: string) => void): Promise<number> {
  const loadBefore = loadavg()[0]!;
  log(`wrangler ${wranglerVersion()}, Node ${process.version}; 1-min load average ${loadBefore.toFixed(2)}`);
  if (loadBefore > 0.5)
    log(`warning: load average ${loadBefore.toFixed(2)} before starting; other work on this machine skews the numbers`);
  ensureDevVars();
  applyMigrations({ persistTo });
  await seedLocal({ persistTo });
  return loadBefore;
}

/** Prints rows under a header: the first `leftAligned` columns left-aligned, the others right-aligned. */
export function printColumns(header: string[], cells: string[][], leftAligned = 1): void {
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    row.map((c, i) => (i < leftAligned ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of cells) console.log(line(row));
}

/** What a set run on its own (`--only reminders`, `--only limits`, …) is given; each reads what it needs. */
export interface SuiteOptions {
  port: number;
  connections: number;
  /** Measured seconds of each autocannon run. */
  duration: number;
  warmup: number;
  serverWarmup: number;
  rounds: number;
  json?: string;
}

/**
 * What every set starts with: its base URL on `options.port`, a log line prefixed with the set's
 * name and the seconds since it began, the HTTP helpers, `measure` (autocannon with the set's
 * connections, duration and warm-up) and the scope of its throw-away server.
 */
export function benchSet(name: string, options: Pick<SuiteOptions, "port" | "connections" | "duration" | "warmup">) {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const log = (message: string) =>
    console.log(`[bench:${name} +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const { measure } = measurer({
    base,
    connections: options.connections,
    duration: options.duration,
    warmup: options.warmup,
    log,
  });
  return { started, base, log, measure, ...httpClient(base), scope: tempServerScope(`expiry-bench-${name}-`, log) };
}
