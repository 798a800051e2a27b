// `npm run capacity [-- --measurements FILE] [--overhead MS] [--replica-share X] [--json FILE]`
//
// The capacity model of docs/scale.md: pure arithmetic over bench/scale-measurements.json (written by
// bench/measure-d1.ts) and the assumptions below, which it prints with its results. Nothing here
// talks to a server. Production's rule is that a D1 database runs one query at a time, so a
// database can give at most 1,000 ms of query time per second: what a request costs is the time its
// statements hold its databases, and a database's capacity is that budget divided by the cost.
//
// It answers: how many companies and items one database holds before 10 GB; the requests per
// second of each route one primary sustains; the capacity of the whole service at 1, 4, 16 and 64
// shards and where it stops growing (the home database, which answers every directory read: token
// issuance, calendar feeds and the Durable Objects' shard lookups); when an account needs a
// database of its own; what Durable Objects, R2 and the cron sweep cost per 1,000 companies.
// bench/measure-d1.ts --check-shards checks its per-shard query predictions against a 2-shard run.
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

// ---------------------------------------------------------------------------------------------
// The measurements (bench/scale-measurements.json)

export interface RouteMeasurement {
  label: string;
  method: string;
  /** The path template measured (ids shown as {id}). */
  path: string;
  write: boolean;
  /** The status every measured request answered. */
  status: number;
  /** Whether the route takes a bearer token (and so reads the client row when its per-isolate cache misses). */
  bearer: boolean;
  /** Medians over the measured requests of the fields D1_STATS=on adds to the request log line. */
  log: {
    requests: number;
    queries: number;
    queries_mean: number;
    rows_read: number;
    rows_written: number;
    /** Sum of D1's meta.duration; 0 under wrangler dev (see notes). */
    d1_ms: number;
    d1_ms_max: number;
    duration_ms: number;
    shard: number | null;
  };
  /** Client-side time of the whole request (local; D1_STATS=on makes drizzle reads run twice). */
  e2e_ms: { median: number; p90: number };
  /** The statements a request ran, captured by the tracing entry point and replayed with Node's SQLite (medians per request). */
  trace?: {
    requests: number;
    /** Worker statements on the account's shard (the request's session). */
    shard_statements: number;
    /** D1 round trips of those (a batch is one). */
    round_trips: number;
    /** Reads of the directory in the home database (shard 0), outside the request's session. */
    directory_statements: number;
    /** Statements the company's Durable Object ran on the shard while the request waited for it, and their round trips. */
    do_statements: number;
    do_round_trips: number;
    /** Replayed SQLite time (ms) of the shard statements, the directory reads and the Durable Object's statements. */
    sqlite_ms: number;
    directory_sqlite_ms: number;
    do_sqlite_ms: number;
    /** The statements of the request with the median replayed time, in order. */
    sample: Array<{ where: string; via: string; sql: string; ms: number; rows: number }>;
  };
}

export interface Measurements {
  generated_at: string;
  machine: Record<string, string | number>;
  settings: Record<string, string | number | boolean>;
  notes: string[];
  problems: string[];
  routes: Record<string, RouteMeasurement>;
  storage: {
    /** D1 size growth (page_count × page_size) per 1,000 rows, with the indexes, search structures and outbox rows the triggers add. */
    per_1000_items_bytes: number;
    per_1000_contacts_bytes: number;
    per_1000_tasks_bytes: number;
    /** Growth per 1,000 items once the reminder engine applied them (wakeups, views written so far), on top of the above. */
    per_1000_items_sync_bytes: number;
    /** One item_reminder_views row (GET /v1/items/{id} answers from it), measured by dbstat. */
    item_view_bytes: number;
    rows: Record<string, number>;
    sizes: Array<{ step: string; bytes: number }>;
    /** The largest tables and indexes after seeding (bytes). */
    objects: Record<string, number>;
    durable_object: { bytes: number; items: number; reminders: number; per_1000_items_bytes: number };
  };
  sweep: {
    /** Statements and round trips per shard per run of the cron sweep when there is nothing to do. */
    statements_per_shard: number;
    round_trips_per_shard: number;
    sqlite_ms_per_shard: number;
    runs: number;
    log: Array<Record<string, unknown>>;
    statements: Array<{ sql: string; via: string; ms: number }>;
  };
  directory: {
    /** Replayed SQLite time of one directory point read (ms). */
    read_sqlite_ms: number;
    statements: Array<{ sql: string; ms: number }>;
  };
  alarm?: {
    /** One alarm run that fired `reminders` reminders (email channel, a contact as recipient). */
    reminders: number;
    runs: number;
    statements: number;
    round_trips: number;
    directory_statements: number;
    sqlite_ms: number;
    statements_list: Array<{ via: string; sql: string; ms: number }>;
  };
}

export const DEFAULT_MEASUREMENTS = fileURLToPath(new URL("scale-measurements.json", import.meta.url));

export function loadMeasurements(path = DEFAULT_MEASUREMENTS): Measurements {
  return JSON.parse(readFileSync(path, "utf8")) as Measurements;
}

// ---------------------------------------------------------------------------------------------
// Assumptions (each printed with the results)

/** What a typical company sends per day, by route (the keys of scale-measurements.json). */
export const DAILY_REQUESTS: Record<string, number> = {
  token: 48,
  item_get: 250,
  item_list: 120,
  item_search: 40,
  contact_get: 120,
  contact_list: 60,
  contact_search: 30,
  task_list: 60,
  feed_304: 86,
  feed_200: 10,
  item_create: 30,
  item_update: 60,
  contact_create: 20,
};

