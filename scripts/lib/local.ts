// Helpers for the operator scripts: run wrangler, migrate and seed the local D1, start `wrangler dev`.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseShardList } from "../../src/db/id-blocks.ts";
import { redactSecrets } from "../../src/lib/secret-paths.ts";
import { buildSeedStatements, buildShardOneSeedStatements } from "../seed-data.ts";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const WRANGLER = join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");

/** Where local state lives: `--persist-to DIR` when given, else wrangler's default. */
export interface Target {
  remote?: boolean;
  persistTo?: string;
  /** The D1 binding (a shard, docs/scale.md); DB, shard 0, when absent. */
  binding?: string;
}

function targetArgs(target: Target): string[] {
  if (target.remote) return ["--remote"];
  return target.persistTo ? ["--local", "--persist-to", target.persistTo] : ["--local"];
}

/** Local D1 refused the call because a running `wrangler dev` on the same state held the database: nothing of it ran. */
const LOCAL_DB_BUSY = /database is locked|SQLITE_BUSY/;
const BUSY_RETRIES = 5;

/**
 * Runs wrangler to completion; throws with its output on failure. A local D1 call that found the
 * database locked by a running server (its cron or alarms writing) is tried again, up to 5 times
 * over about 6 s: SQLite refused it before it began, so repeating it is safe.
 */
