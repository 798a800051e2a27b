// `npm run bench -- --only writes`: the write routes of items and contacts beside their reads, at the
// size issue 32 measured POST /v1/items at (30,000 items, 16 connections), under `wrangler dev` on a
// throw-away local D1 with rate limits off (the request log on, as in production):
//   1. migrations + demo seed; for company 1 by SQL: 30,000 items (dated over the next three years,
//      on the default reminder sequence) and 5,000 contacts; its limits raised so no POST hits them;
//   2. `wrangler dev --var RATE_LIMITS:off`; a token; one checked request per route;
//   3. per round (--rounds, default 3): GET /health, then each route for --duration seconds with
//      --connections (default 16), GET /health again; a route's ratio is its requests/s over the mean
//      of the two /health runs of its round;
//   4. a table of medians, and the target of issue 32: POST /v1/items >= 0.30 of /health.
// Exits non-zero on errors (a non-2xx answer, socket errors, failed setup), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import { searchWords } from "../src/lib/search.ts";
import {
  autocannon,
  expect,
  httpClient,
  mean,
  measurer,
  median,
  multiRowInserts,
  pct,
  prepareBenchState,
  printColumns,
  prng,
  requestHeaders,
  roundRobin,
  sqlText,
  tempServerScope,
  wranglerVersion,
  type RouteResult,
  type RouteSpec,
  type SuiteOptions,
  startBenchServer,
} from "./kit.ts";
import { executeSql } from "../scripts/lib/local.ts";

export type WritesBenchOptions = SuiteOptions;

const ITEMS = 30_000;
const CONTACTS = 5_000;
/** Ids of the seeded rows start here (the demo seed's are below). */
const FIRST_ID = 1_001;
const LIMIT = 10_000_000;
const TARGET = 0.3;
const VARS = ["--var", "RATE_LIMITS:off"];
const SUBJECTS = [
  "Inspection",
  "Insurance",
  "License",
  "Permit",
  "Certificate",
  "Contract",
  "Lease",
  "Warranty",
  "Maintenance",
  "Audit",
];
const OBJECTS = [
  "fire extinguishers",
  "elevator",
  "company van",
  "boiler",
  "office lease",
  "server room",
  "forklift",
  "alarm system",
];
const NAMES = [
  "Ada",
  "Grace",
  "Alan",
  "Edsger",
  "Barbara",
  "Donald",
  "Frances",
  "Ken",
  "Margaret",
  "Niklaus",
  "Zoë",
  "Chloé",
];

function seedStatements(): string[] {
  const random = prng(20261126);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const items = Array.from({ length: ITEMS }, (_, i) => {
    const title = `${pick(SUBJECTS)} ${pick(OBJECTS)} ${i}`;
    const expiry = new Date(today + (1 + (i % 1095)) * 86_400_000).toISOString().slice(0, 10);
    return `(${FIRST_ID + i}, 1, 1, ${sqlText(title)}, '${expiry}', 1, ${sqlText(searchWords(title, ""))})`;
  });
  const contacts = Array.from({ length: CONTACTS }, (_, i) => {
    const [first, last] = [pick(NAMES), pick(NAMES)];
    const email = `bench.${i}@writes.example`;
    return `(${FIRST_ID + i}, 1, 1, ${sqlText(first)}, ${sqlText(last)}, '${email}', '${email}', ${sqlText(searchWords(first, last, email))})`;
  });
  return [
    `UPDATE accounts SET max_documents = ${LIMIT}, max_contacts = ${LIMIT} WHERE id = 1`,
    `UPDATE companies SET documents_limit = ${LIMIT}, contacts_limit = ${LIMIT} WHERE id = 1`,
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, title, expiry_date, created_by, " + "search_words) VALUES\n",
      items,
    ),
    "UPDATE items SET seq_id = (SELECT id FROM reminder_sequences WHERE company_id = " +
      "1 AND is_default = 1) WHERE company_id = 1",
    ...multiRowInserts(
      "INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, " +
        "email_key, search_words) VALUES\n",
      contacts,
    ),
  ];
}

