import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { buildSeedStatements } from "../../scripts/seed-data";

// Runs before every test file; both steps are idempotent.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const seed = await buildSeedStatements();
await env.DB.batch(seed.map((statement) => env.DB.prepare(statement)));
