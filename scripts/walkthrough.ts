// `npm run walkthrough` (`bash scripts/dev.sh walkthrough`): runs the README's walk-through as written
// against a fresh service of its own and exits non-zero when a command fails, step 6's email is not
// in the local outbox or the service printed a stack trace (scripts/lib/walkthrough.ts).
import { runReadmeWalkthrough } from "./lib/walkthrough.ts";

console.error("Starting a fresh service (npm start on a free port, a new --persist-to directory)...");
const result = await runReadmeWalkthrough({ print: (chunk) => process.stdout.write(chunk) });
const curls = result.calls.length;
console.error(`\nService started in ${result.seconds.start.toFixed(0)} s; the walk-through ran in ${result.seconds.blocks.toFixed(0)} s (${curls} curl calls).`);
if (result.ok) {
  console.error("Walk-through OK: every command succeeded, every curl answered as its comment says, step 6's email is in the outbox, no stack trace.");
} else {
  console.error(`\nThe service's log, last 60 lines:\n${result.serviceLog.trimEnd().split("\n").slice(-60).join("\n")}\n`);
  console.error(`Walk-through FAILED:\n${result.failures.map((f) => `- ${f}`).join("\n")}`);
  process.exitCode = 1;
}
