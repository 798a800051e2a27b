// Moving an account to a higher shard (docs/scale.md "Moving an account"): read-only, drain, copy,
// flip the directory, clean up. Every step can be run again: a failed or interrupted move is
// resumed by running the same command.
//
// The copy is exact: rows keep their ids, counters and versions. While a company is listed in
// `shard_moves` on a database, the triggers that write other tables skip its rows (migration
// 0021), so inserting the rows on the target and deleting them from the source neither counts
// anything twice nor queues webhook events, revisions or reminder syncs. The search-index
// triggers still run: the target builds the account's search index as its rows arrive, and the
// source's index loses them as they go.

/** How the move reaches the shards (the operator CLI: wrangler, local or remote). */
export interface ShardAccess {
  query<T = Record<string, unknown>>(shard: number, sql: string): T[];
  /** Several queries in one round trip, each one's rows. */
  queryEach<T = Record<string, unknown>>(shard: number, sqls: string[]): T[][];
  /** Runs the statements as one transaction on the shard. */
  execute(shard: number, statements: string[]): void;
}

/** The account's rows, in parent-first order; the clean-up deletes in the reverse order. */
const ACCOUNT = "account_id = :account";
const COMPANIES = "company_id IN (SELECT id FROM companies WHERE account_id = :account)";
export const COPIED_TABLES: ReadonlyArray<{ table: string; where: string }> = [
  { table: "accounts", where: "id = :account" },
  { table: "users", where: ACCOUNT },
  { table: "companies", where: ACCOUNT },
  { table: "departments", where: COMPANIES },
  { table: "contact_groups", where: COMPANIES },
  { table: "contacts", where: COMPANIES },
  { table: "document_types", where: ACCOUNT },
  { table: "document_type_fields", where: COMPANIES },
  { table: "folders", where: COMPANIES },
  { table: "tags", where: COMPANIES },
  { table: "reminder_sequences", where: COMPANIES },
  { table: "items", where: COMPANIES },
  { table: "item_tags", where: COMPANIES },
  { table: "item_field_values", where: COMPANIES },
  { table: "item_renewals", where: COMPANIES },
  { table: "files", where: COMPANIES },
  { table: "item_files", where: COMPANIES },
  { table: "tasks", where: COMPANIES },
  { table: "task_counts", where: COMPANIES },
  { table: "api_clients", where: ACCOUNT },
  { table: "calendar_feeds", where: COMPANIES },
  { table: "reminder_templates", where: COMPANIES },
  { table: "company_revisions", where: COMPANIES },
  { table: "webhook_endpoints", where: COMPANIES },
  { table: "webhook_events", where: COMPANIES },
  { table: "channel_endpoints", where: COMPANIES },
  { table: "idempotency_keys", where: COMPANIES },
  { table: "imports", where: COMPANIES },
  { table: "import_errors", where: `import_id IN (SELECT id FROM imports WHERE ${COMPANIES})` },
  { table: "upload_sessions", where: COMPANIES },
  { table: "reminder_sync", where: COMPANIES },
  { table: "reminder_wakeups", where: COMPANIES },
  { table: "audit_log", where: ACCOUNT },
];

/** Tables the copy leaves out, and why. A test checks that every table is in one of the two lists. */
export const NOT_COPIED: Readonly<Record<string, string>> = {
  item_reminder_views:
    "a cache the company's Durable Object rebuilds on the first read; the clean-up " + "deletes it from the source",
  items_search: "search index: the target's triggers build it from the copied rows",
  contacts_search: "search index: built by the target's triggers",
  tasks_search: "search index: built by the target's triggers",
  search_terms: "search vocabulary: written by the search-index triggers",
  directory_accounts: "the directory lives in the home database; the flip rewrites it",
  directory_clients: "the directory (home database)",
  directory_companies: "the directory (home database)",
  shard_moves: "the move's own marker",
  write_guards: "never holds rows (a failed CHECK aborts a guarded batch)",
  audit_context: "holds a row only inside a write batch (the actor the audit triggers read)",
};
/** Cleaned up on the source next to the copied tables. */
const CLEANED_TOO: ReadonlyArray<{ table: string; where: string }> = [
  { table: "item_reminder_views", where: COMPANIES },
];

