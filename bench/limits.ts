// `npm run bench -- --only limits`: what rate limiting, the request log and Idempotency-Key cost,
// and whether one company's flood slows another's reads (docs/performance.md, "Rate limits,
// request log and idempotency keys"). On throw-away local state:
//   1. migrations + demo seed; account 3 with 200 tenant companies (one `*` API client and one
//      contact each), company X with 3,000 items (most titles match the search) and company Y with
//      one contact; company 1's documents_limit raised so the POST runs never reach it; the state
//      dir copied, so every server starts from the same data;
//   2. three `wrangler dev` servers, --log-level warn and X_LOCAL_OBSERVABILITY=false as the other
//      sets: A (port P) with RATE_LIMITS=off and REQUEST_LOGS=off, B (P+10) with rate limits on and
//      REQUEST_LOGS=off, C (P+20) with the defaults (both on, as `npm start` runs); tokens come from
//      A's token endpoint (same signing keys);
//   3. per round (--rounds, default 3; the order of the servers turns every round):
//      - GET /health, then GET /v1/contacts/{id} cycling through the 200 tenants' (token, contact),
//        on A, B and C: B vs A is the cost of rate limiting (and request ids, on everywhere), C vs B
//        that of the request log; /health cycles through 2,048 CF-Connecting-IP addresses, so the
//        anonymous limit (300 per minute per address) is never reached; any 429 on B or C makes
//        the run invalid;
//      - POST /v1/items on A without and with a unique Idempotency-Key (alternating);
//      - on C, company Y's point read at a fixed 15 requests/s (open loop, timed here to the
//        microsecond) alone, then while company X's one client floods `GET /v1/items?q=…` at
//        200 req/s (50 times its search quota; the target), then with 32 connections as fast as
//        they go (saturating the local isolate and wrangler's proxy; for information), from a
//        worker thread (mostly answered 429);
//   4. tables of medians over rounds, the targets, and the per-client arithmetic of measurement 1.
// Exits non-zero on errors (non-2xx where none may be, a 429 on B or C, failed setup), not on missed targets.
import type { ChildProcess } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import { hashClientSecret } from "../src/auth/secret-hash.ts";
import { searchWords } from "../src/lib/search.ts";
import {
  autocannon,
  expect,
  httpClient,
  measurer,
  median,
  multiRowInserts,
  pct,
  prepareBenchState,
  printColumns,
  roundRobin,
  serverCpu,
  sqlText,
  tempServerScope,
  wranglerVersion,
  type RouteResult,
  type RouteSpec,
  type SuiteOptions,
  sleep,
} from "./kit.ts";
import { executeSql, queryRows, startDev } from "../scripts/lib/local.ts";

export type LimitsBenchOptions = SuiteOptions;

const TENANTS = 200;
const HEALTH_ADDRESSES = 2_048;
const X_ITEMS = 3_000;
const DOCUMENTS_LIMIT = 10_000_000;
const ACCOUNT = 3;
const USER = 4;
/** Tenant companies are FIRST_COMPANY .. FIRST_COMPANY + TENANTS - 1, then X, then Y; departments share their ids. */
const FIRST_COMPANY = 101;
const X_COMPANY = FIRST_COMPANY + TENANTS;
const Y_COMPANY = X_COMPANY + 1;
const FIRST_CONTACT = 1_001;
const CLIENT_SECRET = "bench-limits-secret";
const SEARCH = "insp";
/**
 * Company Y's read: requests/s, seconds per measurement, and the flood's head start. X floods twice:
 * at `floodRate` searches/s (50 times its quota of 4 searches/s; the target) and as fast as 32
 * connections go (which saturates the one local isolate and wrangler's proxy; for information).
 */
const FAIR = { rate: 15, seconds: 10, floodLead: 1.5, floodRate: 200 };
const TARGETS = { limitsCost: 0.05, idempotencyCost: 0.15, fairness: 1.5 };
/** The quotas of src/lib/rate-limit.ts POLICIES (units; a read costs 1). */
const QUOTA = { client: 1_200, clientBurst: 300, company: 3_000, anonymous: 300 };

type Name = "A" | "B" | "C";
const NAMES = ["A", "B", "C"] as const;
/** A: neither; B: rate limits (and request ids, always on): the target; C: the defaults, with the request log too. */
const VARS: Record<Name, Record<string, string>> = {
  A: { RATE_LIMITS: "off", REQUEST_LOGS: "off" },
  B: { REQUEST_LOGS: "off" },
  C: {},
};
const SETTING: Record<Name, string> = {
  A: "RATE_LIMITS=off, REQUEST_LOGS=off (--var)",
  B: "RATE_LIMITS unset: on; REQUEST_LOGS=off (--var)",
  C: "RATE_LIMITS and REQUEST_LOGS unset: both on (the defaults, as `npm start` runs)",
};
/** The servers whose rate limits are on: a 429 there in measurement 1 makes the run invalid. */
const limited = (name: Name) => name !== "A";

const INVALID =
  "INVALID RUN: a 429 in measurement 1 means some tenant or address reached its " +
  "quota, so B was not measured unthrottled:";

