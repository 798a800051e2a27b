// `npm run bench -- --only reminders [--connections 32 --duration 10 --rounds 1 --port 8920 --json [file]]`
//
// Benchmark of the reminder engine (docs/reminders.md) under `wrangler dev`, against a throw-away
// local D1 (about 13 minutes with the engine of 2026-11-21, most of it in steps 4 and 7: see
// docs/performance.md, Reminders):
//   1. fresh temp --persist-to dir: migrations, demo seed, then raw SQL in one `wrangler d1 execute
//      --file`: 20,000 items for company 1 (dates 60-400 days ahead, the company's default sequence,
//      schedule_epoch 1; the item triggers write their reminder_sync outbox rows), and 30 "light"
//      companies (ids 101-130, six time zones, one API client each);
//   2. `wrangler dev --port P --persist-to DIR --log-level warn --var RATE_LIMITS:off` with X_LOCAL_OBSERVABILITY=false;
//   3. light run, set up first: per light company one item and one reminder at each of the next
//      three minute boundaries (local date and hour in its zone);
//   4. queue 100,000: the cron sweep (GET /cdn-cgi/local/scheduled, which runs `scheduled()` with
//      the real time) replays outbox rows older than 30 s; it is called back to back until a sweep
//      finds nothing, then D1 (read by wrangler) must show no pending row, and 100 sampled items
//      must list their 5 queued reminders (GET /v1/items/{id}/reminders);
//   5. `GET /v1/items/{id}` on that company (100,000 queued) against `GET /health`, autocannon as in
//      bench/bench.ts (shared code in bench/kit.ts);
//   6. 5,000 reminders due in one minute T: 50 contacts, 100 items (half with a contact, no
//      sequence), 50 reminders each through POST /v1/items/{id}/reminders (T is chosen from the
//      measured POST rate so that the creation ends before it);
//   7. POST /v1/items x 10,000 (--connections at a time) on company 1, each item queueing its
//      sequence inline, between two 5 s runs of GET /health;
//   8. at T, GET /v1/reminders/triggered?limit=1 until the newest entry is the highest reminder id
//      created: fire duration = its sent_at - T; the sent_at of all 5,000 from the items' lists.
// Load around a fire instant would make it late for reasons of its own, so every load above
// (sweeps, POSTs, autocannon runs) pauses from 5 s before a light boundary until 4 s after it, and
// from 5 s before T until the 5,000 have fired and been delivered; the rates count busy time only.
// The server is stopped and the temp dir removed, whatever happened. Exits non-zero on errors
// (a non-2xx, a failed check, a deferred sync in the server log), not on missed targets.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import { hashClientSecret } from "../src/auth/secret-hash.ts";
import {
  CONTENDED,
  autocannon,
  cpuSample,
  expect,
  median,
  multiRowInserts,
  otherCpuShare,
  pct,
  printColumns,
  prng,
  requestHeaders,
  sqlText,
  wranglerVersion,
  type CpuSample,
  type RouteResult,
  type RouteSpec,
  type SuiteOptions,
  sleep,
  benchSet,
} from "./kit.ts";
import { applyMigrations, ensureDevVars, executeSql, queryRows, seedLocal, startDev } from "../scripts/lib/local.ts";

export type ReminderBenchOptions = SuiteOptions;

// ---------------------------------------------------------------------------------------------
// Volumes and targets

const COMPANY = 1;
const RAW_ITEMS = 20_000;
const API_ITEMS = 10_000;
const FIRE_ITEMS = 100;
const FIRE_PER_ITEM = 50;
const FIRE_TOTAL = FIRE_ITEMS * FIRE_PER_ITEM;
/** The first half of the fire items get a contact (real e-mails through the local send_email simulation). */
const FIRE_CONTACTS = FIRE_ITEMS / 2;
const LIGHT_FIRST_ID = 101;
const LIGHT_COMPANIES = 30;
const LIGHT_BOUNDARIES = 3;
const LIGHT_ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/New_York",
  "Asia/Kolkata",
  "Asia/Kathmandu",
  "Australia/Adelaide",
];
const SAMPLES = 100;
const TARGETS = { fireSeconds: 10, pointRatio: 0.5, lightP99Seconds: 1 };
/** The sweep replays outbox rows older than this (src/scheduled.ts SYNC_GRACE_SECONDS), plus 1 s. */
const SYNC_GRACE_MS = 31_000;
/** Load stops this long before a fire instant... */
const QUIET_LEAD_MS = 5_000;
/** ...and resumes this long after a light boundary (the 5,000 end their window themselves). */
const LIGHT_QUIET_AFTER_MS = 4_000;
/** A request started this close to a quiet window could still be running in it. */
const REQUEST_ALLOWANCE_MS = 1_500;
const FIRE_WAIT_MS = 120_000;

const MINUTE = 60_000;
const DAY = 86_400_000;
const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const nextMinute = (ms: number) => Math.ceil(ms / MINUTE) * MINUTE;
const seconds = (ms: number) => ms / 1000;
const fmt = (n: number, digits = 0) =>
  n.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** Nearest-rank percentile of a list of numbers. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? NaN;
}
interface Spread {
  n: number;
  p50: number;
  p99: number;
  max: number;
}
const spread = (values: number[]): Spread => ({
  n: values.length,
  p50: percentile(values, 0.5),
  p99: percentile(values, 0.99),
  max: Math.max(...values),
});
const spreadText = (s: Spread, unit = "s") =>
  `p50 ${s.p50.toFixed(3)} ${unit}, p99 ${s.p99.toFixed(3)} ${unit}, max ${s.max.toFixed(3)} ${unit} (n = ${s.n})`;

