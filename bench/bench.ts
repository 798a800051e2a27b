// `npm run bench [-- --only items|contacts|reminders|webhooks|drive|limits|feeds|imports|exports|renewals|writes|pages|bounces|digests|channel-deliveries|all --duration 10 --connections 32 --rounds 1 --json [file]]` (`--help` lists all)
//
// `--only reminders` runs bench/reminders.ts instead (the reminder engine: queueing, firing,
// lateness; on its own data and server, default port 8920; about 6 minutes, see docs/performance.md);
// `--only webhooks`, `--only drive` and `--only limits` likewise run bench/webhooks.ts,
// bench/drive.ts and bench/limits.ts (rate limits, the request log and
// Idempotency-Key: two servers, A with both off, B with the defaults; about 5 minutes), and
// `--only feeds` bench/feeds.ts (a calendar feed's 304 and 200 against a point read), `--only
// imports` bench/imports.ts (imports against POSTs, 100,000 rows), `--only exports`
// bench/exports.ts (streamed CSV/NDJSON exports of 100,000 items). `all` (the
// default) is items + contacts and leaves those sets out: they answer other questions, and the
// reminder set waits for wall-clock minutes.
//
// Throughput benchmark of the API routes under `wrangler dev`, against a throw-away local D1:
//   1. fresh temp --persist-to dir: migrations, demo seed, then, by --only (default all):
//      contacts: 10,000 contacts for company 1 and 2,000 for company 2 (interleaved ids, so
//        tenancy filtering has real work to do);
//      items: 100,000 items for company 1 (4 departments, 20 document types, 50 folders, 30 tags
//        on a few thousand items), 20,000 for company 2 and 1,000 for company 3 (a second company
//        of account 1 with its own API client), ids interleaved; company 1's documents_limit and
//        account 1's max_documents raised to 10,000,000 so that the POST run never hits them;
//      all as multi-row INSERTs (< 90 KB each) in one `wrangler d1 execute --file` per data set;
//   2. `wrangler dev --port P --persist-to DIR --log-level warn` with X_LOCAL_OBSERVABILITY=false;
//   3. tokens over HTTP (demo-owner; bench-small for company 3), one checked request per route:
//      totals against the inserted rows, tenancy (another company's rows are 404), deep offsets
//      and a keyset cursor computed from the totals;
//   4. autocannon: a mixed server warm-up, then per route a warm-up and the measured run,
//      /health first and last, and after each run one request of the route, which waits out the
//      requests still queued in wrangler dev; every response must be 2xx. Item routes: the list unfiltered,
//      `status=pending&period=next_90_days`, `document_type_id`, `q=insp` and a keyset page, each
//      at 100k and then at 1k; the four lists at a deep offset; `GET /v1/items/{id}`; the POST last;
//   5. a table of requests/s, p50, p99 and the ratio to GET /health of the same run, whether the
//      targets are met, and for the item lists the growth from 1,000 to 100,000 items
//      (cost at 100k / cost at 1k = ratio at 1k / ratio at 100k);
//   6. the server is stopped and the temp dir removed, whatever happened.
// Exits non-zero on errors (non-2xx, socket errors, failed setup), not on missed targets.
// Quote ratios, not absolute numbers (docs/performance.md, /work/shared/perf-baselines.md).
import type { ChildProcess } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { hashClientSecret } from "../src/auth/secret-hash.ts";
import { searchWords, tokenize } from "../src/lib/search.ts";
import {
  CONTENDED,
  autocannon,
  expect,
  httpClient,
  mean,
  measurer,
  median,
  multiRowInserts,
  pct,
  printColumns,
  prng,
  requestHeaders,
  sqlText,
  tempServerScope,
  wranglerVersion,
  type RouteResult,
  type RouteSpec,
} from "./kit.ts";
import {
  ROOT,
  applyMigrations,
  ensureDevVars,
  numberOption as numberOptionOf,
  optionValue,
  rejectUnknownOptions,
  seedLocal,
  startDev,
  wrangler,
} from "../scripts/lib/local.ts";

// ---------------------------------------------------------------------------------------------
// Options

const argv = process.argv.slice(2);
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(`Usage: npm run bench -- [options]
  --only SET         items | contacts | reminders | webhooks | drive | limits | feeds | imports | exports | renewals | writes | pages | bounces | digests | channel-deliveries | all (default all): which data to seed and which routes to
                     measure; items: the item routes at 100,000 and 1,000 items; contacts: the contact, company
                     and department routes; all: items and contacts. reminders (not part of all): the reminder
                     engine (bench/reminders.ts, about 6 minutes): 100,000 reminders
                     queued by the sweep, 10,000 POST /v1/items, 5,000 reminders due in one minute,
                     GET /v1/items/{id} against /health, lateness of a light run; webhooks (not part of
                     all; bench/webhooks.ts, about 1 minute): POST /v1/items with and without a
                     subscribed endpoint, item.created events delivered per second to a local receiver; it uses --connections,
                     --duration, --warmup, --server-warmup (default 5 there), --rounds (the GET only),
                     --port (default 8940) and --json; drive (not part of all; bench/drive.ts, about
                     4 minutes): uploads and downloads of 10 and 50 MiB through the API against a bare R2
                     put/get in the same run, the servers' peak memory meanwhile, GET /v1/tasks?limit=50
                     with 50,000 tasks against /health; --rounds defaults to 3 there, port 8960 (the
                     bare Worker takes P+10); limits (not part of all; bench/limits.ts, about
                     5 minutes): GET /v1/contacts/{id} over 200 tenants on server A (RATE_LIMITS=off,
                     REQUEST_LOGS=off) against server B (the defaults: both on), POST /v1/items with
                     and without an Idempotency-Key, one company's reads while another floods searches
                     past its limit; --rounds defaults to 3, --server-warmup to 5, port 8980 (B takes P+10, C P+20);
                     feeds (not part of all; bench/feeds.ts, about 2.5 minutes): a calendar feed of 1,000 items
                     with If-None-Match (304) and in full (200) against GET /v1/contacts/{id} and /health, RATE_LIMITS=off
                     and REQUEST_LOGS=off; --rounds defaults to 3, --server-warmup to 5, port 9020
                     imports (not part of all; bench/imports.ts, about 8 minutes): 10,000 items through
                     POST /v1/items against one CSV import of them (to completed), and an import of 100,000 rows
                     with the server's memory; RATE_LIMITS=off and REQUEST_LOGS=off; --rounds defaults to 3, port 9040
                     exports (not part of all; bench/exports.ts, about 4 minutes): 100,000 items seeded by SQL,
                     GET /v1/items/export as CSV and NDJSON read to the end: rows/s and the server's workerd memory
                     (RSS before, peak during, after); RATE_LIMITS=off; --rounds defaults to 3, port 9060
                     renewals (not part of all; bench/renewals.ts): 10,000 items with a renew_on: expired
                     rule renew at a local midnight (company 1 takes the zone whose midnight comes first: waits
                     up to an hour); both the renewals and their requeued reminders within 30 s; RATE_LIMITS=off; port 9080
                     writes (not part of all; bench/writes.ts, about 7 minutes): POST and PATCH of items and contacts beside
                     their point reads and lists, company 1 holding 30,000 items and 5,000 contacts; RATE_LIMITS=off;
                     --connections defaults to 16 and --rounds to 3 there, port 9100
                     pages (not part of all; bench/pages.ts, about 3 minutes): a recipient's page GET and an acknowledge POST
                     through its form, against /health; 40,000 items with a link each; RATE_LIMITS=off; --rounds 3, port 9120
                     bounces (not part of all; bench/bounces.ts, about 9 minutes): 4,400 sent reminder emails, one DSN at a
                     time through the email() handler, then company 2's GET p50 (to 0.1 ms) alone, while plain messages
                     and while DSNs arrive at 1,000 a minute, and while DSNs arrive at 1,800 a minute, each over
                     --duration seconds (30 there: 500 and 900 messages); --rounds 3, port 9140
                     digests (not part of all; bench/digests.ts, about 3 minutes a round): 10,000 contacts on a weekly
                     digest at one hour, each round on a fresh state: the time until the last is handed to the email
                     binding, none twice; RATE_LIMITS=off; --rounds 3, port 9160
                     channel-deliveries (not part of all; bench/channel-deliveries.ts, about 3.5 minutes a round): 1,000
                     reminders at one minute to 10 slack channels on a local receiver answering 429 to one request in
                     ten: the time to the last 200 against the time Slack's 1 a second implies, the pacing per endpoint,
                     each message once; each round on a fresh state; RATE_LIMITS=off; --rounds 3, port 9180
  --duration S       measured seconds per route (default 10; 30 for bounces)
  --connections N    concurrent connections (default 32; 16 for writes, 4 for bounces)
  --warmup S         unmeasured seconds per route before its first measured run (default 2)
  --server-warmup S  unmeasured seconds of mixed load over all routes once the server is up (default 10)
  --rounds R         measure every route R times, interleaved; the table shows medians (default 1; 3 for drive, limits, feeds, imports, exports, writes, pages, bounces, digests and channel-deliveries)
  --port P           wrangler dev port (default 8900; 8920 reminders, 8940 webhooks, 8960 drive, 8980 limits, 9020 feeds, 9040 imports, 9060 exports, 9080 renewals, 9100 writes, 9120 pages, 9140 bounces, 9160 digests, 9180 channel-deliveries; its inspector takes P+1)
  --json [FILE]      also write the results as JSON (default .bench/bench-<timestamp>.json)`);
  process.exit(0);
}
const KNOWN_FLAGS = [
  "--only",
  "--duration",
  "--connections",
  "--warmup",
  "--server-warmup",
  "--rounds",
  "--port",
  "--json",
];
rejectUnknownOptions(argv, KNOWN_FLAGS);
const numberOption = (name: string, fallback: number, min: number) => numberOptionOf(argv, name, fallback, min);

