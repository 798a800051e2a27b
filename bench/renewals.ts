// `npm run bench -- --only renewals [--port 9080 --json [file]]`
//
// Benchmark of the company clock's renewals engine (docs/recurrence.md) under `wrangler dev`,
// against a throw-away local D1: 10,000 items with a `renew_on: expired` monthly rule, all dated
// the same day, renew at the start of the next day in the company's time zone. Renewal instants
// are local midnights, and the service runs on the real clock, so the bench gives company 1 the
// time zone whose next midnight comes first after the set-up (the world's zones have one at every
// whole hour and at some :15 and :30, so the wait is at most an hour, usually well under):
//   1. fresh temp --persist-to dir: migrations, demo seed, company 1 in that zone, 10,000 items
//      (raw SQL, the company's default sequence, the rule's anchor = their date);
//   2. `wrangler dev --var RATE_LIMITS:off` (benchmarks run with rate limits off);
//   3. the cron sweep (GET /cdn-cgi/local/scheduled) hands the outbox rows to the clock once they
//      are older than its 30 s grace, until D1 shows none pending: the clock then holds one renewal
//      row per item;
//   4. from the instant T on: GET /v1/items?period=D..D (items still on the old date) until its
//      total is 0, and D1's outbox for the company until nothing is pending (the renewed items'
//      sequences queued in the clock);
//   5. checks: exactly 10,000 renewal rows (reason expired), every item one month on, a sample of
//      items with their reminders queued for the new date and nothing queued before it.
// Target: both within 30 s of T. The server is stopped and the temp dir removed, whatever happened.
import type { ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { addMonths, canonicalTimeZone, startOfDayAfter, todayIn } from "../src/lib/time.ts";
import {
  expect,
  httpClient,
  multiRowInserts,
  prepareBenchState,
  sleep,
  sqlText,
  tempServerScope,
  type SuiteOptions,
  startBenchServer,
} from "./kit.ts";
import { executeSql, queryRows } from "../scripts/lib/local.ts";

const COMPANY = 1;
const ITEMS = 10_000;
const TARGET_SECONDS = 30;
/** Time the set-up needs before the instant: seed, server start, the sweep's grace and its runs. */
const SETUP_MS = 150_000;
const SYNC_GRACE_MS = 31_000;
const SAMPLES = 20;
const seconds = (ms: number) => (ms / 1000).toFixed(1);

/** The zone (of those the runtime knows) whose next local midnight after `after` comes first, that midnight, and the day before it. */
export function nextMidnight(after: number): { zone: string; at: number; date: string } {
  let best: { zone: string; at: number; date: string } | undefined;
  for (const zone of Intl.supportedValuesOf("timeZone")) {
    if (canonicalTimeZone(zone) !== zone) continue;
    const date = todayIn(zone, new Date(after));
    const at = startOfDayAfter(date, zone);
    if (at > after && (!best || at < best.at)) best = { zone, at, date };
  }
  return best!;
}

export async function runRenewalBench(options: SuiteOptions): Promise<number> {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const { getJson, fetchToken } = httpClient(base);
  const log = (message: string) => console.log(`[bench:renewals +${seconds(Date.now() - started)}s] ${message}`);
  const scope = tempServerScope("expiry-bench-renewals-", log);
  const target = { persistTo: scope.persistTo };
  let child: ChildProcess | undefined;
  try {
    await prepareBenchState(scope.persistTo, log);
    const { zone, at, date } = nextMidnight(Date.now() + SETUP_MS);
    const renewedTo = addMonths(date, 1);
    log(
      `company ${COMPANY} in ${zone}: ${ITEMS} items dated ${date} renew at ${new Date(at).toISOString()} (local midnight), in ${seconds(at - Date.now())} s, to ${renewedTo}`,
    );

    // ---- 1. data
    const rows: string[] = [];
    for (let id = 1; id <= ITEMS; id++) {
      rows.push(
        `(${id}, ${COMPANY}, 1, ${sqlText(`Monthly check ${id}`)}, 'exp', '${date}', '${date}', 1, 1, 1, 'month', 'expired', '${date}')`,
      );
    }
    executeSql(target, [
      `UPDATE accounts SET max_documents = 1000000 WHERE id = 1`,
      `UPDATE companies SET documents_limit = 1000000, settings = json_set(settings, '$.timezone', ${sqlText(zone)}) WHERE id = ${COMPANY}`,
      ...multiRowInserts(
        "INSERT INTO items (id, company_id, dept_id, title, item_type, expiry_date, " +
          "reminder_anchor, schedule_epoch, created_by, recur_every, recur_unit, " +
          "recur_renew_on, recur_anchor) VALUES\n",
        rows,
      ),
      `UPDATE items SET seq_id = (SELECT s.id FROM reminder_sequences s WHERE s.company_id = ${COMPANY} AND s.is_default = 1) WHERE company_id = ${COMPANY}`,
    ]);
    const insertedAt = Date.now();

    // ---- 2. server
    child = await startBenchServer(options.port, scope.persistTo, ["--var", "RATE_LIMITS:off"]);
    scope.setServer(child);
    let serverOutput = "";
    child.stdout?.on("data", (chunk) => (serverOutput += chunk));
    child.stderr?.on("data", (chunk) => (serverOutput += chunk));
    const token = await fetchToken();

    // ---- 3. the sweep hands every item to the clock
    const pending = () =>
      Number(
        queryRows<{ n: number }>(
          target,
          `SELECT count(*) AS n FROM reminder_sync WHERE company_id = ${COMPANY} AND version > synced_version`,
        )[0]?.n ?? -1,
      );
    await sleep(insertedAt + SYNC_GRACE_MS - Date.now());
    const sweepUrl = `/cdn-cgi/local/scheduled?cron=${encodeURIComponent("* * * * *")}&format=json`;
    for (let round = 0; round < 40; round++) {
      const res = await getJson(sweepUrl);
      expect(res.status === 200, `sweep: ${res.status} ${JSON.stringify(res.body)}`);
      if (round % 5 === 4 && pending() === 0) break;
    }
    const left = pending();
    expect(left === 0, `${left} outbox rows still pending after the sweeps`);
    log(`the clock holds the ${ITEMS} items (${seconds(at - Date.now())} s before the instant)`);
    expect(Date.now() < at - 5_000, "the set-up ran past the instant: raise SETUP_MS");

    // ---- 4. the instant
    await sleep(at - Date.now());
    let renewedAt: number | undefined;
    let requeuedAt: number | undefined;
    const deadline = at + 5 * 60_000;
    while (Date.now() < deadline && requeuedAt === undefined) {
      if (renewedAt === undefined) {
        const res = await getJson(`/v1/items?period=${date}..${date}&limit=1`, token);
        expect(res.status === 200, `list: ${res.status}`);
        if (res.body.meta.total === 0) renewedAt = Date.now();
      } else if (pending() === 0) {
        requeuedAt = Date.now();
      }
      if (requeuedAt === undefined) await sleep(250);
    }
    expect(renewedAt !== undefined && requeuedAt !== undefined, "the renewals did not finish within 5 minutes");

    // ---- 5. checks
    const [counts] = queryRows<{ renewals: number; moved: number; renewed_items: number }>(
      target,
      `SELECT (SELECT count(*) FROM item_renewals WHERE company_id = ${COMPANY} AND reason = 'expired') AS renewals,
         (SELECT count(*) FROM items WHERE company_id = ${COMPANY} AND expiry_date = '${renewedTo}' AND status = 'pending') AS moved,
         (SELECT count(DISTINCT item_id) FROM item_renewals WHERE company_id = ${COMPANY}) AS renewed_items`,
    );
    expect(
      counts?.renewals === ITEMS && counts.renewed_items === ITEMS && counts.moved === ITEMS,
      `after the instant: ${JSON.stringify(counts)}`,
    );
    for (let i = 0; i < SAMPLES; i++) {
      const id = 1 + Math.floor((i * ITEMS) / SAMPLES);
      const res = await getJson(`/v1/items/${id}`, token);
      const item = res.body.data;
      expect(
        res.status === 200 &&
          item.expiry_date === renewedTo &&
          item.renewals.length === 1 &&
          item.renewals[0].reason === "expired",
        `item ${id}: ${JSON.stringify(item).slice(0, 300)}`,
      );
      expect(
        item.reminders.queued.length > 0 && item.reminders.queued.every((r: { date: string }) => r.date > date),
        `item ${id} queued: ${JSON.stringify(item.reminders.queued)}`,
      );
    }
    expect(!/Error|deferred/.test(serverOutput), `server log: ${serverOutput.slice(0, 500)}`);
    const renewSeconds = (renewedAt! - at) / 1000;
    const requeueSeconds = (requeuedAt! - at) / 1000;
    console.log(
      `\nRenewals at a local midnight (${zone}, ${new Date(at).toISOString()}), rate limits off:\n` +
        `  ${ITEMS} items renewed (history written, date ${date} -> ${renewedTo}) within ${renewSeconds.toFixed(1)} s of the instant\n` +
        `  their reminder sequences queued in the clock within ${requeueSeconds.toFixed(1)} s (target ${TARGET_SECONDS} s: ${requeueSeconds <= TARGET_SECONDS ? "met" : "MISSED"})`,
    );
    if (options.json)
      writeFileSync(
        options.json,
        JSON.stringify(
          {
            zone,
            instant: new Date(at).toISOString(),
            items: ITEMS,
            renewSeconds,
            requeueSeconds,
            targetSeconds: TARGET_SECONDS,
          },
          null,
          2,
        ),
      );
    return 0;
  } catch (error) {
    console.error(`[bench:renewals] ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await scope.close();
  }
}
