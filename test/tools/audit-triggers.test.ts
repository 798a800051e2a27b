// The audit triggers (docs/audit-log.md; the audit family of the trigger catalogue, whose migrations
// test/tools/triggers.test.ts checks): every table of the database is either audited or listed with
// the reason it is not, and an entry holds what changed.
import { describe, expect, it } from "vitest";
import { NOT_AUDITED, PARTS, RESOURCES } from "../../scripts/triggers/audit.ts";
import { migrated } from "../../scripts/triggers/migrations.ts";

describe("audit triggers", () => {
  it("audits every table or says why not", () => {
    const db = migrated();
    const all = db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all() as Array<{ name: string; sql: string }>;
    const virtual = all.filter((t) => t.sql.startsWith("CREATE VIRTUAL")).map((t) => t.name);
    // A virtual table's shadow tables (FTS5: _data, _idx, _docsize, _config, _content) go with it.
    const tables = all.map((t) => t.name).filter((name) => !virtual.some((v) => name.startsWith(`${v}_`)));
    const covered = new Set([
      ...RESOURCES.map((r) => r.table),
      ...PARTS.map((p) => p.table),
      ...Object.keys(NOT_AUDITED),
    ]);
    expect(tables.filter((t) => !covered.has(t))).toEqual([]);
    const triggers = new Set(
      (
        db.prepare("SELECT tbl_name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'audit_%'").all() as Array<{
          tbl_name: string;
        }>
      ).map((r) => r.tbl_name),
    );
    expect([...RESOURCES, ...PARTS].map((t) => t.table).filter((t) => !triggers.has(t))).toEqual([]);
  });

  it("writes an entry with only the changed fields, and none for a change of other columns", () => {
    const db = migrated();
    db.exec(
      `INSERT INTO accounts (id, name, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types) VALUES (7, 'a', 1, 1, 1, 1, 1)`,
    );
    db.exec(
      `INSERT INTO companies (id, account_id, name, documents_limit, contacts_limit, drive_space_mb) VALUES (70, 7, 'c', 1, 1, 1)`,
    );
    db.exec(`INSERT INTO departments (id, company_id, name, name_key, is_default) VALUES (700, 70, 'd', 'd', 1)`);
    db.exec(
      `INSERT INTO audit_context (slot, account_id, company_id, at, client_id, user_id, request_id, operation_id) VALUES (1, 7, 70, 1000, 'cli', 3, 'req-1', 'updateDepartment')`,
    );
    db.exec(`UPDATE departments SET name = 'e', name_key = 'e' WHERE id = 700`);
    db.exec(`UPDATE departments SET contacts_used = 5 WHERE id = 700`);
    db.exec(`DELETE FROM audit_context`);
    const rows = db
      .prepare(
        "SELECT account_id, company_id, at, client_id, user_id, actor_company_id, request_id, operation_id, resource_type, resource_id, action, before, after FROM audit_log WHERE resource_type IN ('company', 'department') ORDER BY id",
      )
      .all();
    expect(rows.map((r) => ({ ...r }))).toEqual([
      {
        account_id: 7,
        company_id: 70,
        at: expect.any(Number),
        client_id: null,
        user_id: null,
        actor_company_id: null,
        request_id: null,
        operation_id: null,
        resource_type: "company",
        resource_id: "70",
        action: "created",
        before: null,
        after: expect.stringContaining('"company_name":"c"'),
      },
      {
        account_id: 7,
        company_id: 70,
        at: expect.any(Number),
        client_id: null,
        user_id: null,
        actor_company_id: null,
        request_id: null,
        operation_id: null,
        resource_type: "department",
        resource_id: "700",
        action: "created",
        before: null,
        after: '{"name":"d","is_default":1}',
      },
      {
        account_id: 7,
        company_id: 70,
        at: 1000,
        client_id: "cli",
        user_id: 3,
        actor_company_id: 70,
        request_id: "req-1",
        operation_id: "updateDepartment",
        resource_type: "department",
        resource_id: "700",
        action: "updated",
        before: '{"name":"d"}',
        after: '{"name":"e"}',
      },
    ]);
  });
});
