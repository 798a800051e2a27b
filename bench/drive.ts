// `npm run bench -- --only drive`: the drive's byte paths and the task list, under `wrangler dev` on
// throw-away local state (docs/performance.md, "Drive and tasks").
//   1. migrations + demo seed + 50,000 tasks for company 1 and 5,000 for company 2 (ids interleaved,
//      so the company filter has work to do), as multi-row INSERTs;
//   2. two servers: the API (`wrangler dev`, port P) and a bare Worker (port P+10, its own temp
//      config and state) whose only code is `env.FILES.put(key, request.body)` and
//      `env.FILES.get(key)` — the same runtime, the same local R2, none of our code: the baseline;
//   3. per round (--rounds, default 3), for 10 MiB and 50 MiB of random bytes: the upload through the
//      API (POST /v1/uploads, then the timed PUT /v1/uploads with the token) and a bare put of the
//      same bytes, in alternating order; then the download of each (GET /v1/files/{id} against a
//      bare get, three reads in a row each), every byte counted and the first download of each size checked against the
//      SHA-256 of what was sent. Meanwhile the resident memory (VmRSS) of every process of each
//      server is sampled every 10 ms: the peak over the idle value before the transfer;
//   4. autocannon, per round: GET /health, GET /v1/tasks?limit=50 (the target), `status=open` and
//      `q=renew` (about 1/6 of the tasks), `q=lapses` (every task: the target), GET /health again; ratios to the mean of the two /health runs, medians over rounds.
// Exits non-zero on errors (non-2xx, wrong bytes, failed setup), not on missed targets.
import type { ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  expect,
  median,
  multiRowInserts,
  prepareBenchState,
  printColumns,
  prng,
  sqlText,
  stopServer,
  type RouteResult,
  type RouteSpec,
  startBenchServer,
  benchSet,
} from "./kit.ts";
import { ROOT, executeSql, startDev } from "../scripts/lib/local.ts";
import { searchWords } from "../src/lib/search.ts";
import { rssSampler } from "../scripts/lib/procs.ts";

export interface DriveBenchOptions {
  port: number;
  connections: number;
  duration: number;
  warmup: number;
  rounds: number;
  json?: string;
}

const MiB = 1024 * 1024;
const SIZES = [10 * MiB, 50 * MiB];
const DOWNLOADS_PER_RUN = 3;
const TASKS = { company1: 50_000, company2: 5_000 };
const TARGETS = { upload: 0.8, download: 0.8, taskList: 0.4, taskSearchAll: 0.4 };
const TASK_STATUSES = ["open", "todo", "in_progress", "review", "completed", "canceled"];
const WORDS = [
  "renew",
  "inspect",
  "review",
  "call",
  "send",
  "sign",
  "update",
  "check",
  "order",
  "file",
  "archive",
  "prepare",
];
const OBJECTS = [
  "insurance",
  "licence",
  "contract",
  "permit",
  "certificate",
  "lease",
  "warranty",
  "visa",
  "audit",
  "registration",
];

// ---------------------------------------------------------------------------------------------
// Data

