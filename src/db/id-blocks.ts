// Id ranges per shard (docs/scale.md "Ids across shards"). Plain TypeScript with no Worker types:
// the operator scripts (seed, `npm run shard`) import it in Node.

/** The shard bindings a D1_SHARDS value lists, in shard order (space- or comma-separated); none: DB alone. */
export function parseShardList(value: string | undefined): string[] {
  const listed = (value ?? "").split(/[\s,]+/).filter(Boolean);
  return listed.length > 0 ? listed.slice(0, MAX_SHARDS) : ["DB"];
}

/** The most shards the id ranges below leave room for. */
export const MAX_SHARDS = 64;

/**
 * Ids are unique across shards, so that an account moves between databases with its ids, and a
 * company's Durable Object (named by company id) is the same object wherever its rows live. Shard k
 * allocates a table's ids from k × block + 1 (`npm run shard -- init`), and an account only moves
 * to a higher shard, whose blocks lie above every id it holds. Blocks are sized so ids stay inside
 * what the search indexes encode: a company id in two characters of 6,400 (< 40,960,000), an item
 * id in 32 bits, a task id in 31 (migrations 0015, 0016).
 */
export const COMPANY_ID_BLOCK = 500_000;
export const ROW_ID_BLOCK = 2 ** 25;
/** Tables whose ids come from COMPANY_ID_BLOCK; every other AUTOINCREMENT table uses ROW_ID_BLOCK. */
export const COMPANY_BLOCK_TABLES: readonly string[] = ["accounts", "users", "companies"];

export const idBlockOf = (table: string) => (COMPANY_BLOCK_TABLES.includes(table) ? COMPANY_ID_BLOCK : ROW_ID_BLOCK);

/** The shard that allocated a company id (where the company lives unless its account moved). */
export const originShardOfCompany = (companyId: number) => Math.floor(companyId / COMPANY_ID_BLOCK);

/**
 * SQL that starts every AUTOINCREMENT table of shard `shard` at its id block (idempotent; never
 * lowers a counter). Run once on a new shard before it takes accounts: `npm run shard -- init`.
 */
export function idBaseStatements(shard: number): string[] {
  if (!Number.isSafeInteger(shard) || shard < 0 || shard >= MAX_SHARDS)
    throw new Error(`shard must be 0 to ${MAX_SHARDS - 1}`);
  const base = `CASE WHEN m.name IN (${COMPANY_BLOCK_TABLES.map((t) => `'${t}'`).join(", ")}) THEN ${shard * COMPANY_ID_BLOCK} ELSE ${shard * ROW_ID_BLOCK} END`;
  const tables = "sqlite_master m WHERE m.type = 'table' AND m.sql LIKE '%AUTOINCREMENT%'";
  return [
    `INSERT INTO sqlite_sequence (name, seq) SELECT m.name, ${base} FROM ${tables} AND NOT EXISTS (SELECT 1 FROM sqlite_sequence s WHERE s.name = m.name)`,
    `UPDATE sqlite_sequence SET seq = (SELECT ${base} FROM sqlite_master m WHERE m.name = sqlite_sequence.name)
      WHERE seq < (SELECT ${base} FROM sqlite_master m WHERE m.name = sqlite_sequence.name)`,
  ];
}
