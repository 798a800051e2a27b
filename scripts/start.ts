// `npm start [-- <wrangler dev args>]`: migrate and seed the local D1, then run `wrangler dev`
// on port 8787 (or the --port given). `--persist-to DIR` applies to migrations, seed and dev.
import { applyMigrations, ensureDevVars, optionValue, seedLocal, startDev } from "./lib/local.ts";

const args = process.argv.slice(2);
const persistTo = optionValue(args, "--persist-to");
const portArg = optionValue(args, "--port");
const port = Number(portArg ?? 8787);
if (portArg === undefined) args.push("--port", String(port));

ensureDevVars();
console.log("Applying D1 migrations (local)...");
applyMigrations({ persistTo });
console.log("Seeding demo data (idempotent)...");
await seedLocal({ persistTo });
console.log(`Starting wrangler dev on http://localhost:${port} ...`);
const child = await startDev(["--test-scheduled", ...args], { port, stdio: "inherit" });
console.log(`Ready: http://localhost:${port}/health  (demo client: demo-owner / demo-owner-secret)`);
const stop = () => child.kill("SIGINT");
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code) => process.exit(code ?? 0));
