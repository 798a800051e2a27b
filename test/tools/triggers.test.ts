// The trigger catalogue (scripts/triggers/, docs/triggers.md): the database the migrations build holds
// exactly the catalogue's triggers, in its order; they name only tables and columns the drizzle
// schema has; docs/triggers.md is what the generator renders; and the generator's plan finds every
// kind of difference.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { is } from "drizzle-orm";
import { SQLiteTable, getTableConfig } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import * as schema from "../../src/db/schema";
import { CATALOGUE } from "../../scripts/triggers/catalogue.ts";
import { CHANNEL_VIAS as TRIGGER_CHANNEL_VIAS } from "../../scripts/triggers/hand-written.ts";
import { CHANNEL_VIAS } from "../../src/lib/actors.ts";
import { DOC, renderDoc } from "../../scripts/triggers/doc.ts";
import {
  MARKER,
  MAX_MIGRATION_BYTES,
  MIGRATIONS,
  liveTriggers,
  migrated,
  plan,
  type LiveTrigger,
} from "../../scripts/triggers/migrations.ts";
import { firingGroup, normalise, renderTrigger } from "../../scripts/triggers/trigger.ts";

const db = migrated();
const live = liveTriggers(db);
const byName = <T extends { name: string }>(list: readonly T[], value: (t: T) => string) =>
  Object.fromEntries(list.map((t) => [t.name, value(t)]));
/** Trigger names by firing group, in creation order. */
const groups = (list: ReadonlyArray<{ name: string; sql: string }>) => {
  const out: Record<string, string[]> = {};
  for (const t of list) (out[firingGroup(t.sql)] ??= []).push(t.name);
  return out;
};
const rendered = CATALOGUE.map((t) => ({ name: t.name, sql: renderTrigger(t) }));

describe("the trigger catalogue", () => {
  it("is what the migrations create: every trigger, the same SQL (whitespace aside), nothing else", () => {
    expect(live.length).toBeGreaterThan(100);
    expect(byName(live, (l) => normalise(l.sql))).toEqual(byName(rendered, (r) => normalise(r.sql)));
  });

  it("is the order they fire in: for each table and event, created in the catalogue's order", () => {
    expect(groups(live)).toEqual(groups(rendered));
  });

  it("leaves the generator nothing to write", () => {
    expect(plan(live, CATALOGUE)).toEqual({ drop: [], create: [] });
  });

  it("declares each trigger once, and only the search-index, key-check and version triggers run during shard moves", () => {
    expect(new Set(CATALOGUE.map((t) => t.name)).size).toBe(CATALOGUE.length);
    for (const t of CATALOGUE)
      expect(t.skipsShardMoves, t.name).toBe(!["search", "key check", "version"].includes(t.family));
  });

  it("names only tables and columns of the drizzle schema (or, for the search indexes, of the migrated database)", () => {
    const drizzle = new Map(
      Object.values(schema as Record<string, unknown>)
        .filter((v): v is SQLiteTable => is(v, SQLiteTable))
        .map((t) => getTableConfig(t))
        .map((c) => [c.name, new Set(c.columns.map((col) => col.name))]),
    );
    const columnsOf = (table: string): Set<string> | undefined => {
      if (drizzle.has(table)) return drizzle.get(table);
      const virtual = db
        .prepare("SELECT 1 FROM sqlite_master WHERE name = ? AND sql LIKE 'CREATE VIRTUAL TABLE%'")
        .get(table);
      return virtual
        ? new Set((db.prepare(`PRAGMA table_info(${table})`).all() as Array<{ name: string }>).map((c) => c.name))
        : undefined;
    };
    const unknown: string[] = [];
    const check = (trigger: string, table: string, columns: Iterable<string>) => {
      const known = columnsOf(table);
      if (!known) return void unknown.push(`${trigger}: table ${table}`);
      for (const c of columns) if (c !== "rowid" && !known.has(c)) unknown.push(`${trigger}: ${table}.${c}`);
    };
    const names = (list: string) => list.split(",").map((c) => c.trim().replaceAll("`", ""));
    for (const t of CATALOGUE) {
      const sql = renderTrigger(t);
      const body = sql.slice(sql.indexOf("\nBEGIN\n"));
      check(t.name, t.table, [...(t.columns ?? []), ...[...sql.matchAll(/\b(?:new|old)\.(\w+)/g)].map((m) => m[1]!)]);
      for (const m of body.matchAll(/\bINSERT(?: OR \w+)? INTO `?(\w+)`? \(([^)]*)\)/g))
        check(t.name, m[1]!, names(m[2]!));
      for (const m of body.matchAll(/(?<!DO )\bUPDATE `?(\w+)`? SET (.*?) WHERE/gs))
        check(
          t.name,
          m[1]!,
          [...m[2]!.matchAll(/`(\w+)` =/g)].map((c) => c[1]!),
        );
      for (const m of body.matchAll(/\b(?:FROM|JOIN) `?(\w+)\b`?(?!\s*\()/g)) check(t.name, m[1]!, []);
    }
    expect(unknown).toEqual([]);
  });

  it("is listed in docs/triggers.md exactly as scripts/gen-triggers.ts renders it", () => {
    expect(readFileSync(DOC, "utf8")).toBe(renderDoc());
  });

  it("keeps each generated migration under D1's limit on one query", () => {
    const generated = readdirSync(MIGRATIONS).filter(
      (f) => f.endsWith(".sql") && readFileSync(join(MIGRATIONS, f), "utf8").startsWith(MARKER),
    );
    expect(generated.length).toBeGreaterThan(0);
    for (const f of generated)
      expect(Buffer.byteLength(readFileSync(join(MIGRATIONS, f), "utf8")), f).toBeLessThanOrEqual(MAX_MIGRATION_BYTES);
  });
});