export const ASSUMPTIONS = {
  /**
   * Production time a query holds its database beyond SQLite's own work (the request to the Durable
   * Object that hosts the database, parsing, serialising results, accounting): a part per round trip
   * (a batch is one) and a part per statement. A lone statement costs 0.5 ms + its SQLite time.
   */
  overheadMsPerRoundTrip: 0.2,
  overheadMsPerStatement: 0.3,
  /** Production SQLite time = this × the time measured here (this machine's SQLite). */
  sqliteSpeedFactor: 1,
  /** Share of a database's 1,000 ms per second the plan uses (queueing: a database at 100% has unbounded latency). */
  utilisation: 0.7,
  /** Share of the statements of GET requests that read replicas answer (the rest, and all writes, go to the primary). */
  replicaReadShare: 0.5,
  /** D1's size limit, and the share of it the plan fills (room for growth before an account moves). */
  databaseLimitBytes: 10 * 1000 ** 3,
  planningFill: 0.8,
  /** The typical company. */
  company: { items: 500, contacts: 300, tasks: 200, apiClients: 2, calendarFeeds: 2 },
  /** Share of items that have a D1 view (item_reminder_views: written on an item's first read and by its writes); 1 = every item read at least once. */
  itemViewShare: 1,
  /** Fixed rows of a company (company, departments, sequence, clients, wakeup, revisions): bytes. */
  companyFixedBytes: 16 * 1024,
  /** Share of bearer requests whose client row is not in the isolate's 15 s cache (one extra point read on the shard). */
  clientLookupMissRate: 0.5,
  /** Share of calendar feed requests whose company is not in the isolate's 60 s directory cache (clients poll every 30 min or so). */
  feedDirectoryMissRate: 1,
  /** Share of the Durable Object's D1 work after an item write that starts with a directory read (60 s cache per isolate). */
  doDirectoryMissRate: 0.5,
  /** Directory reads per token request (measured: 1; the endpoint reads directory_clients fresh, bypassing the cache). */
  tokenDirectoryReads: 1,
  /** Directory reads per alarm run (its 60 s cache has expired since the object last ran). */
  alarmDirectoryReads: 1,
  /** Alarm runs per company per day (reminders fire at the same hour; item.expired at midnight). */
  alarmRunsPerCompanyPerDay: 3,
  /** Statements of an alarm run when not measured (code reading: repair, invalidate views, pull events, fan-out, delivery facts, wakeup). */
  alarmStatementsEstimate: 8,
  /** Durable Object wall time billed per RPC call and per alarm run (ms). */
  doActiveMsPerCall: 20,
  doActiveMsPerAlarm: 200,
  /** Durable Object SQLite rows written per item write (a create queues 5 sequence reminders, the expiry and the mirror row; a title change rewrites the mirror): an estimate, not measured. */
  doRowsWrittenPerItemWrite: 6,
  /**
   * Share of feed revalidations (If-None-Match) answered 304. A changed feed costs the 304's batch and
   * then the full one (and a second Durable Object call). Any item write of the company changes the
   * ETag: polled every 30 min, a feed changes between most polls of the working day and few at night.
   */
  feedUnchangedShare: 0.6,
  /** Share of GET /v1/items/{id} whose D1 view is stale (the Durable Object answers and rewrites it). */
  itemViewStaleShare: 0.05,
  /** Drive use per company per month. */
  r2: { storedGb: 0.2, uploadsPerMonth: 20, downloadsPerMonth: 100 },
  /** Per-company rate limit (docs/rate-limits.md): 3,000 units a minute, a read is 1 unit. */
  companyReadsPerSecondLimit: 50,
  /** Share of one database an account may take before it gets a database of its own. */
  ownDatabaseShare: 0.25,
  daysPerMonth: 30,
};

/** Cloudflare's published prices (Workers Paid, USD), without the monthly included amounts. */
export const PRICES = {
  doRequestsPerMillion: 0.15,
  doGbSecondsPerMillion: 12.5,
  doStoredGbMonth: 0.2,
  doRowsWrittenPerMillion: 1.0,
  r2StoredGbMonth: 0.015,
  r2ClassAPerMillion: 4.5,
  r2ClassBPerMillion: 0.36,
  d1RowsReadPerMillion: 0.001,
  d1RowsWrittenPerMillion: 1.0,
  d1StoredGbMonth: 0.75,
  workersRequestsPerMillion: 0.3,
};

export type Assumptions = typeof ASSUMPTIONS;

/** Companies the sweep wakes per shard per run (src/scheduled.ts SWEEP_LIMIT). */
export const SWEEP_LIMIT = 200;
/** D1 queries one Worker invocation may run (Workers Paid). */
export const D1_QUERIES_PER_INVOCATION = 1000;
/** Subrequests (Durable Object calls included) one invocation may make on Workers Paid (current docs; it was 1,000). */
export const SUBREQUESTS_PER_INVOCATION = 10_000;

// ---------------------------------------------------------------------------------------------
// The model

export interface RouteCost {
  key: string;
  label: string;
  write: boolean;
  /** Statements on the account's shard per request (the request's own; the cached client read excluded). */
  statements: number;
  /** Busy time (ms) on the shard: the request's statements (production estimate). */
  shardMs: number;
  /** Busy time on the shard of the Durable Object's statements while the request waits. */
  doMs: number;
  doStatements: number;
  /** Directory reads in the home database per request, and their busy time. */
  directoryReads: number;
  directoryMs: number;
  /** Requests per second one primary sustains with only this route, everything on it (100% busy). */
  perPrimary: number;
}

const busy = (a: Assumptions, sqliteMs: number, statements: number, roundTrips = statements) =>
  sqliteMs * a.sqliteSpeedFactor + statements * a.overheadMsPerStatement + roundTrips * a.overheadMsPerRoundTrip;
/** What a lone statement costs beyond its SQLite time. */
export const perQueryOverhead = (a: Assumptions) => a.overheadMsPerStatement + a.overheadMsPerRoundTrip;

/** The directory read's busy time (ms) in production terms. */
export const directoryReadMs = (m: Measurements, a: Assumptions = ASSUMPTIONS) =>
  busy(a, m.directory.read_sqlite_ms, 1, 1);

/** The client-row read a bearer request makes on a cache miss: the token route's one shard statement. */
function clientReadMs(m: Measurements, a: Assumptions): number {
  const token = m.routes.token?.trace;
  return busy(a, token ? token.sqlite_ms / Math.max(1, token.shard_statements) : 0.02, 1);
}

export function routeCost(m: Measurements, key: string, a: Assumptions = ASSUMPTIONS): RouteCost {
  const r = m.routes[key];
  if (!r) throw new Error(`no measurement of route ${key}`);
  const statements = r.trace?.shard_statements ?? r.log.queries;
  const sqlite = r.trace?.sqlite_ms ?? 0;
  const shardMs = busy(a, sqlite, statements, r.trace?.round_trips ?? statements);
  const doStatements = r.trace?.do_statements ?? 0;
  const doMs = busy(a, r.trace?.do_sqlite_ms ?? 0, doStatements, r.trace?.do_round_trips ?? doStatements);
  // The token endpoint reads the directory fresh every time; a feed reads it when its isolate's 60 s cache misses.
  const directoryReads = key === "token" ? a.tokenDirectoryReads : key.startsWith("feed") ? a.feedDirectoryMissRate : 0;
  const directoryMs = directoryReads * directoryReadMs(m, a);
  const all = shardMs + doMs + directoryMs;
  return {
    key,
    label: r.label,
    write: r.write,
    statements,
    shardMs,
    doMs,
    doStatements,
    directoryReads,
    directoryMs,
    perPrimary: all > 0 ? 1000 / all : Infinity,
  };
}

