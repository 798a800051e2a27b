// Which D1 database holds an account (docs/scale.md). Shards are D1 bindings listed, in order, in
// the D1_SHARDS variable ("DB DB_1": shard 0 is DB, shard 1 is DB_1); without it, DB alone.
// Shard 0 is also the home database: it holds the directory (account and client -> shard), read
// when a token is issued, and by the operator CLI.
import type { Env } from "../env";
import { parseShardList } from "./id-blocks";

export { MAX_SHARDS, originShardOfCompany } from "./id-blocks";

const parsedShards = new Map<string | undefined, readonly string[]>();

/** The binding names of the shards, in shard order. */
export function shardBindings(env: Pick<Env, "D1_SHARDS">): readonly string[] {
  let names = parsedShards.get(env.D1_SHARDS);
  if (names === undefined) {
    names = parseShardList(env.D1_SHARDS);
    parsedShards.set(env.D1_SHARDS, names);
  }
  return names;
}

export const shardCount = (env: Pick<Env, "D1_SHARDS">) => shardBindings(env).length;

export const isShard = (env: Pick<Env, "D1_SHARDS">, shard: number) =>
  Number.isSafeInteger(shard) && shard >= 0 && shard < shardCount(env);

/**
 * The D1 binding of a shard. The one place that names the data bindings: every query reaches its
 * database through here (the request's session, src/db/session.ts; the Durable Object; the cron).
 */
export function shardDatabase(env: Env, shard: number): D1Database {
  const name = shardBindings(env)[shard];
  const binding = name === undefined ? undefined : (env as unknown as Record<string, unknown>)[name];
  if (!binding || typeof (binding as D1Database).prepare !== "function") {
    throw new Error(`D1 shard ${shard} (${name ?? "not listed in D1_SHARDS"}) has no D1 binding`);
  }
  return binding as D1Database;
}

/** The home database: shard 0, which also holds the directory. */
export const homeDatabase = (env: Env) => shardDatabase(env, 0);
