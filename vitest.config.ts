import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { prepareDocsAssets } from "./scripts/docs-assets.ts";
import { ProjectDurations } from "./test/project-durations.ts";
import { LongestFirst } from "./test/e2e-order.ts";

// Three projects: `worker` runs inside workerd against real local D1, R2 and Durable Objects;
// `tools` runs in Node and checks the OpenAPI document with the tools clients use (linter, client
// generator); `e2e` runs in Node and drives a real `wrangler dev` over HTTP.
export default defineConfig(async () => {
  // wrangler.toml's [assets] directory (the /docs page's bundle) must exist before the worker pool reads it.
  prepareDocsAssets();
  const migrations = await readD1Migrations("./migrations");
  return {
    test: {
      reporters: ["default", new ProjectDurations()],
      sequence: { sequencer: LongestFirst },
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  JWT_SIGNING_KEYS:
                    "test-current:test-signing-key-current-0123456789abcdef " +
                    "test-previous:test-signing-key-previous-0123456789abcdef",
                  // No client-status caching in tests: deactivation must be visible at once.
                  CLIENT_STATUS_TTL_SECONDS: "0",
                  WEBHOOK_SECRETS_KEY: "test-webhook-secrets-key-0123456789abcdef",
                  LINK_SIGNING_KEYS:
                    "links-current:test-link-key-current-0123456789abcdef " +
                    "links-previous:test-link-key-previous-0123456789abcdef",
                  // The links in reminder emails point at the origin the tests call (test/worker/support/http.ts BASE).
                  PUBLIC_BASE_URL: "https://api.test",
                  WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
                  // Suites send thousands of requests per client; test/worker/rate-limits.test.ts turns them on.
                  RATE_LIMITS: "off",
                  // One log line per request, thousands per run: off here; test/worker/request-id.test.ts turns it on.
                  REQUEST_LOGS: "off",
                  // test/worker/fuzz.test.ts: more runs, a replayed seed, per-operation status counts.
                  FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
                  FUZZ_SEED: process.env.FUZZ_SEED ?? "",
                  FUZZ_VERBOSE: process.env.FUZZ_VERBOSE ?? "",
                },
              },
            }),
          ],
          test: {
            name: "worker",
            include: ["test/worker/**/*.test.ts"],
            setupFiles: ["./test/worker/setup.ts"],
            // A test that sends a few hundred requests takes seconds on a loaded two-core runner, not 5.
            testTimeout: 30_000,
          },
        },
        {
          test: {
            name: "tools",
            include: ["test/tools/**/*.test.ts"],
            environment: "node",
            // Some render a generator's whole output (the search table, the trigger catalogue): 5 s is
            // too short on a busy 2-core machine.
            testTimeout: 30_000,
          },
        },
        {
          test: {
            name: "e2e",
            include: ["test/e2e/**/*.test.ts"],
            environment: "node",
            // Each file drives its own service on its own port and state directory, and spends most
            // of its time waiting (server start, a reminder's minute, alarms): three at a time, even
            // on two cores (two at a time took the whole run past 15 minutes once issue 34's
            // minute-waiting files came).
            maxWorkers: 3,
            testTimeout: 180_000,
            hookTimeout: 180_000,
          },
        },
      ],
    },
  };
});
