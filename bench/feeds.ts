// `npm run bench -- --only feeds`: what a calendar feed costs (docs/performance.md, "Calendar feeds"),
// under `wrangler dev` on a throw-away local D1, rate limits and the request log off:
//   1. migrations + demo seed; for company 1 by SQL: 1,000 items (expiry dates 40 to 739 days ahead,
//      on the default reminder sequence: 5 queued reminders each once the reminder engine has seen
//      them), 20 folders (two levels) and 5 document types on most of them, one contact;
//   2. `wrangler dev --var RATE_LIMITS:off --var REQUEST_LOGS:off`; a feed created with
//      POST /v1/calendar-feeds; fetched until its ETag is stable (the first fetches apply the seeded
//      items to the reminder engine, 500 per fetch), then checked: 1,000 events and 5,000 alarms
//      (parsed with ical.js), and If-None-Match answers 304;
//   3. per round (--rounds, default 3): GET /health, GET /v1/contacts/{id}, the feed with
//      If-None-Match (304), the feed in full (200), each for --duration seconds with --connections;
//   4. a table of medians, and the target: the 304 costs no more than the point read (its
//      requests/s at least the point read's).
// Exits non-zero on errors (a status other than the route's, socket errors, failed setup), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import ICAL from "ical.js";
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

export type FeedsBenchOptions = SuiteOptions;

const ITEMS = 1_000;
const STEPS = 5;
const FIRST_ID = 1_001;
const CONTACT = 1_001;
const SITES = 10;
const TYPES = ["Certificate", "Inspection report", "Permit, city", "Insurance; fleet", "Lease"];
const VARS = ["--var", "RATE_LIMITS:off", "--var", "REQUEST_LOGS:off"];

function seedStatements(): string[] {
  const day = 86_400_000;
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const folders = Array.from(
    { length: SITES },
    (_, i) => `(${FIRST_ID + i}, 1, 1, 0, ${sqlText(`Site ${i + 1}`)}, ${sqlText(`site ${i + 1}`)})`,
  ).concat(
    Array.from(
      { length: SITES },
      (_, i) => `(${FIRST_ID + SITES + i}, 1, 1, ${FIRST_ID + i}, 'Permits, local', 'permits, local')`,
    ),
  );
  const types = TYPES.map(
    (name, i) => `(${FIRST_ID + i}, 1, 1, 1, ${sqlText(name)}, ${sqlText(name.toLowerCase())}, 1)`,
  );
  const items = Array.from({ length: ITEMS }, (_, i) => {
    const expiry = new Date(today + (40 + (i % 700)) * day).toISOString().slice(0, 10);
    const folder = i % 4 === 0 ? "NULL" : String(FIRST_ID + (i % (2 * SITES)));
    const type = i % 2 === 0 ? String(FIRST_ID + (i % TYPES.length)) : "NULL";
    const title = `Fire extinguisher check, building ${i}; floor ${i % 7} – “annual” 🧯`;
    const notes = i % 3 === 0 ? "Call the city office,\nask for the inspector; bring the permit \\ the invoice." : "";
    return `(1, 1, ${type}, ${folder}, ${sqlText(title)}, ${sqlText(notes)}, '${["exp", "due", "apt", "evt"][i % 4]}', '${expiry}', 1)`;
  });
  return [
    ...multiRowInserts("INSERT INTO folders (id, company_id, dept_id, parent_id, name, name_key) VALUES\n", folders),
    ...multiRowInserts(
      "INSERT INTO document_types (id, account_id, company_id, dept_id, name, " + "name_key, created_by) VALUES\n",
      types,
    ),
    ...multiRowInserts(
      "INSERT INTO items (company_id, dept_id, document_type_id, folder_id, title, " +
        "notes, item_type, expiry_date, created_by) VALUES\n",
      items,
    ),
    "UPDATE items SET seq_id = (SELECT id FROM reminder_sequences WHERE company_id = " +
      "1 AND is_default = 1) WHERE company_id = 1",
    `INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key) VALUES (${CONTACT}, 1, 1, 'Bench', 'Feeds', 'bench@feeds.example', 'bench@feeds.example')`,
  ];
}

