// `npm run bench -- --only channel-deliveries [--rounds 3 --port 9180 --json [file]]`: 1,000 reminders
// delivered to 10 Slack-type channel endpoints in one minute (issue 35, "Performance"; docs/channels.md,
// docs/performance.md), under `wrangler dev` on a throw-away local D1, rate limits off. Each round
// (about 3.5 minutes) on a fresh state:
//   1. migrations + demo seed; company 1's document limits raised; a local receiver on 127.0.0.1
//      stands in for 10 Slack incoming webhooks (one path each; WEBHOOKS_ALLOW_PRIVATE_URLS on): it
//      answers 429 with `Retry-After: 1` to every 10th request it receives (counted over all paths)
//      and 200 `ok` to the others, and records each request's arrival, path and item;
//   2. `wrangler dev`; company 1's time zone UTC; 10 slack channels on the receiver; 1,000 items
//      (POST /v1/items, no sequence, each a unique title), then one reminder each
//      (POST /v1/items/{id}/reminders {date, hour, channel_id}), spread evenly over the channels,
//      all at the same minute: the next whole minute after the reminders' creation (estimated from
//      the items' rate, with a margin);
//   3. waits until every item was answered 200 or its delivery `failed` (GET /v1/deliveries?state=failed),
//      10 minutes at most, and 5 s more for late repeats;
//   4. checks: every reminder lists one delivery to its channel, `sent` for the items answered 200
//      (GET /v1/items/{id}/reminders).
// The 429s per endpoint (most, fewest) show how the every-10th count falls on the endpoints: the
// engine sends to them in step, once a second each, so with the endpoints of a run in a fixed order
// every 429 went to the same one (bench/results.md, 2026-11-27).
// The table, per round: the time from the minute to the last 200; the time the rate implies (the most
// requests any endpoint received, at Slack's 1 a second) and the ratio; the smallest gap between two
// requests to one endpoint; the most requests to one endpoint within any second; items answered 200
// twice and never. Targets (the issue): every message delivered once, no endpoint above 1 a second,
// all done within the implied time + 10%. Exits non-zero on errors (a failed request or check, an
// item not delivered in time), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { executeSql } from "../scripts/lib/local.ts";
import {
  OK,
  pacingByPath,
  startReceiver,
  type ReceivedRequest,
  type Receiver,
  type ReceiverAnswer,
} from "../test/e2e/support/receiver.ts";
import {
  benchSet,
  expect,
  median,
  prepareBenchState,
  printColumns,
  sleep,
  startBenchServer,
  stopServer,
  wranglerVersion,
  type SuiteOptions,
} from "./kit.ts";

export type ChannelDeliveriesBenchOptions = SuiteOptions;

const CHANNELS = 10;
const ITEMS = 1_000;
/** Concurrent requests while creating the items and reminders. */
const CONCURRENCY = 8;
/** Every this many requests (over all paths) the receiver answers 429. */
const THROTTLE_EVERY = 10;
const RETRY_AFTER_SECONDS = 1;
/** Slack: about 1 message a second per webhook. */
const RATE_PER_SECOND = 1;
/** After the items, the reminders' creation is given this much more than the items took, and MARGIN_MS. */
const CREATE_FACTOR = 1.5;
const MARGIN_MS = 15_000;
const SETTLE_MS = 600_000;
/** After the last item's 200: how long to wait for repeats. */
const LINGER_MS = 5_000;
const TARGETS = { ratio: 1.1, maxPerSecond: 1, duplicates: 0, missing: 0 };
const VARS = ["--var", "RATE_LIMITS:off", "--var", "WEBHOOKS_ALLOW_PRIVATE_URLS:true"];
const DAY = 86_400_000;

const titleOf = (round: number, i: number) => `Bench permit r${round}-${String(i).padStart(4, "0")}`;
const ITEM_IN_BODY = /Bench permit (r\d+-\d{4})/;

/** Runs `task(0..count-1)`, `concurrency` at a time. */
async function inPool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

interface Round {
  round: number;
  /** From the minute to the last 200, s. */
  lastOkSeconds: number;
  /** From the minute to the first request, s. */
  firstSeconds: number;
  requests: number;
  throttled: number;
  /** 429s to the endpoint that got the most, and to the one that got the fewest. */
  throttledMost: number;
  throttledLeast: number;
  /** Deliveries `failed` (GET /v1/deliveries?state=failed). */
  failed: number;
  /** The most requests any endpoint received. */
  maxRequests: number;
  impliedSeconds: number;
  ratio: number;
  minGapMs: number;
  maxPerSecond: number;
  duplicates: number;
  missing: number;
  loadBefore: number;
  loadAfter: number;
}

