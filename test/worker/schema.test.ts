import { and, asc, count, eq, getTableName, is, SQL } from "drizzle-orm";
import { SQLiteSyncDialect, SQLiteTable, getTableConfig } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import * as schema from "../../src/db/schema";
import { contacts } from "../../src/db/schema";
import { contactSearchQueries } from "../../src/records/contacts";
import { env } from "./helpers";

// The drizzle schema (src/db/schema.ts) and the migrated local D1 must describe the same database:
// drizzle builds the queries, the migrations build the tables.

const tables: SQLiteTable[] = Object.values(schema as Record<string, unknown>).filter((value): value is SQLiteTable =>
  is(value, SQLiteTable),
);
const dialect = new SQLiteSyncDialect();

interface ColumnInfo {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
}
interface IndexInfo {
  name: string;
  unique: number;
  origin: string;
  partial: number;
}
interface IndexColumn {
  seqno: number;
  cid: number;
  name: string | null;
  key: number;
}
interface ForeignKey {
  table: string;
  from: string;
  to: string;
}

async function pragma<T>(statement: string): Promise<T[]> {
  return (await env.DB.prepare(statement).all<T>()).results;
}

/** The SQL text of a drizzle default, as SQLite reports it in `dflt_value`. */
function defaultText(value: unknown): string {
  if (is(value, SQL)) return dialect.sqlToQuery(value).sql;
  if (typeof value === "string") return `'${value.replace(/'/g, "''")}'`;
  return String(value);
}

/** Tables created by the migrations, minus SQLite/D1 internals and FTS5 shadow tables. */
async function migratedTables(): Promise<string[]> {
  const rows = await pragma<{ name: string; sql: string | null }>(
    "SELECT name, sql FROM sqlite_master WHERE type = 'table'",
  );
  const virtual = rows.filter((r) => /^CREATE VIRTUAL TABLE/i.test(r.sql ?? "")).map((r) => r.name);
  return rows
    .map((r) => r.name)
    .filter((name) => !/^(sqlite_|_cf_|d1_migrations$)/.test(name))
    .filter((name) => !virtual.some((v) => name === v || name.startsWith(`${v}_`)));
}

describe("drizzle schema vs migrated D1", () => {
  it("finds the drizzle tables (sanity)", () => {
    const names = tables.map((t) => getTableName(t));
    for (const core of ["accounts", "api_clients", "companies", "contact_groups", "contacts", "departments", "users"])
      expect(names).toContain(core);
  });

  it("has a drizzle table for every migrated table and vice versa", async () => {
    const migrated = await migratedTables();
    expect(migrated.sort()).toEqual(tables.map((t) => getTableName(t)).sort());
  });

  for (const table of tables) {
    const config = getTableConfig(table);

    describe(config.name, () => {
      it("has the same columns, types, not-null flags, primary keys and defaults", async () => {
        const actual = await pragma<ColumnInfo>(`PRAGMA table_info(${config.name})`);
        expect(actual.length, "table exists").toBeGreaterThan(0);
        // A column is a primary-key column on its own or as part of a composite key.
        const compositeKey = new Set(config.primaryKeys.flatMap((pk) => pk.columns.map((c) => c.name)));
        const expected = config.columns.map((column) => ({
          name: column.name,
          type: column.getSQLType().toLowerCase(),
          notnull: column.notNull || compositeKey.has(column.name) ? 1 : 0,
          pk: column.primary || compositeKey.has(column.name) ? 1 : 0,
          dflt_value: column.hasDefault && column.default !== undefined ? defaultText(column.default) : null,
        }));
        const got = actual.map((c) => ({
          name: c.name,
          type: c.type.toLowerCase(),
          notnull: c.notnull,
          pk: c.pk > 0 ? 1 : 0,
          dflt_value: c.dflt_value,
        }));
        const byName = (a: { name: string }, b: { name: string }) => a.name.localeCompare(b.name);
        expect(got.sort(byName)).toEqual(expected.sort(byName));
      });

      it("has every drizzle index, with the same uniqueness, partiality and key columns", async () => {
        const list = await pragma<IndexInfo>(`PRAGMA index_list(${config.name})`);
        for (const index of config.indexes) {
          const { name, unique, where, columns } = index.config;
          const found = list.find((i) => i.name === name);
          expect(found, `index ${name} on ${config.name}`).toBeDefined();
          expect(found!.unique, `${name} unique`).toBe(unique ? 1 : 0);
          expect(found!.partial, `${name} partial`).toBe(where ? 1 : 0);
          const keys = (await pragma<IndexColumn>(`PRAGMA index_xinfo(${name})`))
            .filter((c) => c.key === 1)
            .sort((a, b) => a.seqno - b.seqno);
          // An expression part (lower("email")) has no column name in SQLite.
          const expectedKeys = columns.map((c) => (is(c, SQL) ? null : (c as { name: string }).name));
          expect(
            keys.map((k) => k.name),
            `${name} columns`,
          ).toEqual(expectedKeys);
        }
      });

      it("has no index that the drizzle schema does not declare", async () => {
        const created = (await pragma<IndexInfo>(`PRAGMA index_list(${config.name})`))
          .filter((i) => i.origin === "c")
          .map((i) => i.name);
        expect(created.sort()).toEqual(config.indexes.map((i) => i.config.name).sort());
      });

      it("has the same foreign keys", async () => {
        const actual = await pragma<ForeignKey>(`PRAGMA foreign_key_list(${config.name})`);
        const expected = config.foreignKeys.flatMap((fk) => {
          const ref = fk.reference();
          return ref.columns.map((column, i) => ({
            table: getTableName(ref.foreignTable),
            from: column.name,
            to: ref.foreignColumns[i]!.name,
          }));
        });
        const key = (f: ForeignKey) => `${f.from}->${f.table}.${f.to}`;
        expect(actual.map(key).sort()).toEqual(expected.map(key).sort());
      });
    });
  }
});

