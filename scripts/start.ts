// `npm start [-- <wrangler dev args>]`: migrate and seed the local D1, carry local Durable Object
// state across class renames (scripts/lib/do-rename.ts), then run `wrangler dev` on port 8787 (or
// the --port given). `--persist-to DIR` applies to migrations, seed, the carry and dev.
import { dirname, join, resolve } from "node:path";
import { carryLocalRenames } from "./lib/do-rename.ts";
import {
  applyMigrations,
  devVarsSet,
  ensureDevVars,
  optionValue,
  ROOT,
  seedLocal,
  startDev,
  varArgSet,
} from "./lib/local.ts";

const args = process.argv.slice(2);
const persistTo = optionValue(args, "--persist-to");
const portArg = optionValue(args, "--port");
const port = Number(portArg ?? 8787);
if (portArg === undefined) args.push("--port", String(port));

// The links in reminder emails open on this server, whatever the port, unless the user set where.
if (!varArgSet(args, "PUBLIC_BASE_URL") && !devVarsSet("PUBLIC_BASE_URL"))
  args.push("--var", `PUBLIC_BASE_URL:http://localhost:${port}`);

ensureDevVars();
console.log("Applying D1 migrations (local)...");
applyMigrations({ persistTo });
console.log("Seeding demo data (idempotent)...");
await seedLocal({ persistTo });
// Where wrangler dev keeps local state: --persist-to (from the repository), else .wrangler/state beside its config.
const config = resolve(ROOT, optionValue(args, "--config") ?? optionValue(args, "-c") ?? "wrangler.toml");
for (const { rename, objects, skipped } of await carryLocalRenames(
  resolve(ROOT, persistTo ?? join(dirname(config), ".wrangler", "state")),
  config,
)) {
  console.log(
    `Carried ${objects} local Durable Object(s) from class ${rename.from} to ${rename.to} (wrangler.toml renamed_classes); the old state is left as it was.`,
  );
  if (skipped.length > 0) console.warn(`Not carried (no name to derive the new id from): ${skipped.join(", ")}`);
}
console.log(`Starting wrangler dev on http://localhost:${port} ...`);
const child = await startDev(["--test-scheduled", ...args], { port, stdio: "inherit" });
console.log(`Ready: http://localhost:${port}/health  (demo client: demo-owner / demo-owner-secret)`);
const stop = () => child.kill("SIGINT");
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code) => process.exit(code ?? 0));