export interface Profile {
  /** Requests per company per day (the API mix, tokens and feed polls included). */
  requestsPerCompanyDay: number;
  readShare: number;
  /** Per request, averaged over the mix with the background work (alarms, client reads, DO lookups) spread over it: */
  primaryMs: number;
  replicaMs: number;
  homeMs: number;
  primaryStatements: number;
  homeReads: number;
  /** What the home database's reads are for, per company per day. */
  directoryReadsPerCompanyDay: { tokens: number; feeds: number; durableObjects: number };
  alarmMs: number;
}

export function alarmCost(m: Measurements, a: Assumptions): { statements: number; ms: number; directoryReads: number } {
  if (m.alarm && m.alarm.runs > 0) {
    const per = 1 / m.alarm.runs;
    // The measured run's directory read (if its cache had expired) is counted apart, as alarmDirectoryReads.
    const statements = (m.alarm.statements - m.alarm.directory_statements) * per;
    return {
      statements,
      ms: busy(a, m.alarm.sqlite_ms * per, statements, m.alarm.round_trips * per),
      directoryReads: a.alarmDirectoryReads,
    };
  }
  return {
    statements: a.alarmStatementsEstimate,
    ms: busy(a, 0.05 * a.alarmStatementsEstimate, a.alarmStatementsEstimate),
    directoryReads: a.alarmDirectoryReads,
  };
}

/** The mix with the share of item reads whose D1 view is stale moved to the first-read route (the Durable Object answers them). */
export function effectiveDaily(m: Measurements, a: Assumptions, daily: Record<string, number>): Record<string, number> {
  if (!m.routes.item_get_cold || !daily.item_get) return daily;
  return {
    ...daily,
    item_get: daily.item_get * (1 - a.itemViewStaleShare),
    item_get_cold: (daily.item_get_cold ?? 0) + daily.item_get * a.itemViewStaleShare,
  };
}

/** Revalidations of a feed whose ETag changed since: they run the full feed after the 304's batch (no second directory read). */
export const changedRevalidations = (a: Assumptions, daily: Record<string, number>) =>
  (daily.feed_304 ?? 0) * (1 - a.feedUnchangedShare);

export function profile(
  m: Measurements,
  a: Assumptions = ASSUMPTIONS,
  given: Record<string, number> = DAILY_REQUESTS,
): Profile {
  const daily = effectiveDaily(m, a, given);
  const total = Object.values(daily).reduce((s, n) => s + n, 0);
  let primary = 0;
  let replica = 0;
  let home = 0;
  let primaryStatements = 0;
  let homeReads = 0;
  let reads = 0;
  let doWrites = 0;
  const client = clientReadMs(m, a);
  const add = (key: string, perDay: number, asRequest: boolean) => {
    const r = m.routes[key];
    if (!r) return;
    const c = routeCost(m, key, a);
    const onPrimary = r.write || key === "token" ? 1 : 1 - a.replicaReadShare;
    if (asRequest && !r.write && key !== "token") reads += perDay;
    const clientMs = asRequest && r.bearer ? a.clientLookupMissRate * client : 0;
    const clientStatements = asRequest && r.bearer ? a.clientLookupMissRate : 0;
    primary += perDay * (onPrimary * (c.shardMs + clientMs) + c.doMs);
    replica += perDay * (1 - onPrimary) * (c.shardMs + clientMs);
    primaryStatements += perDay * (onPrimary * (c.statements + clientStatements) + c.doStatements);
    if (asRequest) {
      home += perDay * c.directoryMs;
      homeReads += perDay * c.directoryReads;
    }
    if (c.doStatements > 0) doWrites += perDay;
  };
  for (const [key, perDay] of Object.entries(daily)) add(key, perDay, true);
  add("feed_200", changedRevalidations(a, daily), false);
  const alarm = alarmCost(m, a);
  const dir = directoryReadMs(m, a);
  primary += a.alarmRunsPerCompanyPerDay * alarm.ms;
  primaryStatements += a.alarmRunsPerCompanyPerDay * alarm.statements;
  const doLookups = doWrites * a.doDirectoryMissRate + a.alarmRunsPerCompanyPerDay * alarm.directoryReads;
  home += doLookups * dir;
  homeReads += doLookups;
  const tokens = (daily.token ?? 0) * a.tokenDirectoryReads;
  const feeds = ((daily.feed_304 ?? 0) + (daily.feed_200 ?? 0)) * a.feedDirectoryMissRate;
  return {
    requestsPerCompanyDay: total,
    readShare: reads / total,
    primaryMs: primary / total,
    replicaMs: replica / total,
    homeMs: home / total,
    primaryStatements: primaryStatements / total,
    homeReads: homeReads / total,
    directoryReadsPerCompanyDay: { tokens, feeds, durableObjects: doLookups },
    alarmMs: alarm.ms,
  };
}

/** The cron sweep's busy time per shard per second (it runs once a minute). */
export const sweepMsPerSecond = (m: Measurements, a: Assumptions = ASSUMPTIONS) =>
  busy(a, m.sweep.sqlite_ms_per_shard, m.sweep.statements_per_shard, m.sweep.round_trips_per_shard) / 60;

export interface ShardRow {
  shards: number;
  /** Requests/s the whole service sustains (the plan's utilisation), accounts spread evenly, shard 0 holding its share too. */
  requestsPerSecond: number;
  /** requestsPerSecond / (shards × the 1-shard figure). */
  efficiency: number;
  /** Share of the home database's budget the directory takes at that load. */
  homeDirectoryShare: number;
  /** The same with shard 0 holding only the directory (accounts on shards 1..N-1). */
  directoryOnlyHome: number;
  companiesByThroughput: number;
  companiesByStorage: number;
  /** The requests/s of the companies the storage admits, and their load as a share of the home database's budget. */
  storageRequestsPerSecond: number;
  homeLoadAtStorageLimit: number;
  limit: string;
}

export interface Storage {
  bytesPerCompany: number;
  companiesPerDatabase: number;
  itemsPerDatabase: number;
  itemsPerDatabaseItemsOnly: number;
  contactsPerDatabaseContactsOnly: number;
}

