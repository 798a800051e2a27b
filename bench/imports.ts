// `npm run bench -- --only imports`: item imports (docs/performance.md, "Imports"), under
// `wrangler dev` on a throw-away local D1, rate limits and the request log off:
//   1. migrations + demo seed; company 1's documents_limit (and its account's max_documents) raised;
//   2. per round (--rounds, default 3), in alternating order: 10,000 items through POST /v1/items
//      with --connections connections (each a unique title), and the same 10,000 rows as one CSV
//      import, timed from the POST to the job's `completed` (every chunk written and handed to the
//      reminder engine, whose outbox is then checked empty for the company);
//   3. once: an import of 100,000 rows, timed the same way, while the resident memory of the
//      server's workerd processes is sampled (idle, peak);
//   4. medians and the targets: 10,000 rows in at most 15 s and at most a third of the POSTs' time;
//      100,000 rows in at most 3 minutes.
// Exits non-zero on errors (a failed job, answers other than 201, failed setup), not on a missed target.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import {
  autocannon,
  expect,
  httpClient,
  median,
  prepareBenchState,
  printColumns,
  tempServerScope,
  wranglerVersion,
  type SuiteOptions,
  startBenchServer,
} from "./kit.ts";
import { executeSql, queryRows } from "../scripts/lib/local.ts";
import { rssSampler } from "../scripts/lib/procs.ts";

export type ImportsBenchOptions = SuiteOptions;

const ROWS = 10_000;
const BIG = 100_000;
const TARGETS = { seconds: 15, shareOfPosts: 1 / 3, bigSeconds: 180 };
const VARS = ["--var", "RATE_LIMITS:off", "--var", "REQUEST_LOGS:off"];

/** A CSV of `n` item rows, external ids `<prefix>-<k>`, dates spread over the year after next. */
function csv(prefix: string, n: number): string {
  const year = new Date().getUTCFullYear() + 2;
  const lines = ["external_id,title,expiry_date,notes"];
  for (let k = 1; k <= n; k++)
    lines.push(
      `${prefix}-${k},"Certificate ${k}, site ${k % 40}",${year}-${String(1 + (k % 12)).padStart(2, "0")}-${String(1 + (k % 28)).padStart(2, "0")},`,
    );
  return `${lines.join("\n")}\n`;
}