export async function runFeedsBench(options: FeedsBenchOptions): Promise<number> {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const log = (message: string) =>
    console.log(`[bench:feeds +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const { getJson, postJson, fetchToken } = httpClient(base);
  const { measure, drain } = measurer({
    base,
    connections: options.connections,
    duration: options.duration,
    warmup: options.warmup,
    log,
  });
  const scope = tempServerScope("expiry-bench-feeds-", log);
  let child: ChildProcess | undefined;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    let t = Date.now();
    executeSql({ persistTo: scope.persistTo }, seedStatements());
    log(
      `seeded ${ITEMS} items, ${2 * SITES} folders, ${TYPES.length} document types and contact ${CONTACT} for company 1 (${((Date.now() - t) / 1000).toFixed(1)} s)`,
    );
    t = Date.now();
    child = await startBenchServer(options.port, scope.persistTo, VARS);
    scope.setServer(child);
    log(
      `wrangler dev up on ${base} (${((Date.now() - t) / 1000).toFixed(1)} s): RATE_LIMITS=off, REQUEST_LOGS=off (--var), --log-level warn, X_LOCAL_OBSERVABILITY=false`,
    );

    // ---- the feed, until the reminder engine has seen every item
    const token = await fetchToken();
    const created = await postJson("/v1/calendar-feeds", token, {});
    expect(created.status === 201, `POST /v1/calendar-feeds: ${created.status} ${JSON.stringify(created.body)}`);
    const feedPath = new URL(created.body.data.url as string).pathname;
    let etag = "";
    let body = "";
    for (let fetches = 1; ; fetches++) {
      const res = await fetch(base + feedPath, { headers: etag ? { "If-None-Match": etag } : {} });
      if (res.status === 304) {
        log(`feed ${feedPath.slice(0, 22)}… stable after ${fetches} fetches: ETag ${etag}`);
        break;
      }
      expect(res.status === 200 && fetches <= 10, `feed fetch ${fetches}: ${res.status}`);
      etag = res.headers.get("ETag") ?? "";
      body = await res.text();
    }
    const calendar = new ICAL.Component(ICAL.parse(body));
    const events = calendar.getAllSubcomponents("vevent");
    const alarms = events.reduce((n, e) => n + e.getAllSubcomponents("valarm").length, 0);
    expect(
      events.length === ITEMS && alarms === ITEMS * STEPS,
      `the feed has ${events.length} events and ${alarms} alarms (expected ${ITEMS} and ${ITEMS * STEPS})`,
    );
    const bytes = Buffer.byteLength(body);
    const contact = await getJson(`/v1/contacts/${CONTACT}`, token);
    expect(contact.status === 200, `GET /v1/contacts/${CONTACT}: ${contact.status}`);
    log(
      `checks ok: ${events.length} events, ${alarms} alarms (ical.js), ${(bytes / 1024).toFixed(0)} KiB; If-None-Match answers 304; contact ${CONTACT} readable`,
    );

    // ---- measurements
    const routes: Array<RouteSpec & { status: number }> = [
      { key: "health", label: "GET /health", path: "/health", status: 200 },
      { key: "point", label: `GET /v1/contacts/${CONTACT}`, path: `/v1/contacts/${CONTACT}`, token, status: 200 },
      {
        key: "feed304",
        label: "GET /v1/calendar/<token>.ics + If-None-Match (304)",
        path: feedPath,
        headers: { "If-None-Match": etag },
        status: 304,
      },
      { key: "feed200", label: `GET /v1/calendar/<token>.ics (200, ${ITEMS} events)`, path: feedPath, status: 200 },
    ];
    // Warm-ups are run here rather than by measure(), which would report the 304s as non-2xx.
    const warmUp = async (seconds: number, entries: RouteSpec[]) => {
      const requests = roundRobin(entries.map((route) => ({ path: route.path, headers: requestHeaders(route) })));
      await autocannon({ url: base, connections: options.connections, duration: seconds, timeout: 30, requests });
      for (const route of entries) await drain(route);
    };
    if (options.serverWarmup > 0) {
      log(`server warm-up: ${options.serverWarmup} s of mixed load over the four routes`);
      await warmUp(options.serverWarmup, routes);
    }
    const results: Record<string, RouteResult[]> = Object.fromEntries(routes.map((r) => [r.key, []]));
    for (let round = 0; round < options.rounds; round++) {
      for (const route of routes) {
        if (round === 0 && options.warmup > 0) await warmUp(options.warmup, [route]);
        const result = { ...(await measure(route, child.pid, false)), round };
        results[route.key]!.push(result);
        const wrong = result.requests - (result.statusCodes[String(route.status)] ?? 0);
        log(
          `  ${route.label} (round ${round + 1}): ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, ` +
            `status ${JSON.stringify(result.statusCodes)}, errors ${result.errors}${result.otherCpu === undefined ? "" : `, other CPU ${pct(result.otherCpu)}`}`,
        );
        if (wrong > 0 || result.errors > 0 || result.requests === 0)
          errors.push(
            `${route.label} (round ${round + 1}): ${wrong} answers other than ${route.status}, ${result.errors} errors`,
          );
      }
    }

    // ---- report
    const loadAfter = loadavg()[0]!;
    const perRound = (key: string) => results[key]!.map((r) => r.requestsPerSecond);
    const ratioTo = (key: string, baseline: string) => perRound(key).map((rps, i) => rps / perRound(baseline)[i]!);
    const cost = median(ratioTo("feed304", "point"));
    console.log(
      `\nCalendar feeds ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off and REQUEST_LOGS=off, --log-level warn, ` +
        `X_LOCAL_OBSERVABILITY=false; ${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs ` +
        `(${options.warmup} s warm-up in round 1); feed of ${ITEMS} items (${ITEMS * STEPS} alarms, ${(bytes / 1024).toFixed(0)} KiB); ` +
        `load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    printColumns(
      ["route", "req/s", "p50 ms", "p99 ms", "ratio to /health", "req/s per round"],
      routes.map((route) => {
        const rs = results[route.key]!;
        return [
          route.label,
          median(perRound(route.key)).toFixed(0),
          median(rs.map((r) => r.p50)).toFixed(0),
          median(rs.map((r) => r.p99)).toFixed(0),
          median(ratioTo(route.key, "health")).toFixed(2),
          perRound(route.key)
            .map((x) => x.toFixed(0))
            .join(" "),
        ];
      }),
    );
    console.log(
      `\n304 / point read, req/s per round: ${ratioTo("feed304", "point")
        .map((x) => x.toFixed(2))
        .join(" ")}; median ${cost.toFixed(2)} ` +
        `(target >= 1.00: the 304 costs no more than GET /v1/contacts/{id}) -> ${cost >= 1 ? "MET" : "MISSED"}`,
    );
    console.log(`full feed / 304, req/s: median ${median(ratioTo("feed200", "feed304")).toFixed(3)}`);
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
            alarms: ITEMS * STEPS,
            bytes,
            loadAverage: { before: loadBefore, after: loadAfter },
            cost,
            results,
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
