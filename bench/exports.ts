// `npm run bench -- --only exports`: the streamed exports (GET /v1/items/export, docs/performance.md
// "Exports"), under `wrangler dev` on throw-away local state:
//   1. migrations + demo seed, then by SQL: 100,000 items for company 1 (4 departments, 8 document
//      types with 3 custom fields each and two values per typed item, a 260-folder tree three deep,
//      1,000 contacts, 30 tags on every 4th item, an external_id on every 10th, titles and notes that
//      need quoting or neutralising) and 5,000 for company 2, ids interleaved;
//   2. one server, `--var RATE_LIMITS:off` (an export is one request; off as in the other sets'
//      throughput runs), `--log-level warn`, X_LOCAL_OBSERVABILITY=false;
//   3. checks: the CSV and the NDJSON export each hold every one of company 1's 100,000 items exactly
//      once and none of company 2's, with the custom field columns in the header;
//   4. per round (--rounds, default 3): the full CSV export, the full NDJSON export (alternating which
//      goes first) and a 10,000-row CSV export (a `period` range), each read to the end while the
//      summed VmRSS of the server's workerd processes is sampled every 20 ms: before the request,
//      the peak during it, and 1 s after its end;
//   5. medians: rows/s (target >= 20,000 for the full exports), MB/s, time to first byte, memory.
// Exits non-zero on errors (non-200, wrong rows, failed setup), not on a missed target.
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname } from "node:path";
import {
  expect,
  httpClient,
  median,
  multiRowInserts,
  prepareBenchState,
  printColumns,
  prng,
  sleep,
  sqlText,
  tempServerScope,
  wranglerVersion,
  type SuiteOptions,
  startBenchServer,
} from "./kit.ts";
import { executeSql, queryRows } from "../scripts/lib/local.ts";
import { procStats, readProcFile, rssKb } from "../scripts/lib/procs.ts";

const ITEMS = { company1: 100_000, company2: 5_000 };
const TARGET_ROWS_PER_SECOND = 20_000;
const MiB = 1024 * 1024;
const DEPARTMENTS = [1, 101, 102, 103];
const TYPES = Array.from({ length: 8 }, (_, i) => 101 + i);
const FOLDER_TOPS = 10;
const CONTACTS = 1_000;
const TAGS = [
  "urgent",
  "legal",
  "fleet",
  "hr",
  "finance",
  "building-a",
  "building-b",
  "warehouse",
  "it",
  "safety",
  "compliance",
  "renewal",
  "supplier",
  "customer",
  "annual",
  "quarterly",
  "monthly",
  "critical",
  "low-priority",
  "board",
  "audit",
  "health",
  "insurance",
  "tax",
  "lease",
  "vendor",
  "payroll",
  "training",
  "travel",
  "équipe",
];
const TITLES = [
  "Fire inspection",
  "Insurance policy",
  "=cost review",
  "-20% supplier discount",
  "Lease, building A",
  'Boiler "annual" check',
  "Vehicle registration",
  "@ops: permit renewal",
  "Software licence 🧾",
  "Elevator certificate",
];
const NOTES = [
  "",
  "",
  "",
  "Renew with the city office",
  'Call Müller GmbH, ask for "the" quote',
  "Two lines:\nsecond line",
  "+49 30 1234567",
  "Budget approved 👍",
];
const DAYS = 2_190;
/** The 10,000-row export: expiry dates in the first tenth of the range. */
const START = Date.UTC(2026, 0, 1);
const day = (n: number) => new Date(START + n * 86_400_000).toISOString().slice(0, 10);
const SUBSET = `period=${day(0)}..${day(DAYS / 10 - 1)}`;

/** Company 2 holds every 21st id; company 1 the rest. */
const companyOf = (id: number) => (id % 21 === 0 ? 2 : 1);