describe("query plans of the contact list", () => {
  const db = database(env.DB);

  async function plan(query: { toSQL(): { sql: string; params: unknown[] } }): Promise<string[]> {
    const { sql: text, params } = query.toSQL();
    const rows = await env.DB.prepare(`EXPLAIN QUERY PLAN ${text}`)
      .bind(...params)
      .all<{ detail: string }>();
    return rows.results.map((r) => r.detail);
  }

  /** Plan lines that read the whole contacts table (a SCAN without an index). */
  const fullScans = (details: string[], table = "contacts") =>
    details.filter((d) => new RegExp(`^SCAN ${table}( |$)`).test(d) && !/USING (COVERING )?INDEX/.test(d));

  /** No full scan of contacts, an index search on it, and no sort step for ORDER BY id. */
  function expectIndexed(details: string[], index: string) {
    const text = details.join("\n");
    expect(fullScans(details), text).toEqual([]);
    expect(text, text).toMatch(new RegExp(`SEARCH contacts USING (COVERING )?INDEX ${index} `));
    expect(text, text).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
  }

  const page = (where: SQL | undefined) =>
    db.select().from(contacts).where(where).orderBy(asc(contacts.id)).limit(50).offset(100);
  const total = (where: SQL | undefined) => db.select({ n: count() }).from(contacts).where(where);

  it("lists a company's contacts ordered by id through contacts_company_idx", async () => {
    expectIndexed(await plan(page(eq(contacts.companyId, 1))), "contacts_company_idx");
  });

  it("filters by company and department through contacts_dept_idx", async () => {
    const where = and(eq(contacts.companyId, 1), eq(contacts.deptId, 1));
    expectIndexed(await plan(page(where)), "contacts_dept_idx");
    expectIndexed(await plan(total(where)), "contacts_dept_idx");
  });

  it("filters by company and group through contacts_company_group_idx", async () => {
    const where = and(eq(contacts.companyId, 1), eq(contacts.groupId, 3));
    expectIndexed(await plan(page(where)), "contacts_company_group_idx");
    expectIndexed(await plan(total(where)), "contacts_company_group_idx");
  });

  it("counts a group's contacts (contacts_count) through contacts_company_group_idx", async () => {
    const details = await plan({
      toSQL: () => ({
        sql: `SELECT g.id, (SELECT count(*) FROM contacts WHERE contacts.company_id = g.company_id AND contacts.group_id = g.id) AS n
              FROM contact_groups g WHERE g.company_id = ? ORDER BY g.id`,
        params: [1],
      }),
    });
    const text = details.join("\n");
    expect(fullScans(details), text).toEqual([]);
    expect(text, text).toMatch(/SEARCH contacts USING (COVERING )?INDEX contacts_company_group_idx/);
    expect(fullScans(details, "g"), text).toEqual([]);
  });

  it("answers a search from the company's FTS postings in contact order, then the primary key", async () => {
    for (const search of ["ada love", "lovelace", "ada&deptid=1"]) {
      const [q, dept] = search.split("&deptid=");
      const built = contactSearchQueries(db, 1, { q, deptid: dept ? Number(dept) : undefined, limit: 50, offset: 0 })!;
      const ids = (await plan(built.ids)).join("\n");
      // Without deptid the page's ids are postings alone: an offset skips postings, not rows.
      if (dept) expect(ids, ids).toMatch(/SEARCH contacts USING INTEGER PRIMARY KEY/);
      else expect(ids, ids).not.toMatch(/ contacts /);
      const page = (await plan(built.page)).join("\n");
      expect(page, page).toMatch(
        /SEARCH contacts USING (INTEGER PRIMARY KEY|INDEX contacts_company_idx \(company_id=\? AND rowid=\?\))/,
      );
      for (const query of [built.page, built.total]) {
        const details = await plan(query);
        const text = details.join("\n");
        expect(text, text).toMatch(/SCAN contacts_search VIRTUAL TABLE INDEX/);
        expect(text, text).not.toMatch(/USE TEMP B-TREE/);
        expect(fullScans(details), text).toEqual([]);
      }
    }
  });

  it("detects a full scan (control: a filter on an unindexed column)", async () => {
    const details = await plan(page(eq(contacts.lastName, "x")));
    expect(fullScans(details)).toHaveLength(1);
    expect(() => expectIndexed(details, "contacts_company_idx")).toThrow();
  });

  it("looks clients up by primary key", async () => {
    const details = await plan({
      toSQL: () => ({
        sql: `SELECT c.client_id, (a.owner_user_id = c.user_id) AS is_owner FROM api_clients c JOIN accounts a ON a.id = c.account_id WHERE c.client_id = ?`,
        params: ["demo-owner"],
      }),
    });
    const text = details.join("\n");
    expect(text, text).toMatch(/SEARCH c USING INDEX sqlite_autoindex_api_clients_1 \(client_id=\?\)/);
    expect(text, text).toMatch(/SEARCH a USING INTEGER PRIMARY KEY/);
  });
});