export async function runImportsBench(options: ImportsBenchOptions): Promise<number> {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const log = (message: string) =>
    console.log(`[bench:imports +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const { fetchToken } = httpClient(base);
  const scope = tempServerScope("expiry-bench-imports-", log);
  let child: ChildProcess | undefined;
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    executeSql({ persistTo: scope.persistTo }, [
      "UPDATE companies SET documents_limit = 10000000 WHERE id = 1",
      "UPDATE accounts SET max_documents = 10000000 WHERE id = (SELECT account_id FROM companies WHERE id = 1)",
    ]);
    child = await startBenchServer(options.port, scope.persistTo, VARS);
    scope.setServer(child);
    log(
      `wrangler dev up on ${base}: RATE_LIMITS=off, REQUEST_LOGS=off (--var), --log-level warn, X_LOCAL_OBSERVABILITY=false`,
    );
    const token = await fetchToken();
    const auth = { Authorization: `Bearer ${token}` };

    const importFile = async (body: string): Promise<{ seconds: number; job: Record<string, any> }> => {
      const t0 = performance.now();
      const res = await fetch(`${base}/v1/imports?resource=items`, {
        method: "POST",
        headers: { ...auth, "Content-Type": "text/csv" },
        body,
      });
      const queued = (await res.json()) as Record<string, any>;
      expect(res.status === 202, `POST /v1/imports: ${res.status} ${JSON.stringify(queued).slice(0, 300)}`);
      for (;;) {
        const job = (
          (await (await fetch(`${base}/v1/imports/${queued.data.import_id}`, { headers: auth })).json()) as Record<
            string,
            any
          >
        ).data;
        if (["completed", "failed", "canceled"].includes(job.status))
          return { seconds: (performance.now() - t0) / 1000, job };
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const posts = async (round: number): Promise<number> => {
      const t0 = performance.now();
      const result = await autocannon({
        url: `${base}/v1/items`,
        connections: options.connections,
        duration: 600,
        amount: ROWS,
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json" },
        body: JSON.stringify({
          title: `Posted ${round} [<id>]`,
          expiry_date: `${new Date().getUTCFullYear() + 2}-06-15`,
        }),
        idReplacement: true,
        timeout: 30,
      });
      const ok = result.statusCodeStats["201"]?.count ?? 0;
      if (ok !== ROWS || result.errors > 0)
        errors.push(`POST /v1/items round ${round + 1}: ${ok} answers 201 of ${ROWS}, ${result.errors} errors`);
      return (performance.now() - t0) / 1000;
    };
    const pendingSyncs = () =>
      Number(
        queryRows<{ n: number }>(
          { persistTo: scope.persistTo },
          "SELECT count(*) AS n FROM reminder_sync WHERE company_id = 1 AND version > " + "synced_version",
        )[0]?.n ?? -1,
      );

    const rounds: Array<{ posts: number; import: number }> = [];
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? ["import", "posts"] : ["posts", "import"];
      const r = { posts: 0, import: 0 };
      for (const what of order) {
        if (what === "posts") {
          r.posts = await posts(round);
          log(
            `  round ${round + 1}: ${ROWS} x POST /v1/items (${options.connections} connections): ${r.posts.toFixed(1)} s`,
          );
        } else {
          const { seconds, job } = await importFile(csv(`R${round}`, ROWS));
          r.import = seconds;
          if (job.status !== "completed" || job.counts.created !== ROWS)
            errors.push(`import round ${round + 1}: ${job.status} ${JSON.stringify(job.counts)} ${job.message}`);
          log(
            `  round ${round + 1}: import of ${ROWS} rows: ${seconds.toFixed(1)} s (${job.status}, created ${job.counts.created}); reminder changes still to apply: ${pendingSyncs()}`,
          );
        }
      }
      rounds.push(r);
    }

    log(`import of ${BIG} rows, memory sampled`);
    const sampler = rssSampler(child.pid!);
    const big = await importFile(csv("BIG", BIG));
    const memory = sampler.stop();
    if (big.job.status !== "completed" || big.job.counts.created !== BIG)
      errors.push(`import of ${BIG}: ${big.job.status} ${JSON.stringify(big.job.counts)} ${big.job.message}`);
    const pendingAfter = pendingSyncs();

    const loadAfter = loadavg()[0]!;
    const importSeconds = median(rounds.map((r) => r.import));
    const share = median(rounds.map((r) => r.import / r.posts));
    console.log(
      `\nImports ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, RATE_LIMITS=off and REQUEST_LOGS=off, --log-level warn; ` +
        `${options.rounds} round(s), medians; load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    printColumns(
      ["10,000 items", "seconds", "items/s", "per round (s)"],
      [
        [
          `POST /v1/items, ${options.connections} connections`,
          median(rounds.map((r) => r.posts)).toFixed(1),
          (ROWS / median(rounds.map((r) => r.posts))).toFixed(0),
          rounds.map((r) => r.posts.toFixed(1)).join(" "),
        ],
        [
          "one CSV import (to completed)",
          importSeconds.toFixed(1),
          (ROWS / importSeconds).toFixed(0),
          rounds.map((r) => r.import.toFixed(1)).join(" "),
        ],
      ],
    );
    console.log(
      `\nimport / POSTs, per round: ${rounds.map((r) => (r.import / r.posts).toFixed(2)).join(" ")}; median ${share.toFixed(2)} (target <= ${TARGETS.shareOfPosts.toFixed(2)}) -> ` +
        `${share <= TARGETS.shareOfPosts ? "MET" : "MISSED"}; import median ${importSeconds.toFixed(1)} s (target <= ${TARGETS.seconds} s) -> ${importSeconds <= TARGETS.seconds ? "MET" : "MISSED"}`,
    );
    console.log(
      `${BIG} rows: ${big.seconds.toFixed(1)} s (target <= ${TARGETS.bigSeconds} s) -> ${big.seconds <= TARGETS.bigSeconds ? "MET" : "MISSED"}; ` +
        `workerd resident memory idle ${(memory.idleKb / 1024).toFixed(0)} MiB, peak ${(memory.peakKb / 1024).toFixed(0)} MiB (+${((memory.peakKb - memory.idleKb) / 1024).toFixed(0)} MiB); ` +
        `reminder changes still to apply afterwards: ${pendingAfter}`,
    );
    for (const message of errors) console.error(`ERROR ${message}`);
    if (options.json) {
      mkdirSync(dirname(options.json), { recursive: true });
      writeFileSync(
        options.json,
        `${JSON.stringify(
          { started: new Date(started).toISOString(), options, rounds, big: { seconds: big.seconds, memory }, errors },
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