export function wrangler(args: string[], options: { quiet?: boolean } = {}): string {
  let result = run(args);
  for (
    let attempt = 1;
    attempt <= BUSY_RETRIES && result.status !== 0 && LOCAL_DB_BUSY.test(`${result.stdout}${result.stderr}`);
    attempt++
  ) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 400 * attempt);
    result = run(args);
  }
  if (result.status !== 0) {
    throw new Error(`wrangler ${args.join(" ")} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  }
  if (!options.quiet && result.stdout.trim()) process.stdout.write(result.stdout);
  return result.stdout;
}

function run(args: string[]) {
  return spawnSync(process.execPath, [WRANGLER, ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: process.env.CI ?? "true" },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** The shards' D1 bindings, in shard order, as wrangler.toml's D1_SHARDS lists them (docs/scale.md). */
export function shardBindingNames(): string[] {
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
  const listed = /^\s*D1_SHARDS\s*=\s*"([^"]*)"/m.exec(toml)?.[1];
  return parseShardList(listed);
}

/** Applies the migrations to every shard (or to the one binding given). */
export function applyMigrations(target: Target, bindings: string[] = shardBindingNames()): void {
  for (const binding of bindings)
    wrangler(["d1", "migrations", "apply", binding, ...targetArgs(target)], { quiet: true });
}

/** Executes SQL statements (one file, one transaction per wrangler call) on shard 0, or on `target.binding`. */
export function executeSql(target: Target, statements: string[]): void {
  const dir = mkdtempSync(join(tmpdir(), "expiry-sql-"));
  try {
    const file = join(dir, "statements.sql");
    writeFileSync(file, statements.map((s) => `${s.trim().replace(/;$/, "")};`).join("\n"));
    wrangler(["d1", "execute", target.binding ?? "DB", ...targetArgs(target), "--file", file, "-y"], { quiet: true });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs several queries in one wrangler call and returns each one's rows. */
export function queryEach<T = Record<string, unknown>>(target: Target, sqls: string[]): T[][] {
  const out = wrangler(
    ["d1", "execute", target.binding ?? "DB", ...targetArgs(target), "--command", sqls.join(";\n"), "--json", "-y"],
    { quiet: true },
  );
  const parsed = JSON.parse(out) as Array<{ results: T[] }>;
  if (parsed.length !== sqls.length)
    throw new Error(`wrangler answered ${parsed.length} results for ${sqls.length} queries`);
  return parsed.map((r) => r.results ?? []);
}

/** Runs one query and returns its rows. */
export function queryRows<T = Record<string, unknown>>(target: Target, sql: string): T[] {
  const out = wrangler(
    ["d1", "execute", target.binding ?? "DB", ...targetArgs(target), "--command", sql, "--json", "-y"],
    { quiet: true },
  );
  const parsed = JSON.parse(out) as Array<{ results: T[] }>;
  return parsed.flatMap((r) => r.results ?? []);
}

/** The demo data: on shard 0, and the shard-1 demo account when a second shard is configured. */
export async function seedLocal(target: Target): Promise<void> {
  executeSql(target, await buildSeedStatements());
  const second = shardBindingNames()[1];
  if (second) executeSql({ ...target, binding: second }, await buildShardOneSeedStatements());
}

/**
 * Creates .dev.vars from the committed example on first start; on later starts, appends the
 * example's variables that an existing .dev.vars lacks (e.g. WEBHOOK_SECRETS_KEY, added after it
 * was created), leaving every value already there as it is: `WEBHOOKS_ALLOW_PRIVATE_URLS="false"`
 * stays off (a line removed or commented out comes back from the example, on).
 */
export function ensureDevVars(root = ROOT): void {
  const devVars = join(root, ".dev.vars");
  const example = join(root, ".dev.vars.example");
  if (!existsSync(devVars)) {
    copyFileSync(example, devVars);
    console.log("Created .dev.vars from .dev.vars.example");
    return;
  }
  const keyOf = (line: string) => /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=/.exec(line)?.[1];
  const current = readFileSync(devVars, "utf8");
  const present = new Set(current.split(/\r?\n/).map(keyOf).filter(Boolean));
  const missing = readFileSync(example, "utf8")
    .split(/\r?\n/)
    .filter((line) => {
      const key = keyOf(line);
      return key !== undefined && !present.has(key);
    });
  if (missing.length === 0) return;
  const separator = current === "" || current.endsWith("\n") ? "" : "\n";
  appendFileSync(devVars, `${separator}# Added from .dev.vars.example\n${missing.join("\n")}\n`);
  console.log(`Added to .dev.vars from .dev.vars.example: ${missing.map(keyOf).join(", ")}`);
}

/** Whether .dev.vars (in the repository) sets `name`. */
export function devVarsSet(name: string): boolean {
  const devVars = join(ROOT, ".dev.vars");
  if (!existsSync(devVars)) return false;
  return readFileSync(devVars, "utf8")
    .split(/\r?\n/)
    .some((line) => new RegExp(`^\\s*(?:export\\s+)?${name}\\s*=`).test(line));
}

/**
 * Whether `wrangler dev` arguments set the variable `name` (`--var NAME:value`, `--var=NAME:value`,
 * or one of several pairs after one `--var`).
 */
export function varArgSet(argv: string[], name: string): boolean {
  let inVar = false;
  for (const arg of argv) {
    if (arg === "--var") inVar = true;
    else if (arg.startsWith("--var=")) {
      if (arg.slice(6).startsWith(`${name}:`)) return true;
      inVar = false;
    } else if (arg.startsWith("-")) inVar = false;
    else if (inVar && arg.startsWith(`${name}:`)) return true;
  }
  return false;
}

/** Value of `--name value` or `--name=value` in argv. */
export function optionValue(argv: string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === name) return argv[i + 1];
    if (arg.startsWith(`${name}=`)) return arg.slice(name.length + 1);
  }
  return undefined;
}

/** Exits with status 2 when argv holds an option (`--name` or `--name=value`) not in `known`. */
export function rejectUnknownOptions(argv: string[], known: readonly string[]): void {
  for (const arg of argv) {
    if (arg.startsWith("--") && !known.includes(arg.split("=")[0]!)) {
      console.error(`Unknown option ${arg} (see --help)`);
      process.exit(2);
    }
  }
}

/** A numeric option (an integer when `integer`), at least `min`; `fallback` when absent; exits with status 2 otherwise. */
export function numberOption(
  argv: string[],
  name: string,
  fallback: number,
  min: number,
  options: { integer?: boolean } = {},
): number {
  const raw = optionValue(argv, name);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (options.integer ? !Number.isInteger(value) || value < min : !Number.isFinite(value) || value < min) {
    console.error(`${name} must be ${options.integer ? "an integer" : "a number"} >= ${min} (got ${raw})`);
    process.exit(2);
  }
  return value;
}

