// `bash scripts/dev.sh deploy-check [--config FILE] [--remote]`: is this configuration ready to
// deploy? Names every placeholder left in wrangler.toml (D1 database ids, the reminder emails'
// sender, example domains) and every secret the Worker needs; with --remote also reads the deployed
// Worker's secrets (`wrangler secret list`) and each D1 database (`wrangler d1 info`: its id, read
// replication). Exit 0: ready; 1: something to fix, each named; 2: a usage error.
// The checks: scripts/lib/deploy-check.ts. DEPLOY_CHECK_WRANGLER replaces the project's wrangler
// (a script run by node; the tools test uses a stand-in).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import { experimental_readRawConfig } from "wrangler";
import { checkDeployConfig, type DeployConfig, type RemoteFacts } from "./lib/deploy-check.ts";
import { ROOT } from "./lib/local.ts";

const USAGE = "usage: bash scripts/dev.sh deploy-check [--config wrangler.toml] [--remote]";

let options: { config?: string; remote?: boolean; help?: boolean };
try {
  options = parseArgs({
    options: { config: { type: "string" }, remote: { type: "boolean" }, help: { type: "boolean", short: "h" } },
  }).values;
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}
if (options.help) {
  console.log(USAGE);
  process.exit(0);
}
const configPath = resolve(options.config ?? join(ROOT, "wrangler.toml"));
if (!existsSync(configPath)) {
  console.error(`No configuration at ${configPath}\n${USAGE}`);
  process.exit(2);
}

const { rawConfig } = experimental_readRawConfig({ config: configPath });
const config = rawConfig as DeployConfig;

/** Runs the project's wrangler with the checked configuration; its JSON output, or an error message. */
function wranglerJson(args: string[]): { json?: unknown; error?: string } {
  const bin = process.env.DEPLOY_CHECK_WRANGLER || join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const result = spawnSync(process.execPath, [bin, ...args, "--config", configPath], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" },
  });
  const output = `${result.stdout ?? ""}`;
  if (result.status !== 0) {
    const why = `${result.stderr ?? ""}\n${output}`
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l && !/^[⛅─-]/.test(l));
    return { error: why.find((l) => /ERROR|error/.test(l)) ?? why.at(-1) ?? `wrangler exited with ${result.status}` };
  }
  try {
    // wrangler may print a banner before the JSON.
    return { json: JSON.parse(output.slice(output.search(/[[{]/))) };
  } catch {
    return { error: `wrangler ${args.join(" ")} printed no JSON` };
  }
}

const remote: RemoteFacts = {};
const readErrors: string[] = [];
if (options.remote) {
  console.error(`Reading the deployed Worker's secrets and the D1 databases (wrangler, --remote)...`);
  const secrets = wranglerJson(["secret", "list", "--format", "json"]);
  if (secrets.error !== undefined) {
    readErrors.push(`could not list the deployed Worker's secrets: ${secrets.error}`);
  } else {
    remote.secrets = (secrets.json as Array<{ name: string }>).map((s) => s.name);
  }
  remote.databases = {};
  for (const db of config.d1_databases ?? []) {
    const info = wranglerJson(["d1", "info", db.database_name ?? db.binding, "--json"]);
    const json = info.json as { uuid?: string; read_replication?: { mode?: string } } | undefined;
    remote.databases[db.binding] =
      info.error !== undefined
        ? { error: info.error }
        : { uuid: json?.uuid, readReplication: json?.read_replication?.mode };
  }
}

const checked = checkDeployConfig(config, remote);
const problems = [...readErrors, ...checked.problems];
const shown = relative(process.cwd(), configPath) || configPath;
console.log(`deploy-check: ${shown}${options.remote ? " and the Cloudflare account" : ""}`);
for (const problem of problems) console.log(`✗ ${problem}`);
for (const note of checked.notes) console.log(`- ${note}`);
if (problems.length > 0) {
  console.log(`Not ready to deploy: ${problems.length} thing${problems.length === 1 ? "" : "s"} to fix above.`);
  process.exitCode = 1;
} else {
  console.log("Ready to deploy: no placeholder left.");
}