/** What the receiver recorded for a round whose items are `expected` (`r1-0000` ...). */
export function roundFigures(requests: ReceivedRequest[], expected: Set<string>, minute: number) {
  const okCount = new Map<string, number>();
  let lastOk = minute;
  let unknown = 0;
  for (const r of requests) {
    const item = ITEM_IN_BODY.exec(r.body)?.[1];
    if (!item || !expected.has(item)) unknown++;
    else if (r.status === 200) {
      okCount.set(item, (okCount.get(item) ?? 0) + 1);
      lastOk = Math.max(lastOk, r.at);
    }
  }
  const pacing = pacingByPath(requests);
  const maxRequests = Math.max(0, ...pacing.map((p) => p.requests));
  const lastOkSeconds = (lastOk - minute) / 1000;
  const impliedSeconds = maxRequests / RATE_PER_SECOND;
  return {
    delivered: okCount.size,
    unknown,
    figures: {
      lastOkSeconds,
      firstSeconds: requests.length > 0 ? (Math.min(...requests.map((r) => r.at)) - minute) / 1000 : Number.NaN,
      requests: requests.length,
      throttled: requests.filter((r) => r.status === 429).length,
      ...throttledSpread(
        requests,
        pacing.map((p) => p.path),
      ),
      maxRequests,
      impliedSeconds,
      ratio: impliedSeconds > 0 ? lastOkSeconds / impliedSeconds : Number.NaN,
      minGapMs: Math.min(...pacing.map((p) => p.minGapMs)),
      maxPerSecond: Math.max(0, ...pacing.map((p) => p.maxPerSecond)),
      duplicates: [...okCount.values()].filter((n) => n > 1).length,
      missing: [...expected].filter((item) => !okCount.has(item)).length,
    },
  };
}

function throttledSpread(requests: ReceivedRequest[], paths: string[]) {
  const counts = new Map(paths.map((p) => [p, 0]));
  for (const r of requests) if (r.status === 429) counts.set(r.path, (counts.get(r.path) ?? 0) + 1);
  const values = [...counts.values()];
  return { throttledMost: Math.max(0, ...values), throttledLeast: values.length ? Math.min(...values) : 0 };
}

/** Answers 429 (`Retry-After: 1`) to every THROTTLE_EVERY-th request counted over all paths, 200 `ok` to the others. */
const throttle = (r: ReceivedRequest): ReceiverAnswer =>
  r.n % THROTTLE_EVERY === 0
    ? { status: 429, headers: { "retry-after": String(RETRY_AFTER_SECONDS) }, body: "rate_limited" }
    : OK;

