import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { buildSeedStatements, buildShardOneSeedStatements } from "../../scripts/seed-data";

// Runs before every test file; every step is idempotent. Both shards (wrangler.toml D1_SHARDS) are
// migrated; shard 1 gets its id blocks and its demo account (docs/scale.md).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_1, env.TEST_MIGRATIONS);
const seed = await buildSeedStatements();
await env.DB.batch(seed.map((statement) => env.DB.prepare(statement)));
const shardOne = await buildShardOneSeedStatements();
await env.DB_1.batch(shardOne.map((statement) => env.DB_1.prepare(statement)));