/** What keeps an account from moving yet: work still in flight that writes its rows. */
const DRAIN_CHECKS: ReadonlyArray<{ what: string; sql: string }> = [
  {
    what: "import jobs queued or running",
    sql: `SELECT count(*) AS n FROM imports WHERE ${COMPANIES} AND status IN ('queued', 'validating', 'running')`,
  },
  {
    what: "uploads open or in flight",
    sql: `SELECT count(*) AS n FROM upload_sessions WHERE ${COMPANIES} AND ((used_at IS NULL AND expires_at > unixepoch()) OR reserved_kb > 0)`,
  },
  { what: "webhook events not yet fanned out", sql: `SELECT count(*) AS n FROM webhook_events WHERE ${COMPANIES}` },
  {
    what: "item changes the reminder engine has not applied",
    sql: `SELECT count(*) AS n FROM reminder_sync WHERE ${COMPANIES} AND synced_version < version`,
  },
];

/** src/db/directory.ts: how long an isolate may keep routing the account to its old shard. */
const DEFAULT_DIRECTORY_TTL_SECONDS = 60;
/** D1 refuses statements over 100,000 bytes; inserts are cut well below. */
const MAX_STATEMENT_BYTES = 90_000;
/** Rows read per query from the source (the JSON of one wrangler call). */
const PAGE_ROWS = 5_000;
/** Statements per transaction on the target (one wrangler call each). */
const MAX_STATEMENTS_PER_CALL = 400;

export interface MoveOptions {
  accountId: number;
  to: number;
  /** Seconds between read-only and the drain check: every isolate's cached client row (CLIENT_STATUS_TTL_SECONDS) must have expired. */
  settleSeconds: number;
  /** Seconds the drain may take before the move gives up (and makes the account writable again). */
  drainTimeoutSeconds: number;
  /** Seconds between the flip and deleting the source copy: longer than the directory cache (DIRECTORY_TTL_SECONDS). */
  cleanupAfterSeconds: number;
  log: (line: string) => void;
  sleep: (ms: number) => Promise<void>;
}

export class MoveError extends Error {}

const bind = (where: string, accountId: number) => where.replaceAll(":account", String(accountId));

/** A SQL literal for a value read back through wrangler's JSON. */
export function sqlLiteral(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new MoveError(`Cannot copy the number ${value}`);
    return String(value);
  }
  if (typeof value === "string") {
    if (value.includes("\u0000")) throw new MoveError("Cannot copy a text value holding NUL");
    return `'${value.replace(/'/g, "''")}'`;
  }
  if (Array.isArray(value) && value.every((b) => Number.isInteger(b) && b >= 0 && b < 256)) {
    return `X'${Buffer.from(value as number[]).toString("hex")}'`;
  }
  throw new MoveError(`Cannot copy the value ${JSON.stringify(value).slice(0, 80)}`);
}

/** Multi-row INSERTs of `rows`, each statement under MAX_STATEMENT_BYTES. */
export function insertStatements(table: string, rows: Record<string, unknown>[]): string[] {
  if (rows.length === 0) return [];
  const columns = Object.keys(rows[0]!);
  const head = `INSERT INTO "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) VALUES `;
  const statements: string[] = [];
  let values: string[] = [];
  let bytes = head.length;
  for (const row of rows) {
    const tuple = `(${columns.map((c) => sqlLiteral(row[c])).join(", ")})`;
    if (head.length + tuple.length > MAX_STATEMENT_BYTES)
      throw new MoveError(`A row of ${table} is too large to copy in one statement`);
    if (values.length > 0 && bytes + tuple.length + 2 > MAX_STATEMENT_BYTES) {
      statements.push(head + values.join(", "));
      values = [];
      bytes = head.length;
    }
    values.push(tuple);
    bytes += tuple.length + 2;
  }
  statements.push(head + values.join(", "));
  return statements;
}

function companiesOf(db: ShardAccess, shard: number, accountId: number): number[] {
  return db
    .query<{ id: number }>(shard, `SELECT id FROM companies WHERE account_id = ${accountId} ORDER BY id`)
    .map((r) => r.id);
}

/** `statements` run with the account's companies listed in shard_moves, so the side-effect triggers skip their rows (migration 0021). */
function quietly(accountId: number, companies: number[], statements: string[]): string[] {
  // Marked by id, not by a SELECT over companies: the statements may delete the companies.
  const mark = companies.map(
    (id) =>
      `INSERT OR REPLACE INTO shard_moves (company_id, account_id, started_at) VALUES (${id}, ${accountId}, unixepoch())`,
  );
  return [
    "PRAGMA defer_foreign_keys = on",
    ...mark,
    ...statements,
    `DELETE FROM shard_moves WHERE account_id = ${accountId}`,
  ];
}

