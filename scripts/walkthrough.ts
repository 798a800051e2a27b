// `npm run walkthrough` (`bash scripts/dev.sh walkthrough`): runs the README's walk-through as written
// against a fresh service of its own and exits non-zero when a command fails, step 6's email is not
// in the local outbox or the service printed a stack trace (scripts/lib/walkthrough.ts).
// `--port N` starts that service on port N (it must be free); a free port the OS picks otherwise.
import { parseArgs } from "node:util";
import { runReadmeWalkthrough } from "./lib/walkthrough.ts";

const USAGE = "usage: npm run walkthrough -- [--port N]   (bash scripts/dev.sh walkthrough [--port N])";
let port: number | undefined;
try {
  const { values } = parseArgs({ options: { port: { type: "string" }, help: { type: "boolean", short: "h" } } });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port < 1 || port > 65535)
      throw new Error(`--port must be a port number (1 to 65535), not "${values.port}"`);
  }
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`);
  process.exit(2);
}

console.error(
  `Starting a fresh service (npm start on ${port === undefined ? "a free port" : `port ${port}`}, a new --persist-to directory)...`,
);
let result: Awaited<ReturnType<typeof runReadmeWalkthrough>>;
try {
  result = await runReadmeWalkthrough({ print: (chunk) => process.stdout.write(chunk), port });
} catch (error) {
  console.error(`Walk-through FAILED: ${(error as Error).message}`);
  process.exit(1);
}
const curls = result.calls.length;
console.error(
  `\nService started in ${result.seconds.start.toFixed(0)} s; the walk-through ran in ${result.seconds.blocks.toFixed(0)} s (${curls} curl calls).`,
);
if (result.ok) {
  console.error(
    "Walk-through OK: every command succeeded, every curl answered as its comment " +
      "says, step 6's email is in the outbox, no stack trace.",
  );
} else {
  console.error(
    `\nThe service's log, last 60 lines:\n${result.serviceLog.trimEnd().split("\n").slice(-60).join("\n")}\n`,
  );
  console.error(`Walk-through FAILED:\n${result.failures.map((f) => `- ${f}`).join("\n")}`);
  process.exitCode = 1;
}