const ONLY_VALUES = [
  "items",
  "contacts",
  "reminders",
  "webhooks",
  "drive",
  "limits",
  "feeds",
  "imports",
  "exports",
  "renewals",
  "writes",
  "pages",
  "bounces",
  "digests",
  "channel-deliveries",
  "all",
] as const;
const ONLY = (optionValue(argv, "--only") ?? "all") as (typeof ONLY_VALUES)[number];
if (!ONLY_VALUES.includes(ONLY)) {
  console.error(`--only must be one of ${ONLY_VALUES.join(", ")} (got ${ONLY})`);
  process.exit(2);
}
const WITH_CONTACTS = ONLY === "contacts" || ONLY === "all";
const WITH_ITEMS = ONLY === "items" || ONLY === "all";
const REMINDERS = ONLY === "reminders";
const WEBHOOKS = ONLY === "webhooks";
const DRIVE = ONLY === "drive";
const LIMITS = ONLY === "limits";
const FEEDS = ONLY === "feeds";
const IMPORTS = ONLY === "imports";
const EXPORTS = ONLY === "exports";
const RENEWALS = ONLY === "renewals";
const WRITES = ONLY === "writes";
const PAGES = ONLY === "pages";
const BOUNCES = ONLY === "bounces";
const DIGESTS = ONLY === "digests";
const CHANNEL_DELIVERIES = ONLY === "channel-deliveries";

const DURATION = numberOption("--duration", BOUNCES ? 30 : 10, 1);
const CONNECTIONS = Math.round(numberOption("--connections", WRITES ? 16 : BOUNCES ? 4 : 32, 1));
const WARMUP = numberOption("--warmup", 2, 0);
const SERVER_WARMUP = numberOption("--server-warmup", REMINDERS || LIMITS || FEEDS ? 5 : 10, 0);
const ROUNDS = Math.round(
  numberOption(
    "--rounds",
    DRIVE || LIMITS || FEEDS || IMPORTS || EXPORTS || WRITES || PAGES || BOUNCES || DIGESTS || CHANNEL_DELIVERIES
      ? 3
      : 1,
    1,
  ),
);
const PORT = Math.round(
  numberOption(
    "--port",
    REMINDERS
      ? 8920
      : WEBHOOKS
        ? 8940
        : DRIVE
          ? 8960
          : LIMITS
            ? 8980
            : FEEDS
              ? 9020
              : IMPORTS
                ? 9040
                : EXPORTS
                  ? 9060
                  : RENEWALS
                    ? 9080
                    : WRITES
                      ? 9100
                      : PAGES
                        ? 9120
                        : BOUNCES
                          ? 9140
                          : DIGESTS
                            ? 9160
                            : CHANNEL_DELIVERIES
                              ? 9180
                              : 8900,
    1,
  ),
);
const INSPECTOR_PORT = PORT + 1;

