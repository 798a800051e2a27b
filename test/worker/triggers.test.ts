import { describe, expect, it } from "vitest";
import { CATALOGUE } from "../../scripts/triggers/catalogue";
import { firingGroup, normalise, renderTrigger } from "../../scripts/triggers/trigger";
import { env } from "./helpers";

// Local D1, migrated as every worker test file migrates it (test/worker/setup.ts), holds exactly the
// trigger catalogue (docs/triggers.md), in its order: what test/tools/triggers.test.ts checks on
// Node's SQLite, here on D1 itself, on both shards.

/** Names by firing group, in order, with each trigger's SQL. */
function byGroup(triggers: ReadonlyArray<{ name: string; sql: string }>) {
  const groups: Record<string, string[]> = {};
  for (const t of triggers) (groups[firingGroup(t.sql)] ??= []).push(`${t.name}: ${normalise(t.sql)}`);
  return groups;
}

describe("the triggers of local D1", () => {
  for (const binding of ["DB", "DB_1"] as const) {
    it(`are the catalogue's, in its order (${binding})`, async () => {
      const { results } = await env[binding]
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY rowid")
        .all<{ name: string; sql: string }>();
      expect(byGroup(results)).toEqual(byGroup(CATALOGUE.map((t) => ({ name: t.name, sql: renderTrigger(t) }))));
    });
  }
});