describe("the generator's plan", () => {
  // The database as the catalogue makes it, so that these hold whatever the migrations say.
  const live: LiveTrigger[] = CATALOGUE.map((t) => ({ name: t.name, table: t.table, sql: renderTrigger(t) }));
  /** `name` and the triggers created after it in its firing group. */
  const after = (list: readonly LiveTrigger[], name: string) => {
    const group = list
      .filter((l) => firingGroup(l.sql) === firingGroup(list.find((x) => x.name === name)!.sql))
      .map((l) => l.name);
    return group.slice(group.indexOf(name));
  };

  it("re-creates a changed trigger with the triggers after it for the same table and event", () => {
    const changed = live.map((l) =>
      l.name === "revision_items_after_update" ? { ...l, sql: l.sql.replace("+ 1", "+ 2") } : l,
    );
    const p = plan(changed, CATALOGUE);
    expect(p.drop).toEqual(after(live, "revision_items_after_update"));
    expect(p.create.map((t) => t.name)).toEqual(p.drop);
  });

  it("creates a missing trigger, drops one the catalogue does not declare, and puts triggers back in order", () => {
    const missing = live.filter((l) => l.name !== "items_version_after_update");
    expect(plan(missing, CATALOGUE).create.map((t) => t.name)).toEqual(after(live, "items_version_after_update"));
    const extra = [
      ...live,
      {
        name: "items_something_after_update",
        table: "items",
        sql: "CREATE TRIGGER items_something_after_update AFTER UPDATE ON items BEGIN SELECT 1; END",
      },
    ];
    expect(plan(extra, CATALOGUE)).toEqual({ drop: ["items_something_after_update"], create: [] });
    const [i, j] = ["webhook_items_after_update", "audit_items_after_update"].map((name) =>
      live.findIndex((l) => l.name === name),
    ) as [number, number];
    const swapped = [...live];
    [swapped[i], swapped[j]] = [swapped[j]!, swapped[i]!];
    expect(plan(swapped, CATALOGUE).create.map((t) => t.name)).toEqual(after(live, "webhook_items_after_update"));
  });

  it("ignores whitespace outside string literals, not inside them", () => {
    expect(normalise("CREATE  TRIGGER x\n  WHEN a BEGIN SELECT '  '; END;")).toBe(
      "CREATE TRIGGER x WHEN a BEGIN SELECT '  '; END",
    );
    const spaced = live.map((l) => ({ ...l, sql: l.sql.replaceAll("\n", "\n\t ") }));
    expect(plan(spaced, CATALOGUE)).toEqual({ drop: [], create: [] });
    const literal = live.map((l) =>
      l.name === "companies_default_sequence_after_insert"
        ? { ...l, sql: l.sql.replace("'Standard'", "'Standard '") }
        : l,
    );
    expect(plan(literal, CATALOGUE).create.map((t) => t.name)).toEqual([
      "companies_default_sequence_after_insert",
      "audit_companies_after_insert",
    ]);
  });
});

it("the item-action events' trigger knows the channel types the actors list has (a channel's via names it)", () => {
  expect([...TRIGGER_CHANNEL_VIAS]).toEqual([...CHANNEL_VIAS]);
});