const clientId = (company: number) =>
  company === X_COMPANY
    ? "bench-x"
    : company === Y_COMPANY
      ? "bench-y"
      : `bench-t${String(company - FIRST_COMPANY + 1).padStart(3, "0")}`;

// ---------------------------------------------------------------------------------------------
// Data

async function seedStatements(): Promise<string[]> {
  const companies = Array.from({ length: TENANTS + 2 }, (_, i) => FIRST_COMPANY + i);
  const statements = [
    `UPDATE accounts SET max_documents = ${DOCUMENTS_LIMIT} WHERE id = 1`,
    `UPDATE companies SET documents_limit = ${DOCUMENTS_LIMIT} WHERE id = 1`,
    `INSERT INTO accounts (id, name, owner_user_id, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types) ` +
      `VALUES (${ACCOUNT}, 'Bench tenants', ${USER}, 1000, ${DOCUMENTS_LIMIT}, 100000, 102400, 50)`,
    `INSERT INTO users (id, account_id, email, name) VALUES (${USER}, ${ACCOUNT}, 'owner@bench-tenants.example', 'Bench Owner')`,
    ...multiRowInserts(
      "INSERT INTO companies (id, account_id, name, is_default, documents_limit, " +
        "contacts_limit, drive_space_mb) VALUES\n",
      companies.map(
        (id) =>
          `(${id}, ${ACCOUNT}, ${sqlText(`Bench ${clientId(id)}`)}, ${id === FIRST_COMPANY ? 1 : 0}, 10000, 1000, 1024)`,
      ),
    ),
    ...multiRowInserts(
      "INSERT INTO departments (id, company_id, name, name_key, is_default) VALUES\n",
      companies.map((id) => `(${id}, ${id}, 'General', 'general', 1)`),
    ),
  ];
  const clientRows: string[] = [];
  for (const id of companies) {
    const salt = `seed-${clientId(id)}`;
    const hash = await hashClientSecret(CLIENT_SECRET, salt);
    clientRows.push(
      `(${sqlText(clientId(id))}, 'bench: limits', ${sqlText(hash)}, ${sqlText(salt)}, ${ACCOUNT}, ${id}, ${USER}, '*', 1)`,
    );
  }
  statements.push(
    ...multiRowInserts(
      "INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, " +
        "company_id, user_id, scopes, active) VALUES\n",
      clientRows,
    ),
  );
  // One contact per tenant and for Y (none for X).
  const contactRows = companies
    .filter((id) => id !== X_COMPANY)
    .map((id) => {
      const email = `contact@${clientId(id)}.example`;
      return `(${contactOf(id)}, ${id}, ${id}, 'Bench', ${sqlText(clientId(id))}, ${sqlText(email)}, ${sqlText(email)})`;
    });
  statements.push(
    ...multiRowInserts(
      "INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, " + "email_key) VALUES\n",
      contactRows,
    ),
  );
  // X's items: two in three titles start with "Inspection" or "Inspector", so `q=insp` matches about 2,000.
  const subjects = ["Inspection", "Inspector visit", "Insurance"];
  const objects = ["fire extinguishers", "lift", "boiler", "fleet", "warehouse racking", "electrical installation"];
  const itemRows = Array.from({ length: X_ITEMS }, (_, i) => {
    const expiry = new Date(Date.UTC(2027, 0, 1) + (i % 730) * 86_400_000).toISOString().slice(0, 10);
    const title = `${subjects[i % 3]} – ${objects[i % objects.length]} ${i}`;
    return `(${X_COMPANY}, ${X_COMPANY}, ${sqlText(title)}, 'seeded by bench-limits', '${expiry}', ${USER}, ${sqlText(searchWords(title, "seeded by bench-limits"))})`;
  });
  statements.push(
    ...multiRowInserts(
      "INSERT INTO items (company_id, dept_id, title, notes, expiry_date, created_by, " + "search_words) VALUES\n",
      itemRows,
    ),
  );
  return statements;
}

const contactOf = (company: number) => FIRST_CONTACT + company - FIRST_COMPANY;

// ---------------------------------------------------------------------------------------------
// Company Y's paced reads

interface Paced {
  p50: number;
  p99: number;
  requests: number;
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;

/**
 * `rate` requests/s for `seconds`, each sent on schedule whether or not the previous one has
 * answered (open loop); latency from send to the end of the body, with sub-millisecond resolution
 * (autocannon's histogram counts whole milliseconds, too coarse for a ratio of p50s of a few ms).
 */
async function paced(url: string, headers: Record<string, string>, rate: number, seconds: number): Promise<Paced> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let errors = 0;
  const pending: Array<Promise<void>> = [];
  const t0 = performance.now();
  for (let i = 0; i < Math.round(rate * seconds); i++) {
    const wait = t0 + (i * 1000) / rate - performance.now();
    if (wait > 0) await sleep(wait);
    pending.push(
      (async () => {
        const sent = performance.now();
        try {
          const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
          await res.arrayBuffer();
          latencies.push(performance.now() - sent);
          statusCodes[res.status] = (statusCodes[res.status] ?? 0) + 1;
        } catch {
          errors++;
        }
      })(),
    );
  }
  await Promise.all(pending);
  latencies.sort((a, b) => a - b);
  const non2xx = Object.entries(statusCodes).reduce((n, [code, count]) => n + (code.startsWith("2") ? 0 : count), 0);
  return {
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    requests: latencies.length,
    non2xx,
    errors,
    statusCodes,
  };
}