export function storage(m: Measurements, a: Assumptions = ASSUMPTIONS): Storage {
  const s = m.storage;
  const perItem =
    (s.per_1000_items_bytes + Math.max(0, s.per_1000_items_sync_bytes)) / 1000 + a.itemViewShare * s.item_view_bytes;
  const bytesPerCompany =
    a.company.items * perItem +
    (a.company.contacts * s.per_1000_contacts_bytes) / 1000 +
    (a.company.tasks * s.per_1000_tasks_bytes) / 1000 +
    a.companyFixedBytes;
  const usable = a.databaseLimitBytes * a.planningFill;
  const companiesPerDatabase = Math.floor(usable / bytesPerCompany);
  return {
    bytesPerCompany,
    companiesPerDatabase,
    itemsPerDatabase: companiesPerDatabase * a.company.items,
    itemsPerDatabaseItemsOnly: Math.floor(a.databaseLimitBytes / perItem),
    contactsPerDatabaseContactsOnly: Math.floor(a.databaseLimitBytes / (s.per_1000_contacts_bytes / 1000)),
  };
}

export function shardTable(m: Measurements, a: Assumptions = ASSUMPTIONS, counts = [1, 4, 16, 64]): ShardRow[] {
  const p = profile(m, a);
  const st = storage(m, a);
  const budget = 1000 * a.utilisation - sweepMsPerSecond(m, a);
  const perCompanyRps = p.requestsPerCompanyDay / 86_400;
  const at = (shards: number) => budget / (p.primaryMs / shards + p.homeMs);
  const one = at(1);
  return counts.map((shards) => {
    const rps = at(shards);
    const directoryOnly = shards < 2 ? NaN : Math.min(((shards - 1) * budget) / p.primaryMs, budget / p.homeMs);
    const companiesByStorage = shards * st.companiesPerDatabase;
    const storageRps = companiesByStorage * perCompanyRps;
    const homeLoad = (storageRps * (p.primaryMs / shards + p.homeMs)) / budget;
    const directoryShare = (rps * p.homeMs) / budget;
    const limit =
      homeLoad >= 1
        ? "the home database, before the shards fill"
        : directoryShare >= 0.5
          ? "the home database: the directory takes most of it"
          : "the shard primaries";
    return {
      shards,
      requestsPerSecond: rps,
      efficiency: rps / (shards * one),
      homeDirectoryShare: directoryShare,
      directoryOnlyHome: directoryOnly,
      companiesByThroughput: rps / perCompanyRps,
      companiesByStorage,
      storageRequestsPerSecond: storageRps,
      homeLoadAtStorageLimit: homeLoad,
      limit,
    };
  });
}

/** Shard count where the directory reads take as much of the home database as its share of the accounts' queries. */
export function directoryCrossover(m: Measurements, a: Assumptions = ASSUMPTIONS): number {
  const p = profile(m, a);
  return p.primaryMs / p.homeMs;
}

export interface Costs {
  durableObjects: { requests: number; gbSeconds: number; storedGb: number; rowsWritten: number; usd: number };
  r2: { storedGb: number; classA: number; classB: number; usd: number };
  cron: { invocations: number; statements: number; rowsRead: number; shards: number; usd: number };
  d1: { rowsRead: number; rowsWritten: number; storedGb: number; usd: number };
}

/** Monthly cost of 1,000 typical companies (gross: before the plan's included amounts). */
export function costsPer1000(
  m: Measurements,
  a: Assumptions = ASSUMPTIONS,
  daily: Record<string, number> = DAILY_REQUESTS,
): Costs {
  const n = 1000;
  const days = a.daysPerMonth;
  const itemWrites = (daily.item_create ?? 0) + (daily.item_update ?? 0);
  const feedCalls = (daily.feed_304 ?? 0) + (daily.feed_200 ?? 0) + changedRevalidations(a, daily);
  const staleReads = (daily.item_get ?? 0) * a.itemViewStaleShare;
  const rpcPerDay = itemWrites + feedCalls + staleReads;
  const alarms = a.alarmRunsPerCompanyPerDay;
  const doRequests = n * days * (rpcPerDay + alarms);
  const gbSeconds = (n * days * (rpcPerDay * a.doActiveMsPerCall + alarms * a.doActiveMsPerAlarm) * 0.128) / 1000;
  const doBytesPerItem = m.storage.durable_object.per_1000_items_bytes / 1000;
  const doStoredGb = (n * a.company.items * doBytesPerItem) / 1000 ** 3;
  const doRowsWritten = n * days * itemWrites * a.doRowsWrittenPerItemWrite;
  const doUsd =
    (doRequests / 1e6) * PRICES.doRequestsPerMillion +
    (gbSeconds / 1e6) * PRICES.doGbSecondsPerMillion +
    doStoredGb * PRICES.doStoredGbMonth +
    (doRowsWritten / 1e6) * PRICES.doRowsWrittenPerMillion;

  const r2Stored = n * a.r2.storedGb;
  const classA = n * a.r2.uploadsPerMonth;
  const classB = n * a.r2.downloadsPerMonth;
  const r2Usd =
    r2Stored * PRICES.r2StoredGbMonth +
    (classA / 1e6) * PRICES.r2ClassAPerMillion +
    (classB / 1e6) * PRICES.r2ClassBPerMillion;

  // The sweep runs once a minute for the whole service; per shard it costs statements_per_shard.
  const st = storage(m, a);
  const shards = n / st.companiesPerDatabase;
  const invocations = days * 24 * 60;
  const sweepStatements = invocations * m.sweep.statements_per_shard * shards;
  const sweepRowsRead =
    invocations * shards * (m.sweep.statements.length > 0 ? m.sweep.statements.length : m.sweep.statements_per_shard);
  const cronUsd =
    (sweepRowsRead / 1e6) * PRICES.d1RowsReadPerMillion +
    ((invocations * shards) / 1e6) * PRICES.workersRequestsPerMillion;

  let rowsRead = 0;
  let rowsWritten = 0;
  const work = { ...effectiveDaily(m, a, daily) };
  work.feed_200 = (work.feed_200 ?? 0) + changedRevalidations(a, daily);
  for (const [key, perDay] of Object.entries(work)) {
    const r = m.routes[key];
    if (!r) continue;
    rowsRead += perDay * r.log.rows_read;
    rowsWritten += perDay * r.log.rows_written;
  }
  rowsRead *= n * days;
  rowsWritten *= n * days;
  const d1Stored = (n * st.bytesPerCompany) / 1000 ** 3;
  const d1Usd =
    (rowsRead / 1e6) * PRICES.d1RowsReadPerMillion +
    (rowsWritten / 1e6) * PRICES.d1RowsWrittenPerMillion +
    d1Stored * PRICES.d1StoredGbMonth;
  return {
    durableObjects: { requests: doRequests, gbSeconds, storedGb: doStoredGb, rowsWritten: doRowsWritten, usd: doUsd },
    r2: { storedGb: r2Stored, classA, classB, usd: r2Usd },
    cron: { invocations, statements: sweepStatements, rowsRead: sweepRowsRead, shards, usd: cronUsd },
    d1: { rowsRead, rowsWritten, storedGb: d1Stored, usd: d1Usd },
  };
}

