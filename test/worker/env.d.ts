import type { D1Migration } from "cloudflare:test";
import type { Env as WorkerEnv } from "../../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: D1Migration[];
      /** Shard 1 (wrangler.toml D1_SHARDS). */
      DB_1: D1Database;
    }
    interface GlobalProps {
      mainModule: typeof import("../../src/index");
      durableNamespaces: "CompanyClock";
    }
  }
}