function seedStatements(): { statements: string[]; subset: number } {
  const random = prng(20261123);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const statements = [
    "UPDATE accounts SET max_documents = 10000000, max_contacts = 1000000 WHERE id IN (1, 2)",
    "UPDATE companies SET documents_limit = 10000000, contacts_limit = 100000 WHERE id IN (1, 2)",
    `INSERT INTO departments (id, company_id, name, name_key, is_default) VALUES ${DEPARTMENTS.slice(1)
      .map((id) => `(${id}, 1, 'Dept ${id}', 'dept ${id}', 0)`)
      .join(", ")}`,
    `INSERT INTO document_types (id, account_id, company_id, dept_id, name, name_key, created_by) VALUES ${TYPES.map((id) => `(${id}, 1, 1, 1, 'Type ${id}', 'type ${id}', 1)`).join(", ")}`,
  ];
  // Three fields per type: two shared by name across types (one column each), one of its own.
  const fieldRows = TYPES.flatMap((type, t) =>
    ["Inspector", "Reference no.", `Detail ${t + 1}`].map(
      (name, i) => `(${type * 10 + i}, ${type}, 1, ${sqlText(name)}, ${sqlText(name.toLowerCase())}, 'text', ${i})`,
    ),
  );
  statements.push(
    `INSERT INTO document_type_fields (id, type_id, company_id, field_name, field_key, field_type, position) VALUES ${fieldRows.join(", ")}`,
  );
  const folders: Array<{ id: number; parent: number; name: string }> = [];
  let folderId = 1000;
  for (let top = 0; top < FOLDER_TOPS; top++) {
    const topId = ++folderId;
    folders.push({ id: topId, parent: 0, name: `Area ${top + 1}` });
    for (let child = 0; child < 5; child++) {
      const childId = ++folderId;
      folders.push({ id: childId, parent: topId, name: `Site ${child + 1}` });
      for (let leaf = 0; leaf < 2; leaf++)
        folders.push({ id: ++folderId, parent: childId, name: leaf === 0 ? "Current" : "Archive, old" });
    }
  }
  statements.push(
    `INSERT INTO folders (id, company_id, dept_id, parent_id, name, name_key) VALUES ${folders.map((f) => `(${f.id}, 1, 1, ${f.parent}, ${sqlText(f.name)}, ${sqlText(f.name.toLowerCase())})`).join(", ")}`,
  );
  statements.push(
    ...multiRowInserts(
      "INSERT INTO contacts (id, company_id, dept_id, first_name, last_name, email, email_key) VALUES\n",
      Array.from(
        { length: CONTACTS },
        (_, i) =>
          `(${100_001 + i}, 1, 1, 'Bench', 'Contact ${i}', 'contact${i}@bench.example', 'contact${i}@bench.example')`,
      ),
    ),
  );
  statements.push(
    `INSERT INTO tags (id, company_id, name, name_key) VALUES ${TAGS.map((name, i) => `(${101 + i}, 1, ${sqlText(name)}, ${sqlText(name)})`).join(", ")}`,
  );

  const itemRows: string[] = [];
  const tagRows: string[] = [];
  const valueRows: string[] = [];
  let subset = 0;
  let seen = 0;
  for (let id = 1; id <= ITEMS.company1 + ITEMS.company2; id++) {
    const company = companyOf(id);
    const created = new Date(Date.UTC(2024, 0, 1) + id * 60_000).toISOString().slice(0, 19).replace("T", " ");
    const expiryDay = Math.floor(random() * DAYS);
    if (company === 2) {
      itemRows.push(
        `(${id}, 2, 2, NULL, NULL, NULL, 'Other company item', '', 'exp', '${day(expiryDay)}', 'pending', NULL, 3, '${created}', '${created}')`,
      );
      continue;
    }
    seen++;
    if (expiryDay < DAYS / 10) subset++;
    const type = random() < 0.9 ? pick(TYPES) : null;
    const folder = random() < 0.7 ? 1001 + Math.floor(random() * folders.length) : null;
    const contact = random() < 0.3 ? 100_001 + Math.floor(random() * CONTACTS) : null;
    const external = id % 10 === 0 ? sqlText(`ERP-${id}`) : "NULL";
    itemRows.push(
      `(${id}, 1, ${pick(DEPARTMENTS)}, ${type ?? "NULL"}, ${folder ?? "NULL"}, ${contact ?? "NULL"}, ${sqlText(`${pick(TITLES)} ${id}`)}, ${sqlText(pick(NOTES))}, ` +
        `'${pick(["exp", "due", "apt", "evt"])}', '${day(expiryDay)}', '${random() < 0.8 ? "pending" : "completed"}', ${external}, 1, '${created}', '${created}')`,
    );
    if (seen % 4 === 0) {
      const first = Math.floor(random() * TAGS.length);
      for (let k = 0; k < 1 + (seen % 3); k++)
        tagRows.push(`(${id}, ${101 + ((first + k * 7) % TAGS.length)}, 1, ${k})`);
    }
    if (type !== null) {
      valueRows.push(`(${id}, ${type * 10}, 1, ${sqlText(pick(["Ada", "Bob, Jr.", "=Eve", "Zoë"]))})`);
      valueRows.push(`(${id}, ${type * 10 + 2}, 1, ${sqlText(`detail ${id % 97}`)})`);
    }
  }
  statements.push(
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, document_type_id, folder_id, " +
        "contact_id, title, notes, item_type, expiry_date, status, external_id, " +
        "created_by, created_at, updated_at) VALUES\n",
      itemRows,
    ),
    ...multiRowInserts("INSERT INTO item_tags (item_id, tag_id, company_id, position) VALUES\n", tagRows),
    ...multiRowInserts("INSERT INTO item_field_values (item_id, field_id, company_id, value) VALUES\n", valueRows),
  );
  return { statements, subset };
}

