// The real service for the e2e tests: `node scripts/start.ts` (what `npm start` runs) on a free
// port with a fresh --persist-to dir, in its own process group, and a shutdown that leaves no
// start.ts, wrangler or workerd process behind.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "../../../scripts/lib/local.ts";
import { procStats } from "../../../scripts/lib/procs.ts";
import { DEMO_CLIENTS } from "../../../scripts/seed-data.ts";

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One JSON request to the service at `base`: its status and parsed body. */
export async function callApi(
  base: string,
  method: string,
  path: string,
  token?: string,
  body?: unknown,
): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

/** A token of the demo owner client (the seeded account's `*` client) from the service at `base`. */
export async function ownerToken(base: string): Promise<string> {
  const owner = DEMO_CLIENTS.find((c) => c.clientId === "demo-owner")!;
  const res = await callApi(base, "POST", "/v1/oauth/token", undefined, {
    grant_type: "client_credentials",
    client_id: owner.clientId,
    client_secret: owner.secret,
  });
  if (res.status !== 200) throw new Error(`token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.access_token as string;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `file args` in the project root (`env` added); resolves with the exit code instead of throwing. */
export function runCommand(file: string, args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: ROOT, env: { ...process.env, CI: "true", ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The operator CLI (scripts/admin.ts) against the database of the service started on `persistDir`. */
export function operatorCli(persistDir: string, ...args: string[]): Promise<CliResult> {
  return runCommand(process.execPath, [join(ROOT, "scripts", "admin.ts"), ...args, "--persist-to", persistDir]);
}

/** One `name: value` line of the CLI's output. */
export function cliField(output: string, name: string): string {
  const match = new RegExp(`^\\s*${name}:\\s+(\\S+)`, "m").exec(output);
  if (!match) throw new Error(`no ${name} in CLI output:\n${output}`);
  return match[1]!;
}

export interface Service {
  /** http://127.0.0.1:<port> */
  base: string;
  /** The --persist-to dir (local D1, R2, Durable Objects), for the operator CLI. */
  persistDir: string;
  /** Everything the service printed so far. */
  output(): string;
  /** Stops the whole process tree and removes the dir. */
  stop(): Promise<void>;
  /** Stops the whole process tree (SIGTERM, as Ctrl-C would) and keeps the dir, for a restart on it. */
  halt(): Promise<void>;
  /** Kills the whole process tree at once (SIGKILL: no clean-up runs) and keeps the dir, for a restart on it. */
  kill(): Promise<void>;
}

/**
 * Starts the service (extra arguments go to start.ts, e.g. `--var K:V`) and waits for /health.
 * `persistDir`: the state of an earlier (killed) service to start on; a new dir otherwise.
 * `env`: added to the service's environment. `port`: where it listens (it must be free); a free
 * port the OS picks otherwise.
 */
export async function startService(
  prefix: string,
  extraArgs: string[] = [],
  options: { persistDir?: string; env?: Record<string, string>; port?: number } = {},
): Promise<Service> {
  // A given port is checked first: on a taken one, the /health polled below could be another server's.
  if (options.port !== undefined) {
    if (!(await portIsFree(options.port))) throw new Error(`port ${options.port} is in use: choose another`);
    return startServiceOnce(prefix, extraArgs, options);
  }
  // A port taken between freePort() and wrangler's bind (another service starting on this machine)
  // fails the start before anything ran: try again on another port.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServiceOnce(prefix, extraArgs, options);
    } catch (error) {
      if (attempt >= 3 || !String((error as Error).message).includes("Address already in use")) throw error;
    }
  }
}

async function startServiceOnce(
  prefix: string,
  extraArgs: string[],
  options: { persistDir?: string; env?: Record<string, string>; port?: number },
): Promise<Service> {
  const keep = options.persistDir !== undefined;
  const persistDir = options.persistDir ?? mkdtempSync(join(tmpdir(), prefix));
  const port = options.port ?? (await freePort());
  const base = `http://127.0.0.1:${port}`;
  let output = "";
  const server = spawn(
    process.execPath,
    [join(ROOT, "scripts", "start.ts"), "--port", String(port), "--persist-to", persistDir, ...extraArgs],
    {
      cwd: ROOT,
      detached: true, // own process group: stop() ends start.ts, wrangler and workerd together
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", ...options.env },
    },
  );
  server.stdout!.on("data", (chunk) => (output += chunk));
  server.stderr!.on("data", (chunk) => (output += chunk));
  const service: Service = {
    base,
    persistDir,
    output: () => output,
    async stop() {
      try {
        if (server.pid !== undefined) await stopServer(server);
      } finally {
        rmSync(persistDir, { recursive: true, force: true });
      }
    },
    async halt() {
      if (server.pid !== undefined) await stopServer(server);
    },
    async kill() {
      if (server.pid !== undefined) await stopServer(server, "SIGKILL");
    },
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) {
      await (keep ? service.halt() : service.stop());
      throw new Error(`npm start exited early (${server.exitCode ?? server.signalCode}):\n${output}`);
    }
    try {
      if ((await fetch(`${base}/health`)).ok) return service;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await (keep ? service.halt() : service.stop());
      throw new Error(`no answer on ${base}/health within 120 s:\n${output}`);
    }
    await sleep(200);
  }
}

