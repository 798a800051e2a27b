// `npm run triggers -- --name <change> [--recreate <family>]` (bash scripts/dev.sh triggers ...):
// renders the trigger catalogue (scripts/triggers/) into docs/triggers.md and, where the migrations'
// triggers differ from it, into the next migration, created by `drizzle-kit generate --custom --name
// <change>` (so its journal entry and snapshot are drizzle's). `--recreate <family>` (repeatable;
// `hand-written`: every family but audit; `all`) re-creates a family's triggers even where they are
// unchanged. docs/triggers.md describes the workflow; test/tools/triggers.test.ts checks that nothing
// is left to generate.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { CATALOGUE } from "./triggers/catalogue.ts";
import { DOC, renderDoc } from "./triggers/doc.ts";
import { MAX_MIGRATION_BYTES, MIGRATIONS, liveTriggers, migrated, migrationText, plan } from "./triggers/migrations.ts";
import { FAMILIES, type Trigger } from "./triggers/trigger.ts";

const ROOT = join(import.meta.dirname, "..");

/** A new, empty migration from drizzle-kit; its path. */
function newMigration(name: string): string {
  const journal = () =>
    JSON.parse(readFileSync(join(MIGRATIONS, "meta", "_journal.json"), "utf8")) as { entries: Array<{ tag: string }> };
  const before = journal().entries.length;
  const kit = spawnSync(
    process.execPath,
    [join(ROOT, "node_modules", "drizzle-kit", "bin.cjs"), "generate", "--custom", "--name", name],
    { cwd: ROOT, stdio: "inherit" },
  );
  const entries = journal().entries;
  if (kit.status !== 0 || entries.length !== before + 1)
    throw new Error("drizzle-kit generate --custom did not add a migration");
  return join(MIGRATIONS, `${entries.at(-1)!.tag}.sql`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({
    options: { name: { type: "string" }, recreate: { type: "string", multiple: true, default: [] } },
  });
  const families = new Set(values.recreate);
  for (const f of families)
    if (f !== "all" && f !== "hand-written" && !(FAMILIES as readonly string[]).includes(f))
      throw new Error(`--recreate ${f}: not a family (${FAMILIES.join(", ")}), hand-written or all`);
  const recreate = (t: Trigger) =>
    families.has("all") || families.has(t.family) || (families.has("hand-written") && t.family !== "audit");
  writeFileSync(DOC, renderDoc());
  console.log(`docs/triggers.md: ${CATALOGUE.length} triggers`);
  const changes = plan(liveTriggers(migrated()), CATALOGUE, recreate);
  if (changes.drop.length === 0 && changes.create.length === 0) {
    console.log("The migrations create exactly the catalogue's triggers: no migration needed.");
  } else if (!values.name) {
    console.error(
      `${changes.drop.length} triggers to drop and ${changes.create.length} to create: give the migration a name with --name <change>.`,
    );
    process.exit(1);
  } else {
    const text = migrationText(changes);
    const bytes = Buffer.byteLength(text);
    if (bytes > MAX_MIGRATION_BYTES) {
      console.error(
        `${changes.drop.length} triggers to drop and ${changes.create.length} to create make ${bytes} bytes, over ${MAX_MIGRATION_BYTES}: change fewer triggers per migration.`,
      );
      process.exit(1);
    }
    const file = newMigration(values.name);
    writeFileSync(file, text);
    console.log(
      `${file}: ${changes.drop.length} DROP TRIGGER, ${changes.create.length} CREATE TRIGGER, ${bytes} bytes`,
    );
  }
}