// ---------------------------------------------------------------------------------------------
// Memory: summed VmRSS of the server's workerd processes

function workerdPids(group: number): number[] {
  return procStats()
    .filter(
      ({ pid, fields }) =>
        Number(fields[2]) === group && (readProcFile(`/proc/${pid}/comm`)?.trim() ?? "").startsWith("workerd"),
    )
    .map(({ pid }) => pid);
}

/** CPU seconds (user + system) used so far by `pids`; assumes 100 clock ticks a second. */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const { pid, fields } of procStats()) if (pids.includes(pid)) ticks += Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
}

function rssSampler(pids: number[]) {
  const total = () => pids.reduce((sum, pid) => sum + rssKb(pid), 0);
  const before = total();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, total())), 20);
  return {
    total,
    stop() {
      clearInterval(timer);
      return { beforeKb: before, peakKb: Math.max(peak, total()) };
    },
  };
}

// ---------------------------------------------------------------------------------------------

interface Run {
  label: string;
  round: number;
  rows: number;
  bytes: number;
  seconds: number;
  ttfbMs: number;
  rowsPerSecond: number;
  /** CPU seconds workerd used (the Worker and local D1's SQLite together). */
  cpuSeconds: number;
  beforeKb: number;
  peakKb: number;
  afterKb: number;
}