function jsonOutputPath(): string | undefined {
  const i = argv.findIndex((a) => a === "--json" || a.startsWith("--json="));
  if (i < 0) return undefined;
  const arg = argv[i]!;
  if (arg.startsWith("--json=")) return resolve(arg.slice("--json=".length));
  const next = argv[i + 1];
  if (next && !next.startsWith("--")) return resolve(next);
  return join(ROOT, ".bench", `bench-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
}
const JSON_OUT = jsonOutputPath();

// ---------------------------------------------------------------------------------------------
// Data volume and targets

const COMPANY1_CONTACTS = 10_000;
const COMPANY2_CONTACTS = 2_000;
/** A common first-name prefix: Maria, Mark, Martin, Marta (and any word starting with it). */
const SEARCH_PREFIX = "mar";
const LIST_OFFSET = 5_000;
const TARGETS = { point: 0.5, list: 0.4, structure: 0.4, searchAll: 0.4 };

const FIRST_NAMES = [
  "James",
  "Mary",
  "John",
  "Patricia",
  "Robert",
  "Jennifer",
  "Michael",
  "Linda",
  "David",
  "Elizabeth",
  "William",
  "Barbara",
  "Richard",
  "Susan",
  "Joseph",
  "Jessica",
  "Thomas",
  "Sarah",
  "Charles",
  "Karen",
  "Maria",
  "Mark",
  "Martin",
  "Marta",
  "Anna",
  "Lukas",
  "Sofia",
  "Mateo",
  "Chloé",
  "Noah",
  "Emma",
  "Olivia",
  "Liam",
  "Zoë",
  "Hugo",
  "Léa",
  "Ines",
  "Yusuf",
  "Aiko",
  "Priya",
];
const LAST_NAMES = [
  "Smith",
  "Johnson",
  "Williams",
  "Brown",
  "Jones",
  "Garcia",
  "Miller",
  "Davis",
  "Rodriguez",
  "Wilson",
  "Anderson",
  "Taylor",
  "Thomas",
  "Moore",
  "Jackson",
  "White",
  "Harris",
  "Clark",
  "Lewis",
  "Walker",
  "Young",
  "King",
  "Wright",
  "Lopez",
  "Hill",
  "Scott",
  "Green",
  "Adams",
  "Baker",
  "Nelson",
  "Müller",
  "Schmidt",
  "Dubois",
  "Rossi",
  "Nakamura",
  "Kowalski",
  "Novak",
  "Svensson",
  "O'Brien",
  "Fernández",
  "Patel",
  "Singh",
  "Kim",
  "Nguyen",
  "Silva",
  "Costa",
  "Jansen",
  "Berg",
  "Horvat",
  "Popescu",
];
const DOMAINS = ["example.com", "example.org", "mail.example.net", "corp.example", "demo.example"];
const COUNTRIES: Array<[iso: string, code: string]> = [
  ["US", "+1"],
  ["GB", "+44"],
  ["DE", "+49"],
  ["FR", "+33"],
  ["IT", "+39"],
  ["ES", "+34"],
  ["IN", "+91"],
  ["JP", "+81"],
];

const asciiLower = (value: string) =>
  value
    .normalize("NFD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(/[^A-Za-z]/g, "")
    .toLowerCase();

/**
 * The contacts as multi-row INSERTs with explicit ids 1..12,000: every sixth id belongs to
 * company 2, so company 1's rows are spread over the table as in a shared production table.
 */
function buildContactStatements(): { statements: string[]; company1Ids: number[]; company2Ids: number[] } {
  const random = prng(20261117);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const company1Ids: number[] = [];
  const company2Ids: number[] = [];
  const rows: string[] = [];
  const total = COMPANY1_CONTACTS + COMPANY2_CONTACTS;
  const start = Date.parse("2024-01-01T00:00:00Z");
  for (let id = 1; id <= total; id++) {
    const inCompany2 =
      company2Ids.length < COMPANY2_CONTACTS && (id % 6 === 0 || company1Ids.length >= COMPANY1_CONTACTS);
    const [companyId, deptId] = inCompany2 ? [2, 2] : [1, 1];
    (inCompany2 ? company2Ids : company1Ids).push(id);
    const first = pick(FIRST_NAMES);
    const last = pick(LAST_NAMES);
    const email = `${asciiLower(first)}.${asciiLower(last)}${id}@${pick(DOMAINS)}`;
    const [iso, code] = pick(COUNTRIES);
    const phone = String(Math.floor(200_000_000 + random() * 799_999_999));
    const created = new Date(start + id * 47 * 60_000).toISOString().slice(0, 19).replace("T", " ");
    rows.push(
      `(${id}, ${companyId}, ${deptId}, NULL, ${sqlText(first)}, ${sqlText(last)}, ${sqlText(email)}, ${sqlText(email.toLowerCase())}, ` +
        `${sqlText(code)}, ${sqlText(iso)}, ${sqlText(code)}, ${sqlText(phone)}, ${sqlText(created)}, ${sqlText(created)}, ${sqlText(searchWords(first, last, email, phone))})`,
    );
  }
  const head =
    "INSERT INTO contacts (id, company_id, dept_id, group_id, first_name, last_name, " +
    "email, email_key, country_code, iso, mobile_code, phone_number, created_at, " +
    "updated_at, search_words) VALUES\n";
  return { statements: multiRowInserts(head, rows), company1Ids, company2Ids };
}

// ---------------------------------------------------------------------------------------------
// Items: 100,000 for company 1, 20,000 for company 2, 1,000 for company 3 (account 1).

/** A company that gets items, with the ids of its departments, document types and folders. */
interface ItemCompany {
  id: number;
  items: number;
  /** The first is the company's default department. */
  deptIds: number[];
  typeIds: number[];
  folderIds: number[];
}

const BIG: ItemCompany = {
  id: 1,
  items: 100_000,
  deptIds: [1, 3, 4, 5],
  typeIds: range(1, 20),
  folderIds: range(1, 50),
};
const OTHER: ItemCompany = { id: 2, items: 20_000, deptIds: [2], typeIds: [], folderIds: [] };
/** The 1,000-item company the growth is measured against: same shape as company 1, 1% of its items. */
const SMALL: ItemCompany = {
  id: 3,
  items: 1_000,
  deptIds: [6, 7, 8, 9],
  typeIds: range(21, 40),
  folderIds: range(51, 60),
};
const ITEM_COMPANIES = [BIG, OTHER, SMALL];
/** API client of company 3 (seeded here, not by the demo seed). */
const SMALL_CLIENT = { id: "bench-small", secret: "bench-small-secret" };
const DOCUMENTS_LIMIT = 10_000_000;
/** A word prefix shared by "inspection", "inspector" and "inspections": thousands of hits at 100k. */
const ITEM_SEARCH_PREFIX = "insp";
/** Unfiltered deep offset at 100k; each filter's deep offset is DEEP_SHARE of its total. */
const ITEM_DEEP_OFFSET = 20_000;
const DEEP_SHARE = 0.8;
/** The keyset page starts after this many rows: 20,000 at 100k, 200 at 1k (the same share). */
const KEYSET_POSITION = { big: 20_000, small: 200 };
const ITEM_TARGETS = {
  list: 0.4,
  filtered: 0.35,
  searchAll: 0.4,
  searchRare: 0.45,
  growth: 1.5,
  point: 0.5,
  create: 0.3,
};
const ITEM_TYPE_VALUES = ["exp", "due", "apt", "evt"] as const;

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

const EXTRA_DEPARTMENTS = ["Operations", "Facilities", "Fleet"];
const DOCUMENT_TYPES = [
  "Certificate",
  "Contract",
  "Insurance policy",
  "Inspection report",
  "License",
  "Permit",
  "Lease",
  "Warranty",
  "Passport",
  "Visa",
  "Registration",
  "Subscription",
  "Maintenance plan",
  "Calibration record",
  "Audit report",
  "Training record",
  "Vaccination record",
  "Service agreement",
  "Tax document",
  "Medical record",
];
const FOLDER_AREAS = [
  "Permits",
  "Vehicles",
  "Buildings",
  "Staff",
  "Contracts",
  "Insurance",
  "IT",
  "Finance",
  "Health & Safety",
  "Suppliers",
];
const TAG_NAMES = [
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
/** First words of titles: a few share prefixes ("ins…": inspection, insurance, insulin; "insp…": inspection, inspector). */
const TITLE_SUBJECTS = [
  "Inspection",
  "Inspection",
  "Inspector visit",
  "Insurance",
  "Insurance",
  "Insulin prescription",
  "License",
  "Permit",
  "Certificate",
  "Contract",
  "Lease",
  "Warranty",
  "Passport",
  "Visa",
  "Registration",
  "Subscription",
  "Maintenance",
  "Calibration",
  "Audit",
  "Training",
  "Vaccination",
  "Service",
  "Domain renewal",
  "Membership",
  "Tax filing",
  "Safety check",
  "Medical check-up",
  "Fire drill",
  "Certification",
  "Payment",
];
const TITLE_OBJECTS = [
  "fire extinguishers",
  "elevator",
  "company van",
  "forklift",
  "boiler",
  "office lease",
  "server room",
  "delivery truck",
  "HVAC system",
  "sprinkler system",
  "first aid kits",
  "liability",
  "property",
  "vehicle fleet",
  "workers' compensation",
  "food handling",
  "electrical installation",
  "crane",
  "pressure vessels",
  "website certificate",
  "cold storage",
  "alarm system",
];
const TITLE_PLACES = [
  "Building A",
  "Building B",
  "Warehouse 2",
  "Head office",
  "Plant Nord",
  "Depot Süd",
  "Branch Lyon",
  "Store 14",
  "São Paulo office",
  "Lab 3",
];
const NOTES = [
  "",
  "",
  "",
  "Renew with the city office",
  "Contact the supplier 30 days ahead",
  "Annual inspections required by law",
  "Copy kept in the safe",
  "Ask for the updated certificate",
  "Budget approved",
  "Check the premium before renewing",
  "Reminder for the facility manager",
  "Scanned copy in the shared drive",
  "Price increase expected next year",
  "Call Müller GmbH for a quote",
  "Owner: operations team",
  "Needs two signatures",
];

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const todayUtc = () => isoDay(Date.now());
function addDaysIso(day: string, days: number): string {
  return isoDay(Date.parse(`${day}T00:00:00Z`) + days * 86_400_000);
}

/** What the preflight checks the API's answers against. */
interface SeededItem {
  id: number;
  companyId: number;
  typeId: number | null;
  expiry: string;
  status: "pending" | "completed";
  archived: number;
  /** title + notes, for the expected `q` total. */
  text: string;
  tags: number;
}

/** Company ids by item id: 121 ids hold 100 of company 1, 20 of company 2 (every 6th) and 1 of company 3 (the 121st). */
function itemCompanyOf(id: number): ItemCompany {
  const p = id % 121;
  if (p === 0) return SMALL;
  return p % 6 === 0 ? OTHER : BIG;
}

function buildItemStatements(today: string): { statements: string[]; items: SeededItem[]; tagged: number } {
  const random = prng(20261121);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const statements: string[] = [
    `UPDATE accounts SET max_documents = ${DOCUMENTS_LIMIT} WHERE id = 1`,
    `UPDATE accounts SET max_documents = MAX(max_documents, ${OTHER.items * 2}) WHERE id = 2`,
    `UPDATE companies SET documents_limit = ${DOCUMENTS_LIMIT} WHERE id = 1`,
    `UPDATE companies SET documents_limit = MAX(documents_limit, ${OTHER.items * 2}) WHERE id = 2`,
    `INSERT INTO companies (id, account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb) VALUES (${SMALL.id}, 1, 'Bench Small Company', 0, ${DOCUMENTS_LIMIT}, 1000, 1024)`,
  ];
  // Departments, document types and folders of companies 1 and 3 (company 1's default department 1 exists).
  const deptRows: string[] = [];
  for (const company of [BIG, SMALL]) {
    company.deptIds.forEach((deptId, i) => {
      if (company.id === BIG.id && i === 0) return;
      const name = i === 0 ? "General" : EXTRA_DEPARTMENTS[i - 1]!;
      deptRows.push(`(${deptId}, ${company.id}, ${sqlText(name)}, ${sqlText(name.toLowerCase())}, ${i === 0 ? 1 : 0})`);
    });
  }
  statements.push(
    `INSERT INTO departments (id, company_id, name, name_key, is_default) VALUES\n${deptRows.join(",\n")}`,
  );
  const typeRows: string[] = [];
  const folderRows: string[] = [];
  for (const company of [BIG, SMALL]) {
    company.typeIds.forEach((typeId, i) => {
      const name = DOCUMENT_TYPES[i]!;
      typeRows.push(
        `(${typeId}, 1, ${company.id}, ${company.deptIds[i % company.deptIds.length]}, ${sqlText(name)}, ${sqlText(name.toLowerCase())}, 1)`,
      );
    });
    company.folderIds.forEach((folderId, i) => {
      const name = `${FOLDER_AREAS[i % FOLDER_AREAS.length]} ${2022 + Math.floor(i / FOLDER_AREAS.length)}`;
      folderRows.push(
        `(${folderId}, ${company.id}, ${company.deptIds[i % company.deptIds.length]}, 0, ${sqlText(name)}, ${sqlText(name.toLowerCase())})`,
      );
    });
  }
  statements.push(
    `INSERT INTO document_types (id, account_id, company_id, dept_id, name, name_key, created_by) VALUES\n${typeRows.join(",\n")}`,
  );
  statements.push(
    `INSERT INTO folders (id, company_id, dept_id, parent_id, name, name_key) VALUES\n${folderRows.join(",\n")}`,
  );
  statements.push(
    `INSERT INTO tags (id, company_id, name, name_key) VALUES\n` +
      TAG_NAMES.map((name, i) => `(${i + 1}, ${BIG.id}, ${sqlText(name)}, ${sqlText(name.toLowerCase())})`).join(",\n"),
  );

  const total = ITEM_COMPANIES.reduce((n, c) => n + c.items, 0);
  const items: SeededItem[] = [];
  const itemRows: string[] = [];
  const tagRows: string[] = [];
  const start = Date.parse("2023-01-01T00:00:00Z");
  let bigSeen = 0;
  for (let id = 1; id <= total; id++) {
    const company = itemCompanyOf(id);
    const deptId = pick(company.deptIds);
    const typeId = company.typeIds.length > 0 && random() >= 0.1 ? pick(company.typeIds) : null;
    const folderId = company.folderIds.length > 0 && random() >= 0.3 ? pick(company.folderIds) : null;
    const title = `${pick(TITLE_SUBJECTS)} – ${pick(TITLE_OBJECTS)}, ${pick(TITLE_PLACES)}`;
    // Every item is a "record" (a term matching all of a company's items); every 100th also "quarterly" (1%).
    const notes = `${pick(NOTES)} Record ${id}.${id % 100 === 0 ? " Quarterly review." : ""}`;
    const itemType = pick(ITEM_TYPE_VALUES);
    const expiry = addDaysIso(today, Math.floor(random() * (2 * 1096 + 1)) - 1096);
    const status = random() < 0.8 ? "pending" : "completed";
    const archived = random() < 0.05 ? 1 : 0;
    const created = new Date(start + id * 11 * 60_000).toISOString().slice(0, 19).replace("T", " ");
    itemRows.push(
      `(${id}, ${company.id}, ${deptId}, ${typeId ?? "NULL"}, ${folderId ?? "NULL"}, ${sqlText(title)}, ${sqlText(notes)}, ` +
        `'${itemType}', '${expiry}', '${status}', ${archived}, 1, '${created}', '${created}', ${sqlText(searchWords(title, notes))})`,
    );
    // Tags on every 25th item of company 1 (4,000 items), 1-3 distinct tags each.
    let tagCount = 0;
    if (company === BIG && bigSeen++ % 25 === 0) {
      tagCount = 1 + Math.floor(random() * 3);
      const first = Math.floor(random() * TAG_NAMES.length);
      for (let k = 0; k < tagCount; k++)
        tagRows.push(`(${id}, ${1 + ((first + k * 7) % TAG_NAMES.length)}, ${BIG.id}, ${k})`);
    }
    items.push({
      id,
      companyId: company.id,
      typeId,
      expiry,
      status,
      archived,
      text: `${title} ${notes}`,
      tags: tagCount,
    });
  }
  statements.push(
    ...multiRowInserts(
      "INSERT INTO items (id, company_id, dept_id, document_type_id, folder_id, title, " +
        "notes, item_type, expiry_date, status, archived, created_by, created_at, " +
        "updated_at, search_words) VALUES\n",
      itemRows,
    ),
    ...multiRowInserts("INSERT INTO item_tags (item_id, tag_id, company_id, position) VALUES\n", tagRows),
  );
  return { statements, items, tagged: tagRows.length };
}

/** The API client of company 3, as the demo seed writes its clients. */
async function smallClientStatement(): Promise<string> {
  const salt = `seed-${SMALL_CLIENT.id}`;
  const hash = await hashClientSecret(SMALL_CLIENT.secret, salt);
  return (
    `INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, company_id, user_id, scopes, active) ` +
    `VALUES (${sqlText(SMALL_CLIENT.id)}, 'bench: company 3', ${sqlText(hash)}, ${sqlText(salt)}, 1, ${SMALL.id}, 1, '*', 1)`
  );
}

/** Word-prefix match as the search does it (src/lib/search.ts: unicode61's words). */
const matchesPrefix = (text: string, prefix: string) => tokenize(text).some((w) => w.startsWith(prefix));

// ---------------------------------------------------------------------------------------------
// Run

/** One table row: a route over all its measured runs. */
interface RouteSummary {
  key: string;
  label: string;
  runs: number;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  non2xx: number;
  errors: number;
  otherCpu?: number;
  target?: number;
}

function summarize(
  route: RouteSpec,
  runs: RouteResult[],
  override: { label?: string; ratio?: number } = {},
): RouteSummary {
  const ratios = runs.map((r) => r.ratio ?? 0);
  const cpu = runs.map((r) => r.otherCpu).filter((x): x is number => x !== undefined);
  return {
    key: route.key,
    label: override.label ?? route.label,
    runs: runs.length,
    requestsPerSecond: mean(runs.map((r) => r.requestsPerSecond)),
    p50: median(runs.map((r) => r.p50)),
    p99: Math.max(...runs.map((r) => r.p99)),
    ratio: override.ratio ?? median(ratios),
    ratioMin: Math.min(...ratios),
    ratioMax: Math.max(...ratios),
    non2xx: runs.reduce((n, r) => n + r.non2xx + r.warmupNon2xx, 0),
    errors: runs.reduce((n, r) => n + r.errors + r.warmupErrors, 0),
    otherCpu: cpu.length ? Math.max(...cpu) : undefined,
    target: route.target,
  };
}

const log = (message: string) => console.log(`[bench] ${message}`);
const base = `http://127.0.0.1:${PORT}`;
const { getJson, fetchToken } = httpClient(base);
const { measure, drain } = measurer({ base, connections: CONNECTIONS, duration: DURATION, warmup: WARMUP, log });

/** One request per contact route before the load: correct answers, expected totals, tenancy. */
async function preflightContacts(
  token: string,
  contactId: number,
  otherCompanyId: number,
): Promise<Record<string, unknown>> {
  const health = await getJson("/health");
  expect(health.status === 200, `/health answered ${health.status}`);
  const point = await getJson(`/v1/contacts/${contactId}`, token);
  expect(
    point.status === 200 && point.body?.data?.contact_id === contactId,
    `GET /v1/contacts/${contactId}: ${point.status}`,
  );
  const foreign = await getJson(`/v1/contacts/${otherCompanyId}`, token);
  expect(
    foreign.status === 404,
    `company 2's contact ${otherCompanyId} must be 404 for company 1, got ${foreign.status}`,
  );
  const list = await getJson("/v1/contacts?limit=50", token);
  expect(list.status === 200 && list.body?.data?.length === 50, `list: ${list.status}`);
  expect(list.body.meta.total === COMPANY1_CONTACTS, `list meta.total ${list.body.meta.total} != ${COMPANY1_CONTACTS}`);
  const search = await getJson(`/v1/contacts?limit=50&q=${SEARCH_PREFIX}`, token);
  expect(search.status === 200 && search.body?.data?.length === 50, `search: ${search.status}`);
  const offset = await getJson(`/v1/contacts?limit=50&offset=${LIST_OFFSET}`, token);
  expect(offset.status === 200 && offset.body?.data?.length === 50, `offset list: ${offset.status}`);
  const companies = await getJson("/v1/companies", token);
  const company1 = companies.body?.data?.find((c: { companyid: number }) => c.companyid === 1);
  expect(
    companies.status === 200 && company1?.contacts_used === COMPANY1_CONTACTS,
    `companies: ${companies.status}, contacts_used ${company1?.contacts_used}`,
  );
  const departments = await getJson("/v1/departments", token);
  const general = departments.body?.data?.find((d: { isdefault: number }) => d.isdefault === 1);
  expect(
    departments.status === 200 && general?.contacts_used === COMPANY1_CONTACTS,
    `departments: ${departments.status}, contacts_used ${general?.contacts_used}`,
  );
  return {
    listTotal: list.body.meta.total,
    searchTotal: search.body.meta.total,
    offsetFirstId: offset.body.data[0].contact_id,
  };
}

interface ItemPage {
  data: Array<{ item_id: number; expiry_date: string }>;
  meta: { total: number; limit: number; offset: number; total_exact: boolean; next_cursor: string | null };
}

/** GET of an item list page: 200, `rows` rows (default 50), every row of the company, in (expiry_date, item_id) order. */
async function itemPage(path: string, token: string, company: ItemCompany, rows = 50): Promise<ItemPage> {
  const res = await getJson(path, token);
  expect(
    res.status === 200,
    `GET ${path} (company ${company.id}): ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`,
  );
  const body = res.body as ItemPage;
  expect(
    body.data?.length === rows,
    `GET ${path} (company ${company.id}): ${body.data?.length} rows, expected ${rows}`,
  );
  const foreign = body.data.filter((row) => row.item_id <= ITEM_TOTAL && itemCompanyOf(row.item_id) !== company);
  expect(
    foreign.length === 0,
    `GET ${path} (company ${company.id}) returned other companies' items ${foreign.map((r) => r.item_id).join(", ")}`,
  );
  const unordered = body.data.findIndex(
    (row, i) =>
      i > 0 &&
      (row.expiry_date < body.data[i - 1]!.expiry_date ||
        (row.expiry_date === body.data[i - 1]!.expiry_date && row.item_id <= body.data[i - 1]!.item_id)),
  );
  expect(
    unordered < 0,
    `GET ${path} (company ${company.id}): rows out of (expiry_date, item_id) order at row ${unordered}`,
  );
  return body;
}

/**
 * meta.total against the rows inserted: exact up to the API's counting cap (src/records/items/queries.ts:
 * MAX_EXACT_TOTAL 10,000, MAX_EXACT_SEARCH_TOTAL 1,000 with q), a lower bound beyond it.
 */
function expectTotal(path: string, page: ItemPage, expected: number): void {
  const unfiltered = path === "/v1/items?limit=50";
  const cap = path.includes("q=") ? 1_000 : 10_000;
  expect(
    page.meta.total === expected ||
      (!unfiltered && expected > cap && page.meta.total === cap && page.meta.total_exact === false),
    `GET ${path}: meta.total ${page.meta.total} (total_exact ${page.meta.total_exact}), expected ${expected} from the inserted rows` +
      (unfiltered
        ? " (the unfiltered total comes from the companies counters and is exact at any " + "size: docs/api-notes.md)"
        : ""),
  );
}

const ITEM_TOTAL = ITEM_COMPANIES.reduce((n, c) => n + c.items, 0);
/** Deep offset for a filter: DEEP_SHARE of its total, a multiple of 50, with a full page after it. */
const deepOffset = (total: number) => Math.max(0, Math.min(Math.floor((total * DEEP_SHARE) / 50) * 50, total - 50));

interface GrowthPair {
  kind: string;
  big: string;
  small: string;
}

/**
 * One request per item route before the load (totals against the inserted rows, tenancy, deep
 * offsets and the keyset cursor), and the item routes: 100k list routes each followed by the
 * same route at 1k, then the deep offsets, the point read and the POST.
 */
async function preflightItems(
  seeded: SeededItem[],
  tokens: { big: string; small: string },
): Promise<{ routes: RouteSpec[]; pairs: GrowthPair[]; check: Record<string, unknown> }> {
  const today = todayUtc();
  const until = addDaysIso(today, 90);
  const check: Record<string, unknown> = {};
  const routes: RouteSpec[] = [];
  const deep: RouteSpec[] = [];
  const pairs: GrowthPair[] = [];
  const kinds = ["list", "period", "type", "q", "q-all", "q-1%", "keyset"] as const;
  const perCompany: Record<"big" | "small", RouteSpec[]> = { big: [], small: [] };

  for (const size of ["big", "small"] as const) {
    const company = size === "big" ? BIG : SMALL;
    const token = tokens[size];
    const tag = size === "big" ? "[100k]" : "[1k]";
    const live = seeded.filter((i) => i.companyId === company.id && i.archived === 0);
    const typeId = company.typeIds[3]!;
    const filters = [
      {
        kind: "period",
        query: "status=pending&period=next_90_days",
        expected: live.filter((i) => i.status === "pending" && i.expiry >= today && i.expiry <= until).length,
      },
      { kind: "type", query: `document_type_id=${typeId}`, expected: live.filter((i) => i.typeId === typeId).length },
      {
        kind: "q",
        query: `q=${ITEM_SEARCH_PREFIX}`,
        expected: live.filter((i) => matchesPrefix(i.text, ITEM_SEARCH_PREFIX)).length,
      },
      { kind: "q-all", query: "q=record", expected: live.length, target: ITEM_TARGETS.searchAll },
      {
        kind: "q-1%",
        query: "q=quarterly",
        expected: live.filter((i) => matchesPrefix(i.text, "quarterly")).length,
        target: ITEM_TARGETS.searchRare,
      },
    ];
    const list = await itemPage("/v1/items?limit=50", tokens[size], company);
    expectTotal("/v1/items?limit=50", list, live.length);
    const totals: Record<string, number> = { list: list.meta.total };
    const route = (kind: string, label: string, path: string, target?: number): RouteSpec => ({
      key: `items-${kind}-${size}`,
      label: `${tag} ${label}`,
      path,
      token,
      target: size === "big" ? target : undefined,
    });
    perCompany[size].push(route("list", "GET /v1/items?limit=50", "/v1/items?limit=50", ITEM_TARGETS.list));
    for (const f of filters) {
      const path = `/v1/items?limit=50&${f.query}`;
      // At 1k a filter may match fewer than 50 items (about 30 for the period, 45 for the type).
      const page = await itemPage(path, token, company, Math.min(50, f.expected));
      expectTotal(path, page, f.expected);
      totals[f.kind] = page.meta.total;
      perCompany[size].push(route(f.kind, `GET ${path}`, path, "target" in f ? f.target : ITEM_TARGETS.filtered));
    }
    // Keyset: the cursor of the page that ends at the deep position; its next page must be the
    // rows right after it, as an offset read gives them.
    const position = KEYSET_POSITION[size];
    const before = await itemPage(`/v1/items?limit=50&offset=${position - 50}`, token, company);
    const cursor = before.meta.next_cursor;
    expect(typeof cursor === "string", `no next_cursor at offset ${position - 50}`);
    const keysetPath = `/v1/items?limit=50&cursor=${encodeURIComponent(cursor!)}`;
    const keyset = await itemPage(keysetPath, token, company);
    const byOffset = await itemPage(`/v1/items?limit=1&offset=${position}`, token, company, 1);
    expect(
      keyset.data[0]!.item_id === byOffset.data[0]!.item_id,
      `cursor page starts at item ${keyset.data[0]!.item_id}, offset ${position} at ${byOffset.data[0]!.item_id}`,
    );
    perCompany[size].push(route("keyset", `GET ${keysetPath} (rows ${position + 1}-${position + 50})`, keysetPath));
    check[`company${company.id}`] = { totals, keysetCursor: cursor, keysetPosition: position };

    if (size === "big") {
      // Deep offsets: 20,000 unfiltered; DEEP_SHARE of each filter's total.
      const deepPaths = [
        { kind: "list", path: `/v1/items?limit=50&offset=${ITEM_DEEP_OFFSET}` },
        ...filters.map((f) => ({
          kind: f.kind,
          path: `/v1/items?limit=50&${f.query}&offset=${deepOffset(f.expected)}`,
        })),
      ];
      for (const d of deepPaths) {
        await itemPage(d.path, token, company);
        deep.push({ key: `items-${d.kind}-deep`, label: `${tag} GET ${d.path}`, path: d.path, token });
      }
      // The point read: a tagged, live item in the middle of company 1.
      const tagged = live.filter((i) => i.tags > 0);
      const item = tagged[Math.floor(tagged.length / 2)]!;
      const point = await getJson(`/v1/items/${item.id}`, token);
      expect(
        point.status === 200 && point.body?.data?.item_id === item.id && point.body.data.tags?.length === item.tags,
        `GET /v1/items/${item.id}: ${point.status}, tags ${JSON.stringify(point.body?.data?.tags)} (expected ${item.tags})`,
      );
      deep.push({
        key: "items-point",
        label: `${tag} GET /v1/items/${item.id}`,
        path: `/v1/items/${item.id}`,
        token,
        target: ITEM_TARGETS.point,
      });
      // Tenancy both ways.
      const otherItem = seeded.filter((i) => i.companyId === OTHER.id)[Math.floor(OTHER.items / 2)]!;
      const foreign = await getJson(`/v1/items/${otherItem.id}`, token);
      expect(
        foreign.status === 404,
        `company 2's item ${otherItem.id} must be 404 for company 1, got ${foreign.status}`,
      );
      const fromSmall = await getJson(`/v1/items/${item.id}`, tokens.small);
      expect(
        fromSmall.status === 404,
        `company 1's item ${item.id} must be 404 for company 3, got ${fromSmall.status}`,
      );
      // The POST: the item lands 4 years out, after every page measured here.
      const body = JSON.stringify({
        title: "Bench item [<id>]",
        expiry_date: addDaysIso(today, 4 * 365),
        document_type_id: typeId,
      });
      const created = await fetch(`${base}/v1/items`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
        body: body.replace("[<id>]", "preflight"),
      });
      const createdText = await created.text();
      expect(created.status === 201, `POST /v1/items: ${created.status} ${createdText.slice(0, 300)}`);
      deep.push({
        key: "items-create",
        label: `${tag} POST /v1/items ${body}`,
        path: "/v1/items",
        token,
        post: body,
        target: ITEM_TARGETS.create,
      });
      check.pointItem = item.id;
      check.deepPaths = deepPaths.map((d) => d.path);
    }
  }
  // Each 100k list route right before the same route at 1k: drift hits both alike.
  for (const kind of kinds) {
    const big = perCompany.big.find((r) => r.key === `items-${kind}-big`)!;
    const small = perCompany.small.find((r) => r.key === `items-${kind}-small`)!;
    routes.push(big, small);
    pairs.push({ kind, big: big.key, small: small.key });
  }
  return { routes: [...routes, ...deep], pairs, check };
}

