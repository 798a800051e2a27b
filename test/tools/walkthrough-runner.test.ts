// The README walk-through's runner (scripts/lib/walkthrough.ts) without a service: the script it
// builds from README.md, and what it makes of commands that fail, run against a stub server.
import { execFile } from "node:child_process";
import { existsSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/local.ts";
import { runWalkthroughBlocks, stackTraces, walkthroughScript } from "../../scripts/lib/walkthrough.ts";

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const readmeLines = readme.split("\n");

/** The README's first walk-through block up to its first step: BASE and the `field` helper. */
const helpers = (() => {
  const { script } = walkthroughScript(readme, "/dev/null");
  const lines = script.split("\n");
  const first = lines.findIndex((line, i) => i > 0 && line !== "");
  const step1 = lines.findIndex((line) => line.startsWith("# 1. "));
  return lines.slice(first, step1).join("\n");
})();

/** A README whose walk-through is `body`, after the real one's BASE and `field` lines. */
const readmeWith = (body: string) => `# Title\n\n## Walk-through\n\n\`\`\`sh\n${helpers}\n${body}\n\`\`\`\n\n## Next\n`;
/** README line number of the first line of `body` in readmeWith(body). */
const bodyStart = 6 + helpers.split("\n").length;

let server: Server;
let base = "";

beforeAll(async () => {
  server = createServer((req, res) => {
    const status = { "/ok": 200, "/conflict": 409, "/gone": 404 }[req.url ?? ""] ?? 500;
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify(status === 200 ? { success: true, data: { id: 7 } } : { success: false, msg: `status ${status}` }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe("the script built from README.md", () => {
  const { script, expected, blocks } = walkthroughScript(readme, "/x/walkthrough.sh");
  const lines = script.split("\n");

  it("keeps every walk-through line at its README line number, with the preamble on line 1", () => {
    expect(blocks).toBeGreaterThanOrEqual(5);
    expect(lines[0]).toBe("source '/x/walkthrough.sh'");
    const kept = lines.slice(1, -2).flatMap((line, i) => (line === "" ? [] : [i + 2]));
    expect(kept.length).toBeGreaterThan(50);
    for (const n of kept) expect(lines[n - 1]).toBe(readmeLines[n - 1]);
    expect(lines.at(-2)).toBe("walkthrough_done");
  });

  it("takes BASE from the environment, the one thing the runner sets", () => {
    expect(lines).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell line
      "BASE=${BASE:-http://localhost:8787}   # after `bash scripts/dev.sh start --port 8790`: BASE=http://localhost:8790",
    );
  });

  it("reads the statuses the comments state (412, 304, 404, 202) on every line of their command", () => {
    expect([...new Set(expected.values())]).toEqual(expect.arrayContaining([202, 304, 404, 412]));
    for (const n of expected.keys()) expect(readmeLines[n - 1]).toMatch(/curl|^\s+-/);
  });
});

describe("a run against a stub server", () => {
  it("passes when every curl answers 2xx or the status its comment states", async () => {
    const run = await runWalkthroughBlocks(
      readmeWith(
        ['curl -s "$BASE/ok"', 'curl -s -o /dev/null -w "%{http_code}\\n" "$BASE/gone"   # 404 at once'].join("\n"),
      ),
      base,
    );
    expect(run.failures, run.transcript).toEqual([]);
    expect(run.code).toBe(0);
    expect(run.calls).toEqual([
      { line: bodyStart, status: 200, exit: 0 },
      { line: bodyStart + 1, status: 404, exit: 0 },
    ]);
    expect(run.transcript).toContain("404\n");
    expect(run.vars?.BASE).toBe(base);
  });

  it("stops at a curl answering 409, naming its README line, and runs nothing after it", async () => {
    const run = await runWalkthroughBlocks(
      readmeWith(['curl -s -X POST "$BASE/conflict" \\\n  -d x', "echo after"].join("\n")),
      base,
    );
    expect(run.code).not.toBe(0);
    expect(run.failures).toContain(`README.md:${bodyStart}: curl answered 409, expected 2xx`);
    expect(run.transcript).toContain(`README.md:${bodyStart}: HTTP 409, expected 2xx`);
    expect(run.transcript).not.toContain("after");
    expect(run.vars).toBeNull();
  });

  it("fails when a status comment is not met", async () => {
    const run = await runWalkthroughBlocks(readmeWith('curl -s "$BASE/ok"   # 412: stale'), base);
    expect(run.failures).toContain(`README.md:${bodyStart}: curl answered 200, expected 412`);
  });

  it("stops at a capture that finds no such field, before its value is sent anywhere", async () => {
    const body = [
      'ID=$(curl -s "$BASE/ok" | field data.contact_id)',
      'curl -s -d "{\\"contact_id\\":$ID}" "$BASE/ok"',
    ].join("\n");
    const run = await runWalkthroughBlocks(readmeWith(body), base);
    expect(run.code).not.toBe(0);
    expect(run.transcript).toContain("no data.contact_id in:");
    expect(run.calls.map((c) => c.line)).toEqual([bodyStart]);
    const found = await runWalkthroughBlocks(
      readmeWith('ID=$(curl -s "$BASE/ok" | field data.id)\necho "id=$ID"'),
      base,
    );
    expect(found.transcript).toContain("id=7");
  });

  it("stops at a failing command inside a command substitution", async () => {
    const run = await runWalkthroughBlocks(readmeWith('X=$(curl -s "$BASE/conflict" | cat)\necho after'), base);
    expect(run.code).not.toBe(0);
    expect(run.transcript).not.toContain("after");
  });

  it("fails when no curl runs where a comment states a status", async () => {
    const run = await runWalkthroughBlocks(readmeWith("echo hi   # 404 at once"), base);
    expect(run.failures).toEqual([`README.md:${bodyStart}: its comment states a status, but no curl ran there`]);
  });

  it("ends what the blocks left in the background", async () => {
    const dir = mkdtempSync(join(tmpdir(), "walkthrough-runner-"));
    try {
      const pidFile = join(dir, "pid");
      const run = await runWalkthroughBlocks(readmeWith(`sleep 300 &\necho $! > ${pidFile}`), base);
      expect(run.failures, run.transcript).toEqual([]);
      const pid = Number(readFileSync(pidFile, "utf8"));
      expect(() => process.kill(pid, 0)).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("runs the blocks in a directory of their own", async () => {
    const run = await runWalkthroughBlocks(readmeWith("printf x > items.csv\npwd"), base);
    const cwd = run.transcript.trim();
    expect(cwd).not.toBe(ROOT);
    expect(existsSync(join(ROOT, "items.csv"))).toBe(false);
    expect(existsSync(cwd)).toBe(false); // removed afterwards
  });
});

describe("stackTraces", () => {
  it("finds Node's stack frames, dimmed or not, with the line before", () => {
    const log = [
      "[wrangler:warn] Unable to fetch the `Request.cf` object! Falling back to a default placeholder...",
      "\x1b[2mError: connect ECONNREFUSED 127.0.0.1:9",
      "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1638:16)\x1b[22m",
      "    at TCPConnectWrap.callbackTrampoline (node:internal/async_hooks:130:17)",
      "[wrangler:info] Ready on http://localhost:8871",
    ].join("\n");
    expect(stackTraces(log)).toEqual([
      "Error: connect ECONNREFUSED 127.0.0.1:9\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1638:16)",
    ]);
    expect(stackTraces('{"level":"info","msg":"request","path":"/v1/items"}\nlooked at 3 items')).toEqual([]);
  });
});

// `npm run walkthrough -- --port N`: the port is checked before a service starts (a taken port
// would have the run poll another server's /health). The run on a free port: test/e2e/walkthrough.test.ts.
describe("the runner's --port", { timeout: 60_000 }, () => {
  const walkthrough = (args: string[]) =>
    new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(ROOT, "scripts", "walkthrough.ts"), ...args],
        { cwd: ROOT, timeout: 30_000 },
        (error, _stdout, stderr) =>
          resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stderr }),
      );
    });

  it("refuses a port that is taken, naming it, before starting anything", async () => {
    const port = new URL(base).port;
    const run = await walkthrough(["--port", port]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`npm start on port ${port}`);
    expect(run.stderr).toContain(`port ${port} is in use: choose another`);
  });

  it("answers a port that is not one, or an unknown option, with exit 2 and the usage", async () => {
    for (const args of [["--port", "80a"], ["--port", "70000"], ["--colour"]]) {
      const run = await walkthrough(args);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr).toContain("usage: npm run walkthrough -- [--port N]");
    }
  });
});
