// The directory (docs/scale.md "The directory"): which shard holds a client's and a company's
// rows, in the home database (shard 0). A client without an entry is on shard 0 (every account
// made before shards existed); a company without one is on the shard that allocated its id. The
// operator CLI writes entries when it makes accounts and clients on another shard, and the move
// script rewrites an account's entries in one batch when it moves the account.
import type { Env } from "../env";
import { homeDatabase, originShardOfCompany } from "./shards";

/** How long an isolate trusts a directory answer (DIRECTORY_TTL_SECONDS, default 60); a move waits longer than this before it deletes the old copy. */
const DEFAULT_TTL_SECONDS = 60;

function ttlMs(env: Env): number {
  const configured = Number(env.DIRECTORY_TTL_SECONDS ?? DEFAULT_TTL_SECONDS);
  return (Number.isFinite(configured) && configured >= 0 ? configured : DEFAULT_TTL_SECONDS) * 1000;
}
const MAX_CACHED = 10_000;

const cache = new Map<string, { shard: number; expiresAt: number }>();

async function cached(env: Env, key: string, read: () => Promise<number>): Promise<number> {
  const now = Date.now();
  const hit = cache.get(key);
  if (hit && hit.expiresAt > now) return hit.shard;
  const shard = await read();
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, { shard, expiresAt: now + ttlMs(env) });
  return shard;
}

/** The shard of a client's account (0 without an entry). Read when a token is issued, and for a token minted before its account moved. */
export async function shardOfClient(env: Env, clientId: string, options: { fresh?: boolean } = {}): Promise<number> {
  const read = async () =>
    (await homeDatabase(env)
      .prepare("SELECT shard FROM directory_clients WHERE client_id = ?")
      .bind(clientId)
      .first<number>("shard")) ?? 0;
  return options.fresh ? read() : cached(env, `client:${clientId}`, read);
}

/** The shard of a company's rows: its directory entry (its account moved), else the shard that allocated its id. */
export function shardOfCompany(env: Env, companyId: number): Promise<number> {
  return cached(env, `company:${companyId}`, async () => {
    const moved = await homeDatabase(env)
      .prepare("SELECT shard FROM directory_companies WHERE company_id = ?")
      .bind(companyId)
      .first<number>("shard");
    return moved ?? originShardOfCompany(companyId);
  });
}
