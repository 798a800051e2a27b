// `npm run bench -- --only bounces`: what a bounce costs (docs/performance.md, "Bounces"), under
// `wrangler dev` on a throw-away local D1, rate limits off:
//   1. migrations + demo seed; for company 1 by SQL: enough items for every DSN below, each with
//      a group of its own of GROUP contacts (every address different: each hard bounce suppresses a
//      new address, as a flood from a stale list would); through the API one reminder per item to
//      its group at the coming minute: items × GROUP email deliveries, each handed to the email
//      binding (the local simulation) with its bounce address;
//   2. the bounce addresses, minted here with src/lib/bounce-token.ts and the key given to the
//      server (--var LINK_SIGNING_KEYS), one per delivery as the transport mints them; a Postfix-shaped
//      hard-bounce DSN for each (test/worker/support/bounce-samples.ts);
//   3. SEQUENTIAL plain messages, then SEQUENTIAL DSNs, posted one at a time to
//      /cdn-cgi/handler/email (nothing else running): the time of each, from the POST to wrangler's
//      answer. A plain message is refused at once, so its time is wrangler's own share (its parse of
//      the message, the call into the Worker); a DSN's adds the email() handler's work (read, parse,
//      token, the company clock's transaction). One bounce's processing: the difference of the medians;
//   4. per round (--rounds, default 3), each run --duration seconds (default 30 here) of
//      GET /v1/contacts?limit=1 of company 2 (demo-other) with --connections (default 4 here):
//      alone; while plain messages (refused at once: the control, wrangler's own share) arrive
//      evenly at the issue's rate, RATE_PER_MINUTE (1,000 a minute: 500 in 30 s); while as many DSNs
//      for company 1 do; and, for information, while DSNs arrive at INFO_RATE_PER_MINUTE (1,800 a
//      minute, the rate of the first runs: 300 in 10 s). The p50 of each, to 0.1 ms, from every
//      response's own time (autocannon's histogram keeps whole milliseconds); and the CPU the
//      server's processes (workerd, wrangler's Node) used in each run: what one message cost beyond
//      the GETs served meanwhile (at that round's CPU per GET alone), far less noisy than a p50 when
//      other work shares the machine. BOUNCES_PROFILE=FILE: a V8 CPU profile of the Worker's
//      isolate (bench/profile.ts) during round 1's flood at 1,800 a minute (the information run:
//      the target's runs stay free of the profiler's cost);
//   5. checks: every DSN was accepted (200) and each delivery is `bounced` (GET /v1/deliveries);
//      a table and the targets: the median time of one bounce <= 50 ms, the p50 with the flood at
//      1,000 a minute <= 1.2 × the p50 without.
// Exits non-zero on errors (a status other than the expected one, a failed check), not on a missed target.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import {
  expect,
  median,
  multiRowInserts,
  pct,
  prepareBenchState,
  printColumns,
  sleep,
  serverCpu,
  startBenchServer,
  wranglerVersion,
  type RouteResult,
  type RouteSpec,
  type SuiteOptions,
  benchSet,
} from "./kit.ts";
import { ROOT, executeSql } from "../scripts/lib/local.ts";
import { signBounceToken } from "../src/lib/bounce-token.ts";
import { postfixBounce } from "../test/worker/support/bounce-samples.ts";

export type BouncesBenchOptions = SuiteOptions;

const GROUP = 200;
const GROUP_ID = 1_001;
const FIRST_CONTACT = 1_001;
const FIRST_ITEM = 1_001;
const SEQUENTIAL = 100;
/** The issue's rate ("1,000 bounces within a minute"), held to the target. */
const RATE_PER_MINUTE = 1_000;
/** Information: the rate of the first runs (300 in 10 s). */
const INFO_RATE_PER_MINUTE = 1_800;
const LINK_SECRET = "bench-link-signing-key-0123456789abcdef";
const VARS = ["--var", "RATE_LIMITS:off", "--var", `LINK_SIGNING_KEYS:bench:${LINK_SECRET}`];
const DOMAIN = "expiry-reminder.example";
const TARGETS = { oneBounceMs: 50, floodRatio: 1.2 };