function taskRows(): string[] {
  const random = prng(9);
  const idChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const publicId = () => `tsk_${Array.from({ length: 20 }, () => idChars[Math.floor(random() * 64)]).join("")}`;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
  const rows: string[] = [];
  const total = TASKS.company1 + TASKS.company2;
  const every = Math.round(total / TASKS.company2);
  for (let i = 0; i < total; i++) {
    const company = i % every === every - 1 ? 2 : 1;
    const owner = company === 1 ? 1 : 3;
    const day = new Date(Date.UTC(2026, 0, 1) + Math.floor(random() * 730) * 86_400_000).toISOString().slice(0, 10);
    const due = `${day} ${String(Math.floor(random() * 24)).padStart(2, "0")}:${pick(["00", "15", "30", "45"])}:00`;
    const title = `${pick(WORDS)} ${pick(OBJECTS)} ${i}`;
    const description = `${pick(WORDS)} the ${pick(OBJECTS)} before it lapses`;
    const assigned = company === 1 && random() < 0.5;
    rows.push(
      `(${sqlText(publicId())}, ${company}, ${sqlText(title)}, ${sqlText(description)}, ` +
        `${sqlText(pick(TASK_STATUSES))}, ${sqlText(pick(["low", "normal", "high", "urgent"]))}, ${sqlText(due)}, ${owner}, ` +
        `${assigned ? "'user'" : "NULL"}, ${assigned ? pick([1, 2]) : "NULL"}, ${owner}, ${sqlText(searchWords(title, description))})`,
    );
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------
// The baseline Worker: a bare R2 put and get, nothing else.

const BARE_WORKER = `export default {
  async fetch(request, env) {
    const key = new URL(request.url).pathname.slice(1);
    if (key === "health") return new Response("ok");
    if (request.method === "PUT") {
      const object = await env.FILES.put(key, request.body);
      return Response.json({ key, size: object.size });
    }
    const object = await env.FILES.get(key);
    if (!object) return new Response("not found", { status: 404 });
    return new Response(object.body, { headers: { "Content-Length": String(object.size), "Content-Type": "application/octet-stream" } });
  },
};
`;

function writeBareWorker(dir: string, compatibilityDate: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "index.js"), BARE_WORKER);
  const config = join(dir, "wrangler.toml");
  writeFileSync(
    config,
    `name = "bench-bare-r2"\nmain = "index.js"\ncompatibility_date = "${compatibilityDate}"\n\n[[r2_buckets]]\nbinding = "FILES"\nbucket_name = "bench-bare"\n`,
  );
  return config;
}

function apiCompatibilityDate(): string {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  return /^compatibility_date\s*=\s*"([^"]+)"/m.exec(toml)?.[1] ?? "2026-11-01";
}

// ---------------------------------------------------------------------------------------------
// Memory: VmRSS of every process in a server's process group, sampled while a transfer runs.

// ---------------------------------------------------------------------------------------------
// Transfers

interface Transfer {
  seconds: number;
  bytes: number;
  idleKb: number;
  growthKb: number;
}

async function timed(group: number, work: () => Promise<number>): Promise<Transfer> {
  const sampler = rssSampler(group);
  const started = performance.now();
  let bytes: number;
  try {
    bytes = await work();
  } catch (err) {
    sampler.stop();
    throw err;
  }
  const seconds = (performance.now() - started) / 1000;
  const memory = sampler.stop();
  return { seconds, bytes, idleKb: memory.idleKb, growthKb: memory.peakKb - memory.idleKb };
}

/** Reads a response body to the end without keeping it, hashing it when asked. */
async function drainBody(res: Response, hash?: ReturnType<typeof createHash>): Promise<number> {
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    hash?.update(chunk);
  }
  return bytes;
}

const mbPerSecond = (t: Transfer) => t.bytes / MiB / t.seconds;

/** Runs `a` then `b` in even rounds and `b` then `a` in odd ones, so neither always goes first. */
async function alternately(round: number, a: () => Promise<void>, b: () => Promise<void>) {
  for (const step of round % 2 === 0 ? [a, b] : [b, a]) await step();
}

// ---------------------------------------------------------------------------------------------