export interface OwnDatabase {
  storageBytes: number;
  storageItems: number;
  storageCompanies: number;
  loadRequestsPerSecond: number;
  loadCompanies: number;
  loadCompaniesAtRateLimit: number;
  hardItems: number;
  hardRequestsPerSecond: number;
}

/** When an account should get a database of its own: more than ownDatabaseShare of one database's storage or time. */
export function ownDatabase(m: Measurements, a: Assumptions = ASSUMPTIONS): OwnDatabase {
  const p = profile(m, a);
  const st = storage(m, a);
  const budget = 1000 * a.utilisation;
  const storageBytes = a.databaseLimitBytes * a.planningFill * a.ownDatabaseShare;
  const loadRequestsPerSecond = (budget * a.ownDatabaseShare) / p.primaryMs;
  // A company at its rate limit sends reads only: the mix's reads, none from a replica.
  const readCost = routeCost(m, "item_list", a).shardMs;
  return {
    storageBytes,
    storageItems: Math.floor((storageBytes / st.bytesPerCompany) * a.company.items),
    storageCompanies: Math.floor(storageBytes / st.bytesPerCompany),
    loadRequestsPerSecond,
    loadCompanies: Math.floor(loadRequestsPerSecond / (p.requestsPerCompanyDay / 86_400)),
    loadCompaniesAtRateLimit: (budget * a.ownDatabaseShare) / (a.companyReadsPerSecondLimit * readCost),
    hardItems: st.itemsPerDatabaseItemsOnly,
    hardRequestsPerSecond: budget / p.primaryMs,
  };
}

// ---------------------------------------------------------------------------------------------
// What the 2-shard check compares (bench/measure-d1.ts --check-shards)

/** A feed revalidation (If-None-Match) answered 200: the 304's batch, then the full feed. */
export const FEED_CHANGED = "feed_revalidated_200";

/** Logged D1 queries (the log line's d1_queries) a request of the route makes, the client read on a cache miss excluded. */
export function loggedQueries(m: Measurements, key: string): number {
  if (key === FEED_CHANGED) return loggedQueries(m, "feed_304") + loggedQueries(m, "feed_200");
  const r = m.routes[key];
  if (!r) throw new Error(`no measurement of route ${key}`);
  return r.log.queries;
}

/** Predicted logged queries of a run: per route, requests × the measured median, plus one client read per bearer client per cache period. */
export function predictLoggedQueries(
  m: Measurements,
  requests: Record<string, number>,
  bearerClientCachePeriods = 0,
): number {
  let sum = bearerClientCachePeriods;
  for (const [key, n] of Object.entries(requests)) sum += n * loggedQueries(m, key);
  return sum;
}

// ---------------------------------------------------------------------------------------------
// Report