export async function runChannelDeliveriesBench(options: ChannelDeliveriesBenchOptions): Promise<number> {
  const { started, base, log, scope, getJson, postJson, fetchToken } = benchSet("channel-deliveries", options);
  const errors: string[] = [];
  const rounds: Round[] = [];
  /** How many deliveries are `failed` (pages of 100). */
  const failedDeliveries = async (token: string): Promise<number> => {
    let count = 0;
    let cursor = "";
    for (;;) {
      const page = await getJson(`/v1/deliveries?state=failed&limit=100${cursor ? `&cursor=${cursor}` : ""}`, token);
      expect(page.status === 200, `GET /v1/deliveries: ${page.status} ${JSON.stringify(page.body).slice(0, 200)}`);
      count += page.body.data.length;
      if (!page.body.meta.next_cursor) return count;
      cursor = page.body.meta.next_cursor;
    }
  };
  let receiver: Receiver | undefined;
  try {
    for (let round = 1; round <= options.rounds; round++) {
      const persistTo = join(scope.persistTo, `round-${round}`);
      mkdirSync(persistTo, { recursive: true });
      const loadBefore = await prepareBenchState(persistTo, log);
      executeSql({ persistTo }, [
        "UPDATE accounts SET max_documents = 1000000 WHERE id = 1",
        "UPDATE companies SET documents_limit = 1000000 WHERE id = 1",
      ]);
      receiver = await startReceiver(throttle);
      let child: ChildProcess | undefined;
      try {
        child = await startBenchServer(options.port, persistTo, VARS);
        scope.setServer(child);
        const token = await fetchToken();
        const patched = await fetch(`${base}/v1/companies/1/settings`, {
          method: "PATCH",
          headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
          body: JSON.stringify({ timezone: "UTC" }),
        });
        expect(patched.status === 200, `PATCH settings: ${patched.status}`);
        const channels: number[] = [];
        for (let c = 0; c < CHANNELS; c++) {
          const res = await postJson("/v1/channels", token, {
            type: "slack",
            name: `#bench-${c}`,
            url: `${receiver.base}/services/bench/${c}`,
          });
          expect(res.status === 201, `POST /v1/channels: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
          channels.push(res.body.data.channel_id);
        }
        const expiry = new Date(Date.now() + 200 * DAY).toISOString().slice(0, 10);
        const items: number[] = [];
        const itemsStart = Date.now();
        await inPool(ITEMS, CONCURRENCY, async (i) => {
          const res = await postJson("/v1/items", token, { title: titleOf(round, i), expiry_date: expiry, seqid: 0 });
          expect(res.status === 201, `POST /v1/items: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
          items[i] = res.body.data.item_id;
        });
        const itemsMs = Date.now() - itemsStart;
        const minute = Math.ceil((Date.now() + itemsMs * CREATE_FACTOR + MARGIN_MS) / 60_000) * 60_000;
        const at = new Date(minute).toISOString();
        log(
          `round ${round}: ${CHANNELS} channels, ${ITEMS} items in ${(itemsMs / 1000).toFixed(1)} s; reminders at ${at}`,
        );
        await inPool(ITEMS, CONCURRENCY, async (i) => {
          const res = await postJson(`/v1/items/${items[i]}/reminders`, token, {
            date: at.slice(0, 10),
            hour: at.slice(11, 16),
            channel_id: channels[i % CHANNELS],
          });
          expect(
            res.status === 201,
            `POST /v1/items/${items[i]}/reminders: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
          );
        });
        expect(Date.now() < minute, "the reminders' creation ran past their minute: run again on a quieter machine");
        const expected = new Set(
          Array.from({ length: ITEMS }, (_, i) => titleOf(round, i).slice("Bench permit ".length)),
        );
        log(
          `round ${round}: ${ITEMS} reminders created, ${((minute - Date.now()) / 1000).toFixed(0)} s before the minute`,
        );
        await sleep(minute - Date.now());
        let failed = 0;
        let progressAt = Date.now();
        for (let tick = 1; ; tick++) {
          await sleep(1_000);
          const { delivered } = roundFigures(receiver.requests, expected, minute);
          if (tick % 5 === 0 || delivered >= ITEMS) failed = await failedDeliveries(token);
          if (delivered + failed >= ITEMS) break;
          if (Date.now() - progressAt >= 15_000) {
            progressAt = Date.now();
            log(
              `round ${round}: ${delivered} items answered 200, ${failed} deliveries failed, ${receiver.requests.length} requests`,
            );
          }
          if (Date.now() > minute + SETTLE_MS) {
            errors.push(`round ${round}: ${delivered} of ${ITEMS} items answered 200 within ${SETTLE_MS / 1000} s`);
            break;
          }
        }
        await sleep(LINGER_MS);
        const loadAfter = loadavg()[0]!;
        const { figures, unknown } = roundFigures(receiver.requests, expected, minute);
        if (unknown > 0) errors.push(`round ${round}: ${unknown} requests named no item of the round`);
        failed = await failedDeliveries(token);
        if (figures.missing !== failed)
          errors.push(`round ${round}: ${figures.missing} items never answered 200, but ${failed} deliveries failed`);
        // Each reminder lists its one delivery to its channel, sent when its item was answered 200.
        const answered = new Set(
          receiver.requests.filter((r) => r.status === 200).map((r) => ITEM_IN_BODY.exec(r.body)?.[1]),
        );
        const wrong: string[] = [];
        await inPool(ITEMS, CONCURRENCY, async (i) => {
          const res = await getJson(`/v1/items/${items[i]}/reminders`, token);
          const sent = res.body?.data?.sent ?? [];
          const deliveries = sent[0]?.deliveries ?? [];
          const ok =
            res.status === 200 &&
            sent.length === 1 &&
            deliveries.length === 1 &&
            deliveries[0].state ===
              (answered.has(titleOf(round, i).slice("Bench permit ".length)) ? "sent" : "failed") &&
            deliveries[0].channel === "slack" &&
            deliveries[0].channel_id === channels[i % CHANNELS];
          if (!ok)
            wrong.push(`item ${items[i]}: ${res.status} ${JSON.stringify(res.body?.data ?? res.body).slice(0, 300)}`);
        });
        if (wrong.length > 0)
          errors.push(`round ${round}: ${wrong.length} reminders not listed as one sent delivery, e.g. ${wrong[0]}`);
        rounds.push({ round, ...figures, failed, loadBefore, loadAfter });
        log(
          `round ${round}: ${ITEMS - figures.missing} items delivered, the last ${figures.lastOkSeconds.toFixed(1)} s after the minute ` +
            `(${figures.requests} requests, ${figures.throttled} answered 429; implied ${figures.impliedSeconds} s, x${figures.ratio.toFixed(3)}); ` +
            `load ${loadBefore.toFixed(2)} -> ${loadAfter.toFixed(2)}`,
        );
      } finally {
        if (child) await stopServer(child);
        await receiver.close();
        receiver = undefined;
      }
    }
    const med = (pick: (r: Round) => number) => median(rounds.map(pick));
    console.log(
      `\nChannel deliveries ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off; ` +
        `${ITEMS} reminders at one minute to ${CHANNELS} slack channels on a local receiver answering 429 ` +
        `(Retry-After: ${RETRY_AFTER_SECONDS}) to every ${THROTTLE_EVERY}th request over all endpoints, ${options.rounds} round(s)\n`,
    );
    printColumns(
      [
        "round",
        "last 200 after the minute (s)",
        "first request (s)",
        "requests",
        "429s (most, fewest to one endpoint)",
        "failed",
        "most to one endpoint",
        "implied (s)",
        "ratio",
        "smallest gap (ms)",
        "most in 1 s",
        "twice",
        "missing",
        "load before -> after",
      ],
      rounds.map((r) => [
        String(r.round),
        r.lastOkSeconds.toFixed(1),
        r.firstSeconds.toFixed(2),
        String(r.requests),
        `${r.throttled} (${r.throttledMost}, ${r.throttledLeast})`,
        String(r.failed),
        String(r.maxRequests),
        String(r.impliedSeconds),
        r.ratio.toFixed(3),
        r.minGapMs.toFixed(1),
        String(r.maxPerSecond),
        String(r.duplicates),
        String(r.missing),
        `${r.loadBefore.toFixed(2)} -> ${r.loadAfter.toFixed(2)}`,
      ]),
    );
    const summary = {
      lastOkSeconds: med((r) => r.lastOkSeconds),
      impliedSeconds: med((r) => r.impliedSeconds),
      ratio: med((r) => r.ratio),
      minGapMs: med((r) => r.minGapMs),
      maxPerSecond: med((r) => r.maxPerSecond),
      duplicates: med((r) => r.duplicates),
      missing: med((r) => r.missing),
    };
    const verdict = (met: boolean) => (met ? "MET" : "MISSED");
    console.log(
      `medians: last 200 ${summary.lastOkSeconds.toFixed(1)} s after the minute, implied ${summary.impliedSeconds} s, ` +
        `x${summary.ratio.toFixed(3)} (target <= ${TARGETS.ratio}) -> ${verdict(summary.ratio <= TARGETS.ratio)}; ` +
        `smallest gap ${summary.minGapMs.toFixed(1)} ms, most in 1 s ${summary.maxPerSecond} (target <= ${TARGETS.maxPerSecond}) -> ${verdict(summary.maxPerSecond <= TARGETS.maxPerSecond)}; ` +
        `twice ${summary.duplicates}, missing ${summary.missing} (target 0) -> ${verdict(summary.duplicates === 0 && summary.missing === 0)}`,
    );
    for (const message of errors) console.error(`ERROR ${message}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        `${JSON.stringify({ started: new Date(started).toISOString(), options, rounds, medians: summary, targets: TARGETS, errors }, null, 2)}\n`,
      );
      log(`results written to ${options.json}`);
    }
    return errors.length > 0 ? 1 : 0;
  } finally {
    await receiver?.close();
    await scope.close();
  }
}