export async function runDriveBench(options: DriveBenchOptions): Promise<number> {
  const { started, base, log, measure, scope, getJson, postJson, fetchToken } = benchSet("drive", options);
  const bareBase = `http://127.0.0.1:${options.port + 10}`;
  const bareDir = mkdtempSync(join(tmpdir(), "expiry-bench-bare-r2-"));
  let api: ChildProcess | undefined;
  let bare: ChildProcess | undefined;
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    log(`inserting ${TASKS.company1 + TASKS.company2} tasks`);
    executeSql(
      { persistTo: scope.persistTo },
      multiRowInserts(
        "INSERT INTO tasks (public_id, company_id, title, description, status, priority, " +
          "due_at, owner_id, assignee_type, assignee_id, created_by, search_words) VALUES ",
        taskRows(),
      ),
    );
    api = await startBenchServer(options.port, scope.persistTo, ["--var", "RATE_LIMITS:off"]);
    scope.setServer(api);
    const bareConfig = writeBareWorker(join(bareDir, "worker"), apiCompatibilityDate());
    bare = await startDev(
      [
        "--config",
        bareConfig,
        "--port",
        String(options.port + 10),
        "--persist-to",
        join(bareDir, "state"),
        "--log-level",
        "warn",
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        String(options.port + 11),
      ],
      { port: options.port + 10 },
    );
    const token = await fetchToken();

    // Checks before measuring: tenancy and totals of the task list.
    const taskPage = await getJson("/v1/tasks?limit=50", token);
    expect(
      taskPage.status === 200 && taskPage.body.meta?.total === TASKS.company1,
      `GET /v1/tasks total ${taskPage.body.meta?.total} = ${TASKS.company1}`,
    );
    expect(taskPage.body.data.length === 50, "GET /v1/tasks?limit=50 returns 50 tasks");
    const otherPage = await getJson("/v1/tasks?limit=1", await fetchToken("demo-other", "demo-other-secret"));
    expect(
      otherPage.body.meta?.total === TASKS.company2,
      `company 2 sees its ${TASKS.company2} tasks only (got ${otherPage.body.meta?.total})`,
    );
    const everyTask = await getJson("/v1/tasks?q=lapses&limit=50", token);
    expect(
      JSON.stringify(everyTask.body.data.map((t: { task_id: number }) => t.task_id)) ===
        JSON.stringify(taskPage.body.data.map((t: { task_id: number }) => t.task_id)) &&
        everyTask.body.meta?.total_exact === false,
      "GET /v1/tasks?q=lapses (every task) is the unfiltered first page, with a capped total",
    );

    // ---- bytes
    const payload = randomBytes(Math.max(...SIZES));
    let uploads = 0;
    const apiUpload = async (size: number): Promise<{ transfer: Transfer; fileId: string; sessionMs: number }> => {
      const t = performance.now();
      const session = await postJson("/v1/uploads", token, {
        filename: `bench-${size}-${++uploads}.bin`,
        content_type: "application/octet-stream",
      });
      expect(session.status === 201, `POST /v1/uploads: ${session.status} ${JSON.stringify(session.body)}`);
      const sessionMs = performance.now() - t;
      const { upload_url: url, upload_token: uploadToken } = session.body.data as {
        upload_url: string;
        upload_token: string;
      };
      let fileId = "";
      const transfer = await timed(api!.pid!, async () => {
        const res = await fetch(url, {
          method: "PUT",
          headers: { "X-Upload-Token": uploadToken, "Content-Type": "application/octet-stream" },
          body: payload.subarray(0, size),
        });
        const body = (await res.json()) as { data?: { file_id?: string } };
        expect(res.status === 200, `PUT /v1/uploads (${size} bytes): ${res.status} ${JSON.stringify(body)}`);
        fileId = body.data!.file_id!;
        return size;
      });
      return { transfer, fileId, sessionMs };
    };
    const bareUpload = (size: number, key: string) =>
      timed(bare!.pid!, async () => {
        const res = await fetch(`${bareBase}/${key}`, { method: "PUT", body: payload.subarray(0, size) });
        const body = (await res.json()) as { size: number };
        expect(
          res.status === 200 && body.size === size,
          `bare put (${size} bytes): ${res.status} ${JSON.stringify(body)}`,
        );
        return size;
      });
    // A download is short (10 MiB in well under 100 ms), so each measurement reads the file
    // DOWNLOADS_PER_RUN times in a row: bytes over the time of all of them.
    const download = (group: number, url: string, size: number, headers: Record<string, string>, check: boolean) =>
      timed(group, async () => {
        let total = 0;
        for (let i = 0; i < DOWNLOADS_PER_RUN; i++) {
          const res = await fetch(url, { headers });
          expect(res.status === 200, `GET ${url}: ${res.status}`);
          const hash = check && i === 0 ? createHash("sha256") : undefined;
          const bytes = await drainBody(res, hash);
          expect(bytes === size, `GET ${url}: ${bytes} bytes, expected ${size}`);
          if (hash) {
            const sent = createHash("sha256").update(payload.subarray(0, size)).digest("hex");
            expect(hash.digest("hex") === sent, `GET ${url}: the bytes differ from those uploaded`);
          }
          total += bytes;
        }
        return total;
      });

    log("warm-up transfers (1 MiB each way on both servers)");
    const warm = await apiUpload(MiB);
    await bareUpload(MiB, "warm");
    await download(api.pid!, `${base}/v1/files/${warm.fileId}`, MiB, { Authorization: `Bearer ${token}` }, true);
    await download(bare.pid!, `${bareBase}/warm`, MiB, {}, true);

    type Bytes = {
      apiUp: Transfer[];
      bareUp: Transfer[];
      apiDown: Transfer[];
      bareDown: Transfer[];
      sessionMs: number[];
    };
    const bytes = new Map<number, Bytes>(
      SIZES.map((s) => [s, { apiUp: [], bareUp: [], apiDown: [], bareDown: [], sessionMs: [] }]),
    );
    for (let round = 0; round < options.rounds; round++) {
      for (const size of SIZES) {
        const r = bytes.get(size)!;
        const key = `bare-${size}-${round}`;
        let fileId = "";
        const viaApi = async () => {
          const up = await apiUpload(size);
          r.apiUp.push(up.transfer);
          r.sessionMs.push(up.sessionMs);
          fileId = up.fileId;
        };
        const viaBare = async () => void r.bareUp.push(await bareUpload(size, key));
        await alternately(round, viaApi, viaBare);
        const downApi = async () =>
          void r.apiDown.push(
            await download(
              api!.pid!,
              `${base}/v1/files/${fileId}`,
              size,
              { Authorization: `Bearer ${token}` },
              round === 0,
            ),
          );
        const downBare = async () =>
          void r.bareDown.push(await download(bare!.pid!, `${bareBase}/${key}`, size, {}, round === 0));
        await alternately(round, downApi, downBare);
        log(
          `round ${round + 1}, ${size / MiB} MiB: up ${mbPerSecond(r.apiUp.at(-1)!).toFixed(1)} MiB/s (bare ${mbPerSecond(r.bareUp.at(-1)!).toFixed(1)}), ` +
            `down ${mbPerSecond(r.apiDown.at(-1)!).toFixed(1)} MiB/s (bare ${mbPerSecond(r.bareDown.at(-1)!).toFixed(1)})`,
        );
      }
    }

    // ---- task list
    const health: RouteSpec = { key: "health", label: "GET /health", path: "/health" };
    const taskRoutes: RouteSpec[] = [
      { key: "tasks", label: "GET /v1/tasks?limit=50", path: "/v1/tasks?limit=50", token, target: TARGETS.taskList },
      {
        key: "tasks-status",
        label: "GET /v1/tasks?status=open&limit=50",
        path: "/v1/tasks?status=open&limit=50",
        token,
      },
      { key: "tasks-q", label: "GET /v1/tasks?q=renew&limit=50", path: "/v1/tasks?q=renew&limit=50", token },
      {
        key: "tasks-q-all",
        label: "GET /v1/tasks?q=lapses&limit=50",
        path: "/v1/tasks?q=lapses&limit=50",
        token,
        target: TARGETS.taskSearchAll,
      },
    ];
    const ratios = new Map<string, number[]>(taskRoutes.map((r) => [r.key, []]));
    const runs: RouteResult[] = [];
    const run = async (route: RouteSpec, round: number) => {
      const result = await measure(route, api!.pid, true);
      if (result.non2xx > 0 || result.errors > 0)
        throw new Error(`${route.label}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      runs.push({ ...result, round });
      return result;
    };
    for (let round = 0; round < options.rounds; round++) {
      const before = await run(health, round);
      const measured = [];
      for (const route of taskRoutes) measured.push(await run(route, round));
      const after = await run(health, round);
      const healthRate = (before.requestsPerSecond + after.requestsPerSecond) / 2;
      for (const [i, m] of measured.entries()) ratios.get(taskRoutes[i]!.key)!.push(m.requestsPerSecond / healthRate);
      log(
        `round ${round + 1}: /health ${healthRate.toFixed(0)} req/s; ${measured.map((m) => `${m.label} ${(m.requestsPerSecond / healthRate).toFixed(2)}`).join(", ")}`,
      );
    }

    // ---- report
    const loadAfter = loadavg()[0]!;
    console.log(
      `\nDrive and tasks ${new Date(started).toISOString()}: RATE_LIMITS=off; ${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs; ` +
        `load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    const mb = (kb: number) => `${(kb / 1024).toFixed(1)} MiB`;
    const rows: string[][] = [];
    const memoryRows: string[][] = [];
    const summary: Record<string, unknown> = {};
    const met = (ratio: number, target: number) => (ratio >= target ? "yes" : "NO");
    const transferRow = (what: string, api: number, bare: number, target: number) => [
      what,
      `${api.toFixed(1)} MiB/s`,
      `${bare.toFixed(1)} MiB/s`,
      (api / bare).toFixed(2),
      `>= ${target}`,
      met(api / bare, target),
    ];
    for (const size of SIZES) {
      const r = bytes.get(size)!;
      const up = median(r.apiUp.map(mbPerSecond));
      const upBare = median(r.bareUp.map(mbPerSecond));
      const down = median(r.apiDown.map(mbPerSecond));
      const downBare = median(r.bareDown.map(mbPerSecond));
      const label = `${size / MiB} MiB`;
      rows.push(transferRow(`upload ${label} (PUT /v1/uploads)`, up, upBare, TARGETS.upload));
      rows.push(transferRow(`download ${label} (GET /v1/files/{id})`, down, downBare, TARGETS.download));
      const growth = (ts: Transfer[]) => median(ts.map((t) => t.growthKb));
      const rssGrowthKb = {
        // The first transfer of each size (round 1) also pays for the heap and buffers the runtime grows once.
        apiUploadFirst: r.apiUp[0]!.growthKb,
        bareUploadFirst: r.bareUp[0]!.growthKb,
        apiUpload: growth(r.apiUp),
        bareUpload: growth(r.bareUp),
        apiDownload: growth(r.apiDown),
        bareDownload: growth(r.bareDown),
      };
      memoryRows.push([label, ...Object.values(rssGrowthKb).map(mb)]);
      summary[label] = {
        upload: { api: up, bare: upBare, ratio: up / upBare, sessionMs: median(r.sessionMs) },
        download: { api: down, bare: downBare, ratio: down / downBare },
        rssGrowthKb,
      };
    }
    printColumns(["transfer", "through the API", "bare R2", "ratio", "target", "met"], rows);
    const idle = (pick: (r: Bytes) => Transfer[]) =>
      mb(median(SIZES.flatMap((s) => pick(bytes.get(s)!).map((t) => t.idleKb))));
    console.log(
      `\nPeak resident memory of each server's workerd processes over their idle value (median; idle: API ${idle((r) => r.apiUp)}, bare ${idle((r) => r.bareUp)}):\n`,
    );
    printColumns(
      ["size", "API upload, first", "bare put, first", "API upload", "bare put", "API download", "bare get"],
      memoryRows,
    );
    console.log(
      `\nPOST /v1/uploads (the session) before each upload: median ${median(SIZES.flatMap((s) => bytes.get(s)!.sessionMs)).toFixed(1)} ms\n`,
    );
    const taskTable = taskRoutes.map((route) => {
      const rs = ratios.get(route.key)!;
      const ratio = median(rs);
      const rps = median(runs.filter((r) => r.key === route.key).map((r) => r.requestsPerSecond));
      summary[route.label] = { ratio, ratios: rs, requestsPerSecond: rps };
      return [
        route.label,
        `${rps.toFixed(0)} req/s`,
        ratio.toFixed(2),
        rs.map((x) => x.toFixed(2)).join(" "),
        route.target ? `>= ${route.target}` : "",
        route.target ? met(ratio, route.target) : "",
      ];
    });
    const healthRuns = runs.filter((r) => r.key === "health").map((r) => r.requestsPerSecond);
    printColumns(
      ["route (50,000 tasks)", "median", "ratio to /health", "per round", "target", "met"],
      [["GET /health", `${median(healthRuns).toFixed(0)} req/s`, "1.00", "", "", ""], ...taskTable],
    );
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        JSON.stringify({ started: new Date(started).toISOString(), options, summary, runs }, null, 2),
      );
      log(`results written to ${options.json}`);
    }
    return 0;
  } finally {
    if (bare) await stopServer(bare);
    rmSync(bareDir, { recursive: true, force: true });
    await scope.close();
  }
}
