// Prism's validating proxy (`prism proxy --errors`) in front of a running service: every request and
// answer that passes through it is checked against the OpenAPI document. A violation shows as an
// `sl-violations` header (requests and responses, warnings too) or as Prism's own problem answer
// (422 for an invalid request, 500 for an invalid response, 401/404/405 when the document has no
// such security, path or method); `violationsOf` reads both.
import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { freePort, sleep } from "./service.ts";

export interface Prism {
  /** http://127.0.0.1:<port>: send the requests here instead of to the service. */
  base: string;
  /** Everything Prism printed so far (its log names each violation). */
  output(): string;
  stop(): Promise<void>;
}

/** The Prism CLI's entry point, from the project's devDependency. */
function prismCli(): string {
  const require = createRequire(import.meta.url);
  return join(require.resolve("@stoplight/prism-cli/package.json"), "..", "dist", "index.js");
}

/** Starts `prism proxy <document> <upstream> --errors` on a free port and waits until it forwards. */
export async function startPrism(documentPath: string, upstream: string): Promise<Prism> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let output = "";
  const child = spawn(
    process.execPath,
    [prismCli(), "proxy", documentPath, upstream, "--errors", "--port", String(port), "--host", "127.0.0.1"],
    {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, CI: "true", NO_COLOR: "1" },
    },
  );
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const prism: Prism = { base, output: () => output, stop: () => stopPrism(child) };
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`prism exited early (${child.exitCode ?? child.signalCode}):\n${output}`);
    try {
      if ((await fetch(`${base}/health`)).ok) return prism;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await prism.stop();
      throw new Error(`prism did not forward /health within 60 s:\n${output}`);
    }
    await sleep(200);
  }
}

async function stopPrism(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    return;
  }
  const killed = await Promise.race([exited.then(() => true), sleep(5_000).then(() => false)]);
  if (!killed) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // gone meanwhile
    }
    await exited;
  }
}

/** What Prism found wrong with one exchange: nothing for a request and answer that match the document. */
export function violationsOf(status: number, headers: Headers, body: unknown): string[] {
  const found: string[] = [];
  const header = headers.get("sl-violations");
  if (header) found.push(`sl-violations: ${header}`);
  const problem = body as { type?: unknown } | null;
  if (
    headers.get("content-type")?.startsWith("application/problem+json") &&
    typeof problem?.type === "string" &&
    problem.type.includes("stoplight.io/prism")
  ) {
    found.push(`Prism answered ${status} itself: ${JSON.stringify(body)}`);
  }
  return found;
}
