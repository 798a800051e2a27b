// Every write goes through the one write call, `commit` (src/db/commit.ts): no statement that
// writes is run, awaited or batched by itself anywhere else in src/. Read with TypeScript's parser:
// a write is a drizzle `insert`/`update`/`delete` on a database handle, or a prepared statement
// whose SQL text starts with INSERT, UPDATE, DELETE or REPLACE (a WITH clause before them too).
// Statements built by a helper and handed on are not followed: the check finds the places that
// would send one. Also: handles are made only at the seams that open a D1 session.
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { sourcesUnder } from "./support/import-graph";

/** The pipeline itself, where statements are sent; and the D1 wrapper that counts them (D1_STATS=on), which passes `run` on. */
const SENDERS = ["src/db/commit.ts", "src/db/query-stats.ts"];
/** Where a database handle may be made (`database(`): each opens or holds a D1 session (README, "Map of the code"). */
const HANDLE_SEAMS = [
  "src/db/client.ts",
  "src/auth/middleware.ts",
  "src/idempotency/middleware.ts",
  "src/routes/oauth.ts",
  "src/routes/drive/storage.ts",
  "src/routes/calendar-feeds/routes.ts",
  "src/routes/recipient-pages/routes.ts",
  "src/routes/unsubscribe/routes.ts",
  "src/imports/job.ts",
  "src/imports/start.ts",
  "src/company-clock/context.ts",
  "src/company-clock/handoff/snapshots.ts",
  "src/scheduled.ts",
];
const WRITE_SQL = /^\s*(?:with\b[\s\S]*?\b)?(insert|update|delete|replace)\b/i;
const EXECUTES = new Set(["run", "all", "get", "first", "raw", "execute", "then"]);
const DB_RECEIVER = /(^|\.)(db|drizzle|database)$/;

/** The text of a string or template literal (a template's parts joined: only its start matters). */
function literalText(node: ts.Node | undefined): string | undefined {
  if (!node) return undefined;
  if (ts.isStringLiteralLike(node)) return node.text;
  if (ts.isTemplateExpression(node)) return node.head.text;
  return undefined;
}

/** Whether `node` (a call) builds a write statement: db.insert/update/delete(...), or d1.prepare("INSERT ..."). */
function buildsWrite(node: ts.CallExpression, source: ts.SourceFile): boolean {
  if (!ts.isPropertyAccessExpression(node.expression)) return false;
  const method = node.expression.name.text;
  const receiver = node.expression.expression.getText(source);
  if (["insert", "update", "delete"].includes(method)) return DB_RECEIVER.test(receiver);
  if (method === "prepare") return WRITE_SQL.test(literalText(node.arguments[0]) ?? "");
  return false;
}

/** The outermost expression of the call chain `node` is part of (`a.b(x).c().d` from `a.b(x)`). */
function chainTop(node: ts.Expression): ts.Expression {
  let top: ts.Expression = node;
  for (;;) {
    const parent = top.parent;
    if (
      (ts.isPropertyAccessExpression(parent) && parent.expression === top) ||
      (ts.isCallExpression(parent) && parent.expression === top)
    )
      top = parent;
    else return top;
  }
}

/** "file:line: what" for every write sent outside the pipeline, and every handle made outside the seams. */
function violations(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) =>
    found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      if (method === "run" && !SENDERS.includes(file)) at(node, "`.run()` sends a statement outside a commit");
      if (buildsWrite(node, source)) {
        const top = chainTop(node);
        // The chain's own calls after the write's: .returning(), .where(), .bind() build; .run(), .get(), ... send.
        let sent = false;
        for (let n: ts.Node = node; n !== top.parent; n = n.parent) {
          if (ts.isPropertyAccessExpression(n) && n !== node.expression && EXECUTES.has(n.name.text)) sent = true;
        }
        if (ts.isAwaitExpression(top.parent)) sent = true;
        if (sent) at(node, "a write statement sent by itself (put it in a commit)");
        const list = top.parent;
        if (
          ts.isArrayLiteralExpression(list) &&
          ts.isCallExpression(list.parent) &&
          ts.isPropertyAccessExpression(list.parent.expression) &&
          list.parent.expression.name.text === "batch"
        ) {
          at(node, "a write statement in a `.batch()` (commit it instead)");
        }
      }
    }
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === "database" &&
      !HANDLE_SEAMS.includes(file)
    ) {
      at(node, "a database handle made outside the seams that open a D1 session");
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("the write pipeline", () => {
  const sources = sourcesUnder("src");

  it("every write in src/ goes through commit, and handles are made only where a session is opened", () => {
    expect([...sources].flatMap(([file, text]) => violations(file, text))).toEqual([]);
  });

  it("finds a write sent by itself, batched, or run, and a handle made elsewhere", () => {
    const sample = [
      "async function f(db: Db, d1: D1Database) {",
      "  await db.insert(items).values(v);", // 2
      "  const row = await db.update(items).set(v).where(w).returning().get();", // 3
      '  await d1.prepare("DELETE FROM tags WHERE id = ?").bind(1).run();', // 4
      "  await db.batch([db.select().from(items), db.delete(items).where(w)]);", // 5
      "  await d1.prepare(`WITH x AS (SELECT 1) UPDATE items SET n = 1`).bind().first();", // 6
      "  const h = database(d1);", // 7
      "  await db.commit([db.insert(items).values(v), d1.prepare('UPDATE t SET a = 1')]);", // fine
      "  const built = db.update(items).set(v).returning();", // fine: built, not sent
      "  await db.batch([db.select().from(items)]);", // fine: a read batch
      "  map.delete(1); hash.update(x);", // fine: not a database
      "}",
    ].join("\n");
    expect(violations("src/records/sample.ts", sample)).toEqual([
      "src/records/sample.ts:2: a write statement sent by itself (put it in a commit)",
      "src/records/sample.ts:3: a write statement sent by itself (put it in a commit)",
      "src/records/sample.ts:4: `.run()` sends a statement outside a commit",
      "src/records/sample.ts:4: a write statement sent by itself (put it in a commit)",
      "src/records/sample.ts:5: a write statement in a `.batch()` (commit it instead)",
      "src/records/sample.ts:6: a write statement sent by itself (put it in a commit)",
      "src/records/sample.ts:7: a database handle made outside the seams that open a D1 session",
    ]);
  });
});