/** Messages at `perMinute` over `seconds`. */
const atRate = (perMinute: number, seconds: number) => Math.round((perMinute * seconds) / 60);

function seedStatements(itemCount: number): string[] {
  const groups = Array.from(
    { length: itemCount },
    (_, g) => `(${GROUP_ID + g}, 1, 1, 'Bench bounces ${g}', 'bench bounces ${g}')`,
  );
  const contacts = Array.from({ length: itemCount * GROUP }, (_, i) => {
    const email = `member${i}@bounces.bench.example`;
    return `(${FIRST_CONTACT + i}, 1, 1, ${GROUP_ID + Math.floor(i / GROUP)}, 'Member', '${i}', '${email}', '${email}')`;
  });
  const items = Array.from(
    { length: itemCount },
    (_, i) => `(${FIRST_ITEM + i}, 1, 1, 'Boiler inspection ${i}', 'exp', '2030-01-31', 1)`,
  );
  return [
    ...multiRowInserts("INSERT INTO contact_groups (id, company_id, dept_id, name, name_key) VALUES\n", groups),
    ...multiRowInserts(
      "INSERT INTO contacts (id, company_id, dept_id, group_id, first_name, last_name, email, email_key) VALUES\n",
      contacts,
    ),
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, title, item_type, expiry_date, created_by) VALUES\n",
      items,
    ),
  ];
}

interface Dsn {
  to: string;
  raw: string;
}

async function postDsn(base: string, dsn: Dsn): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  const res = await fetch(
    `${base}/cdn-cgi/handler/email?from=${encodeURIComponent("MAILER-DAEMON@mail.example.net")}&to=${encodeURIComponent(dsn.to)}`,
    { method: "POST", body: dsn.raw },
  );
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - t };
}