/**
 * A wrangler config in `dir` that runs `entrySource` (written there as `entryName`) with the
 * repository's bindings, names and migrations, so that it opens the same local D1 and Durable
 * Object state under the same --persist-to, and its .dev.vars; `edit` may change the config's
 * text further. Returns the config's path (for `wrangler dev --config`).
 */
export function writeWorkerVariant(
  dir: string,
  entryName: string,
  entrySource: string,
  edit: (toml: string) => string = (toml) => toml,
): string {
  mkdirSync(dir, { recursive: true });
  const entry = join(dir, entryName);
  writeFileSync(entry, entrySource);
  // Paths in a config are relative to its directory: the copy's point back into the repository
  // (the entry aside), including the [build] step and the [assets] it writes (the /docs bundle).
  const toml = readFileSync(join(ROOT, "wrangler.toml"), "utf8")
    .replace(/^main\s*=.*$/m, `main = ${JSON.stringify(entry)}`)
    .replace(/^migrations_dir\s*=.*$/gm, `migrations_dir = ${JSON.stringify(join(ROOT, "migrations"))}`)
    .replace(/^cwd\s*=\s*"([^"]*)"$/m, (_, dir: string) => `cwd = ${JSON.stringify(resolve(ROOT, dir))}`)
    .replace(/^watch_dir\s*=\s*"([^"]*)"$/m, (_, dir: string) => `watch_dir = ${JSON.stringify(resolve(ROOT, dir))}`)
    .replace(/^directory\s*=\s*"([^"]*)"$/m, (_, dir: string) => `directory = ${JSON.stringify(resolve(ROOT, dir))}`);
  const config = join(dir, "wrangler.toml");
  writeFileSync(config, edit(toml));
  const devVars = join(ROOT, ".dev.vars");
  if (existsSync(devVars)) copyFileSync(devVars, join(dir, ".dev.vars"));
  return config;
}

/** Starts `wrangler dev` with extra arguments; resolves once it answers on /health. */
export async function startDev(
  args: string[],
  options: { port: number; env?: Record<string, string>; stdio?: "inherit" | "pipe" },
): Promise<ChildProcess> {
  const inherit = options.stdio === "inherit";
  const child = spawn(process.execPath, [WRANGLER, "dev", ...args], {
    cwd: ROOT,
    // Shown to the user (npm start): through redactedLines, so that no token of a URL (wrangler's own
    // access log prints every request's path) reaches the terminal or a log file. Keyboard shortcuts
    // need wrangler's stdout to be a terminal, so `npm start` has none; Ctrl-C stops it.
    stdio: inherit ? ["inherit", "pipe", "pipe"] : ["ignore", "pipe", "pipe"],
    // CLOUDFLARE_CF_FETCH_ENABLED=false: miniflare does not download the `request.cf` sample, which
    // the Worker never reads; offline, that download prints a stack trace on every start.
    env: {
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      ...(inherit && process.stdout.isTTY ? { FORCE_COLOR: "1" } : {}),
      ...process.env,
      WRANGLER_SEND_METRICS: "false",
      ...options.env,
    },
    detached: !inherit,
  });
  if (inherit) {
    redactedLines(child.stdout!, process.stdout);
    redactedLines(child.stderr!, process.stderr);
  }
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited early (${child.exitCode}):\n${output}`);
    try {
      const res = await fetch(`http://127.0.0.1:${options.port}/health`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  stopDev(child);
  throw new Error(`wrangler dev did not answer on port ${options.port} within 120 s:\n${output}`);
}

/** Copies `from` to `to` line by line with every URL token redacted (src/lib/secret-paths.ts). */
function redactedLines(from: NodeJS.ReadableStream, to: NodeJS.WritableStream): void {
  let pending = "";
  from.setEncoding("utf8");
  from.on("data", (chunk: string) => {
    const text = pending + chunk;
    const end = text.lastIndexOf("\n") + 1;
    pending = text.slice(end);
    if (end > 0) to.write(redactSecrets(text.slice(0, end)));
  });
  from.on("end", () => {
    if (pending) to.write(redactSecrets(pending));
  });
}

/** Stops a `wrangler dev` started by startDev (its whole process group). */
export function stopDev(child: ChildProcess): void {
  if (child.exitCode !== null || child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    child.kill("SIGTERM");
  }
}