/** Deletes the account's rows on a shard, children first (deleting companies empties the COMPANIES subquery, so they go last but two). */
function deletions(accountId: number): string[] {
  return [...COPIED_TABLES, ...CLEANED_TOO]
    .reverse()
    .map((t) => `DELETE FROM "${t.table}" WHERE ${bind(t.where, accountId)}`);
}

function count(db: ShardAccess, shard: number, accountId: number): Map<string, number> {
  const counts = db.queryEach<{ n: number }>(
    shard,
    COPIED_TABLES.map((t) => `SELECT count(*) AS n FROM "${t.table}" WHERE ${bind(t.where, accountId)}`),
  );
  return new Map(COPIED_TABLES.map((t, i) => [t.table, counts[i]![0]!.n]));
}

/** Every copied table's rows of the account: one round trip, then more pages for the tables that have them. */
function readAll(db: ShardAccess, shard: number, accountId: number): Record<string, unknown>[][] {
  // rowid order is stable while the account is read-only; the two WITHOUT ROWID tables are not copied.
  const page = (t: { table: string; where: string }, offset: number) =>
    `SELECT * FROM "${t.table}" WHERE ${bind(t.where, accountId)} ORDER BY rowid LIMIT ${PAGE_ROWS} OFFSET ${offset}`;
  const rows = db.queryEach(
    shard,
    COPIED_TABLES.map((t) => page(t, 0)),
  );
  COPIED_TABLES.forEach((t, i) => {
    for (let offset = PAGE_ROWS, last = rows[i]!; last.length === PAGE_ROWS; offset += PAGE_ROWS) {
      last = db.query(shard, page(t, offset));
      rows[i]!.push(...last);
    }
  });
  return rows;
}

/** Where the account is now: its directory entry, else shard 0. */
export function shardOfAccount(db: ShardAccess, accountId: number): number {
  return (
    db.query<{ shard: number }>(0, `SELECT shard FROM directory_accounts WHERE account_id = ${accountId}`)[0]?.shard ??
    0
  );
}

function accountState(db: ShardAccess, shard: number, accountId: number): string | undefined {
  return db.query<{ shard_state: string }>(shard, `SELECT shard_state FROM accounts WHERE id = ${accountId}`)[0]
    ?.shard_state;
}