// ---------------------------------------------------------------------------------------------
// Load bookkeeping for the quota arithmetic of measurement 1

interface Interval {
  start: number;
  end: number;
  requests: number;
}

/** Requests in the busiest 60 s, each interval's requests spread evenly over it (windows start at an interval's start). */
function busiestMinute(intervals: Interval[]): number {
  let busiest = 0;
  for (const w of intervals) {
    const [from, to] = [w.start, w.start + 60_000];
    let sum = 0;
    for (const i of intervals) {
      const overlap = Math.max(0, Math.min(to, i.end) - Math.max(from, i.start));
      sum += i.requests * (overlap / Math.max(1, i.end - i.start));
    }
    busiest = Math.max(busiest, sum);
  }
  return busiest;
}

async function expectPortFree(port: number): Promise<void> {
  const answered = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2_000) }).then(
    () => true,
    () => false,
  );
  if (answered)
    throw new Error(`port ${port} already answers: another server is running there (stop it, or use --port)`);
}

// ---------------------------------------------------------------------------------------------

export async function runLimitsBench(options: LimitsBenchOptions): Promise<number> {
  const started = Date.now();
  const log = (message: string) =>
    console.log(`[bench:limits +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const ports: Record<Name, number> = { A: options.port, B: options.port + 10, C: options.port + 20 };
  const base = Object.fromEntries(NAMES.map((n) => [n, `http://127.0.0.1:${ports[n]}`])) as Record<Name, string>;
  const scopes = Object.fromEntries(
    NAMES.map((n) => [n, tempServerScope(`expiry-bench-limits-${n.toLowerCase()}-`, log)]),
  ) as Record<Name, ReturnType<typeof tempServerScope>>;
  const scopeA = scopes.A;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scopeA.persistTo, log);
    let t = Date.now();
    executeSql({ persistTo: scopeA.persistTo }, await seedStatements());
    const [counts] = queryRows<{ companies: number; clients: number; contacts: number; xItems: number; fts: number }>(
      { persistTo: scopeA.persistTo },
      `SELECT (SELECT COUNT(*) FROM companies WHERE account_id = ${ACCOUNT}) AS companies, (SELECT COUNT(*) FROM api_clients WHERE account_id = ${ACCOUNT}) AS clients, ` +
        `(SELECT COUNT(*) FROM contacts WHERE company_id >= ${FIRST_COMPANY}) AS contacts, (SELECT documents_used FROM companies WHERE id = ${X_COMPANY}) AS xItems, ` +
        `(SELECT COUNT(*) FROM items WHERE company_id = ${X_COMPANY} AND search_words <> '[]') AS fts`,
    );
    expect(
      counts?.companies === TENANTS + 2 &&
        counts.clients === TENANTS + 2 &&
        counts.contacts === TENANTS + 1 &&
        counts.xItems === X_ITEMS &&
        counts.fts === X_ITEMS,
      `seeded rows: ${JSON.stringify(counts)}`,
    );
    for (const n of ["B", "C"] as const) cpSync(scopeA.persistTo, scopes[n].persistTo, { recursive: true });
    log(
      `seeded ${TENANTS} tenant companies (one client, one contact each), company X (${X_COMPANY}, ${X_ITEMS} items), company Y (${Y_COMPANY}); ` +
        `state copied for B and C (${((Date.now() - t) / 1000).toFixed(1)} s)`,
    );

    for (const n of NAMES) await expectPortFree(ports[n]);
    t = Date.now();
    const devArgs = (port: number, persistTo: string) => [
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
    ];
    const servers = {} as Record<Name, ChildProcess>;
    for (const n of NAMES) {
      servers[n] = await startDev(
        [
          ...devArgs(ports[n], scopes[n].persistTo),
          ...Object.entries(VARS[n]).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
        ],
        {
          port: ports[n],
          env: { X_LOCAL_OBSERVABILITY: "false" },
        },
      );
      scopes[n].setServer(servers[n]);
    }
    // The request log is console.log in the Worker: count the lines each server prints.
    const logLines: Record<Name, number> = { A: 0, B: 0, C: 0 };
    const lastOutput: Record<Name, string> = { A: "", B: "", C: "" };
    for (const name of NAMES) {
      const onData = (chunk: Buffer) => {
        const text = chunk.toString();
        logLines[name] += text.split('"msg":"request"').length - 1;
        lastOutput[name] = (lastOutput[name] + text).slice(-4000);
      };
      servers[name].stdout?.on("data", onData);
      servers[name].stderr?.on("data", onData);
    }
    log(
      `servers up (${((Date.now() - t) / 1000).toFixed(1)} s): ${NAMES.map((n) => `${n} ${base[n]}: ${SETTING[n]}`).join("; ")}; all --log-level warn, X_LOCAL_OBSERVABILITY=false`,
    );

    // ---- tokens (from A: no anonymous limit there; B verifies them with the same keys) and checks
    const httpA = httpClient(base.A);
    const httpC = httpClient(base.C);
    const tenants = Array.from({ length: TENANTS }, (_, i) => FIRST_COMPANY + i);
    const tokens = new Map<number, string>();
    for (const company of [...tenants, X_COMPANY, Y_COMPANY])
      tokens.set(company, await httpA.fetchToken(clientId(company), CLIENT_SECRET));
    const ownerToken = await httpA.fetchToken();
    const contactPath = (company: number) => `/v1/contacts/${contactOf(company)}`;
    for (const name of NAMES) {
      const http = httpClient(base[name]);
      const own = await fetch(base[name] + contactPath(tenants[0]!), {
        headers: { Authorization: `Bearer ${tokens.get(tenants[0]!)}` },
      });
      const body = (await own.json()) as { data?: { contact_id?: number } };
      expect(
        own.status === 200 && body.data?.contact_id === contactOf(tenants[0]!),
        `${name}: GET ${contactPath(tenants[0]!)}: ${own.status}`,
      );
      const policy = own.headers.get("RateLimit-Policy");
      expect(
        limited(name) ? policy?.includes('"client"') === true : policy === null,
        `${name}: RateLimit-Policy ${policy} (rate limits ${limited(name) ? "on" : "off"})`,
      );
      const foreign = await http.getJson(contactPath(tenants[1]!), tokens.get(tenants[0]!));
      expect(foreign.status === 404, `${name}: another tenant's contact must be 404, got ${foreign.status}`);
    }
    const search = await httpC.getJson(`/v1/items?q=${SEARCH}&limit=50`, tokens.get(X_COMPANY));
    expect(search.status === 200 && search.body.data?.length === 50, `C: X's search: ${search.status}`);
    await sleep(500);
    expect(
      logLines.A === 0 && logLines.B === 0,
      `A and B printed ${logLines.A} and ${logLines.B} request log lines with REQUEST_LOGS=off`,
    );
    log(
      `checks ok: tenancy, RateLimit-Policy only on B and C, X's search meta.total ${search.body.meta?.total} (capped at 1,000); ` +
        `request log lines printed so far: ${JSON.stringify(logLines)}`,
    );

    // ---- 1. GET /v1/contacts/{id} on A and B
    const health: RouteSpec = {
      key: "health",
      label: "GET /health",
      path: "/health",
      requests: Array.from({ length: HEALTH_ADDRESSES }, (_, i) => ({
        path: "/health",
        headers: { "CF-Connecting-IP": `198.18.${i >> 8}.${i & 255}` },
      })),
    };
    const contacts: RouteSpec = {
      key: "contacts",
      label: `GET /v1/contacts/{id} (${TENANTS} tenants)`,
      path: contactPath(tenants[0]!),
      token: tokens.get(tenants[0]!),
      requests: tenants.map((company) => ({
        path: contactPath(company),
        headers: { Authorization: `Bearer ${tokens.get(company)}` },
      })),
    };
    const measurers = Object.fromEntries(
      NAMES.map((n) => [
        n,
        measurer({
          base: base[n],
          connections: options.connections,
          duration: options.duration,
          warmup: options.warmup,
          log,
        }),
      ]),
    ) as Record<Name, ReturnType<typeof measurer>>;
    const loadOnB: Record<"health" | "contacts", Interval[]> = { health: [], contacts: [] };
    if (options.serverWarmup > 0) {
      log(`server warm-up: ${options.serverWarmup} s of /health and the contact reads on each server`);
      const mixed = Array.from({ length: HEALTH_ADDRESSES * 2 }, (_, i) =>
        i % 2 === 0 ? health.requests![(i / 2) % HEALTH_ADDRESSES]! : contacts.requests![((i - 1) / 2) % TENANTS]!,
      );
      for (const name of NAMES) {
        const start = Date.now();
        const warm = await autocannon({
          url: base[name],
          connections: options.connections,
          duration: options.serverWarmup,
          timeout: 30,
          requests: roundRobin(mixed),
        });
        if (warm.non2xx > 0 || warm.errors > 0) {
          const message = `server warm-up of ${name}: ${warm.non2xx} non-2xx ${JSON.stringify(warm.statusCodeStats)}, ${warm.errors} errors`;
          throw new Error(warm.statusCodeStats["429"] ? `${INVALID} ${message}` : message);
        }
        if (name === "B")
          for (const kind of ["health", "contacts"] as const)
            loadOnB[kind].push({ start, end: Date.now(), requests: warm.requests.total / 2 });
        await measurers[name].drain(contacts);
      }
    }
    type Pair = { health: RouteResult; route: RouteResult; cpu: { wrangler: number; workerd: number } };
    const m1: Record<Name, Pair[]> = { A: [], B: [], C: [] };
    const runs: Array<RouteResult & { server: string }> = [];
    /** Shares of one core the server's Node and workerd processes used during the last run (warm-up and drain included). */
    let lastCpu = { wrangler: 0, workerd: 0 };
    const runOn = async (name: Name, route: RouteSpec, round: number): Promise<RouteResult> => {
      const start = Date.now();
      const cpuBefore = serverCpu(servers[name].pid);
      const result = { ...(await measurers[name].measure(route, servers[name].pid, round === 0)), round };
      const cpuAfter = serverCpu(servers[name].pid);
      const wall = (Date.now() - start) / 1000;
      lastCpu = {
        wrangler: (cpuAfter.wrangler - cpuBefore.wrangler) / wall,
        workerd: (cpuAfter.workerd - cpuBefore.workerd) / wall,
      };
      runs.push({ ...result, server: name });
      if (name === "B" && (route.key === "health" || route.key === "contacts")) {
        const seconds = options.duration + (round === 0 ? options.warmup : 0);
        loadOnB[route.key].push({ start, end: Date.now(), requests: result.requestsPerSecond * seconds });
      }
      log(
        `  ${name} ${route.label} (round ${round + 1}): ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, ` +
          `p99 ${result.p99} ms, status ${JSON.stringify(result.statusCodes)}, errors ${result.errors}${result.otherCpu === undefined ? "" : `, other CPU ${pct(result.otherCpu)}`}; ` +
          `server CPU: wrangler (Node) ${pct(lastCpu.wrangler)}, workerd ${pct(lastCpu.workerd)} of a core`,
      );
      if (result.non2xx + result.warmupNon2xx > 0 || result.errors + result.warmupErrors > 0 || result.requests === 0) {
        const message =
          `${name} ${route.label} (round ${round + 1}): ${result.non2xx} non-2xx ${JSON.stringify(result.statusCodes)}, ${result.errors} errors; ` +
          `warm-up ${result.warmupNon2xx} non-2xx, ${result.warmupErrors} errors`;
        if (limited(name) && result.statusCodes["429"]) {
          throw new Error(`${INVALID} ${message}`);
        }
        errors.push(message);
      }
      return result;
    };

    log(`1. GET /v1/contacts/{id}: ${NAMES.map((n) => `${n} (${SETTING[n]})`).join(", ")}, ${options.rounds} round(s)`);
    for (let round = 0; round < options.rounds; round++) {
      // The order turns every round: A B C, B C A, C A B.
      for (const name of NAMES.map((_, i) => NAMES[(i + round) % NAMES.length]!)) {
        const h = await runOn(name, health, round);
        const route = await runOn(name, contacts, round);
        m1[name].push({ health: h, route, cpu: lastCpu });
      }
    }

    // ---- 2. POST /v1/items on A, without and with an Idempotency-Key
    const expiry = new Date(Date.now() + 4 * 365 * 86_400_000).toISOString().slice(0, 10);
    const postBody = JSON.stringify({ title: "Bench item [<id>]", expiry_date: expiry });
    const plain: RouteSpec = {
      key: "post",
      label: "POST /v1/items",
      path: "/v1/items",
      token: ownerToken,
      post: postBody,
    };
    const keyed: RouteSpec = {
      ...plain,
      key: "post-keyed",
      label: "POST /v1/items + Idempotency-Key",
      headers: { "Idempotency-Key": "bench-[<id>]" },
    };
    const post = (key?: string) =>
      fetch(`${base.A}/v1/items`, {
        method: "POST",
        headers: {
          Authorization: `Bearer ${ownerToken}`,
          "Content-Type": "application/json",
          ...(key ? { "Idempotency-Key": key } : {}),
        },
        body: postBody.replace("[<id>]", "preflight"),
      });
    const first = await post("bench-preflight");
    const firstBody = (await first.json()) as { data?: { item_id?: number } };
    const again = await post("bench-preflight");
    const againBody = (await again.json()) as { data?: { item_id?: number } };
    expect(
      first.status === 201 && again.status === 201,
      `A: keyed POST /v1/items: ${first.status}, repeated ${again.status}`,
    );
    expect(
      again.headers.get("Idempotent-Replayed") === "true" && againBody.data?.item_id === firstBody.data?.item_id,
      `A: the repeated key must replay item ${firstBody.data?.item_id} (got ${againBody.data?.item_id}, Idempotent-Replayed ${again.headers.get("Idempotent-Replayed")})`,
    );
    expect((await post()).status === 201, "A: POST /v1/items without a key");
    log(
      `2. POST /v1/items on A (${SETTING.A}): without and with a unique Idempotency-Key; preflight: a repeated key replayed item ${firstBody.data?.item_id}`,
    );
    const m2: Record<"plain" | "keyed", RouteResult[]> = { plain: [], keyed: [] };
    for (let round = 0; round < options.rounds; round++) {
      for (const variant of round % 2 === 0 ? (["plain", "keyed"] as const) : (["keyed", "plain"] as const)) {
        m2[variant].push(await runOn("A", variant === "plain" ? plain : keyed, round));
      }
    }

    // ---- 3. fairness on C
    const yUrl = base.C + contactPath(Y_COMPANY);
    const yHeaders = { Authorization: `Bearer ${tokens.get(Y_COMPANY)}` };
    const xPath = `/v1/items?q=${SEARCH}&limit=50`;
    log(
      `3. fairness on C: company Y GET ${contactPath(Y_COMPANY)} at ${FAIR.rate} req/s for ${FAIR.seconds} s ` +
        `(${FAIR.rate * 10} units per 10 s of ${QUOTA.clientBurst}, at most ${FAIR.rate * 60} per minute of ${QUOTA.client}), ` +
        `alone and while company X floods GET ${xPath} (${options.connections} connections, worker thread)`,
    );
    await paced(yUrl, yHeaders, FAIR.rate, 1);
    type Flood = {
      requestsPerSecond: number;
      ok: number;
      limited: number;
      other: number;
      errors: number;
      p50ok: number;
    };
    type Fair = { unloaded: Paced; loaded: Paced; flood: Flood; saturated: Paced; saturating: Flood };
    /** Y's paced read while X's one client floods (at `overallRate` searches/s, or as fast as it can). */
    const underFlood = async (overallRate?: number): Promise<{ loaded: Paced; flood: Flood }> => {
      const floodRun = autocannon({
        url: base.C + xPath,
        connections: options.connections,
        duration: FAIR.seconds + FAIR.floodLead + 0.5,
        timeout: 30,
        headers: { Authorization: `Bearer ${tokens.get(X_COMPANY)}` },
        workers: 1,
        ...(overallRate ? { overallRate } : {}),
      });
      await sleep(FAIR.floodLead * 1000);
      const loaded = await paced(yUrl, yHeaders, FAIR.rate, FAIR.seconds);
      const x = await floodRun;
      await (
        await fetch(base.C + xPath, { headers: { Authorization: `Bearer ${tokens.get(X_COMPANY)}` } })
      ).arrayBuffer();
      const codes = Object.fromEntries(
        Object.entries(x.statusCodeStats ?? {}).map(([code, s]) => [code, Number(s.count)]),
      );
      const flood = {
        requestsPerSecond: x.requests.total / x.duration,
        ok: codes["200"] ?? 0,
        limited: codes["429"] ?? 0,
        other: Object.entries(codes).reduce(
          (n, [code, count]) => n + (code === "200" || code === "429" ? 0 : count),
          0,
        ),
        errors: x.errors,
        p50ok: x.latency.p50,
      };
      return { loaded, flood };
    };
    const m3: Fair[] = [];
    for (let round = 0; round < options.rounds; round++) {
      const unloaded = await paced(yUrl, yHeaders, FAIR.rate, FAIR.seconds);
      const { loaded, flood } = await underFlood(FAIR.floodRate);
      const { loaded: saturated, flood: saturating } = await underFlood();
      m3.push({ unloaded, loaded, flood, saturated, saturating });
      log(
        `  round ${round + 1}: Y p50 ${unloaded.p50.toFixed(2)} ms alone, ${loaded.p50.toFixed(2)} ms under X's ${FAIR.floodRate}/s flood, ${saturated.p50.toFixed(2)} ms under X's saturating flood ` +
          `(p99 ${unloaded.p99.toFixed(1)} / ${loaded.p99.toFixed(1)} / ${saturated.p99.toFixed(1)} ms); X ${flood.requestsPerSecond.toFixed(0)} req/s: ${flood.ok} × 200, ${flood.limited} × 429; ` +
          `saturating ${saturating.requestsPerSecond.toFixed(0)} req/s: ${saturating.ok} × 200, ${saturating.limited} × 429`,
      );
      for (const [when, y] of [
        ["alone", unloaded],
        ["under the flood", loaded],
        ["under the saturating flood", saturated],
      ] as const) {
        if (y.non2xx > 0 || y.errors > 0)
          errors.push(
            `fairness round ${round + 1}: company Y ${when}: ${y.non2xx} non-2xx ${JSON.stringify(y.statusCodes)}, ${y.errors} errors`,
          );
      }
      for (const f of [flood, saturating]) {
        if (f.other > 0 || f.errors > 0)
          errors.push(
            `fairness round ${round + 1}: X's flood got ${f.other} answers other than 200/429 and ${f.errors} errors`,
          );
      }
    }

    // ---- report
    const loadAfter = loadavg()[0]!;
    const med = (xs: number[]) => median(xs);
    const server = (name: Name) => {
      const pairs = m1[name];
      return {
        requestsPerSecond: med(pairs.map((p) => p.route.requestsPerSecond)),
        p50: med(pairs.map((p) => p.route.p50)),
        p99: med(pairs.map((p) => p.route.p99)),
        health: med(pairs.map((p) => p.health.requestsPerSecond)),
        ratio: med(pairs.map((p) => p.route.requestsPerSecond / p.health.requestsPerSecond)),
        wranglerCpu: med(pairs.map((p) => p.cpu.wrangler)),
        workerdCpu: med(pairs.map((p) => p.cpu.workerd)),
      };
    };
    const a = server("A");
    const b = server("B");
    const cs = server("C");
    /** 1 - req/s on `of` / req/s on `against`, per round. */
    const costs = (of: Name, against: Name, kind: "route" | "health") =>
      m1[against].map((p, i) => 1 - m1[of][i]![kind].requestsPerSecond / p[kind].requestsPerSecond);
    const limitsCosts = costs("B", "A", "route");
    const healthCosts = costs("B", "A", "health");
    const logCosts = costs("C", "B", "route");
    const allCosts = costs("C", "A", "route");
    const limitsCost = med(limitsCosts);
    const idempotencyCosts = m2.plain.map((p, i) => 1 - m2.keyed[i]!.requestsPerSecond / p.requestsPerSecond);
    const idempotencyCost = med(idempotencyCosts);
    const fairRatios = m3.map((f) => f.loaded.p50 / f.unloaded.p50);
    const fairness = med(fairRatios);
    const saturatedRatios = m3.map((f) => f.saturated.p50 / f.unloaded.p50);
    const yNon2xx = m3.reduce(
      (n, f) => n + [f.unloaded, f.loaded, f.saturated].reduce((k, y) => k + y.non2xx + y.errors, 0),
      0,
    );
    const perRound = (xs: number[], digits = 2) => xs.map((x) => x.toFixed(digits)).join(" ");
    const percent = (x: number) => `${(x * 100).toFixed(1)}%`;
    const verdict = (met: boolean) => (met ? "MET" : "MISSED");

    console.log(
      `\nRate limits, request log and idempotency keys ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, --log-level warn, ` +
        `X_LOCAL_OBSERVABILITY=false; ${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs ` +
        `(${options.warmup} s warm-up in round 1); load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
    );
    for (const n of NAMES) console.log(`server ${n} (port ${ports[n]}): ${SETTING[n]}`);
    console.log("");
    console.log(
      `1. GET /v1/contacts/{id}, cycling through ${TENANTS} tenants (one client and one contact each); /health through ${HEALTH_ADDRESSES} client addresses\n`,
    );
    const row = (label: string, s: ReturnType<typeof server>) => [
      label,
      s.requestsPerSecond.toFixed(0),
      s.p50.toFixed(0),
      s.p99.toFixed(0),
      s.health.toFixed(0),
      s.ratio.toFixed(2),
      pct(s.wranglerCpu),
      pct(s.workerdCpu),
    ];
    printColumns(
      ["server", "req/s", "p50 ms", "p99 ms", "/health req/s", "ratio to /health", "wrangler CPU", "workerd CPU"],
      [row("A  limits off, log off", a), row("B  limits on, log off", b), row("C  limits on, log on", cs)],
    );
    console.log(
      "(CPU: share of one core used by the server's Node process, which receives the " +
        "Worker's console output, and by workerd, during the contact runs)",
    );
    console.log(
      `\ncost B vs A = 1 - req/s B / req/s A, per round: ${perRound(
        limitsCosts.map((c) => c * 100),
        1,
      )} (%); median ${percent(limitsCost)} ` +
        `(target <= ${pct(TARGETS.limitsCost)}) -> ${verdict(limitsCost <= TARGETS.limitsCost)}`,
    );
    console.log(
      `/health on B vs A (B's /health pays the anonymous limit): cost per round ${perRound(
        healthCosts.map((c) => c * 100),
        1,
      )} (%), median ${percent(med(healthCosts))}`,
    );
    console.log(
      `the request log line (C vs B), per round ${perRound(
        logCosts.map((c) => c * 100),
        1,
      )} (%), median ${percent(med(logCosts))}; everything (C vs A) median ${percent(med(allCosts))} ` +
        `(wrangler's Node process receives every line, even at --log-level warn: see wrangler CPU)`,
    );
    console.log(`request log lines printed by the servers over the whole run: ${JSON.stringify(logLines)}`);
    // The quota arithmetic: round-robin spreads B's (and C's smaller) load evenly over the tenants and the addresses.
    const peakContacts = Math.max(...m1.B.map((p) => p.route.requestsPerSecond));
    const peakHealth = Math.max(...m1.B.map((p) => p.health.requestsPerSecond));
    const minuteContacts = busiestMinute(loadOnB.contacts) / TENANTS;
    const minuteHealth = busiestMinute(loadOnB.health) / HEALTH_ADDRESSES;
    const quotas = {
      perClientPer10s: (peakContacts * 10) / TENANTS,
      perClientPerMinute: minuteContacts,
      perAddressPerMinute: minuteHealth,
    };
    console.log(
      `quotas on B (C is slower): at the fastest contact run (${peakContacts.toFixed(0)} req/s) each client spends about ${quotas.perClientPer10s.toFixed(0)} units per 10 s ` +
        `(client-burst ${QUOTA.clientBurst}); in the busiest minute about ${minuteContacts.toFixed(0)} per client and company (client ${QUOTA.client}, company ${QUOTA.company}); ` +
        `/health at ${peakHealth.toFixed(0)} req/s: about ${minuteHealth.toFixed(0)} per address in the busiest minute (anonymous ${QUOTA.anonymous}); 429s seen on B and C: 0`,
    );

    console.log(`\n2. POST /v1/items on A (${SETTING.A}), company 1, a unique title (and key) per request\n`);
    const postRow = (label: string, rs: RouteResult[]) => [
      label,
      med(rs.map((r) => r.requestsPerSecond)).toFixed(0),
      med(rs.map((r) => r.p50)).toFixed(0),
      med(rs.map((r) => r.p99)).toFixed(0),
      perRound(
        rs.map((r) => r.requestsPerSecond),
        0,
      ),
    ];
    printColumns(
      ["variant", "req/s", "p50 ms", "p99 ms", "req/s per round"],
      [postRow("without Idempotency-Key", m2.plain), postRow("with a unique Idempotency-Key", m2.keyed)],
    );
    console.log(
      `\ncost = 1 - req/s with / req/s without, per round: ${perRound(
        idempotencyCosts.map((c) => c * 100),
        1,
      )} (%); median ${percent(idempotencyCost)} ` +
        `(target <= ${pct(TARGETS.idempotencyCost)}) -> ${verdict(idempotencyCost <= TARGETS.idempotencyCost)}`,
    );

    console.log(
      `\n3. Fairness on C: company Y's GET /v1/contacts/{id} at ${FAIR.rate} req/s, alone, while company X's client floods GET ${xPath} at ` +
        `${FAIR.floodRate} req/s (50 times its search quota), and while it floods with ${options.connections} connections as fast as they go\n`,
    );
    const yRow = (label: string, ys: Paced[]) => [
      label,
      med(ys.map((y) => y.p50)).toFixed(2),
      med(ys.map((y) => y.p99)).toFixed(1),
      perRound(ys.map((y) => y.p50)),
    ];
    printColumns(
      ["company Y", "p50 ms", "p99 ms", "per-round p50"],
      [
        yRow(
          "alone",
          m3.map((f) => f.unloaded),
        ),
        yRow(
          `X at ${FAIR.floodRate}/s`,
          m3.map((f) => f.loaded),
        ),
        yRow(
          "X saturating",
          m3.map((f) => f.saturated),
        ),
      ],
    );
    const floodRps = med(m3.map((f) => f.saturating.requestsPerSecond));
    console.log(
      `\nratio p50 under X's ${FAIR.floodRate}/s flood / alone, per round ${perRound(fairRatios)}; median ${fairness.toFixed(2)} (target <= ${TARGETS.fairness.toFixed(2)}) -> ${verdict(fairness <= TARGETS.fairness)}; ` +
        `company Y non-2xx or errors: ${yNon2xx} (must be 0)`,
    );
    console.log(
      `company X at ${FAIR.floodRate}/s per round: ${m3.map((f) => `${f.flood.ok} × 200, ${f.flood.limited} × 429`).join("; ")}; ` +
        `saturating: ${m3.map((f) => `${f.saturating.ok} × 200, ${f.saturating.limited} × 429`).join("; ")}, ${floodRps.toFixed(0)} req/s (median), ` +
        `${(floodRps / cs.health).toFixed(2)} of C's /health; Y's ratio then ${perRound(saturatedRatios)} (for information: one isolate and wrangler's proxy saturated, ` +
        `Y queues behind X's ${options.connections} open requests, about ${((options.connections / floodRps) * 1000).toFixed(0)} ms by Little's law)`,
    );

    const summary = {
      limits: {
        A: a,
        B: b,
        C: cs,
        cost: limitsCost,
        costs: limitsCosts,
        healthCosts,
        logCosts,
        allCosts,
        target: TARGETS.limitsCost,
        met: limitsCost <= TARGETS.limitsCost,
        logLines,
        quotas,
      },
      idempotency: {
        without: {
          requestsPerSecond: med(m2.plain.map((r) => r.requestsPerSecond)),
          p50: med(m2.plain.map((r) => r.p50)),
        },
        with: {
          requestsPerSecond: med(m2.keyed.map((r) => r.requestsPerSecond)),
          p50: med(m2.keyed.map((r) => r.p50)),
        },
        cost: idempotencyCost,
        costs: idempotencyCosts,
        target: TARGETS.idempotencyCost,
        met: idempotencyCost <= TARGETS.idempotencyCost,
      },
      fairness: {
        p50Alone: med(m3.map((f) => f.unloaded.p50)),
        p50Loaded: med(m3.map((f) => f.loaded.p50)),
        p99Alone: med(m3.map((f) => f.unloaded.p99)),
        p99Loaded: med(m3.map((f) => f.loaded.p99)),
        ratio: fairness,
        ratios: fairRatios,
        p50Saturated: med(m3.map((f) => f.saturated.p50)),
        saturatedRatios,
        yNon2xx,
        x: m3.map((f) => f.flood),
        target: TARGETS.fairness,
        met: fairness <= TARGETS.fairness,
      },
    };
    for (const message of errors) console.error(`ERROR ${message}`);
    if (errors.length > 0)
      for (const name of NAMES)
        if (lastOutput[name].trim())
          console.error(`server ${name} output (last 4,000 characters):\n${lastOutput[name]}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      const settings = {
        servers: SETTING,
        tenants: TENANTS,
        healthAddresses: HEALTH_ADDRESSES,
        xItems: X_ITEMS,
        search: SEARCH,
        fair: FAIR,
      };
      writeFileSync(
        options.json,
        `${JSON.stringify(
          {
            started: new Date(started).toISOString(),
            options,
            settings,
            loadAverage: { before: loadBefore, after: loadAfter },
            summary,
            errors,
            runs,
            fairness: m3,
          },
          null,
          2,
        )}\n`,
      );
      log(`results written to ${options.json}`);
    }
    return errors.length > 0 ? 1 : 0;
  } finally {
    for (const n of ["C", "B", "A"] as const) await scopes[n].close();
  }
}