/**
 * A port nobody listens on right now, below Linux's ephemeral range (32768-60999): workerd and
 * wrangler bind many sockets on port 0, and one of them could take an ephemeral port between this
 * check and the service's own bind (seen: "Address already in use" when two services started at once).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (await portIsFree(port)) return port;
  }
}

/** Whether nothing listens on `port` on the loopback address right now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

interface Proc {
  pid: number;
  ppid: number;
  pgrp: number;
}

/** Live (non-zombie) processes from /proc, or null where there is no /proc. */
function processTable(): Proc[] | null {
  if (!existsSync("/proc/self/stat")) return null;
  return procStats()
    .filter(({ fields }) => fields[0] !== "Z" && fields[0] !== "X")
    .map(({ pid, fields }) => ({ pid, ppid: Number(fields[1]), pgrp: Number(fields[2]) }));
}

/** `root`, every live process below it, and every live member of its process group. */
function serverProcesses(root: number): number[] {
  const table = processTable();
  if (!table) {
    try {
      process.kill(-root, 0);
      return [root];
    } catch {
      return [];
    }
  }
  const found = new Set(table.filter((p) => p.pid === root || p.pgrp === root).map((p) => p.pid));
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const p of table) {
      if (p.ppid === parent && !found.has(p.pid)) {
        found.add(p.pid);
        queue.push(p.pid);
      }
    }
  }
  return [...found];
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Stops start.ts, wrangler and workerd: the whole process group, then any straggler by pid. */
async function stopServer(child: ChildProcess, first: NodeJS.Signals = "SIGTERM"): Promise<void> {
  const pgid = child.pid!;
  // A kill lands first (start.ts, wrangler and workerd share the group): reading the process table
  // takes a while on a loaded machine, and a crash test needs the kill while its work is in flight.
  if (first === "SIGKILL") signal(-pgid, first);
  // Remember the tree now: once start.ts exits, its descendants are re-parented.
  const tree = serverProcesses(pgid);
  const remaining = () => {
    const now = new Set(serverProcesses(pgid));
    const table = processTable();
    for (const pid of tree) if (table?.some((p) => p.pid === pid)) now.add(pid);
    return [...now];
  };
  signal(-pgid, first);
  if (first === "SIGKILL") for (const pid of tree) signal(pid, "SIGKILL");
  for (let i = 0; i < 100 && remaining().length > 0; i++) await sleep(100);
  if (remaining().length > 0) {
    console.warn(`e2e: processes still running 10 s after SIGTERM, killing: ${remaining().join(" ")}`);
    signal(-pgid, "SIGKILL");
    for (const pid of remaining()) signal(pid, "SIGKILL");
    for (let i = 0; i < 50 && remaining().length > 0; i++) await sleep(100);
  }
  const survivors = remaining();
  if (survivors.length > 0) throw new Error(`processes survived shutdown: ${survivors.join(", ")}`);
}