function printTable(rows: RouteSummary[]): void {
  const header = ["route", "req/s", "p50 ms", "p99 ms", "ratio", "range", "non-2xx", "errors", "other CPU"];
  const cells = rows.map((r) => [
    r.label,
    r.requestsPerSecond.toFixed(0),
    r.p50.toFixed(0),
    r.p99.toFixed(0),
    r.ratio.toFixed(2),
    r.runs > 1 ? `${r.ratioMin.toFixed(2)}-${r.ratioMax.toFixed(2)}` : "",
    String(r.non2xx),
    String(r.errors),
    r.otherCpu === undefined ? "n/a" : `${pct(r.otherCpu)}${r.otherCpu > CONTENDED ? " !" : ""}`,
  ]);
  printColumns(header, cells);
}

async function main(): Promise<number> {
  const started = new Date();
  const scope = tempServerScope("expiry-bench-", log);
  const { persistTo } = scope;
  const target = { persistTo };
  let child: ChildProcess | undefined;

  try {
    const version = wranglerVersion();
    const settings = {
      wrangler: version,
      node: process.version,
      devArgs: [
        "--port",
        String(PORT),
        "--persist-to",
        "<temp dir>",
        "--log-level",
        "warn",
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        String(INSPECTOR_PORT),
      ],
      env: { X_LOCAL_OBSERVABILITY: "false" },
      connections: CONNECTIONS,
      durationSeconds: DURATION,
      warmupSeconds: WARMUP,
      serverWarmupSeconds: SERVER_WARMUP,
      rounds: ROUNDS,
      only: ONLY,
      data: {
        ...(WITH_CONTACTS
          ? {
              company1Contacts: COMPANY1_CONTACTS,
              company2Contacts: COMPANY2_CONTACTS,
              searchPrefix: SEARCH_PREFIX,
              listOffset: LIST_OFFSET,
            }
          : {}),
        ...(WITH_ITEMS
          ? {
              items: Object.fromEntries(ITEM_COMPANIES.map((c) => [`company${c.id}`, c.items])),
              itemSearchPrefix: ITEM_SEARCH_PREFIX,
              itemDeepOffset: ITEM_DEEP_OFFSET,
            }
          : {}),
      },
    };
    log(`wrangler ${version}, Node ${process.version}; persist dir ${persistTo}`);
    log(
      `load: autocannon, ${CONNECTIONS} connections, ${WARMUP} s warm-up + ${DURATION} s measured per route, ${ROUNDS} round(s), ` +
        `after ${SERVER_WARMUP} s of server warm-up`,
    );
    const loadBefore = loadavg()[0]!;
    if (loadBefore > 0.5)
      log(
        `warning: 1-min load average is ${loadBefore.toFixed(2)} before starting; other work on this machine skews the numbers`,
      );

    ensureDevVars();
    let t = Date.now();
    applyMigrations(target);
    log(`migrations applied (${((Date.now() - t) / 1000).toFixed(1)} s)`);

    t = Date.now();
    await seedLocal(target);
    log(`demo data seeded (${((Date.now() - t) / 1000).toFixed(1)} s)`);

    const sqlFile = join(persistTo, "bench-data.sql");
    const executeFile = (statements: string[]) => {
      // One `wrangler d1 execute --file` call (statements < 100 KB each), the file in the temp dir so that it goes with it.
      writeFileSync(sqlFile, statements.map((s) => `${s.trim().replace(/;$/, "")};`).join("\n"));
      wrangler(["d1", "execute", "DB", "--local", "--persist-to", persistTo, "--file", sqlFile, "-y"], { quiet: true });
      rmSync(sqlFile, { force: true });
    };
    const query = <T>(sql: string): T[] =>
      (
        JSON.parse(
          wrangler(["d1", "execute", "DB", "--local", "--persist-to", persistTo, "--json", "-y", "--command", sql], {
            quiet: true,
          }),
        ) as Array<{ results: T[] }>
      ).flatMap((r) => r.results);

    let company1Ids: number[] = [];
    let company2Ids: number[] = [];
    if (WITH_CONTACTS) {
      t = Date.now();
      const built = buildContactStatements();
      ({ company1Ids, company2Ids } = built);
      // Room under the contact limits, then the contacts.
      executeFile([
        `UPDATE companies SET contacts_limit = MAX(contacts_limit, ${COMPANY1_CONTACTS * 2}) WHERE id = 1`,
        `UPDATE companies SET contacts_limit = MAX(contacts_limit, ${COMPANY2_CONTACTS * 2}) WHERE id = 2`,
        ...built.statements,
      ]);
      const companies = query<{ id: number; contacts_used: number; contacts_limit: number; n: number }>(
        "SELECT id, contacts_used, contacts_limit, (SELECT COUNT(*) FROM contacts c " +
          "WHERE c.company_id = companies.id) AS n FROM companies ORDER BY id",
      );
      log(
        `inserted ${COMPANY1_CONTACTS + COMPANY2_CONTACTS} contacts in ${built.statements.length} INSERTs ` +
          `(${((Date.now() - t) / 1000).toFixed(1)} s): ` +
          companies
            .map((c) => `company ${c.id}: ${c.n} rows, contacts_used ${c.contacts_used}/${c.contacts_limit}`)
            .join("; "),
      );
      expect(companies.find((c) => c.id === 1)?.n === COMPANY1_CONTACTS, "company 1 contact count");
      expect(companies.find((c) => c.id === 2)?.n === COMPANY2_CONTACTS, "company 2 contact count");
    }

    let seededItems: SeededItem[] = [];
    let itemSeedSeconds: number | undefined;
    if (WITH_ITEMS) {
      t = Date.now();
      const built = buildItemStatements(todayUtc());
      seededItems = built.items;
      const itemInserts = built.statements.filter((s) => s.startsWith("INSERT INTO items ")).length;
      executeFile([...built.statements, await smallClientStatement()]);
      itemSeedSeconds = (Date.now() - t) / 1000;
      // The triggers' counters against the rows.
      const companies = query<{
        id: number;
        documents_used: number;
        items_archived: number;
        documents_limit: number;
        n: number;
        archived: number;
      }>(
        "SELECT id, documents_used, items_archived, documents_limit, (SELECT COUNT(*) " +
          "FROM items i WHERE i.company_id = companies.id) AS n, " +
          "(SELECT COUNT(*) FROM items i WHERE i.company_id = companies.id AND i.archived " +
          "= 1) AS archived FROM companies ORDER BY id",
      );
      const [other] = query<{ fts: number; links: number; tagged: number }>(
        "SELECT (SELECT COUNT(*) FROM items WHERE search_words <> '[]') AS fts, (SELECT " +
          "COUNT(*) FROM item_tags) AS links, (SELECT SUM(items_count) FROM tags) AS tagged",
      );
      log(
        `inserted ${ITEM_TOTAL} items in ${itemInserts} INSERTs, ${built.tagged} tag links, structure and the bench-small client ` +
          `(${itemSeedSeconds.toFixed(1)} s, the items' counter and FTS triggers included): ` +
          companies
            .map(
              (c) =>
                `company ${c.id}: ${c.n} items (${c.archived} archived), documents_used ${c.documents_used}/${c.documents_limit}, items_archived ${c.items_archived}`,
            )
            .join("; ") +
          `; items with search words ${other?.fts}, item_tags ${other?.links}, tags.items_count sum ${other?.tagged}`,
      );
      for (const company of ITEM_COMPANIES) {
        const row = companies.find((c) => c.id === company.id);
        const archived = seededItems.filter((i) => i.companyId === company.id && i.archived === 1).length;
        expect(
          row?.n === company.items && row.documents_used === company.items,
          `company ${company.id}: ${row?.n} items, documents_used ${row?.documents_used}`,
        );
        expect(
          row?.items_archived === archived && row.archived === archived,
          `company ${company.id}: items_archived ${row?.items_archived}, expected ${archived}`,
        );
      }
      expect(
        other?.fts === ITEM_TOTAL && other.links === built.tagged && other.tagged === built.tagged,
        `search_words / item_tags / tags.items_count: ${JSON.stringify(other)}`,
      );
    }

    t = Date.now();
    child = await startDev(
      // Rate limits off: the load is one client's, far above its quota (docs/rate-limits.md).
      [
        "--port",
        String(PORT),
        "--persist-to",
        persistTo,
        "--log-level",
        "warn",
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        String(INSPECTOR_PORT),
        "--var",
        "RATE_LIMITS:off",
      ],
      { port: PORT, env: { X_LOCAL_OBSERVABILITY: "false" } },
    );
    scope.setServer(child);
    let serverOutput = "";
    child.stdout?.on("data", (chunk) => (serverOutput += chunk));
    child.stderr?.on("data", (chunk) => (serverOutput += chunk));
    log(
      `wrangler dev up on ${base} (${((Date.now() - t) / 1000).toFixed(1)} s): --log-level warn, X_LOCAL_OBSERVABILITY=false, RATE_LIMITS=off`,
    );

    const health: RouteSpec = { key: "health", label: "GET /health", path: "/health" };
    expect((await getJson("/health")).status === 200, "/health");
    const token = await fetchToken();
    const routes: RouteSpec[] = [];
    const check: Record<string, unknown> = {};
    if (WITH_CONTACTS) {
      const listed = await getJson("/v1/contacts?limit=1&offset=4999", token);
      const contactId: number = listed.body?.data?.[0]?.contact_id;
      expect(Number.isInteger(contactId) && company1Ids.includes(contactId), `picked contact id ${contactId}`);
      check.contacts = await preflightContacts(token, contactId, company2Ids[Math.floor(company2Ids.length / 2)]!);
      log(`token for demo-owner; contact ${contactId}; contacts preflight ok: ${JSON.stringify(check.contacts)}`);
      routes.push(
        {
          key: "point",
          label: `GET /v1/contacts/${contactId}`,
          path: `/v1/contacts/${contactId}`,
          token,
          target: TARGETS.point,
        },
        { key: "list", label: "GET /v1/contacts?limit=50", path: "/v1/contacts?limit=50", token, target: TARGETS.list },
        {
          key: "search",
          label: `GET /v1/contacts?limit=50&q=${SEARCH_PREFIX}`,
          path: `/v1/contacts?limit=50&q=${SEARCH_PREFIX}`,
          token,
        },
        // Every contact's email is at an example domain: a term matching all 10,000 rows.
        {
          key: "search-all",
          label: "GET /v1/contacts?limit=50&q=example",
          path: "/v1/contacts?limit=50&q=example",
          token,
          target: TARGETS.searchAll,
        },
        {
          key: "offset",
          label: `GET /v1/contacts?limit=50&offset=${LIST_OFFSET}`,
          path: `/v1/contacts?limit=50&offset=${LIST_OFFSET}`,
          token,
        },
        // Counters, not scans: the company holding 10,000 contacts lists as cheaply as an empty one.
        { key: "companies", label: "GET /v1/companies", path: "/v1/companies", token, target: TARGETS.structure },
        { key: "departments", label: "GET /v1/departments", path: "/v1/departments", token, target: TARGETS.structure },
      );
    }
    let growthPairs: GrowthPair[] = [];
    if (WITH_ITEMS) {
      const smallToken = await fetchToken(SMALL_CLIENT.id, SMALL_CLIENT.secret);
      const items = await preflightItems(seededItems, { big: token, small: smallToken });
      check.items = items.check;
      growthPairs = items.pairs;
      routes.push(...items.routes);
      log(
        `tokens for demo-owner (company 1) and ${SMALL_CLIENT.id} (company 3); items preflight ok: ${JSON.stringify(items.check)}`,
      );
    }

    if (SERVER_WARMUP > 0) {
      // A fresh wrangler dev is slower for its first seconds under load (JIT in both workerd
      // processes); without this the first route measured, /health, tends to come out low.
      // The POST is left out (its own warm-up precedes its first run).
      log(`server warm-up: ${SERVER_WARMUP} s of mixed load over all GET routes ...`);
      const warm = await autocannon({
        url: base,
        connections: CONNECTIONS,
        duration: SERVER_WARMUP,
        timeout: 30,
        requests: [health, ...routes]
          .filter((r) => r.post === undefined)
          .map((r) => ({ path: r.path, headers: requestHeaders(r) })),
      });
      if (warm.non2xx > 0 || warm.errors > 0)
        throw new Error(`server warm-up: ${warm.non2xx} non-2xx, ${warm.errors} errors`);
      for (const route of routes) if (route.post === undefined) await drain(route);
    }

    // Each round: /health, then every route; one more /health at the end. A route's ratio in a
    // round is against the mean of the /health runs just before and just after that round, so
    // drift during the run moves it little; with --rounds > 1 the table shows the median.
    const all: RouteResult[] = [];
    const run = async (route: RouteSpec, round: number, warmup: boolean): Promise<RouteResult> => {
      log(`${route.label}${ROUNDS > 1 ? ` (round ${round + 1})` : ""} ...`);
      const result = await measure(route, child!.pid, warmup);
      result.round = round;
      all.push(result);
      const cpu =
        result.otherCpu === undefined
          ? ""
          : `; machine CPU: other processes ${pct(result.otherCpu)}, autocannon ${pct(result.loadGeneratorCpu ?? 0)}`;
      const drained =
        result.drainSeconds >= 1 ? `; ${result.drainSeconds.toFixed(1)} s to finish the requests left over` : "";
      log(
        `  ${result.requestsPerSecond.toFixed(0)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}${cpu}${drained}`,
      );
      return result;
    };
    const healthRuns: RouteResult[] = [];
    const roundResults: RouteResult[][] = [];
    for (let round = 0; round < ROUNDS; round++) {
      healthRuns.push(await run(health, round, round === 0));
      const results: RouteResult[] = [];
      for (const route of routes) results.push(await run(route, round, round === 0));
      roundResults.push(results);
    }
    healthRuns.push(await run({ ...health, label: "GET /health (closing)" }, ROUNDS, false));
    for (let round = 0; round < ROUNDS; round++) {
      const baseline = (healthRuns[round]!.requestsPerSecond + healthRuns[round + 1]!.requestsPerSecond) / 2;
      for (const r of roundResults[round]!) r.ratio = r.requestsPerSecond / baseline;
    }
    const healthMean = mean(healthRuns.map((r) => r.requestsPerSecond));
    for (const r of healthRuns) r.ratio = r.requestsPerSecond / healthMean;
    const healthSpread =
      Math.max(...healthRuns.map((r) => r.requestsPerSecond)) /
        Math.min(...healthRuns.map((r) => r.requestsPerSecond)) -
      1;
    const summary: RouteSummary[] = [
      summarize(health, healthRuns, { label: `GET /health (${healthRuns.length} runs)`, ratio: 1 }),
    ];
    for (const [i, route] of routes.entries())
      summary.push(
        summarize(
          route,
          roundResults.map((rs) => rs[i]!),
        ),
      );
    const loadAfter = loadavg()[0]!;

    console.log("");
    console.log(
      `Results ${started.toISOString()} — wrangler ${version} dev, --log-level warn, X_LOCAL_OBSERVABILITY=false; ` +
        `autocannon ${CONNECTIONS} connections, ${DURATION} s per route per round, ${ROUNDS} round(s), ` +
        `${WARMUP} s warm-up per route, ${SERVER_WARMUP} s server warm-up; data: ` +
        [
          WITH_CONTACTS ? `${COMPANY1_CONTACTS} + ${COMPANY2_CONTACTS} contacts` : "",
          WITH_ITEMS
            ? `${ITEM_COMPANIES.map((c) => c.items).join(" + ")} items (companies ${ITEM_COMPANIES.map((c) => c.id).join(", ")}; [100k] = company 1, [1k] = company 3)`
            : "",
        ]
          .filter(Boolean)
          .join(", "),
    );
    console.log(
      `ratio = route req/s / mean of the GET /health runs around its round (all /health runs: ${healthRuns.map((r) => r.requestsPerSecond.toFixed(0)).join(", ")} req/s, ` +
        `spread ${pct(healthSpread)}); 1-min load average ${loadBefore.toFixed(2)} before, ${loadAfter.toFixed(2)} after`,
    );
    console.log(
      `${ROUNDS > 1 ? "req/s: mean over rounds; p50: median; p99: max; ratio: median, range min-max. " : ""}` +
        "other CPU: the largest share of the machine that processes other than this " +
        "benchmark and its wrangler dev used during a measured run of the route",
    );
    console.log("");
    printTable(summary);
    console.log("");

    const targetResults = summary
      .filter((r) => r.target !== undefined)
      .map((r) => ({ route: r.label, target: r.target!, ratio: r.ratio, met: r.ratio >= r.target! }));
    for (const t of targetResults) {
      console.log(
        `target ${t.route}: ratio ${t.ratio.toFixed(2)} ${t.met ? ">=" : "<"} ${t.target.toFixed(2)} -> ${t.met ? "MET" : "MISSED"}`,
      );
    }
    // Growth from 1,000 to 100,000 items: cost at 100k / cost at 1k, cost being 1 / ratio.
    const growthResults = growthPairs.map((pair) => {
      const big = summary.find((r) => r.key === pair.big)!;
      const small = summary.find((r) => r.key === pair.small)!;
      // No request completed at 100k (or at either size): no finite growth, and the target is missed.
      const growth = big.ratio > 0 && small.ratio > 0 ? small.ratio / big.ratio : null;
      return {
        route: big.label.replace(/^\[100k\] /, ""),
        ratio100k: big.ratio,
        ratio1k: small.ratio,
        growth,
        target: ITEM_TARGETS.growth,
        met: growth !== null && growth <= ITEM_TARGETS.growth,
      };
    });
    if (growthResults.length > 0) {
      console.log("");
      console.log(
        `growth = cost at 100k / cost at 1k = ratio at 1k / ratio at 100k (target <= ${ITEM_TARGETS.growth.toFixed(2)}):`,
      );
      const width = Math.max(...growthResults.map((g) => g.route.length));
      for (const g of growthResults) {
        console.log(
          `  ${g.route.padEnd(width)}  ratio ${g.ratio100k.toFixed(2)} at 100k, ${g.ratio1k.toFixed(2)} at 1k -> growth ` +
            `${g.growth === null ? "n/a (no request completed)" : g.growth.toFixed(2)} ${g.met ? "<=" : ">"} ${g.target.toFixed(2)} -> ${g.met ? "MET" : "MISSED"}`,
        );
      }
    }
    const contended = all.filter((r) => r.otherCpu !== undefined && r.otherCpu > CONTENDED);
    const clean = contended.length === 0 && healthSpread <= 0.1;
    if (!clean) {
      console.log(
        `note: not a clean run: ${contended.length} measurement(s) with other processes above ${pct(CONTENDED)} of the CPU; ` +
          `/health runs spread ${pct(healthSpread)} (perf-baselines.md: 1-8% on one server). ` +
          `Ratios are uncertain by about that much; ${ROUNDS === 1 ? "use --rounds 3 or " : ""}run again on an idle machine.`,
      );
    }

    const failed = all.filter(
      (r) => r.non2xx + r.warmupNon2xx > 0 || r.errors + r.warmupErrors > 0 || r.requests === 0,
    );
    for (const r of failed) {
      console.error(
        `ERROR ${r.label} (round ${r.round + 1}): ${r.non2xx} non-2xx (${JSON.stringify(r.statusCodes)}), ${r.errors} errors, ` +
          `${r.timeouts} timeouts; warm-up: ${r.warmupNon2xx} non-2xx, ${r.warmupErrors} errors` +
          (r.requests === 0
            ? `; no request completed within ${DURATION} s: with ${CONNECTIONS} connections a response to this route takes longer than that (use a longer --duration)`
            : ""),
      );
    }
    if (failed.length > 0 && serverOutput.trim()) console.error(`wrangler dev output:\n${serverOutput.slice(-4000)}`);

    if (JSON_OUT) {
      mkdirSync(dirname(JSON_OUT), { recursive: true });
      const report = {
        date: started.toISOString(),
        settings,
        loadAverage: { before: loadBefore, after: loadAfter },
        preflight: check,
        healthSpread,
        clean,
        summary,
        targets: targetResults,
        growth: growthResults,
        measurements: all,
      };
      writeFileSync(JSON_OUT, `${JSON.stringify(report, null, 2)}\n`);
      log(`results written to ${JSON_OUT}`);
    }
    return failed.length > 0 ? 1 : 0;
  } finally {
    await scope.close();
  }
}