export async function runWritesBench(options: WritesBenchOptions): Promise<number> {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const log = (message: string) =>
    console.log(`[bench:writes +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const { getJson, fetchToken } = httpClient(base);
  const { measure, drain } = measurer({
    base,
    connections: options.connections,
    duration: options.duration,
    warmup: options.warmup,
    log,
  });
  const scope = tempServerScope("expiry-bench-writes-", log);
  let child: ChildProcess | undefined;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    let t = Date.now();
    executeSql({ persistTo: scope.persistTo }, seedStatements());
    log(`seeded ${ITEMS} items and ${CONTACTS} contacts for company 1 (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    t = Date.now();
    child = await startBenchServer(options.port, scope.persistTo, VARS);
    scope.setServer(child);
    log(
      `wrangler dev up on ${base} (${((Date.now() - t) / 1000).toFixed(1)} s): RATE_LIMITS=off (--var), --log-level warn, X_LOCAL_OBSERVABILITY=false`,
    );

    // ---- checks: every route answers 2xx once, and the seeded rows are the company's
    const token = await fetchToken();
    const item = FIRST_ID + ITEMS / 2;
    const contact = FIRST_ID + CONTACTS / 2;
    const itemBody = JSON.stringify({ title: "Bench item [<id>]", expiry_date: "2031-06-30" });
    const contactBody = JSON.stringify({
      first_name: "Bench",
      last_name: "Writer",
      email: "bench.[<id>]@new.writes.example",
    });
    const routes: RouteSpec[] = [
      { key: "health", label: "GET /health", path: "/health" },
      { key: "item-create", label: "POST /v1/items", path: "/v1/items", token, post: itemBody },
      { key: "item-get", label: "GET /v1/items/{id}", path: `/v1/items/${item}`, token },
      {
        key: "item-patch",
        label: "PATCH /v1/items/{id} (notes)",
        path: `/v1/items/${item}`,
        token,
        method: "PATCH",
        post: JSON.stringify({ notes: "Checked" }),
      },
      { key: "item-list", label: "GET /v1/items?limit=50", path: "/v1/items?limit=50", token },
      { key: "contact-create", label: "POST /v1/contacts", path: "/v1/contacts", token, post: contactBody },
      { key: "contact-get", label: "GET /v1/contacts/{id}", path: `/v1/contacts/${contact}`, token },
      {
        key: "contact-patch",
        label: "PATCH /v1/contacts/{id} (last_name)",
        path: `/v1/contacts/${contact}`,
        token,
        method: "PATCH",
        post: JSON.stringify({ last_name: "Patched" }),
      },
      { key: "contact-list", label: "GET /v1/contacts?limit=50", path: "/v1/contacts?limit=50", token },
    ];
    for (const route of routes) {
      const res = await fetch(base + route.path, {
        method: route.post === undefined ? "GET" : (route.method ?? "POST"),
        headers: requestHeaders(route),
        body: route.post?.replace("[<id>]", "preflight"),
      });
      expect(
        res.status >= 200 && res.status < 300,
        `${route.label}: ${res.status} ${(await res.text()).slice(0, 300)}`,
      );
    }
    const list = await getJson("/v1/items?limit=1", token);
    expect(
      list.body?.meta?.total === ITEMS + 1,
      `GET /v1/items meta.total: ${list.body?.meta?.total} (expected ${ITEMS + 1})`,
    );
    log(`checks ok: every route answers 2xx; company 1 holds ${list.body.meta.total} items`);

    if (options.serverWarmup > 0) {
      log(`server warm-up: ${options.serverWarmup} s of mixed reads`);
      const reads = routes.filter((r) => r.post === undefined);
      await autocannon({
        url: base,
        connections: options.connections,
        duration: options.serverWarmup,
        timeout: 30,
        requests: roundRobin(reads.map((r) => ({ path: r.path, headers: requestHeaders(r) }))),
      });
      for (const route of reads) await drain(route);
    }
    const results: Record<string, RouteResult[]> = Object.fromEntries(routes.map((r) => [r.key, []]));
    const healthAfter: RouteResult[] = [];
    const note = (label: string, round: number, result: RouteResult) => {
      log(
        `  ${label} (round ${round + 1}): ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ` +
          `non-2xx ${result.non2xx}, errors ${result.errors}${result.otherCpu === undefined ? "" : `, other CPU ${pct(result.otherCpu)}`}`,
      );
      if (
        result.non2xx > 0 ||
        result.errors > 0 ||
        result.warmupNon2xx > 0 ||
        result.warmupErrors > 0 ||
        result.requests === 0
      ) {
        errors.push(
          `${label} (round ${round + 1}): ${result.non2xx + result.warmupNon2xx} non-2xx, ${result.errors + result.warmupErrors} errors`,
        );
      }
    };
    for (let round = 0; round < options.rounds; round++) {
      for (const route of routes) {
        const result = { ...(await measure(route, child.pid, round === 0 && route.key !== "health")), round };
        results[route.key]!.push(result);
        note(route.label, round, result);
      }
      const closing = { ...(await measure(routes[0]!, child.pid, false)), round };
      healthAfter.push(closing);
      note("GET /health again", round, closing);
    }

    // ---- report
    const loadAfter = loadavg()[0]!;
    const health = (round: number) =>
      mean([results.health![round]!.requestsPerSecond, healthAfter[round]!.requestsPerSecond]);
    const ratios = (key: string) => results[key]!.map((r, round) => r.requestsPerSecond / health(round));
    console.log(
      `\nWrites ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off, --log-level warn, X_LOCAL_OBSERVABILITY=false; ` +
        `${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs; company 1: ${ITEMS} items, ${CONTACTS} contacts; ` +
        `load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    printColumns(
      ["route", "req/s", "p50 ms", "p99 ms", "ratio to /health", "ratio per round"],
      routes.map((route) => {
        const rs = results[route.key]!;
        return [
          route.label,
          median(rs.map((r) => r.requestsPerSecond)).toFixed(0),
          median(rs.map((r) => r.p50)).toFixed(0),
          median(rs.map((r) => r.p99)).toFixed(0),
          route.key === "health" ? "1.00" : median(ratios(route.key)).toFixed(2),
          route.key === "health"
            ? rs.map((_, i) => health(i).toFixed(0)).join(" ")
            : ratios(route.key)
                .map((x) => x.toFixed(2))
                .join(" "),
        ];
      }),
    );
    const create = median(ratios("item-create"));
    console.log(
      `\nPOST /v1/items: ${create.toFixed(2)} of /health (target >= ${TARGET.toFixed(2)}) -> ${create >= TARGET ? "MET" : "MISSED"}`,
    );
    for (const message of errors) console.error(`ERROR ${message}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        `${JSON.stringify(
          {
            started: new Date(started).toISOString(),
            options,
            items: ITEMS,
            contacts: CONTACTS,
            loadAverage: { before: loadBefore, after: loadAfter },
            results,
            healthAfter,
            errors,
          },
          null,
          2,
        )}\n`,
      );
      log(`results written to ${options.json}`);
    }
    return errors.length > 0 ? 1 : 0;
  } finally {
    await scope.close();
  }
}