export async function runExportsBench(options: SuiteOptions): Promise<number> {
  const started = Date.now();
  const base = `http://127.0.0.1:${options.port}`;
  const log = (message: string) =>
    console.log(`[bench:exports +${((Date.now() - started) / 1000).toFixed(0)}s] ${message}`);
  const scope = tempServerScope("expiry-bench-exports-", log);
  const errors: string[] = [];
  try {
    const loadBefore = await prepareBenchState(scope.persistTo, log);
    let t = Date.now();
    const { statements, subset } = seedStatements();
    executeSql({ persistTo: scope.persistTo }, statements);
    const [counts] = queryRows<{ c1: number; c2: number; used: number; tags: number; values: number }>(
      { persistTo: scope.persistTo },
      "SELECT (SELECT count(*) FROM items WHERE company_id = 1) AS c1, (SELECT " +
        "count(*) FROM items WHERE company_id = 2) AS c2, " +
        "(SELECT documents_used FROM companies WHERE id = 1) AS used, (SELECT count(*) " +
        'FROM item_tags) AS tags, (SELECT count(*) FROM item_field_values) AS "values"',
    );
    expect(
      counts?.c1 === ITEMS.company1 && counts.c2 === ITEMS.company2 && counts.used === ITEMS.company1,
      `seeded items: ${JSON.stringify(counts)}`,
    );
    log(
      `seeded ${ITEMS.company1} items for company 1 (${counts!.tags} tags, ${counts!.values} custom field values) and ${ITEMS.company2} for company 2 in ${((Date.now() - t) / 1000).toFixed(1)} s`,
    );

    t = Date.now();
    const server = await startBenchServer(options.port, scope.persistTo, ["--var", "RATE_LIMITS:off"]);
    scope.setServer(server);
    const pids = workerdPids(server.pid!);
    expect(pids.length > 0, "found the server's workerd processes");
    log(
      `server up in ${((Date.now() - t) / 1000).toFixed(1)} s (RATE_LIMITS=off via --var; workerd pids ${pids.join(", ")})`,
    );
    const token = await httpClient(base).fetchToken();
    const headers = { Authorization: `Bearer ${token}` };

    // ---- checks: every row exactly once, none of company 2's
    const full = async (format: "csv" | "ndjson") => {
      const res = await fetch(`${base}/v1/items/export?format=${format}`, { headers });
      const text = await res.text();
      expect(res.status === 200, `export ${format}: ${res.status} ${text.slice(0, 200)}`);
      return text;
    };
    const csv = await full("csv");
    const records = csv.split("\r\n");
    expect(records.pop() === "", "the CSV ends with CRLF");
    const header = records.shift()!.split(",");
    const csvIds = records.map((r) => Number(r.slice(0, r.indexOf(","))));
    const ndjsonIds = (await full("ndjson"))
      .split("\n")
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { item_id: number }).item_id);
    for (const [format, ids] of [
      ["csv", csvIds],
      ["ndjson", ndjsonIds],
    ] as const) {
      expect(
        ids.length === ITEMS.company1 && new Set(ids).size === ITEMS.company1,
        `${format}: ${ids.length} rows, ${new Set(ids).size} distinct`,
      );
      expect(
        ids.every((id) => companyOf(id) === 1),
        `${format}: only company 1's items`,
      );
    }
    expect(
      header.includes("Inspector") && header.includes("Detail 8") && header.at(-1) === "add_date",
      `CSV header: ${header.join(",")}`,
    );
    log(
      `checks ok: CSV and NDJSON hold each of the ${ITEMS.company1} items once, none of company 2's; ${header.length} columns (${header.length - 13} custom fields)`,
    );

    // ---- measured exports
    const measure = async (label: string, path: string, round: number): Promise<Run> => {
      await sleep(1_000);
      const sampler = rssSampler(pids);
      const cpuBefore = cpuSeconds(pids);
      const t0 = performance.now();
      const res = await fetch(base + path, { headers });
      let ttfbMs = NaN;
      let bytes = 0;
      let ends = 0;
      const csvRows = !path.includes("format=ndjson");
      // Rows: CSV records end with CRLF and no value holds a CR here; NDJSON lines end with LF (JSON escapes the others).
      const end = csvRows ? 0x0d : 0x0a;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        if (Number.isNaN(ttfbMs)) ttfbMs = performance.now() - t0;
        bytes += chunk.byteLength;
        for (let i = chunk.indexOf(end); i >= 0; i = chunk.indexOf(end, i + 1)) ends++;
      }
      const seconds = (performance.now() - t0) / 1000;
      const cpu = cpuSeconds(pids) - cpuBefore;
      const { beforeKb, peakKb } = sampler.stop();
      await sleep(1_000);
      const rows = csvRows ? ends - 1 : ends;
      if (res.status !== 200) errors.push(`${label} (round ${round + 1}): status ${res.status}`);
      const run = {
        label,
        round,
        rows,
        bytes,
        seconds,
        ttfbMs,
        rowsPerSecond: rows / seconds,
        cpuSeconds: cpu,
        beforeKb,
        peakKb,
        afterKb: sampler.total(),
      };
      log(
        `  ${label} (round ${round + 1}): ${rows} rows, ${(bytes / MiB).toFixed(1)} MiB in ${seconds.toFixed(2)} s: ${run.rowsPerSecond.toFixed(0)} rows/s, ` +
          `first byte ${ttfbMs.toFixed(0)} ms, workerd CPU ${cpu.toFixed(2)} s; workerd RSS ${(beforeKb / 1024).toFixed(1)} MiB before, peak +${((peakKb - beforeKb) / 1024).toFixed(1)} MiB, ` +
          `${(run.afterKb / 1024).toFixed(1)} MiB 1 s after`,
      );
      return run;
    };
    const kinds = [
      { label: "items CSV, 100,000 rows", path: "/v1/items/export", rows: ITEMS.company1 },
      { label: "items NDJSON, 100,000 rows", path: "/v1/items/export?format=ndjson", rows: ITEMS.company1 },
      {
        label: `items CSV, ${subset.toLocaleString("en-US")} rows (period)`,
        path: `/v1/items/export?${SUBSET}`,
        rows: subset,
      },
    ];
    const runs: Run[] = [];
    log(
      `${options.rounds} round(s): the two full exports (alternating order), then the ${subset}-row export (${SUBSET})`,
    );
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? [kinds[0]!, kinds[1]!, kinds[2]!] : [kinds[1]!, kinds[0]!, kinds[2]!];
      for (const kind of order) {
        const run = await measure(kind.label, kind.path, round);
        if (run.rows !== kind.rows)
          errors.push(`${kind.label} (round ${round + 1}): ${run.rows} rows, expected ${kind.rows}`);
        runs.push(run);
      }
    }

    // ---- report
    const loadAfter = loadavg()[0]!;
    const mib = (kb: number) => (kb / 1024).toFixed(1);
    console.log(
      `\nExports ${new Date(started).toISOString()}: wrangler ${wranglerVersion()} dev, --log-level warn, X_LOCAL_OBSERVABILITY=false, RATE_LIMITS=off; ` +
        `${options.rounds} round(s), medians; load ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after\n`,
    );
    const summary = kinds.map((kind) => {
      const of = runs.filter((r) => r.label === kind.label);
      return {
        label: kind.label,
        rows: kind.rows,
        rowsPerSecond: median(of.map((r) => r.rowsPerSecond)),
        perRound: of.map((r) => r.rowsPerSecond),
        mibPerSecond: median(of.map((r) => r.bytes / MiB / r.seconds)),
        mib: median(of.map((r) => r.bytes / MiB)),
        seconds: median(of.map((r) => r.seconds)),
        ttfbMs: median(of.map((r) => r.ttfbMs)),
        cpuSeconds: median(of.map((r) => r.cpuSeconds)),
        beforeKb: median(of.map((r) => r.beforeKb)),
        growthKb: median(of.map((r) => r.peakKb - r.beforeKb)),
        growthPerRound: of.map((r) => r.peakKb - r.beforeKb),
        afterKb: median(of.map((r) => r.afterKb)),
      };
    });
    printColumns(
      [
        "export",
        "rows/s",
        "per round",
        "MiB",
        "MiB/s",
        "s",
        "first byte ms",
        "workerd CPU s",
        "RSS before MiB",
        "peak growth MiB",
        "per round",
        "RSS after MiB",
      ],
      summary.map((s) => [
        s.label,
        s.rowsPerSecond.toFixed(0),
        s.perRound.map((x) => x.toFixed(0)).join(" "),
        s.mib.toFixed(1),
        s.mibPerSecond.toFixed(1),
        s.seconds.toFixed(2),
        s.ttfbMs.toFixed(0),
        s.cpuSeconds.toFixed(2),
        mib(s.beforeKb),
        `+${mib(s.growthKb)}`,
        s.growthPerRound.map((x) => `+${mib(x)}`).join(" "),
        mib(s.afterKb),
      ]),
    );
    for (const s of summary.slice(0, 2)) {
      console.log(
        `${s.label}: ${s.rowsPerSecond.toFixed(0)} rows/s (target >= ${TARGET_ROWS_PER_SECOND}) -> ${s.rowsPerSecond >= TARGET_ROWS_PER_SECOND ? "MET" : "MISSED"}`,
      );
    }
    console.log(
      "(workerd CPU: user + system seconds of the server's workerd processes during " +
        "the export: the Worker and local D1's SQLite together)",
    );
    console.log(
      "(RSS: summed VmRSS of the server's workerd processes: before the request, the " +
        "peak while it streamed, 1 s after its end)",
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
            subset: SUBSET,
            loadAverage: { before: loadBefore, after: loadAfter },
            summary,
            runs,
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