/** The options every set run on its own takes (each reads what it needs). */
const suite = {
  port: PORT,
  connections: CONNECTIONS,
  duration: DURATION,
  warmup: WARMUP,
  serverWarmup: SERVER_WARMUP,
  rounds: ROUNDS,
  json: JSON_OUT,
};
/** The sets that run on their own data and server (not part of `all`). */
const SUITES: Partial<Record<(typeof ONLY_VALUES)[number], () => Promise<number>>> = {
  reminders: () => import("./reminders.ts").then(({ runReminderBench }) => runReminderBench(suite)),
  webhooks: () => import("./webhooks.ts").then(({ runWebhookBench }) => runWebhookBench(suite)),
  drive: () => import("./drive.ts").then(({ runDriveBench }) => runDriveBench(suite)),
  limits: () => import("./limits.ts").then(({ runLimitsBench }) => runLimitsBench(suite)),
  feeds: () => import("./feeds.ts").then(({ runFeedsBench }) => runFeedsBench(suite)),
  imports: () => import("./imports.ts").then(({ runImportsBench }) => runImportsBench(suite)),
  exports: () => import("./exports.ts").then(({ runExportsBench }) => runExportsBench(suite)),
  renewals: () => import("./renewals.ts").then(({ runRenewalBench }) => runRenewalBench(suite)),
  writes: () => import("./writes.ts").then(({ runWritesBench }) => runWritesBench(suite)),
  pages: () => import("./pages.ts").then(({ runPagesBench }) => runPagesBench(suite)),
  bounces: () => import("./bounces.ts").then(({ runBouncesBench }) => runBouncesBench(suite)),
  digests: () => import("./digests.ts").then(({ runDigestsBench }) => runDigestsBench(suite)),
  "channel-deliveries": () =>
    import("./channel-deliveries.ts").then(({ runChannelDeliveriesBench }) => runChannelDeliveriesBench(suite)),
};
const run = (SUITES[ONLY] ?? main)();
run.then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[bench] failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
