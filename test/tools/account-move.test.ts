// Moving an account between shards (scripts/lib/account-move.ts, docs/scale.md): the move's logic
// over two real SQLite databases migrated like the shards (node:sqlite, foreign keys on, as in D1).
// test/e2e/account-move.test.ts runs the same move through wrangler against `npm start`.
import { readFileSync, readdirSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import {
  COPIED_TABLES,
  MoveError,
  NOT_COPIED,
  insertStatements,
  moveAccount,
  sqlLiteral,
  type MoveOptions,
  type ShardAccess,
} from "../../scripts/lib/account-move.ts";

const migrationFiles = readdirSync("migrations")
  .filter((f) => f.endsWith(".sql"))
  .sort();

function migrated(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  for (const file of migrationFiles) {
    for (const statement of readFileSync(`migrations/${file}`, "utf8").split("--> statement-breakpoint"))
      if (statement.trim()) db.exec(statement);
  }
  return db;
}

/** Two or three shards; every execute is one transaction, as a wrangler --file call is. */
function shards(count = 2): { dbs: DatabaseSync[]; access: ShardAccess } {
  const dbs = Array.from({ length: count }, migrated);
  const access: ShardAccess = {
    query: <T>(shard: number, sql: string) => dbs[shard]!.prepare(sql).all() as T[],
    queryEach: <T>(shard: number, sqls: string[]) => sqls.map((sql) => dbs[shard]!.prepare(sql).all() as T[]),
    execute: (shard: number, statements: string[]) => {
      const db = dbs[shard]!;
      db.exec("BEGIN");
      try {
        for (const s of statements) db.exec(s);
        db.exec("COMMIT");
      } catch (err) {
        db.exec("ROLLBACK");
        throw err;
      }
    },
  };
  return { dbs, access };
}

/** Account 3 on shard 0: a company with counters, a webhook endpoint (so the webhook triggers write), items, tags, a task, a file, a client. */
function seedAccount(db: DatabaseSync): void {
  db.exec(`
    INSERT INTO accounts (id, name, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types) VALUES (3, 'Mover', 5, 100, 100, 100, 5);
    INSERT INTO users (id, account_id, email) VALUES (4, 3, 'ops@mover.example');
    UPDATE accounts SET owner_user_id = 4 WHERE id = 3;
    INSERT INTO companies (id, account_id, name, documents_limit, contacts_limit, drive_space_mb) VALUES (3, 3, 'Mover Ltd', 100, 100, 100);
    INSERT INTO departments (id, company_id, name, name_key, is_default) VALUES (3, 3, 'General', 'general', 1);
    INSERT INTO contact_groups (id, company_id, dept_id, name, name_key, is_default) VALUES (3, 3, 3, 'General', 'general', 1);
    INSERT INTO webhook_endpoints (id, company_id, url, events, secret_ciphertext, created_by) VALUES (1, 3, 'https://hooks.example/x', '["*"]', 'v1:abc', 4);
    INSERT INTO contacts (id, company_id, dept_id, group_id, first_name, last_name, email, email_key, search_words) VALUES (1, 3, 3, 3, 'Marta', 'Mover', 'marta@mover.example', 'marta@mover.example', '["marta","mover"]');
    INSERT INTO items (id, company_id, dept_id, title, expiry_date, created_by, contact_id, search_words) VALUES
      (1, 3, 3, 'Boiler inspection', '2027-03-01', 4, 1, '["boiler","inspection"]'),
      (2, 3, 3, 'Insurance policy', '2027-05-01', 4, NULL, '["insurance","policy"]');
    INSERT INTO tags (id, company_id, name, name_key) VALUES (1, 3, 'urgent', 'urgent');
    INSERT INTO item_tags (item_id, tag_id, company_id, position) VALUES (1, 1, 3, 0);
    INSERT INTO tasks (id, public_id, company_id, item_id, title, due_at, owner_id, created_by, assignee_type, assignee_id, search_words)
      VALUES (1, 'tsk_1', 3, 1, 'Call the inspector', '2027-01-10 09:00:00', 4, 4, 'contact', 1, '["call","inspector"]');
    INSERT INTO files (id, public_id, company_id, dept_id, file_name, content_type, size_bytes, sha256, r2_key, created_by)
      VALUES (1, 'fil_1', 3, 3, 'cert.pdf', 'application/pdf', 2048, 'ab', 'r2/1', 4);
    INSERT INTO api_clients (client_id, secret_hash, secret_salt, account_id, company_id, user_id, scopes) VALUES ('ck_mover', 'h', 's', 3, 3, 4, '*');
  `);
  // What the Worker and the reminder engine leave behind once they have caught up (the drain's condition).
  db.exec("DELETE FROM webhook_events; UPDATE reminder_sync SET synced_version = version");
}

const snapshot = (db: DatabaseSync) => ({
  company: db.prepare("SELECT * FROM companies WHERE id = 3").get(),
  departments: db.prepare("SELECT * FROM departments WHERE company_id = 3").all(),
  tags: db.prepare("SELECT * FROM tags WHERE company_id = 3").all(),
  taskCounts: db.prepare("SELECT * FROM task_counts WHERE company_id = 3 ORDER BY status").all(),
  revisions: db.prepare("SELECT * FROM company_revisions WHERE company_id = 3").all(),
  sync: db.prepare("SELECT * FROM reminder_sync WHERE company_id = 3 ORDER BY item_id").all(),
  sequences: db.prepare("SELECT id, name, is_default FROM reminder_sequences WHERE company_id = 3").all(),
  tasks: db.prepare("SELECT * FROM tasks WHERE company_id = 3").all(),
  items: db.prepare("SELECT * FROM items WHERE company_id = 3 ORDER BY id").all(),
});

const searchHits = (db: DatabaseSync) => ({
  items: db.prepare("SELECT count(*) AS n FROM items_search_docsize").get(),
  contacts: db.prepare("SELECT count(*) AS n FROM contacts_search_docsize").get(),
  tasks: db.prepare("SELECT count(*) AS n FROM tasks_search_docsize").get(),
});

function options(overrides: Partial<MoveOptions> = {}): MoveOptions & { lines: string[] } {
  const lines: string[] = [];
  return {
    accountId: 3,
    to: 1,
    settleSeconds: 0,
    drainTimeoutSeconds: 0,
    cleanupAfterSeconds: 0,
    log: (l) => lines.push(l),
    sleep: async () => {},
    lines,
    ...overrides,
  };
}

describe("account move", () => {
  it("classifies every table of the schema: copied, or left out with a reason", () => {
    const db = migrated();
    const tables = (
      db
        .prepare(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '%\\_search\\_%' ESCAPE '\\'",
        )
        .all() as Array<{ name: string }>
    ).map((r) => r.name);
    const classified = new Set([...COPIED_TABLES.map((t) => t.table), ...Object.keys(NOT_COPIED)]);
    expect(tables.filter((t) => !classified.has(t))).toEqual([]);
    expect([...classified].filter((t) => !tables.includes(t))).toEqual([]);
  });

  it("guards every trigger that writes another table, and only the search-index, key and version triggers go unguarded", () => {
    const db = migrated();
    const triggers = db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'").all() as Array<{
      name: string;
      tbl_name: string;
      sql: string;
    }>;
    expect(triggers.length).toBeGreaterThan(60);
    for (const t of triggers) {
      const guarded = t.sql.includes("NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id =");
      const written = [
        ...t.sql
          .slice(t.sql.search(/\bBEGIN\b/))
          .matchAll(/\b(?:INSERT(?: OR \w+)? INTO|UPDATE|DELETE FROM)\s+`?(\w+)`?/gi),
      ].map((m) => m[1]);
      const others = written.filter((w) => w !== t.tbl_name && !/_search$|^search_terms$/.test(w!));
      if (others.length > 0) expect(guarded, `${t.name} writes ${others.join(", ")}`).toBe(true);
      if (/_search_after_|_key_required$|_key_kept$|_version_after_update$/.test(t.name))
        expect(guarded, t.name).toBe(false);
    }
  });

  it("copies the account exactly: same rows and counters, the search index rebuilt, no webhook event, revision, sync or default sequence made", async () => {
    const { dbs, access } = shards();
    const [source, target] = dbs as [DatabaseSync, DatabaseSync];
    seedAccount(source);
    const before = snapshot(source);
    const o = options();
    await moveAccount(access, 2, o);

    expect(snapshot(target)).toEqual(before);
    expect(target.prepare("SELECT shard_state FROM accounts WHERE id = 3").get()).toEqual({ shard_state: "active" });
    expect(target.prepare("SELECT count(*) AS n FROM webhook_events").get()).toEqual({ n: 0 });
    expect(target.prepare("SELECT count(*) AS n FROM shard_moves").get()).toEqual({ n: 0 });
    expect(searchHits(target)).toEqual({ items: { n: 2 }, contacts: { n: 1 }, tasks: { n: 1 } });

    // The directory points at shard 1, for the account, its client and its company.
    expect(source.prepare("SELECT account_id, shard FROM directory_accounts").all()).toEqual([
      { account_id: 3, shard: 1 },
    ]);
    expect(source.prepare("SELECT client_id, shard FROM directory_clients").all()).toEqual([
      { client_id: "ck_mover", shard: 1 },
    ]);
    expect(source.prepare("SELECT company_id, shard FROM directory_companies").all()).toEqual([
      { company_id: 3, shard: 1 },
    ]);

    // The source is empty of the account, its search index too, and the clean-up announced nothing.
    for (const { table, where } of COPIED_TABLES) {
      expect(
        source.prepare(`SELECT count(*) AS n FROM "${table}" WHERE ${where.replaceAll(":account", "3")}`).get(),
        table,
      ).toEqual({ n: 0 });
    }
    expect(searchHits(source)).toEqual({ items: { n: 0 }, contacts: { n: 0 }, tasks: { n: 0 } });
    expect(source.prepare("SELECT count(*) AS n FROM webhook_events").get()).toEqual({ n: 0 });
    expect(source.prepare("SELECT count(*) AS n FROM reminder_sync").get()).toEqual({ n: 0 });
    expect(o.lines.join("\n")).toMatch(/counts match/);

    // The triggers work again on the target once the move is over.
    target.exec(
      "INSERT INTO contacts (company_id, dept_id, first_name, last_name, email, email_key) VALUES (3, 3, 'New', 'One', 'n@x.example', 'n@x.example')",
    );
    expect(target.prepare("SELECT contacts_used FROM companies WHERE id = 3").get()).toEqual({ contacts_used: 2 });
  });

  it("waits for in-flight work, and gives up after the drain timeout leaving the account writable", async () => {
    const { dbs, access } = shards();
    seedAccount(dbs[0]!);
    dbs[0]!.exec("UPDATE reminder_sync SET version = version + 1 WHERE item_id = 1");
    await expect(moveAccount(access, 2, options())).rejects.toThrow(
      /1 item changes the reminder engine has not applied.*writable again/,
    );
    expect(dbs[0]!.prepare("SELECT shard_state FROM accounts WHERE id = 3").get()).toEqual({ shard_state: "active" });
    expect(dbs[1]!.prepare("SELECT count(*) AS n FROM accounts").get()).toEqual({ n: 0 });
  });

  it("resumes: a copy lost half way is redone over its leftovers, a lost clean-up is finished by running the move again", async () => {
    const { dbs, access } = shards();
    const [source, target] = dbs as [DatabaseSync, DatabaseSync];
    seedAccount(source);
    const before = snapshot(source);
    // Leftovers of an earlier attempt on the target (with the marker still set).
    target.exec("INSERT INTO shard_moves (company_id, account_id, started_at) VALUES (3, 3, 0)");
    for (const s of insertStatements("accounts", [
      source.prepare("SELECT * FROM accounts WHERE id = 3").get() as Record<string, unknown>,
    ]))
      target.exec(s);
    // The clean-up of the source fails once.
    let executes = 0;
    const flaky: ShardAccess = {
      ...access,
      execute: (shard, statements) => {
        if (shard === 0 && statements.some((s) => s.startsWith('DELETE FROM "accounts"')) && executes++ === 0)
          throw new Error("connection lost");
        access.execute(shard, statements);
      },
    };
    await expect(moveAccount(flaky, 2, options())).rejects.toThrow("connection lost");
    expect(snapshot(target)).toEqual(before);
    expect(source.prepare("SELECT shard_state FROM accounts WHERE id = 3").get()).toEqual({ shard_state: "moved" });
    const again = options();
    await moveAccount(flaky, 2, again);
    expect(again.lines.join("\n")).toMatch(/Finished the clean-up/);
    expect(source.prepare("SELECT count(*) AS n FROM accounts WHERE id = 3").get()).toEqual({ n: 0 });
    const third = options();
    await moveAccount(flaky, 2, third);
    expect(third.lines.join("\n")).toMatch(/already on shard 1/);
  });

  it("refuses to move down, to the same or an unknown shard, or an unknown account", async () => {
    const { dbs, access } = shards(3);
    seedAccount(dbs[0]!);
    await expect(moveAccount(access, 3, options({ to: 0 }))).rejects.toThrow(MoveError);
    await expect(moveAccount(access, 3, options({ to: 3 }))).rejects.toThrow(/from 1 to 2/);
    await expect(moveAccount(access, 3, options({ accountId: 99 }))).rejects.toThrow(/does not exist/);
    await moveAccount(access, 3, options({ to: 2 }));
    await expect(moveAccount(access, 3, options({ to: 1 }))).rejects.toThrow(/only moves up/);
    // Onwards from a shard other than 0: the directory is rewritten, the old shard cleaned.
    const fresh = shards(3);
    seedAccount(fresh.dbs[0]!);
    await moveAccount(fresh.access, 3, options({ to: 1 }));
    await moveAccount(fresh.access, 3, options({ to: 2 }));
    expect(fresh.dbs[0]!.prepare("SELECT shard FROM directory_companies WHERE company_id = 3").get()).toEqual({
      shard: 2,
    });
    expect(fresh.dbs[1]!.prepare("SELECT count(*) AS n FROM items").get()).toEqual({ n: 0 });
    expect(fresh.dbs[2]!.prepare("SELECT count(*) AS n FROM items").get()).toEqual({ n: 2 });
  });

  it("writes values back as SQL literals, cut into statements D1 accepts", () => {
    expect(sqlLiteral(null)).toBe("NULL");
    expect(sqlLiteral("it's")).toBe("'it''s'");
    expect(sqlLiteral(1.5)).toBe("1.5");
    expect(sqlLiteral([0, 255])).toBe("X'00ff'");
    expect(() => sqlLiteral({})).toThrow(MoveError);
    const rows = Array.from({ length: 3000 }, (_, i) => ({ id: i, text: "x".repeat(100) }));
    const statements = insertStatements("t", rows);
    expect(statements.length).toBeGreaterThan(1);
    for (const s of statements) expect(s.length).toBeLessThan(100_000);
    const db = new DatabaseSync(":memory:");
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, text TEXT)");
    for (const s of statements) db.exec(s);
    expect(db.prepare("SELECT count(*) AS n FROM t").get()).toEqual({ n: 3000 });
  });
});