/** The local date and HH:MM of an instant in an IANA zone. */
function localParts(ms: number, zone: string): { date: string; hour: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(ms)
      .map((p) => [p.type, p.value]),
  );
  return { date: `${parts.year}-${parts.month}-${parts.day}`, hour: `${parts.hour}:${parts.minute}` };
}

// ---------------------------------------------------------------------------------------------
// Quiet windows: no load from 5 s before a fire instant until its end.

interface QuietWindow {
  label: string;
  at: number;
  /** Infinity until the fire it protects is over. */
  end: number;
}

/** Drives requests in a pool, pausing for quiet windows; busy time is the time with a request in flight. */
class LoadGate {
  readonly windows: QuietWindow[] = [];

  /** Resolves once something expected to take `expectedMs` can start without reaching a quiet window. */
  async clear(expectedMs: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      const window = this.windows.find((w) => now + expectedMs > w.at - QUIET_LEAD_MS && now < w.end);
      if (!window) return;
      await sleep(Math.min(250, window.end - now));
    }
  }

  /** `count` tasks, `concurrency` at a time; a thrown task is a failure, the others go on. */
  async pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<PoolResult> {
    let next = 0;
    let inFlight = 0;
    let since = 0;
    let busyMs = 0;
    const latencies: number[] = [];
    const failures: string[] = [];
    const started = Date.now();
    const worker = async () => {
      while (next < count) {
        const i = next++;
        await this.clear(REQUEST_ALLOWANCE_MS);
        if (inFlight++ === 0) since = Date.now();
        const t = Date.now();
        try {
          await task(i);
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        } finally {
          latencies.push(Date.now() - t);
          if (--inFlight === 0) busyMs += Date.now() - since;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    return {
      count,
      wallMs: Date.now() - started,
      busyMs,
      latencyMs: { p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) },
      failures,
    };
  }
}

interface PoolResult {
  count: number;
  wallMs: number;
  busyMs: number;
  latencyMs: { p50: number; p99: number };
  failures: string[];
}

function expectPool(what: string, result: PoolResult): void {
  expect(
    result.failures.length === 0,
    `${what}: ${result.failures.length} of ${result.count} failed; first: ${result.failures.slice(0, 3).join(" | ")}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Seed data

interface Step {
  period: number;
  unit: string;
  type: number;
}

function buildSeedStatements(today: number): string[] {
  const random = prng(20261121);
  const statements = [
    `UPDATE accounts SET max_documents = 1000000, max_companies = ${LIGHT_COMPANIES + 10} WHERE id = 1`,
    `UPDATE companies SET documents_limit = 1000000 WHERE id = ${COMPANY}`,
  ];
  const rows: string[] = [];
  for (let id = 1; id <= RAW_ITEMS; id++) {
    const expiry = isoDay(today + (60 + Math.floor(random() * 341)) * DAY);
    rows.push(`(${id}, ${COMPANY}, 1, ${sqlText(`Sweep-queued item ${id}`)}, 'exp', '${expiry}', '${expiry}', 1, 1)`);
  }
  statements.push(
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, title, item_type, expiry_date, " +
        "reminder_anchor, schedule_epoch, created_by) VALUES\n",
      rows,
    ),
    // The default sequence (the companies trigger made it); setting seq_id does not touch the outbox rows the inserts wrote.
    `UPDATE items SET seq_id = (SELECT s.id FROM reminder_sequences s WHERE s.company_id = ${COMPANY} AND s.is_default = 1) WHERE company_id = ${COMPANY} AND id <= ${RAW_ITEMS}`,
  );
  const companies: string[] = [];
  const departments: string[] = [];
  for (let i = 0; i < LIGHT_COMPANIES; i++) {
    const id = LIGHT_FIRST_ID + i;
    const zone = LIGHT_ZONES[i % LIGHT_ZONES.length]!;
    companies.push(
      `(${id}, 1, ${sqlText(`Light ${id}`)}, 0, 1000, 1000, 1024, ${sqlText(JSON.stringify({ timezone: zone, date_format: "YYYY-MM-DD" }))})`,
    );
    departments.push(`(${id}, 'General', 'general', 1)`);
  }
  statements.push(
    `INSERT INTO companies (id, account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb, settings) VALUES\n${companies.join(",\n")}`,
    `INSERT INTO departments (company_id, name, name_key, is_default) VALUES\n${departments.join(",\n")}`,
  );
  return statements;
}

const lightClient = (companyId: number) => ({
  id: `bench-light-${companyId}`,
  secret: `bench-light-${companyId}-secret`,
});

async function lightClientStatements(): Promise<string[]> {
  const rows: string[] = [];
  for (let i = 0; i < LIGHT_COMPANIES; i++) {
    const companyId = LIGHT_FIRST_ID + i;
    const client = lightClient(companyId);
    const salt = `seed-${client.id}`;
    rows.push(
      `(${sqlText(client.id)}, 'bench: light company', ${sqlText(await hashClientSecret(client.secret, salt))}, ${sqlText(salt)}, 1, ${companyId}, 1, '*', 1)`,
    );
  }
  return [
    `INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, company_id, user_id, scopes, active) VALUES\n${rows.join(",\n")}`,
  ];
}

// ---------------------------------------------------------------------------------------------
// Run

interface ReminderView {
  reminder_id: number;
  state: string;
  origin: string;
  due_at: string;
  sent_at: string | null;
  deliveries: Array<{ channel: string; state: string; delivered_at: string | null }>;
}

export async function runReminderBench(options: ReminderBenchOptions): Promise<number> {
  const { started, base, log, measure, scope, getJson, postJson, fetchToken } = benchSet("reminders", options);
  const gate = new LoadGate();
  const { persistTo } = scope;
  const target = { persistTo };
  let child: ChildProcess | undefined;
  let serverOutput = "";

  /** Share of the machine other processes used since `from` (undefined off Linux). */
  const otherCpuSince = (from: CpuSample | undefined) => otherCpuShare(from, cpuSample(child?.pid));
  const cpuNote = (share: number | undefined) =>
    share === undefined ? "" : `; other processes used ${pct(share)} of the machine${share > CONTENDED ? " (!)" : ""}`;

  try {
    const version = wranglerVersion();
    const loadBefore = loadavg()[0]!;
    log(
      `wrangler ${version}, Node ${process.version}; persist dir ${persistTo}; 1-min load average ${loadBefore.toFixed(2)}`,
    );
    if (loadBefore > 0.5)
      log(
        `warning: load average ${loadBefore.toFixed(2)} before starting; other work on this machine skews the numbers`,
      );

    // ---- 1. data
    ensureDevVars();
    let t = Date.now();
    applyMigrations(target);
    await seedLocal(target);
    log(`migrations and demo seed (${seconds(Date.now() - t).toFixed(1)} s)`);
    t = Date.now();
    const today = Date.parse(`${isoDay(Date.now())}T00:00:00Z`);
    executeSql(target, [...buildSeedStatements(today), ...(await lightClientStatements())]);
    const insertedAt = Date.now();
    const [seeded] = queryRows<{ items: number; outbox: number; pending: number; with_seq: number; steps: string }>(
      target,
      `SELECT (SELECT count(*) FROM items WHERE company_id = ${COMPANY}) AS items,
         (SELECT count(*) FROM reminder_sync WHERE company_id = ${COMPANY}) AS outbox,
         (SELECT count(*) FROM reminder_sync WHERE company_id = ${COMPANY} AND version > synced_version) AS pending,
         (SELECT count(*) FROM items i JOIN reminder_sequences s ON s.id = i.seq_id AND s.is_default = 1 WHERE i.company_id = ${COMPANY}) AS with_seq,
         (SELECT steps FROM reminder_sequences WHERE company_id = ${COMPANY} AND is_default = 1) AS steps`,
    );
    const steps = JSON.parse(seeded?.steps ?? "[]") as Step[];
    // Every step of the default sequence lies ahead for a date 60+ days out: all of them are queued.
    expect(
      steps.length > 0 && steps.every((s) => s.unit === "day" && (s.type === 2 || s.period < 60)),
      `default sequence steps ${seeded?.steps}`,
    );
    const expectedQueued = RAW_ITEMS * steps.length;
    expect(
      seeded?.items === RAW_ITEMS &&
        seeded.outbox === RAW_ITEMS &&
        seeded.pending === RAW_ITEMS &&
        seeded.with_seq === RAW_ITEMS,
      `seeded rows ${JSON.stringify(seeded)}`,
    );
    log(
      `inserted ${fmt(RAW_ITEMS)} items for company ${COMPANY} with its default sequence (${steps.length} steps: ${fmt(expectedQueued)} reminders to queue), ` +
        `${fmt(seeded!.pending)} pending outbox rows, ${LIGHT_COMPANIES} light companies (${seconds(insertedAt - t).toFixed(1)} s)`,
    );

    // ---- 2. server
    t = Date.now();
    child = await startDev(
      // RATE_LIMITS=off: one client sends far more than its 1,200 units a minute (429s otherwise).
      [
        "--port",
        String(options.port),
        "--persist-to",
        persistTo,
        "--log-level",
        "warn",
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        String(options.port + 1),
        "--var",
        "RATE_LIMITS:off",
      ],
      { port: options.port, env: { X_LOCAL_OBSERVABILITY: "false" } },
    );
    scope.setServer(child);
    child.stdout?.on("data", (chunk) => (serverOutput += chunk));
    child.stderr?.on("data", (chunk) => (serverOutput += chunk));
    log(`wrangler dev up on ${base} (${seconds(Date.now() - t).toFixed(1)} s)`);
    const token = await fetchToken();
    const authed = (path: string) => getJson(path, token);
    const itemReminders = async (itemId: number, tok = token) => {
      const res = await getJson(`/v1/items/${itemId}/reminders`, tok);
      expect(
        res.status === 200,
        `GET /v1/items/${itemId}/reminders: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
      );
      return res.body.data as { queued: ReminderView[]; sent: ReminderView[] };
    };

    // ---- 3. light run: one item per light company, one reminder at each of the next boundaries
    const boundaries = Array.from({ length: LIGHT_BOUNDARIES }, (_, k) => nextMinute(Date.now() + 30_000) + k * MINUTE);
    for (const at of boundaries)
      gate.windows.push({ label: `light ${new Date(at).toISOString()}`, at, end: at + LIGHT_QUIET_AFTER_MS });
    const light: Array<{ companyId: number; zone: string; token: string; itemId: number }> = [];
    await Promise.all(
      Array.from({ length: LIGHT_COMPANIES }, async (_, i) => {
        const companyId = LIGHT_FIRST_ID + i;
        const zone = LIGHT_ZONES[i % LIGHT_ZONES.length]!;
        const client = lightClient(companyId);
        const tok = await fetchToken(client.id, client.secret);
        const item = await postJson("/v1/items", tok, {
          title: `Light run ${companyId}`,
          expiry_date: isoDay(today + 200 * DAY),
          seqid: 0,
        });
        expect(
          item.status === 201,
          `light company ${companyId}: POST /v1/items ${item.status} ${JSON.stringify(item.body).slice(0, 200)}`,
        );
        for (const at of boundaries) {
          const res = await postJson(`/v1/items/${item.body.data.item_id}/reminders`, tok, localParts(at, zone));
          expect(
            res.status === 201 && res.body.data.due_at === new Date(at).toISOString(),
            `light company ${companyId} (${zone}): reminder at ${new Date(at).toISOString()}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
          );
        }
        light.push({ companyId, zone, token: tok, itemId: item.body.data.item_id });
      }),
    );
    log(
      `light run: ${LIGHT_COMPANIES} companies (${LIGHT_ZONES.join(", ")}), one reminder each at ${boundaries.map((b) => new Date(b).toISOString().slice(11, 16)).join(", ")} UTC; ` +
        `load pauses from ${seconds(QUIET_LEAD_MS)} s before until ${seconds(LIGHT_QUIET_AFTER_MS)} s after each`,
    );

    // ---- 4. the sweep queues the 100,000
    const graceLeft = insertedAt + SYNC_GRACE_MS - Date.now();
    if (graceLeft > 0) {
      log(`waiting ${seconds(graceLeft).toFixed(0)} s until the outbox rows are older than the sweep's 30 s grace ...`);
      await sleep(graceLeft);
    }
    const sweepTimes: number[] = [];
    let cpu = cpuSample(child.pid);
    const sweepUrl = `/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}&format=json`;
    const sweep = async (): Promise<number> => {
      await gate.clear(3_000);
      const s = Date.now();
      const res = await getJson(sweepUrl);
      expect(res.status === 200 && res.body?.outcome === "ok", `sweep: ${res.status} ${JSON.stringify(res.body)}`);
      return Date.now() - s;
    };
    const pendingRows = async () => {
      await gate.clear(8_000); // a wrangler process of its own: no fire instant meanwhile
      return queryRows<{ pending: number; synced: number }>(
        target,
        `SELECT sum(version > synced_version) AS pending, sum(synced_version >= 1 AND version = synced_version) AS synced FROM reminder_sync WHERE company_id = ${COMPANY} AND item_id BETWEEN 1 AND ${RAW_ITEMS}`,
      )[0]!;
    };
    let sweepCheck = { pending: -1, synced: 0 };
    for (let round = 0; round < 5 && sweepCheck.pending !== 0; round++) {
      // Back to back until a sweep does next to nothing (no pending company: two indexed queries).
      for (let n = 0; n < 400; n++) {
        const ms = await sweep();
        const working = median(sweepTimes.length ? sweepTimes : [ms]);
        if (sweepTimes.length > 0 && ms < Math.max(100, working * 0.2)) break;
        sweepTimes.push(ms);
      }
      sweepCheck = await pendingRows();
      log(
        `${sweepTimes.length} sweeps so far; D1: ${sweepCheck.pending} of ${fmt(RAW_ITEMS)} outbox rows pending, ${fmt(sweepCheck.synced)} synced`,
      );
    }
    const sweepCpu = otherCpuSince(cpu);
    expect(
      sweepCheck.pending === 0 && sweepCheck.synced === RAW_ITEMS,
      `after the sweeps: ${JSON.stringify(sweepCheck)}`,
    );
    const sweepMs = sweepTimes.reduce((a, b) => a + b, 0);
    const sampleIds = Array.from({ length: SAMPLES }, (_, i) => 1 + Math.floor((i * RAW_ITEMS) / SAMPLES));
    const sampled = await Promise.all(sampleIds.map((id) => itemReminders(id)));
    const wrong = sampleIds.filter(
      (_id, i) =>
        sampled[i]!.queued.length !== steps.length ||
        sampled[i]!.queued.some((r) => r.state !== "queued" || r.origin !== "sequence"),
    );
    expect(
      wrong.length === 0,
      `sampled items without ${steps.length} queued sequence reminders: ${wrong.slice(0, 10).join(", ")}`,
    );
    const queue = {
      items: RAW_ITEMS,
      reminders: expectedQueued,
      sweeps: sweepTimes.length,
      engineSeconds: seconds(sweepMs),
      remindersPerSecond: expectedQueued / seconds(sweepMs),
      itemsPerSecond: RAW_ITEMS / seconds(sweepMs),
      sweepSeconds: { median: seconds(median(sweepTimes)), max: seconds(Math.max(...sweepTimes)) },
      itemsPerSweep: RAW_ITEMS / sweepTimes.length,
      otherCpu: sweepCpu,
    };
    log(
      `queued ${fmt(expectedQueued)} reminders in ${queue.engineSeconds.toFixed(1)} s of sweeps (${fmt(queue.remindersPerSecond)} reminders/s): ` +
        `${queue.sweeps} sweeps of about ${fmt(queue.itemsPerSweep)} items, median ${queue.sweepSeconds.median.toFixed(2)} s; ` +
        `D1 0 pending, ${SAMPLES} sampled items list ${steps.length} queued each${cpuNote(sweepCpu)}`,
    );

    // ---- 5. GET /v1/items/{id} on the company holding 100,000 queued reminders
    const pointId = RAW_ITEMS / 2;
    const point = await authed(`/v1/items/${pointId}`);
    expect(
      point.status === 200 && point.body.data?.reminders?.queued?.length === steps.length,
      `GET /v1/items/${pointId}: ${point.status} ${JSON.stringify(point.body).slice(0, 300)}`,
    );
    const health: RouteSpec = { key: "health", label: "GET /health", path: "/health" };
    const pointRoute: RouteSpec = {
      key: "item",
      label: `GET /v1/items/${pointId}`,
      path: `/v1/items/${pointId}`,
      token,
      target: TARGETS.pointRatio,
    };
    const runSeconds = options.warmup + options.duration + 5;
    if (options.serverWarmup > 0) {
      await gate.clear((options.serverWarmup + 3) * 1000);
      const warm = await autocannon({
        url: base,
        connections: options.connections,
        duration: options.serverWarmup,
        timeout: 30,
        requests: [health, pointRoute].map((r) => ({ path: r.path, headers: requestHeaders(r) })),
      });
      expect(warm.non2xx === 0 && warm.errors === 0, `server warm-up: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
    }
    const runs: RouteResult[] = [];
    const measured = async (route: RouteSpec, warmup: boolean) => {
      await gate.clear(runSeconds * 1000);
      const r = await measure(route, child!.pid, warmup);
      runs.push(r);
      log(
        `  ${route.label}: ${r.requestsPerSecond.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, non-2xx ${r.non2xx}, errors ${r.errors}${cpuNote(r.otherCpu)}`,
      );
      return r;
    };
    const healthRuns: RouteResult[] = [];
    const pointRuns: RouteResult[] = [];
    for (let round = 0; round < options.rounds; round++) {
      healthRuns.push(await measured(health, round === 0));
      pointRuns.push(await measured(pointRoute, round === 0));
    }
    healthRuns.push(await measured(health, false));
    const pointRatios = pointRuns.map(
      (r, i) => r.requestsPerSecond / ((healthRuns[i]!.requestsPerSecond + healthRuns[i + 1]!.requestsPerSecond) / 2),
    );
    const pointRatio = median(pointRatios);
    log(
      `GET /v1/items/${pointId}: ratio ${pointRatio.toFixed(2)} to /health${options.rounds > 1 ? ` (rounds: ${pointRatios.map((r) => r.toFixed(2)).join(", ")})` : ""}`,
    );

    // ---- 6. 5,000 reminders due at T
    const contacts: number[] = [];
    expectPool(
      "POST /v1/contacts",
      await gate.pool(FIRE_CONTACTS, options.connections, async (i) => {
        const res = await postJson("/v1/contacts", token, {
          first_name: "Fire",
          last_name: `Tester ${i}`,
          email: `fire.tester${i}@example.com`,
        });
        if (res.status !== 201)
          throw new Error(`POST /v1/contacts: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        contacts[i] = res.body.data.contact_id;
      }),
    );
    const fireItems: number[] = [];
    const itemPool = await gate.pool(FIRE_ITEMS, options.connections, async (i) => {
      const res = await postJson("/v1/items", token, {
        title: `Fire test ${i}`,
        expiry_date: isoDay(today + 365 * DAY),
        seqid: 0,
        ...(i < FIRE_CONTACTS ? { contact_id: contacts[i] } : {}),
      });
      if (res.status !== 201)
        throw new Error(`POST /v1/items: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      fireItems[i] = res.body.data.item_id;
    });
    expectPool("POST /v1/items (fire items)", itemPool);
    // T: the creation must end before it. A reminder POST costs about what an item POST does or less;
    // allow for the creation at the item POST rate just measured, the light boundaries' pauses, and 25 s.
    const itemRate = Math.max(10, FIRE_ITEMS / seconds(Math.max(1, itemPool.busyMs)));
    const estimateMs = (FIRE_TOTAL / itemRate) * 1000;
    const pausesMs =
      boundaries.filter((b) => b > Date.now() && b < Date.now() + estimateMs + MINUTE).length *
      (QUIET_LEAD_MS + LIGHT_QUIET_AFTER_MS + 2_000);
    let fireAt = nextMinute(Date.now() + estimateMs + pausesMs + QUIET_LEAD_MS + 25_000);
    while (boundaries.includes(fireAt)) fireAt += MINUTE;
    const fireLocal = localParts(fireAt, "UTC");
    log(
      `creating ${fmt(FIRE_TOTAL)} reminders (${FIRE_PER_ITEM} on each of ${FIRE_ITEMS} items, ${FIRE_CONTACTS} with a contact) due at ${new Date(fireAt).toISOString()} (company ${COMPANY}: UTC) ...`,
    );
    const fireIds: number[] = [];
    const fireItemOf = new Map<number, number>();
    cpu = cpuSample(child.pid);
    const createPool = await gate.pool(FIRE_TOTAL, options.connections, async (i) => {
      const itemId = fireItems[i % FIRE_ITEMS]!;
      const res = await postJson(`/v1/items/${itemId}/reminders`, token, fireLocal);
      if (res.status !== 201 || res.body.data.due_at !== new Date(fireAt).toISOString()) {
        throw new Error(`POST /v1/items/${itemId}/reminders: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      }
      fireIds.push(res.body.data.reminder_id);
      fireItemOf.set(res.body.data.reminder_id, itemId);
    });
    expectPool("POST /v1/items/{id}/reminders", createPool);
    expect(
      Date.now() < fireAt - QUIET_LEAD_MS,
      `the creation ended ${seconds(Date.now() - fireAt).toFixed(1)} s after T - 5 s`,
    );
    const maxFireId = Math.max(...fireIds);
    const createRate = FIRE_TOTAL / seconds(createPool.busyMs);
    log(
      `created ${fmt(FIRE_TOTAL)} reminders in ${seconds(createPool.busyMs).toFixed(1)} s (${fmt(createRate)}/s, p50 ${createPool.latencyMs.p50} ms); ` +
        `T in ${seconds(fireAt - Date.now()).toFixed(0)} s${cpuNote(otherCpuSince(cpu))}`,
    );
    const fireWindow: QuietWindow = { label: `fire ${new Date(fireAt).toISOString()}`, at: fireAt, end: Infinity };
    gate.windows.push(fireWindow);
    const fire = watchFire();
    fire.catch(() => {}); // awaited below; a failure must not end the process before

    /** At T: the triggered feed until the newest entry is the last reminder created, then until the last items' deliveries are done. */
    async function watchFire() {
      try {
        await sleep(fireAt - Date.now());
        const deadline = fireAt + FIRE_WAIT_MS;
        let newest: { reminder_id: number; sent_at: string } | undefined;
        let polls = 0;
        while (Date.now() < deadline) {
          polls++;
          const res = await authed("/v1/reminders/triggered?limit=1");
          newest = res.body?.data?.[0];
          if (newest?.reminder_id === maxFireId) break;
          await sleep(200);
        }
        const seenAt = Date.now();
        // Deliveries go in claim order: the items holding the last ids are delivered last.
        const probes = [
          ...new Set([fireItemOf.get(maxFireId)!, fireItems[FIRE_ITEMS - 1]!, fireItems[FIRE_CONTACTS - 1]!]),
        ];
        while (Date.now() < deadline) {
          const lists = await Promise.all(probes.map((id) => itemReminders(id)));
          if (
            lists.every(
              (l) => l.queued.length === 0 && l.sent.every((r) => r.deliveries.every((d) => d.state !== "pending")),
            )
          )
            break;
          await sleep(500);
        }
        return { newest, polls, seenAt, deliveriesSeenAt: Date.now() };
      } finally {
        fireWindow.end = Date.now() + 1_000;
      }
    }

    // ---- 7. POST /v1/items x 10,000, between two runs of /health
    const healthRun = async () => {
      await gate.clear(8_000);
      const r = await autocannon({ url: `${base}/health`, connections: options.connections, duration: 5, timeout: 30 });
      expect(r.non2xx === 0 && r.errors === 0, `GET /health: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return r.requests.total / r.duration;
    };
    const healthBefore = await healthRun();
    log(
      `POST /v1/items x ${fmt(API_ITEMS)}, ${options.connections} at a time (GET /health before: ${healthBefore.toFixed(0)} req/s) ...`,
    );
    const apiItems: number[] = [];
    cpu = cpuSample(child.pid);
    const postPool = await gate.pool(API_ITEMS, options.connections, async (i) => {
      const res = await postJson("/v1/items", token, {
        title: `API-queued item ${i}`,
        expiry_date: isoDay(today + (60 + ((i * 7919) % 341)) * DAY),
      });
      if (res.status !== 201)
        throw new Error(`POST /v1/items: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      apiItems.push(res.body.data.item_id);
    });
    const postCpu = otherCpuSince(cpu);
    expectPool("POST /v1/items", postPool);
    const healthAfter = await healthRun();
    const postRate = API_ITEMS / seconds(postPool.busyMs);
    const healthMean = (healthBefore + healthAfter) / 2;
    const apiSamples = Array.from({ length: SAMPLES }, (_, i) => apiItems[Math.floor((i * API_ITEMS) / SAMPLES)]!);
    const apiLists = await Promise.all(apiSamples.map((id) => itemReminders(id)));
    const apiWrong = apiSamples.filter((_id, i) => apiLists[i]!.queued.length !== steps.length);
    expect(
      apiWrong.length === 0,
      `API items without ${steps.length} queued reminders: ${apiWrong.slice(0, 10).join(", ")}`,
    );
    const api = {
      items: API_ITEMS,
      busySeconds: seconds(postPool.busyMs),
      wallSeconds: seconds(postPool.wallMs),
      itemsPerSecond: postRate,
      remindersPerSecond: postRate * steps.length,
      latencyMs: postPool.latencyMs,
      healthBefore,
      healthAfter,
      ratio: postRate / healthMean,
      otherCpu: postCpu,
    };
    log(
      `POST /v1/items x ${fmt(API_ITEMS)}: ${api.busySeconds.toFixed(1)} s busy (${api.wallSeconds.toFixed(1)} s with the pauses), ${fmt(postRate, 1)} items/s, ` +
        `p50 ${api.latencyMs.p50} ms, p99 ${api.latencyMs.p99} ms; GET /health ${healthBefore.toFixed(0)} / ${healthAfter.toFixed(0)} req/s -> ratio ${api.ratio.toFixed(2)}${cpuNote(postCpu)}`,
    );

    // ---- 8. the 5,000 and the light run, read back
    const fired = await fire;
    expect(
      fired.newest?.reminder_id === maxFireId,
      `${seconds(FIRE_WAIT_MS)} s after T the newest triggered entry is ${JSON.stringify(fired.newest)}, not reminder ${maxFireId}`,
    );
    const fireLists = await Promise.all(fireItems.map((id) => itemReminders(id)));
    const sent = fireLists.flatMap((l) => l.sent).filter((r) => r.origin === "manual");
    const unsent = fireLists.reduce((n, l) => n + l.queued.length, 0);
    expect(sent.length === FIRE_TOTAL && unsent === 0, `${sent.length} of ${FIRE_TOTAL} sent, ${unsent} still queued`);
    const fireLateness = spread(sent.map((r) => seconds(Date.parse(r.sent_at!) - Date.parse(r.due_at))));
    const claims = [...new Set(sent.map((r) => r.sent_at!))]
      .sort()
      .map((at) => ({ at: seconds(Date.parse(at) - fireAt), reminders: sent.filter((r) => r.sent_at === at).length }));
    const deliveries = sent.flatMap((r) => r.deliveries);
    const deliveryStates: Record<string, number> = {};
    for (const d of deliveries) deliveryStates[d.state] = (deliveryStates[d.state] ?? 0) + 1;
    const delivered = deliveries.map((d) => d.delivered_at).filter((x): x is string => x !== null);
    const fireResult = {
      reminders: FIRE_TOTAL,
      items: FIRE_ITEMS,
      at: new Date(fireAt).toISOString(),
      createSeconds: seconds(createPool.busyMs),
      createPerSecond: createRate,
      fireSeconds: seconds(Date.parse(fired.newest!.sent_at) - fireAt),
      seenAfterSeconds: seconds(fired.seenAt - fireAt),
      lateness: fireLateness,
      claims,
      deliveryStates,
      lastDeliveredSeconds: delivered.length
        ? seconds(Math.max(...delivered.map((d) => Date.parse(d))) - fireAt)
        : null,
      feedPolls: fired.polls,
    };
    log(
      `${fmt(FIRE_TOTAL)} due at ${fireResult.at}: the last fired ${fireResult.fireSeconds.toFixed(3)} s after T (seen at +${fireResult.seenAfterSeconds.toFixed(1)} s); ` +
        `lateness ${spreadText(fireLateness)}; claims: ${claims.map((c) => `${c.reminders} at +${c.at.toFixed(2)} s`).join(", ")}; ` +
        `deliveries ${JSON.stringify(deliveryStates)}, the last e-mail handed over at +${fireResult.lastDeliveredSeconds?.toFixed(1)} s`,
    );

    const lastBoundary = Math.max(...boundaries);
    if (Date.now() < lastBoundary + LIGHT_QUIET_AFTER_MS) await sleep(lastBoundary + LIGHT_QUIET_AFTER_MS - Date.now());
    const lightLists = await Promise.all(light.map((c) => itemReminders(c.itemId, c.token)));
    const lightSent = lightLists.flatMap((l) => l.sent);
    const lightQueued = lightLists.reduce((n, l) => n + l.queued.length, 0);
    expect(
      lightSent.length === LIGHT_COMPANIES * LIGHT_BOUNDARIES && lightQueued === 0,
      `light run: ${lightSent.length} sent, ${lightQueued} still queued`,
    );
    const lightLateness = spread(lightSent.map((r) => seconds(Date.parse(r.sent_at!) - Date.parse(r.due_at))));
    const lightByBoundary = boundaries.map((at) => {
      const late = lightSent
        .filter((r) => Date.parse(r.due_at) === at)
        .map((r) => seconds(Date.parse(r.sent_at!) - at));
      return { at: new Date(at).toISOString(), ...spread(late) };
    });
    log(
      `light run: lateness ${spreadText(lightLateness)}; per boundary ${lightByBoundary.map((b) => `max ${b.max.toFixed(3)} s`).join(", ")}`,
    );

    // Every POST queued its item inline: a failed sync or D1 bookkeeping is logged and left to the sweep.
    const deferred = serverOutput
      .split("\n")
      .filter((l) => l.includes("reminder sync deferred") || l.includes("reminder bookkeeping in D1 failed")).length;
    const [outbox] = queryRows<{ pending: number }>(
      target,
      `SELECT count(*) AS pending FROM reminder_sync WHERE company_id = ${COMPANY} AND version > synced_version`,
    );
    expect(
      deferred === 0 && outbox?.pending === 0,
      `${deferred} deferred syncs or failed D1 bookkeeping in the server log, ${outbox?.pending} outbox rows pending`,
    );
    const loadAfter = loadavg()[0]!;
    const runtime = seconds(Date.now() - started);

    // ---- report
    const lightMet = lightLateness.p99 <= TARGETS.lightP99Seconds;
    const fireMet = fireResult.fireSeconds <= TARGETS.fireSeconds;
    const pointMet = pointRatio >= TARGETS.pointRatio;
    const rows: string[][] = [
      [
        `queue ${fmt(expectedQueued)} reminders (${fmt(RAW_ITEMS)} raw items) by the sweep`,
        `${queue.engineSeconds.toFixed(1)} s, ${fmt(queue.remindersPerSecond)} reminders/s (${queue.sweeps} sweeps, ${fmt(queue.itemsPerSweep)} items and ${queue.sweepSeconds.median.toFixed(2)} s each)`,
        "",
      ],
      [
        `POST /v1/items x ${fmt(API_ITEMS)} (sequence queued inline)`,
        `${api.busySeconds.toFixed(1)} s, ${fmt(api.itemsPerSecond, 1)} items/s (${fmt(api.remindersPerSecond)} reminders/s), ratio ${api.ratio.toFixed(2)} to /health`,
        "",
      ],
      [
        `${fmt(FIRE_TOTAL)} reminders due in one minute`,
        `all fired ${fireResult.fireSeconds.toFixed(2)} s after T; lateness ${spreadText(fireLateness)}`,
        `<= ${TARGETS.fireSeconds} s ${fireMet ? "MET" : "MISSED"}`,
      ],
      [
        `GET /v1/items/${pointId} (${fmt(expectedQueued)} queued in the company)`,
        `${fmt(median(pointRuns.map((r) => r.requestsPerSecond)))} req/s, ratio ${pointRatio.toFixed(2)} to /health`,
        `>= ${TARGETS.pointRatio.toFixed(2)} ${pointMet ? "MET" : "MISSED"}`,
      ],
      [
        `light run: ${LIGHT_COMPANIES} companies x ${LIGHT_BOUNDARIES} minute boundaries`,
        `lateness ${spreadText(lightLateness)}`,
        `p99 <= ${TARGETS.lightP99Seconds} s ${lightMet ? "MET" : "MISSED"}`,
      ],
    ];
    console.log("");
    console.log(
      `Reminder engine ${new Date(started).toISOString()} — wrangler ${version} dev, --log-level warn, X_LOCAL_OBSERVABILITY=false, RATE_LIMITS=off; ` +
        `${options.connections} connections; 1-min load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after; runtime ${runtime.toFixed(0)} s`,
    );
    console.log("");
    printColumns(["measure", "result", "target"], rows, 3);
    console.log("");
    const otherCpus = [queue.otherCpu, api.otherCpu, ...runs.map((r) => r.otherCpu)].filter(
      (x): x is number => x !== undefined,
    );
    if (otherCpus.some((x) => x > CONTENDED)) {
      console.log(
        `note: other processes used up to ${pct(Math.max(...otherCpus))} of the machine during a measurement: rates and ratios are uncertain by about that much.`,
      );
    }

    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      const report = {
        date: new Date(started).toISOString(),
        settings: {
          wrangler: version,
          node: process.version,
          port: options.port,
          connections: options.connections,
          durationSeconds: options.duration,
          warmupSeconds: options.warmup,
          serverWarmupSeconds: options.serverWarmup,
          rounds: options.rounds,
          quietLeadSeconds: seconds(QUIET_LEAD_MS),
        },
        loadAverage: { before: loadBefore, after: loadAfter },
        runtimeSeconds: runtime,
        queue,
        api,
        fire: fireResult,
        point: { path: pointRoute.path, ratio: pointRatio, ratios: pointRatios, runs: [...healthRuns, ...pointRuns] },
        light: { companies: LIGHT_COMPANIES, zones: LIGHT_ZONES, lateness: lightLateness, byBoundary: lightByBoundary },
        targets: {
          fire: { target: TARGETS.fireSeconds, met: fireMet },
          point: { target: TARGETS.pointRatio, met: pointMet },
          light: { target: TARGETS.lightP99Seconds, met: lightMet },
        },
      };
      writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
      log(`results written to ${options.json}`);
    }
    const failed = runs.filter((r) => r.non2xx + r.warmupNon2xx + r.errors + r.warmupErrors > 0 || r.requests === 0);
    for (const r of failed)
      console.error(`ERROR ${r.label}: ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors`);
    return failed.length > 0 ? 1 : 0;
  } catch (error) {
    if (serverOutput.trim()) console.error(`wrangler dev output:\n${serverOutput.slice(-4000)}`);
    throw error;
  } finally {
    await scope.close();
  }
}