const f0 = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");
const f1 = (x: number) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: 1, minimumFractionDigits: 1 }) : "–";
const f2 = (x: number) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: 2, minimumFractionDigits: 2 }) : "–";
const f3 = (x: number) =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { maximumFractionDigits: 3, minimumFractionDigits: 3 }) : "–";
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)}%` : "–");
const usd = (x: number) => `$${x.toFixed(2)}`;
const mb = (bytes: number) => `${(bytes / 1000 ** 2).toFixed(2)} MB`;

function table(header: string[], rows: string[][], right = header.map((_, i) => i > 0)): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map((_, i) => (right[i] ? "---:" : "---"))), ...rows.map(line)].join("\n");
}

export function report(m: Measurements, a: Assumptions = ASSUMPTIONS): string {
  const out: string[] = [];
  const say = (s = "") => out.push(s);
  const p = profile(m, a);
  const st = storage(m, a);
  const dir = directoryReadMs(m, a);
  say(
    `Capacity model over ${m.generated_at ? `measurements of ${m.generated_at}` : "the measurements"} (${m.machine.cpus ?? "?"} cores, local D1 under wrangler dev).`,
  );
  say();
  say("## Assumptions");
  say();
  say(
    `- Production busy time of a request on a database = the SQLite time of its statements measured here × ${a.sqliteSpeedFactor} + ${a.overheadMsPerRoundTrip} ms per round trip (a batch is one) + ${a.overheadMsPerStatement} ms per statement: ` +
      `a lone query costs ${perQueryOverhead(a)} ms + its SQLite time. One query at a time per database: 1,000 ms of busy time per second, of which the plan uses ${pct(a.utilisation)}.`,
  );
  say(
    `- Reads: ${pct(a.replicaReadShare)} of the statements of GET requests are answered by read replicas (Sessions API, first-unconstrained); writes, the token endpoint's client read, the Durable Objects and the cron sweep use the primary. Directory reads (home database) go to its primary (they are not in a session).`,
  );
  say(
    `- Typical company: ${a.company.items} items, ${a.company.contacts} contacts, ${a.company.tasks} tasks, ${a.company.apiClients} API clients, ${a.company.calendarFeeds} calendar feeds; ${f0(p.requestsPerCompanyDay)} requests a day (${pct(p.readShare)} reads):`,
  );
  say(
    `  ${Object.entries(DAILY_REQUESTS)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ")}.`,
  );
  say(
    `- Calendar feeds: ${DAILY_REQUESTS.feed_304} revalidations (If-None-Match) a day per company, ${pct(a.feedUnchangedShare)} of them answered 304; a changed feed runs the 304's statements and then the full feed's.`,
  );
  say(
    `- Tokens: ${DAILY_REQUESTS.token} a day per company (${a.company.apiClients} clients × 24, a token per hourly job; a token lives 24 h, so a careful client needs 1).`,
  );
  say(
    `- Client row read on ${pct(a.clientLookupMissRate)} of bearer requests (15 s per-isolate cache); a directory read on ${pct(a.feedDirectoryMissRate)} of feed requests (60 s cache, feeds polled every ~30 min) and on ${pct(a.doDirectoryMissRate)} of the Durable Object's D1 work after an item write, and on every alarm run.`,
  );
  const alarm = alarmCost(m, a);
  say(
    `- Alarms: ${a.alarmRunsPerCompanyPerDay} runs per company per day, ${f1(alarm.statements)} statements each (${m.alarm && m.alarm.runs > 0 ? `measured: ${m.alarm.reminders} reminders fired in ${m.alarm.runs} run(s)` : "estimated from the code"}).`,
  );
  say(
    `- The cron sweep: ${m.sweep.statements_per_shard} statements (${m.sweep.round_trips_per_shard} round trips) per shard per minute when idle (measured), on each shard's primary.`,
  );
  say(
    `- Storage: D1's 10 GB (10^10 bytes) per database, planned to ${pct(a.planningFill)}; a company's bytes from the measured growth per 1,000 rows, plus ${f0(a.companyFixedBytes / 1024)} KiB of fixed rows.`,
  );
  say(`- An account gets its own database past ${pct(a.ownDatabaseShare)} of one database's storage or busy time.`);
  say();

  say("## Per route (one request; production estimate)");
  say();
  const keys = Object.keys(m.routes).filter((k) => k !== "health");
  say(
    table(
      [
        "route",
        "statements on shard",
        "SQLite ms (here)",
        "busy ms on shard",
        "DO statements",
        "directory reads",
        "req/s one primary sustains (100%)",
        `at ${pct(a.utilisation)}`,
      ],
      keys.map((k) => {
        const c = routeCost(m, k, a);
        const r = m.routes[k]!;
        return [
          r.label,
          f1(c.statements),
          f3(r.trace?.sqlite_ms ?? 0),
          f2(c.shardMs),
          f1(c.doStatements),
          f1(c.directoryReads),
          f0(c.perPrimary),
          f0(c.perPrimary * a.utilisation),
        ];
      }),
      [false, true, true, true, true, true, true, true],
    ),
  );
  say();
  say(
    `Directory read: ${f3(m.directory.read_sqlite_ms)} ms SQLite, ${f2(dir)} ms busy: the home database answers at most ${f0(1000 / dir)} directory reads/s (${f0((1000 * a.utilisation) / dir)} at ${pct(a.utilisation)}).`,
  );
  say();

  say("## The mix, per request");
  say();
  say(
    table(
      ["", "value"],
      [
        ["busy ms on the account's shard primary", f3(p.primaryMs)],
        ["busy ms on read replicas", f3(p.replicaMs)],
        ["busy ms on the home database (directory)", f3(p.homeMs)],
        ["statements on the shard primary", f2(p.primaryStatements)],
        ["directory reads", f3(p.homeReads)],
        [
          "directory reads per company per day: tokens / feeds / Durable Objects",
          `${f0(p.directoryReadsPerCompanyDay.tokens)} / ${f0(p.directoryReadsPerCompanyDay.feeds)} / ${f1(p.directoryReadsPerCompanyDay.durableObjects)}`,
        ],
        ["cron sweep busy ms per shard per second", f3(sweepMsPerSecond(m, a))],
      ],
      [false, true],
    ),
  );
  say();

  say("## Storage");
  say();
  const noViews = storage(m, { ...a, itemViewShare: 0 });
  say(
    table(
      ["", "value"],
      [
        ["bytes per 1,000 items (row, indexes, search, outbox)", f0(m.storage.per_1000_items_bytes)],
        ["  + once the reminder engine applied them", f0(m.storage.per_1000_items_sync_bytes)],
        [
          `  + an item view (GET /v1/items/{id}) per item, per 1,000 (${pct(a.itemViewShare)} of the items have one)`,
          f0(m.storage.item_view_bytes * 1000),
        ],
        ["bytes per 1,000 contacts", f0(m.storage.per_1000_contacts_bytes)],
        ["bytes per 1,000 tasks", f0(m.storage.per_1000_tasks_bytes)],
        ["bytes per typical company", `${f0(st.bytesPerCompany)} (${mb(st.bytesPerCompany)})`],
        [`typical companies per database (${pct(a.planningFill)} of 10 GB)`, f0(st.companiesPerDatabase)],
        ["their items", f0(st.itemsPerDatabase)],
        ["items per 10 GB, a database of items alone", f0(st.itemsPerDatabaseItemsOnly)],
        ["the same without item views", f0(noViews.itemsPerDatabaseItemsOnly)],
        [`typical companies per database without item views`, f0(noViews.companiesPerDatabase)],
        ["contacts per 10 GB, a database of contacts alone", f0(st.contactsPerDatabaseContactsOnly)],
        [
          "Durable Object storage per 1,000 items (reminders, mirror)",
          f0(m.storage.durable_object.per_1000_items_bytes),
        ],
      ],
      [false, true],
    ),
  );
  say();

  say("## Capacity of the whole service");
  say();
  const rows = shardTable(m, a);
  say(
    `Requests/s the service sustains (the mix above, ${pct(a.utilisation)} of every database's time), accounts spread evenly over the shards. ` +
      "Today's layout: shard 0 holds its share of the accounts and the directory. " +
      "Directory-only: shard 0 holds the directory alone, accounts on shards 1..N-1. " +
      "Storage: the typical companies the shards hold before they fill, and what they send.",
  );
  say();
  say(
    table(
      [
        "shards",
        "req/s, today's layout",
        "efficiency",
        "directory's share of the home DB",
        "req/s, directory-only home DB",
        "companies at that load",
        "companies the storage holds",
        "their req/s",
        "home DB load then",
        "what limits",
      ],
      rows.map((r) => [
        String(r.shards),
        f0(r.requestsPerSecond),
        pct(r.efficiency),
        pct(r.homeDirectoryShare),
        f0(r.directoryOnlyHome),
        f0(r.companiesByThroughput),
        f0(r.companiesByStorage),
        f0(r.storageRequestsPerSecond),
        pct(r.homeLoadAtStorageLimit),
        r.limit,
      ]),
      [true, true, true, true, true, true, true, true, true, false],
    ),
  );
  say();
  const budget = 1000 * a.utilisation;
  const ceiling = p.homeMs > 0 ? budget / p.homeMs : Infinity;
  const cross = directoryCrossover(m, a);
  const companiesCeiling = ceiling / (p.requestsPerCompanyDay / 86_400);
  say(
    `Bottleneck: the home database. Every directory read (token issuance, calendar feeds, the Durable Objects' shard lookups) goes to shard 0's primary, ` +
      `whatever the number of shards: the service stops growing at ${f0(ceiling)} requests/s (${f0(companiesCeiling)} typical companies, about ${f0(companiesCeiling / st.companiesPerDatabase)} databases of them), ` +
      `and the directory takes as much of the home database as its own accounts' queries at ${f1(cross)} shards (throughput-bound companies). ` +
      `With typical companies storage fills a shard first (${f0(st.companiesPerDatabase)} companies, ${f0(st.companiesPerDatabase * (p.requestsPerCompanyDay / 86_400))} requests/s per shard), so shards are added for space and the directory saturates near ${f0(companiesCeiling / st.companiesPerDatabase)} shards.`,
  );
  say();
  say("The candidates, side by side:");
  say();
  const d = p.directoryReadsPerCompanyDay;
  const dirTotal = d.tokens + d.feeds + d.durableObjects;
  const tokenRate = (budget / dir) * (d.tokens / dirTotal);
  const sweepStatementsAt64 = m.sweep.statements_per_shard * 64;
  say(
    table(
      ["candidate", "what it costs", "where it stops"],
      [
        [
          "the directory (home database)",
          `${f2(p.homeReads)} reads per request: per company per day ${f0(d.tokens)} for tokens, ${f0(d.feeds)} for feeds, ${f1(d.durableObjects)} for Durable Objects (${pct(d.feeds / dirTotal)} / ${pct(d.tokens / dirTotal)} / ${pct(d.durableObjects / dirTotal)} feeds / tokens / DOs)`,
          `${f0(ceiling)} requests/s of the mix, at any number of shards; the first to saturate`,
        ],
        [
          "token issuance",
          `1 directory read (home primary) + 1 client read (the account's primary) per token`,
          `${f0(budget / dir)} tokens/s if the home database did nothing else; its share of the directory today: ${f0(tokenRate)} tokens/s`,
        ],
        [
          "cron sweep fan-out",
          `${m.sweep.statements_per_shard} statements in ${m.sweep.round_trips_per_shard} round trips per shard per minute, all shards from one invocation; up to ${SWEEP_LIMIT} Durable Object wakes per shard`,
          `${sweepStatementsAt64} D1 queries per run at 64 shards (limit ${D1_QUERIES_PER_INVOCATION} per invocation: ${Math.floor(D1_QUERIES_PER_INVOCATION / m.sweep.statements_per_shard)} shards); a backlog on every shard wakes ${SWEEP_LIMIT} × shards objects: past ${Math.floor(SUBREQUESTS_PER_INVOCATION / SWEEP_LIMIT)} shards more than the ${f0(SUBREQUESTS_PER_INVOCATION)} subrequests of one invocation (the rest waits for the next minute)`,
        ],
        [
          "Durable Object calls",
          `one object per company, one call at a time: an item write is 1 call (+${f1(routeCost(m, "item_create", a).doStatements)} D1 statements), a feed 1–2 calls, an alarm run ${f1(alarm.statements)} statements`,
          `per company, not per service: a company may write at most ${a.companyReadsPerSecondLimit / 2} times a second (rate limit), far below what one object serves; objects scale out with companies`,
        ],
      ],
      [false, false, false],
    ),
  );
  say();
  say("Pushing it back (each row adds its change to the ones above; the model with those directory reads removed):");
  say();
  const steps: Array<[string, Partial<Assumptions>]> = [
    ["today", {}],
    [
      "a feed reads its company's origin shard first (the id in its URL says which) " +
        "and the directory only when the company is not there (moved), as bearer " +
        "requests do",
      { feedDirectoryMissRate: 0 },
    ],
    [
      "the Durable Object keeps its company's shard in its own storage (the move tells " +
        "it) instead of asking the directory",
      { doDirectoryMissRate: 0, alarmDirectoryReads: 0 },
    ],
    [
      "token issuance reads the directory from a read replica (a session), the primary " +
        "only when the client is not found (2%)",
      { tokenDirectoryReads: 0.02 },
    ],
  ];
  let acc: Assumptions = { ...a };
  const pushRows = steps.map(([what, change]) => {
    acc = { ...acc, ...change };
    const pp = profile(m, acc);
    const t = shardTable(m, acc);
    const at64 = t.find((r) => r.shards === 64)!;
    return [
      what,
      f3(pp.homeMs),
      pp.homeMs > 0 ? f0((1000 * acc.utilisation) / pp.homeMs) : "none",
      f0(at64.requestsPerSecond),
      f0(at64.directoryOnlyHome),
    ];
  });
  say(
    table(
      [
        "change",
        "home DB ms per request",
        "ceiling req/s",
        "64 shards, today's layout",
        "64 shards, directory-only home DB",
      ],
      pushRows,
      [false, true, true, true, true],
    ),
  );
  say();
  const sens = [0.5, 1, 2].map((k) => {
    const b = {
      ...a,
      overheadMsPerStatement: a.overheadMsPerStatement * k,
      overheadMsPerRoundTrip: a.overheadMsPerRoundTrip * k,
    };
    const t = shardTable(m, b);
    return [
      `${f2(perQueryOverhead(b))} ms`,
      ...t.map((r) => f0(r.requestsPerSecond)),
      f0((1000 * b.utilisation) / profile(m, b).homeMs),
      f1(directoryCrossover(m, b)),
    ];
  });
  say(
    "Sensitivity to the production overhead of a lone query (requests/s at 1 / 4 / " +
      "16 / 64 shards, the directory ceiling, the crossover in shards):",
  );
  say();
  say(table(["overhead", "1", "4", "16", "64", "ceiling", "crossover"], sens));
  say();
  const replicaSens = [0, 0.5, 0.8].map((share) => {
    const b = { ...a, replicaReadShare: share };
    const t = shardTable(m, b);
    return [pct(share), ...t.map((r) => f0(r.requestsPerSecond)), f1(directoryCrossover(m, b))];
  });
  say("Sensitivity to the share of GET statements read replicas answer:");
  say();
  say(table(["replica share", "1", "4", "16", "64", "crossover"], replicaSens));
  say();
  const tokenSens = [1, 24, 288].map((perClient) => {
    const daily = { ...DAILY_REQUESTS, token: perClient * a.company.apiClients };
    const pp = profile(m, a, daily);
    return [
      `${perClient}`,
      f3(pp.homeMs),
      f0(budget / pp.homeMs),
      f0(budget / pp.homeMs / (pp.requestsPerCompanyDay / 86_400)),
    ];
  });
  say(
    "Sensitivity to tokens per client per day (the home database's busy ms per " +
      "request; the ceiling in requests/s and typical companies):",
  );
  say();
  say(table(["tokens/client/day", "home ms per request", "ceiling req/s", "ceiling companies"], tokenSens));
  say();

  say("## When an account needs a database of its own");
  say();
  const own = ownDatabase(m, a);
  say(
    table(
      ["", "value"],
      [
        [
          `storage past ${pct(a.ownDatabaseShare)} of a planned database`,
          `${f1(own.storageBytes / 1000 ** 3)} GB ≈ ${f0(own.storageItems)} items (${f0(own.storageCompanies)} typical companies)`,
        ],
        [
          `load past ${pct(a.ownDatabaseShare)} of a primary`,
          `${f0(own.loadRequestsPerSecond)} requests/s ≈ ${f0(own.loadCompanies)} typical companies, or ${f1(own.loadCompaniesAtRateLimit)} companies reading at their rate limit (${a.companyReadsPerSecondLimit}/s)`,
        ],
        [
          "hard limit of an account (one database)",
          `10 GB ≈ ${f0(own.hardItems)} items; ${f0(own.hardRequestsPerSecond)} requests/s of the mix`,
        ],
      ],
      [false, false],
    ),
  );
  say();

  say("## Costs per 1,000 typical companies per month");
  say();
  const c = costsPer1000(m, a);
  say(
    table(
      ["", "units", "USD (list price, before included amounts)"],
      [
        [
          "Durable Objects",
          `${f0(c.durableObjects.requests)} requests (RPC calls and alarms), ${f0(c.durableObjects.gbSeconds)} GB-s, ${f2(c.durableObjects.storedGb)} GB stored, ${f0(c.durableObjects.rowsWritten)} rows written`,
          usd(c.durableObjects.usd),
        ],
        [
          "R2",
          `${f0(c.r2.storedGb)} GB-month, ${f0(c.r2.classA)} Class A, ${f0(c.r2.classB)} Class B operations`,
          usd(c.r2.usd),
        ],
        [
          "cron sweep",
          `${f0(c.cron.invocations)} runs (for the whole service), ${f2(c.cron.shards)} shards' worth: ${f0(c.cron.statements)} D1 statements, ~${f0(c.cron.rowsRead)} rows read`,
          usd(c.cron.usd),
        ],
        [
          "D1 (for comparison)",
          `${f0(c.d1.rowsRead)} rows read, ${f0(c.d1.rowsWritten)} rows written, ${f2(c.d1.storedGb)} GB stored`,
          usd(c.d1.usd),
        ],
      ],
      [false, false, true],
    ),
  );
  say();
  say(
    `Prices: Durable Objects $${PRICES.doRequestsPerMillion}/M requests, $${PRICES.doGbSecondsPerMillion}/M GB-s (128 MB objects), $${PRICES.doStoredGbMonth}/GB-month, $${PRICES.doRowsWrittenPerMillion}/M rows written; ` +
      `R2 $${PRICES.r2StoredGbMonth}/GB-month, $${PRICES.r2ClassAPerMillion}/M Class A, $${PRICES.r2ClassBPerMillion}/M Class B; D1 $${PRICES.d1RowsReadPerMillion}/M rows read, $${PRICES.d1RowsWrittenPerMillion}/M rows written, $${PRICES.d1StoredGbMonth}/GB-month; Workers $${PRICES.workersRequestsPerMillion}/M requests.`,
  );
  say(
    `Durable Object duration assumes ${a.doActiveMsPerCall} ms per RPC call and ${a.doActiveMsPerAlarm} ms per alarm run, idle (hibernation-eligible) otherwise; DO rows written: ${a.doRowsWrittenPerItemWrite} per item write (estimate); R2: ${a.r2.storedGb} GB, ${a.r2.uploadsPerMonth} uploads and ${a.r2.downloadsPerMonth} downloads per company per month (assumed).`,
  );
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------
// CLI

