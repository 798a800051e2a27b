// The README's walk-through, run as written (`npm run walkthrough`, test/e2e/walkthrough.test.ts):
// its ```sh blocks, verbatim, in `bash -euo pipefail` against a fresh service, where every curl must
// answer the status its comment states (or a 2xx), and afterwards step 6's email must be in the local
// outbox, addressed to the item's contact, and the service's log must hold no stack trace.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, sleep, startService, type Service } from "../../test/e2e/support/service.ts";
import { ROOT } from "./local.ts";

const SECTION = "## Walk-through";
/** A command's comment that starts with an HTTP status states the status it answers: `# 412: ...`. */
const STATUS_COMMENT = /(?:^|\s)#\s*([1-5]\d\d)\b/;
/** Longest the blocks may take: step 6 waits for a reminder's minute (up to 70 s, 3 minutes at most). */
const RUN_TIMEOUT_MS = 6 * 60_000;

export interface WalkthroughScript {
  /** The bash script: the walk-through's lines at their README line numbers, every other line blank. */
  script: string;
  /** README line -> the HTTP status a curl on that line must answer (every line of a continued command). */
  expected: Map<number, number>;
  /** How many ```sh blocks the section has. */
  blocks: number;
}

/** The `## Walk-through` section's ```sh blocks as a script whose line numbers are README.md's. */
export function walkthroughScript(readme: string, preamble: string): WalkthroughScript {
  const lines = readme.split("\n");
  const start = lines.indexOf(SECTION);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" section`);
  const next = lines.findIndex((line, i) => i > start && line.startsWith("## "));
  const end = next < 0 ? lines.length : next;
  const script: string[] = [];
  const expected = new Map<number, number>();
  let blocks = 0;
  let inBlock = false;
  let command: number[] = []; // README lines (1-based) of the command being read, continued by `\`
  for (let i = 0; i < end; i++) {
    const line = lines[i]!;
    const inSection = i > start;
    if (inSection && !inBlock && /^```sh\s*$/.test(line)) {
      inBlock = true;
      blocks++;
      script.push("");
    } else if (inBlock && /^```\s*$/.test(line)) {
      inBlock = false;
      script.push("");
    } else if (inBlock) {
      script.push(line);
      command.push(i + 1);
      if (!line.endsWith("\\")) {
        const status = STATUS_COMMENT.exec(line)?.[1];
        if (status) for (const n of command) expected.set(n, Number(status));
        command = [];
      }
    } else {
      script.push("");
    }
  }
  if (blocks === 0) throw new Error(`README.md's "${SECTION}" section has no \`\`\`sh block`);
  // Line 1 is the title, never a command: the preamble goes there.
  script[0] = `source ${shellQuote(preamble)}`;
  script.push("walkthrough_done");
  return { script: `${script.join("\n")}\n`, expected, blocks };
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export interface CurlCall {
  line: number;
  status: number;
  exit: number;
}

export interface BlocksRun {
  /** bash's exit code (null: killed at the time limit). */
  code: number | null;
  /** What the blocks printed, stdout and stderr as they came. */
  transcript: string;
  calls: CurlCall[];
  /** The environment at the end of a run that got there (TOKEN, ITEM, ...). */
  vars: Record<string, string> | null;
  /** Problems found: a command that failed, a curl answer with another status, an expectation no curl met. */
  failures: string[];
}

/**
 * Runs the blocks of `readme` against `base` in a temporary directory (their files, e.g. items.csv,
 * go there), with `env` added; `print` gets the output as it comes. Stops whatever the blocks left
 * running in the background (step 7's receiver) before it returns.
 */
export async function runWalkthroughBlocks(
  readme: string,
  base: string,
  options: { env?: Record<string, string>; print?: (chunk: string) => void; timeoutMs?: number } = {},
): Promise<BlocksRun> {
  const timeoutMs = options.timeoutMs ?? RUN_TIMEOUT_MS;
  const dir = mkdtempSync(join(tmpdir(), "expiry-walkthrough-"));
  try {
    const work = join(dir, "work");
    mkdirSync(work);
    const files = {
      script: join(dir, "walkthrough.sh"),
      expect: join(dir, "expect"),
      calls: join(dir, "calls"),
      vars: join(dir, "vars.json"),
    };
    const { script, expected } = walkthroughScript(readme, join(ROOT, "scripts", "lib", "walkthrough.sh"));
    writeFileSync(files.script, script);
    writeFileSync(files.expect, [...expected].map(([line, status]) => `${line} ${status}\n`).join(""));
    writeFileSync(files.calls, "");
    const { code, transcript } = await runBash(
      files.script,
      work,
      {
        ...process.env,
        ...options.env,
        BASE: base,
        WALKTHROUGH_EXPECT: files.expect,
        WALKTHROUGH_CALLS: files.calls,
        WALKTHROUGH_VARS: files.vars,
      },
      options.print,
      timeoutMs,
    );
    const calls = readFileSync(files.calls, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((row) => {
        const [line, status, exit] = row.split(" ").map(Number);
        return { line: line!, status: status!, exit: exit! };
      });
    let vars: Record<string, string> | null = null;
    try {
      vars = JSON.parse(readFileSync(files.vars, "utf8"));
    } catch {
      // the run stopped before its end
    }
    const failures: string[] = [];
    if (code !== 0)
      failures.push(
        code === null
          ? `the walk-through took longer than ${timeoutMs / 1000} s`
          : `the walk-through stopped (bash exit ${code}): ${lastLines(transcript, 3)}`,
      );
    for (const call of calls) {
      const want = expected.get(call.line);
      const ok =
        call.exit === 0 && (want === undefined ? call.status >= 200 && call.status < 300 : call.status === want);
      if (!ok)
        failures.push(
          `README.md:${call.line}: curl ${call.exit !== 0 ? `failed (exit ${call.exit})` : `answered ${call.status}, expected ${want ?? "2xx"}`}`,
        );
    }
    // Only a run that got to its end can tell a status comment that no curl met.
    if (vars)
      for (const line of unmetExpectations(expected, calls))
        failures.push(`README.md:${line}: its comment states a status, but no curl ran there`);
    return { code, transcript, calls, vars, failures };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The first line of each continued command with a status comment on which no curl call was made. */
function unmetExpectations(expected: Map<number, number>, calls: CurlCall[]): number[] {
  const called = new Set(calls.map((c) => c.line));
  const lines = [...expected.keys()].sort((a, b) => a - b);
  const commands: number[][] = [];
  for (const line of lines) {
    const last = commands.at(-1);
    if (last && last.at(-1) === line - 1) last.push(line);
    else commands.push([line]);
  }
  return commands.filter((command) => !command.some((line) => called.has(line))).map((command) => command[0]!);
}

/** bash -euo pipefail `script` in its own process group, which is ended when bash exits. */
async function runBash(
  script: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  print: ((chunk: string) => void) | undefined,
  timeoutMs: number,
) {
  const child = spawn("bash", ["-euo", "pipefail", script], {
    cwd,
    env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let transcript = "";
  const take = (chunk: Buffer) => {
    const text = chunk.toString();
    transcript += text;
    print?.(text);
  };
  child.stdout!.on("data", take);
  child.stderr!.on("data", take);
  // "exit", not "close": a background job of the blocks (step 7's receiver) keeps the pipes open.
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    child.on("exit", (exitCode) => {
      clearTimeout(timer);
      resolve(exitCode);
    });
  });
  await endGroup(child.pid!);
  child.stdout!.destroy();
  child.stderr!.destroy();
  return { code, transcript };
}

/** SIGTERM to a process group, SIGKILL after 5 s; resolves when nothing of it is left. */
async function endGroup(pgid: number): Promise<void> {
  const alive = () => {
    try {
      process.kill(-pgid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pgid, sig);
    } catch {
      // already gone
    }
  };
  signal("SIGTERM");
  for (let i = 0; i < 50 && alive(); i++) await sleep(100);
  signal("SIGKILL");
  for (let i = 0; i < 50 && alive(); i++) await sleep(100);
  if (alive()) throw new Error(`the walk-through's process group ${pgid} survived SIGKILL`);
}

const lastLines = (text: string, n: number) => text.trimEnd().split("\n").slice(-n).join(" | ");

// Node's stack frames ("    at fn (file:1:2)"), as the service prints them (miniflare dims them).
const ANSI = /\x1b\[[0-9;]*m/g;
const STACK_FRAME = /^\s+at\s.*(?::\d+:\d+\)?|\(native\)|<anonymous>\)?)\s*$/;

/** Each stack frame in `log` with the line before it, for the report. */
export function stackTraces(log: string): string[] {
  const lines = log.replace(ANSI, "").split("\n");
  const found: string[] = [];
  lines.forEach((line, i) => {
    if (STACK_FRAME.test(line) && !STACK_FRAME.test(lines[i - 1] ?? "")) found.push(`${lines[i - 1]?.trim()}\n${line}`);
  });
  return found;
}

interface Json {
  status: number;
  body: any;
}

async function getJson(base: string, path: string, token?: string): Promise<Json> {
  const res = await fetch(`${base}${path}`, { headers: token ? { Authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

/**
 * Step 6's point: the item ($ITEM) has a contact, one of its reminders was sent with its email
 * delivered to that contact, and that email is in the local outbox. Returns the problems found.
 */
export async function checkReminderEmail(base: string, vars: Record<string, string>): Promise<string[]> {
  const { TOKEN: token, ITEM: item } = vars;
  if (!token || !item) return ["the walk-through set no TOKEN or no ITEM"];
  const detail = await getJson(base, `/v1/items/${item}`, token);
  const contactId = detail.body?.data?.contact_id;
  if (!contactId) return [`item ${item} has no contact: ${JSON.stringify(detail.body).slice(0, 300)}`];
  const contact = await getJson(base, `/v1/contacts/${contactId}`, token);
  const email: string | undefined = contact.body?.data?.email;
  if (!email) return [`contact ${contactId} has no email`];
  const problems: string[] = [];
  const reminders = await getJson(base, `/v1/items/${item}/reminders`, token);
  const delivered = (reminders.body?.data?.sent ?? []).some((r: any) =>
    // Handed to the binding: `sent`, or a state only a sent email reaches (step 12 bounces it).
    (r.deliveries ?? []).some(
      (d: any) =>
        d.channel === "email" &&
        ["sent", "bounced", "complained"].includes(d.state) &&
        d.delivered_at &&
        d.recipient === email,
    ),
  );
  if (!delivered)
    problems.push(
      `no reminder of item ${item} has an email delivery sent to ${email}: ${JSON.stringify(reminders.body?.data?.sent).slice(0, 500)}`,
    );
  const outbox = await getJson(base, "/cdn-cgi/explorer/api/local/email/sending?per_page=100");
  const title: string = detail.body.data.title;
  const emails: Array<{ to: string[]; subject: string }> = outbox.body?.result ?? [];
  if (!emails.some((m) => m.to.includes(email) && m.subject.includes(title))) {
    problems.push(
      `the local outbox holds no email to ${email} about "${title}": ${JSON.stringify(outbox.body).slice(0, 500)}`,
    );
  }
  return problems;
}

export interface WalkthroughResult {
  ok: boolean;
  /** The service's address, http://127.0.0.1:<port>. */
  base: string;
  failures: string[];
  transcript: string;
  /** Everything the service printed, from its start to its stop. */
  serviceLog: string;
  calls: CurlCall[];
  seconds: { start: number; blocks: number };
}

/**
 * The whole check: a fresh service (`npm start` on `port`, or a free port, and a new --persist-to
 * directory; `serviceEnv` is added to its environment), the README's blocks, then step 6's email and the
 * service's log. `print` gets the blocks' output as it comes.
 */
export async function runReadmeWalkthrough(
  options: { serviceEnv?: Record<string, string>; print?: (chunk: string) => void; port?: number } = {},
): Promise<WalkthroughResult> {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const t0 = Date.now();
  const service: Service = await startService("expiry-walkthrough-", [], {
    env: options.serviceEnv,
    port: options.port,
  });
  const t1 = Date.now();
  let run: BlocksRun;
  const failures: string[] = [];
  try {
    run = await runWalkthroughBlocks(readme, service.base, {
      env: { HOOK_PORT: String(await freePort()) },
      print: options.print,
    });
    failures.push(...run.failures);
    if (run.vars) failures.push(...(await checkReminderEmail(service.base, run.vars)));
  } finally {
    await service.stop();
  }
  const t2 = Date.now();
  const serviceLog = service.output();
  for (const trace of stackTraces(serviceLog)) failures.push(`a stack trace in the service's log:\n${trace}`);
  for (const trace of stackTraces(run.transcript))
    failures.push(`a stack trace in the walk-through's output:\n${trace}`);
  return {
    ok: failures.length === 0,
    base: service.base,
    failures,
    transcript: run.transcript,
    serviceLog,
    calls: run.calls,
    seconds: { start: (t1 - t0) / 1000, blocks: (t2 - t1) / 1000 },
  };
}