export async function runBouncesBench(options: BouncesBenchOptions): Promise<number> {
  const { started, base, log, measure, scope, postJson, getJson, fetchToken } = benchSet("bounces", options);
  let child: ChildProcess | undefined;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    const perRound = atRate(RATE_PER_MINUTE, options.duration);
    const infoPerRound = atRate(INFO_RATE_PER_MINUTE, options.duration);
    // One delivery per DSN posted: the sequential ones and every round's floods.
    const ITEMS = Math.ceil((SEQUENTIAL + options.rounds * (perRound + infoPerRound)) / GROUP);
    executeSql({ persistTo: scope.persistTo }, seedStatements(ITEMS));
    log(`seeded ${ITEMS} items for company 1, each with a group of ${GROUP} contacts (${ITEMS * GROUP} addresses)`);
    child = await startBenchServer(options.port, scope.persistTo, VARS);
    scope.setServer(child);
    log(`wrangler dev up on ${base}: RATE_LIMITS=off (--var), --log-level warn, X_LOCAL_OBSERVABILITY=false`);

    // ---- ITEMS reminders, each to its group, at the coming minute: ITEMS × GROUP sent deliveries
    const token = await fetchToken();
    const minute = Math.ceil((Date.now() + 15_000) / 60_000) * 60_000;
    const at = new Date(minute).toISOString();
    for (let i = 0; i < ITEMS; i++) {
      const r = await postJson(`/v1/items/${FIRST_ITEM + i}/reminders`, token, {
        date: at.slice(0, 10),
        hour: at.slice(11, 16),
        group_id: GROUP_ID + i,
      });
      expect(r.status === 201, `POST reminder: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
    }
    log(`${ITEMS} reminders to their groups at ${at}: waiting for their ${ITEMS * GROUP} deliveries`);
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(LINK_SECRET),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const dsns: Dsn[] = [];
    for (let i = 0; i < ITEMS; i++) {
      let deliveries: Array<{ state: string; contact_id: number; recipient: string }> = [];
      let reminderId = 0;
      while (Date.now() < minute + 300_000) {
        const listed = await getJson(`/v1/items/${FIRST_ITEM + i}/reminders`, token);
        const sent = listed.body?.data?.sent?.[0];
        deliveries = sent?.deliveries ?? [];
        reminderId = sent?.reminder_id ?? 0;
        if (deliveries.length >= GROUP && deliveries.every((d) => d.state !== "pending")) break;
        await sleep(2_000);
      }
      const sent = deliveries.filter((d) => d.state === "sent");
      expect(sent.length === GROUP, `item ${FIRST_ITEM + i}: ${sent.length} deliveries sent, expected ${GROUP}`);
      for (const d of sent) {
        const bounce = `bounces+${await signBounceToken(key, { companyId: 1, reminderId, contactId: d.contact_id })}@${DOMAIN}`;
        dsns.push({ to: bounce, raw: postfixBounce({ rcpt: d.recipient, bounce }) });
      }
    }
    log(`${dsns.length} deliveries sent; their DSNs built`);

    // ---- wrangler's own share: the same path for a message the handler refuses at once (not a report)
    const refusedTimes: number[] = [];
    for (let i = 0; i < SEQUENTIAL; i++) {
      const r = await postDsn(base, {
        to: dsns[0]!.to,
        raw: `From: someone@example.net\r\nTo: ${dsns[0]!.to}\r\nSubject: hello ${i}\r\nMessage-ID: <plain-${i}@example.net>\r\n\r\nNot a report.\r\n`,
      });
      if (r.status !== 400) errors.push(`plain message: ${r.status}`);
      refusedTimes.push(r.ms);
    }
    const refusedMedian = median(refusedTimes);
    log(`${SEQUENTIAL} plain messages (refused at once): median ${refusedMedian.toFixed(1)} ms`);

    // ---- one bounce at a time
    const sequential: number[] = [];
    for (const dsn of dsns.slice(0, SEQUENTIAL)) {
      const r = await postDsn(base, dsn);
      if (r.status !== 200) errors.push(`sequential DSN: ${r.status}`);
      sequential.push(r.ms);
    }
    const sortedSeq = [...sequential].sort((a, b) => a - b);
    const oneBounce = median(sequential);
    log(
      `${SEQUENTIAL} DSNs one at a time: median ${oneBounce.toFixed(1)} ms, p90 ${sortedSeq[Math.floor(SEQUENTIAL * 0.9)]!.toFixed(1)} ms`,
    );

    // ---- another company's simple GET, alone and under the flood
    const otherToken = await fetchToken("demo-other", "demo-other-secret");
    const route: RouteSpec = {
      key: "other",
      label: "GET /v1/contacts?limit=1 (company 2)",
      path: "/v1/contacts?limit=1",
      token: otherToken,
    };
    type Run = RouteResult & { serverCpuMs: number };
    const alone: Run[] = [];
    const flooded: Run[] = [];
    const plainFlooded: Run[] = [];
    const infoFlooded: Run[] = [];
    /** Sends `messages` evenly over --duration seconds; answers their statuses once all are answered. */
    const spread = (messages: Dsn[]) => {
      const gap = (options.duration * 1000) / Math.max(1, messages.length);
      const t0 = Date.now();
      return Promise.all(
        messages.map(async (dsn, i) => {
          await sleep(t0 + i * gap - Date.now());
          // A failed fetch is status 0 (an error below), not an unhandled rejection that would skip the cleanup.
          return (await postDsn(base, dsn).catch(() => ({ status: 0 }))).status;
        }),
      );
    };
    const floodStatuses: number[] = [];
    let next = SEQUENTIAL;
    /** The route measured while the next `count` DSNs arrive over the run. */
    /** One measured run, with the CPU the server's processes (workerd and wrangler's Node) used in it. */
    const run = async (round: number): Promise<Run> => {
      const before = serverCpu(child!.pid);
      const r = await measure(route, child!.pid, false);
      const after = serverCpu(child!.pid);
      return { ...r, round, serverCpuMs: 1000 * (after.workerd + after.wrangler - before.workerd - before.wrangler) };
    };
    const underBounces = async (count: number, round: number, profile?: string) => {
      const batch = dsns.slice(next, next + count);
      next += batch.length;
      const flood = spread(batch);
      // In a process of its own (inside this one, a profile of the flood stalled the server).
      const profiled = profile
        ? new Promise<void>((done) =>
            spawn(
              process.execPath,
              [
                "bench/profile.ts",
                "--port",
                String(options.port + 1),
                "--seconds",
                String(options.duration * 0.8),
                "--out",
                profile,
              ],
              { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] },
            ).once("exit", () => done()),
          )
        : undefined;
      const r = await run(round);
      floodStatuses.push(...(await flood));
      if (profiled) {
        await profiled;
        log(
          `CPU profile of the Worker's isolate during this flood written to ${profile} (this round's figures include the profiler)`,
        );
      }
      return r;
    };
    const ms = (r: RouteResult) => r.precise.p50.toFixed(1);
    // The warm-up, apart: the rounds' runs are measured alone, CPU included.
    await measure(route, child.pid, true);
    for (let round = 0; round < options.rounds; round++) {
      const a = await run(round);
      alone.push(a);
      // The control: as many plain messages, refused at once (wrangler's own share of the flood).
      const plain = Array.from({ length: perRound }, (_, i) => ({
        to: dsns[0]!.to,
        raw: `From: someone@example.net\r\nTo: ${dsns[0]!.to}\r\nSubject: plain ${round}-${i}\r\nMessage-ID: <flood-${round}-${i}@example.net>\r\n\r\nNot a report.\r\n`,
      }));
      const plainFlood = spread(plain);
      const p = await run(round);
      if ((await plainFlood).some((status) => status !== 400))
        errors.push("a plain flood message answered other than 400");
      plainFlooded.push(p);
      const f = await underBounces(perRound, round);
      flooded.push(f);
      const info = await underBounces(infoPerRound, round, round === 0 ? process.env.BOUNCES_PROFILE : undefined);
      infoFlooded.push(info);
      log(
        `  round ${round + 1}: p50 alone ${ms(a)} ms (${a.requestsPerSecond.toFixed(0)} req/s); with ${perRound} plain messages ${ms(p)} ms; ` +
          `with ${perRound} bounces ${ms(f)} ms (${f.requestsPerSecond.toFixed(0)} req/s)${f.otherCpu === undefined ? "" : `, other CPU ${pct(f.otherCpu)}`}; ` +
          `with ${infoPerRound} bounces ${ms(info)} ms; each over ${options.duration} s`,
      );
      for (const r of [a, p, f, info])
        if (r.non2xx > 0 || r.errors > 0) errors.push(`${route.label}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    }
    const refused = floodStatuses.filter((s) => s !== 200).length;
    if (refused > 0) errors.push(`${refused} flood DSNs answered other than 200`);

    // ---- every DSN recorded
    let bounced = 0;
    let cursor = "";
    for (;;) {
      const page = await getJson(`/v1/deliveries?state=bounced&limit=100${cursor ? `&cursor=${cursor}` : ""}`, token);
      expect(page.status === 200, `GET /v1/deliveries: ${page.status}`);
      bounced += page.body.data.length;
      if (!page.body.meta.next_cursor) break;
      cursor = page.body.meta.next_cursor;
    }
    expect(bounced === next, `${bounced} deliveries bounced, ${next} DSNs posted`);

    // ---- report
    const loadAfter = loadavg()[0]!;
    const ratiosTo = (runs: RouteResult[]) => runs.map((r, i) => r.precise.p50 / alone[i]!.precise.p50);
    const ratios = ratiosTo(flooded);
    const floodRatio = median(ratios);
    const p50s = (runs: RouteResult[]) => [
      median(runs.map((r) => r.precise.p50)).toFixed(1),
      runs.map((r) => r.precise.p50.toFixed(1)).join(" "),
    ];
    const ratioCells = (runs: RouteResult[]) => {
      const rs = ratiosTo(runs);
      return [median(rs).toFixed(2), rs.map((r) => r.toFixed(2)).join(" ")];
    };
    // Where a flood's cost goes, less noisy than a p50 on a shared machine: the server's CPU in a run
    // less what its GETs cost (at the round's alone rate per GET), per message.
    const cpuPerGet = (r: Run) => r.serverCpuMs / Math.max(1, r.requests);
    const cpuPerMessage = (count: number) => (r: Run) =>
      (r.serverCpuMs - r.requests * cpuPerGet(alone[r.round]!)) / Math.max(1, count);
    const cpuCells = (xs: number[]) => [median(xs).toFixed(2), xs.map((x) => x.toFixed(2)).join(" ")];
    console.log(
      `\nBounces ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off, --log-level warn, ` +
        `X_LOCAL_OBSERVABILITY=false; ${options.rounds} round(s), medians; ${options.connections} connections, ${options.duration} s runs; ` +
        `floods at ${RATE_PER_MINUTE} a minute (${perRound} in ${options.duration} s) and ${INFO_RATE_PER_MINUTE} a minute (${infoPerRound}); ` +
        `${ITEMS * GROUP} deliveries; load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    const window = `${options.duration} s`;
    printColumns(
      ["measure", "value", "per round"],
      [
        ["one bounce, POST to answer (median of 100, ms)", oneBounce.toFixed(1), ""],
        ["a plain message refused at once, POST to answer (median of 100, ms)", refusedMedian.toFixed(1), ""],
        ["one bounce's own processing: the difference (ms)", (oneBounce - refusedMedian).toFixed(1), ""],
        ["company 2 GET p50 alone (ms)", ...p50s(alone)],
        [`with ${perRound} plain messages / ${window} (ms)`, ...p50s(plainFlooded)],
        ["  ratio to alone (the control: wrangler's share)", ...ratioCells(plainFlooded)],
        [`with ${perRound} bounces / ${window}, ${RATE_PER_MINUTE} a minute (ms)`, ...p50s(flooded)],
        ["  ratio to alone (the target)", floodRatio.toFixed(2), ratios.map((r) => r.toFixed(2)).join(" ")],
        [`with ${infoPerRound} bounces / ${window}, ${INFO_RATE_PER_MINUTE} a minute (ms)`, ...p50s(infoFlooded)],
        ["  ratio to alone (information)", ...ratioCells(infoFlooded)],
        ["server CPU per GET alone (workerd + wrangler, ms)", ...cpuCells(alone.map(cpuPerGet))],
        ["server CPU per plain message, beyond the GETs (ms)", ...cpuCells(plainFlooded.map(cpuPerMessage(perRound)))],
        [
          `server CPU per bounce at ${RATE_PER_MINUTE} a minute, beyond the GETs (ms)`,
          ...cpuCells(flooded.map(cpuPerMessage(perRound))),
        ],
        [
          `server CPU per bounce at ${INFO_RATE_PER_MINUTE} a minute, beyond the GETs (ms)`,
          ...cpuCells(infoFlooded.map(cpuPerMessage(infoPerRound))),
        ],
        [
          "other processes' CPU in the bounce floods",
          pct(median(flooded.map((r) => r.otherCpu ?? 0))),
          flooded.map((r) => (r.otherCpu === undefined ? "-" : pct(r.otherCpu))).join(" "),
        ],
      ],
    );
    // The whole round trip is held to the target (the handler's own share is less: the difference above).
    const oneMet = oneBounce <= TARGETS.oneBounceMs;
    const floodMet = floodRatio <= TARGETS.floodRatio;
    console.log(
      `one bounce: ${oneBounce.toFixed(1)} ms round trip, ${(oneBounce - refusedMedian).toFixed(1)} ms more than a refused message (target <= ${TARGETS.oneBounceMs} ms) -> ${oneMet ? "MET" : "MISSED"}`,
    );
    console.log(
      `another company's p50 under ${RATE_PER_MINUTE} bounces a minute: ${floodRatio.toFixed(2)}× (target <= ${TARGETS.floodRatio}×) -> ${floodMet ? "MET" : "MISSED"}`,
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
            loadAverage: { before: loadBefore, after: loadAfter },
            oneBounceMs: { median: oneBounce, refusedMedian, all: sequential },
            flood: {
              ratePerMinute: RATE_PER_MINUTE,
              perRound,
              infoRatePerMinute: INFO_RATE_PER_MINUTE,
              infoPerRound,
              alone,
              flooded,
              plainFlooded,
              infoFlooded,
              ratios,
              floodRatio,
            },
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