function optionValue(argv: string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === name) return argv[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

function main(): void {
  const argv = process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(`Usage: npm run capacity -- [--measurements FILE] [--overhead MS] [--replica-share X] [--utilisation X] [--json FILE]
  --measurements FILE  scale-measurements.json of bench/measure-d1.ts (default bench/scale-measurements.json)
  --overhead MS        production busy time of a lone query beyond SQLite's (default ${perQueryOverhead(ASSUMPTIONS)}; split per round trip and per statement as in the defaults)
  --replica-share X    share of GET statements answered by read replicas (default ${ASSUMPTIONS.replicaReadShare})
  --utilisation X      share of a database's time the plan uses (default ${ASSUMPTIONS.utilisation})
  --json FILE          also write the figures as JSON`);
    return;
  }
  const m = loadMeasurements(resolve(optionValue(argv, "--measurements") ?? DEFAULT_MEASUREMENTS));
  const a: Assumptions = { ...ASSUMPTIONS };
  const num = (name: string) => {
    const raw = optionValue(argv, name);
    if (raw === undefined) return undefined;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number >= 0 (got ${raw})`);
    return value;
  };
  const overhead = num("--overhead");
  if (overhead !== undefined) {
    const k = overhead / perQueryOverhead(a);
    a.overheadMsPerStatement *= k;
    a.overheadMsPerRoundTrip *= k;
  }
  a.replicaReadShare = num("--replica-share") ?? a.replicaReadShare;
  a.utilisation = num("--utilisation") ?? a.utilisation;
  console.log(report(m, a));
  const json = optionValue(argv, "--json");
  if (json) {
    const figures = {
      assumptions: a,
      daily: DAILY_REQUESTS,
      routes: Object.keys(m.routes).map((k) => routeCost(m, k, a)),
      profile: profile(m, a),
      storage: storage(m, a),
      shards: shardTable(m, a),
      directoryCrossover: directoryCrossover(m, a),
      ownDatabase: ownDatabase(m, a),
      costsPer1000: costsPer1000(m, a),
    };
    writeFileSync(resolve(json), `${JSON.stringify(figures, null, 2)}\n`);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
