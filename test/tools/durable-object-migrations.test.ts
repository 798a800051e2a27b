// wrangler.toml's Durable Object migrations against the code: the classes they leave must be the
// ones src/index.ts exports and wrangler.toml binds. The company clock was renamed
// (ReminderScheduler -> CompanyClock): a deployed object keeps its storage and alarm only through
// the `renamed_classes` migration, and `npm start` carries local state along the same renames
// (scripts/lib/do-rename.ts). Migrations are history: v1 stays as it was deployed.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { experimental_readRawConfig, unstable_getDurableObjectClassNameToUseSQLiteMap } from "wrangler";
import { classRenames } from "../../scripts/lib/do-rename.ts";

const parse = (file: string) =>
  ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);

const extendsDurableObject = (node: ts.ClassDeclaration) =>
  node.heritageClauses?.some(
    (h) =>
      h.token === ts.SyntaxKind.ExtendsKeyword &&
      h.types.some((t) => ts.isIdentifier(t.expression) && t.expression.text === "DurableObject"),
  ) ?? false;

/** The names under which src/index.ts exports a class that extends DurableObject (declared there or re-exported). */
function durableObjectExports(entry = "src/index.ts"): string[] {
  const names: string[] = [];
  for (const statement of parse(entry).statements) {
    if (
      ts.isClassDeclaration(statement) &&
      statement.name &&
      statement.modifiers?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)
    ) {
      if (extendsDurableObject(statement)) names.push(statement.name.text);
    }
    if (
      !ts.isExportDeclaration(statement) ||
      !statement.moduleSpecifier ||
      !statement.exportClause ||
      !ts.isNamedExports(statement.exportClause)
    )
      continue;
    const module = parse(`${join(dirname(entry), (statement.moduleSpecifier as ts.StringLiteral).text)}.ts`);
    for (const element of statement.exportClause.elements) {
      const local = (element.propertyName ?? element.name).text;
      const declared = module.statements.find(
        (s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === local,
      );
      if (declared && extendsDurableObject(declared)) names.push(element.name.text);
    }
  }
  return names.sort();
}

describe("wrangler.toml [[migrations]]", () => {
  const { rawConfig } = experimental_readRawConfig({ config: "wrangler.toml" });

  it("keeps v1 as deployed and renames ReminderScheduler to CompanyClock in v2", () => {
    expect(rawConfig.migrations).toEqual([
      { tag: "v1", new_sqlite_classes: ["ReminderScheduler"] },
      { tag: "v2", renamed_classes: [{ from: "ReminderScheduler", to: "CompanyClock" }] },
    ]);
  });

  it("leaves exactly the SQLite-backed classes src/index.ts exports and the bindings name", () => {
    expect(durableObjectExports()).toEqual(["CompanyClock"]);
    // What wrangler itself derives from the migrations (deploy and dev alike).
    expect([...unstable_getDurableObjectClassNameToUseSQLiteMap(rawConfig.migrations)]).toEqual([
      ["CompanyClock", true],
    ]);
    expect(rawConfig.durable_objects?.bindings).toEqual([{ name: "COMPANY_CLOCK", class_name: "CompanyClock" }]);
  });

  it("lists the renames `npm start` carries local state along", async () => {
    expect(await classRenames("wrangler.toml")).toEqual({
      worker: "expiry-reminder-api",
      renames: [{ from: "ReminderScheduler", to: "CompanyClock" }],
    });
  });
});