/** Moves an account to shard `to`; resumes a move that stopped half way. */
export async function moveAccount(db: ShardAccess, shardCount: number, o: MoveOptions): Promise<void> {
  const { accountId, to, log } = o;
  if (!Number.isInteger(to) || to < 1 || to >= shardCount)
    throw new MoveError(`--to must be a shard from 1 to ${shardCount - 1}`);
  const from = shardOfAccount(db, accountId);
  const fromState = accountState(db, from, accountId);

  if (from === to) {
    // Flipped already: only the clean-up of the shard it left may be missing.
    if (accountState(db, to, accountId) === undefined)
      throw new MoveError(`Account ${accountId} is not on shard ${to}`);
    let cleaned = 0;
    for (let shard = 0; shard < to; shard++) {
      if (accountState(db, shard, accountId) === "moved") {
        cleanUp(db, shard, accountId, log);
        cleaned++;
      }
    }
    log(
      cleaned
        ? "Finished the clean-up of a previous move."
        : `Account ${accountId} is already on shard ${to}; nothing to do.`,
    );
    return;
  }
  if (fromState === undefined)
    throw new MoveError(`Account ${accountId} does not exist (the directory places it on shard ${from})`);
  if (to < from)
    throw new MoveError(
      `Account ${accountId} is on shard ${from}: an account only moves up to a higher shard (ids stay below the target's blocks; docs/scale.md)`,
    );
  if (fromState === "moved")
    throw new MoveError(
      `Account ${accountId} is marked moved on shard ${from} but the directory still points there; check directory_accounts`,
    );

  // 1. Read-only.
  db.execute(from, [`UPDATE accounts SET shard_state = 'read_only' WHERE id = ${accountId}`]);
  log(`Account ${accountId} is read-only on shard ${from}; waiting ${o.settleSeconds} s for every isolate to see it.`);
  await o.sleep(o.settleSeconds * 1000);

  // 2. Drain.
  const deadline = Date.now() + o.drainTimeoutSeconds * 1000;
  for (;;) {
    const counts = db.queryEach<{ n: number }>(
      from,
      DRAIN_CHECKS.map((c) => bind(c.sql, accountId)),
    );
    const pending = DRAIN_CHECKS.map((c, i) => ({ what: c.what, n: counts[i]![0]?.n ?? 0 })).filter((p) => p.n > 0);
    if (pending.length === 0) break;
    if (Date.now() >= deadline) {
      db.execute(from, [
        `UPDATE accounts SET shard_state = 'active' WHERE id = ${accountId} AND shard_state = 'read_only'`,
      ]);
      throw new MoveError(
        `Still in flight after ${o.drainTimeoutSeconds} s: ${pending.map((p) => `${p.n} ${p.what}`).join(", ")}. The account is writable again; try later.`,
      );
    }
    log(`Waiting for ${pending.map((p) => `${p.n} ${p.what}`).join(", ")}`);
    await o.sleep(2000);
  }

  // 3. Copy, over any leftovers of an earlier attempt.
  const companies = companiesOf(db, from, accountId);
  const inserts: string[] = [];
  let rowsCopied = 0;
  readAll(db, from, accountId).forEach((rows, i) => {
    const { table } = COPIED_TABLES[i]!;
    if (table === "accounts") for (const r of rows) r.shard_state = "active";
    rowsCopied += rows.length;
    inserts.push(...insertStatements(table, rows));
  });
  runInCalls(db, to, quietly(accountId, companies, [...deletions(accountId), ...inserts]));
  const source = count(db, from, accountId);
  const target = count(db, to, accountId);
  const differ = COPIED_TABLES.filter((t) => source.get(t.table) !== target.get(t.table));
  if (differ.length > 0) {
    throw new MoveError(
      `The copy on shard ${to} differs from shard ${from} in ${differ.map((t) => `${t.table} (${source.get(t.table)} vs ${target.get(t.table)})`).join(", ")}; ` +
        "the account stays read-only on its shard; run the move again",
    );
  }
  log(
    `Copied ${rowsCopied} rows of ${companies.length} compan${companies.length === 1 ? "y" : "ies"} to shard ${to}; counts match.`,
  );

  // 4. Flip: the directory is the commit point.
  const clients = db
    .query<{ client_id: string }>(from, `SELECT client_id FROM api_clients WHERE account_id = ${accountId}`)
    .map((r) => r.client_id);
  const flip = [
    `INSERT OR REPLACE INTO directory_accounts (account_id, shard, moved_at) VALUES (${accountId}, ${to}, unixepoch())`,
    ...clients.map(
      (id) =>
        `INSERT OR REPLACE INTO directory_clients (client_id, account_id, shard) VALUES (${sqlLiteral(id)}, ${accountId}, ${to})`,
    ),
    ...companies.map(
      (id) =>
        `INSERT OR REPLACE INTO directory_companies (company_id, account_id, shard) VALUES (${id}, ${accountId}, ${to})`,
    ),
  ];
  const moved = `UPDATE accounts SET shard_state = 'moved' WHERE id = ${accountId}`;
  if (from === 0) db.execute(0, [...flip, moved]);
  else {
    db.execute(0, flip);
    db.execute(from, [moved]);
  }
  log(
    `Directory flipped: account ${accountId}, ${clients.length} client(s) and ${companies.length} compan${companies.length === 1 ? "y" : "ies"} now on shard ${to}. The account is writable.`,
  );

  // 5. Clean up once no isolate can still hold the old directory answer.
  if (o.cleanupAfterSeconds <= DEFAULT_DIRECTORY_TTL_SECONDS) {
    log(
      `Warning: --cleanup-after ${o.cleanupAfterSeconds} s is not longer than the directory cache (DIRECTORY_TTL_SECONDS, ${DEFAULT_DIRECTORY_TTL_SECONDS} s by default); safe only if the service runs with a shorter one.`,
    );
  }
  log(`Deleting the copy on shard ${from} in ${o.cleanupAfterSeconds} s.`);
  await o.sleep(o.cleanupAfterSeconds * 1000);
  cleanUp(db, from, accountId, log);
}

function cleanUp(db: ShardAccess, shard: number, accountId: number, log: (line: string) => void): void {
  db.execute(shard, quietly(accountId, companiesOf(db, shard, accountId), deletions(accountId)));
  log(`Deleted account ${accountId}'s rows from shard ${shard}.`);
}

/** Runs statements on a shard in as few transactions as the call size allows; the first keeps the PRAGMA. */
function runInCalls(db: ShardAccess, shard: number, statements: string[]): void {
  const [pragma, ...rest] = statements;
  for (let i = 0; i < rest.length; i += MAX_STATEMENTS_PER_CALL)
    db.execute(shard, [pragma!, ...rest.slice(i, i + MAX_STATEMENTS_PER_CALL)]);
}
