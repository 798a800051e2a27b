// Import cycles in src/: every relative module reference (import, `import type`, `export ... from`,
// `import()` calls and types) read with TypeScript's own parser, and the strongly connected
// components of that graph. src/env.ts (the bindings and context every module names) must be on no
// cycle, and neither may any module of src/company-clock.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

type Graph = Map<string, Set<string>>;

/** The module specifiers a source names: imports and re-exports (type-only too), import() calls and import types. */
function specifiers(fileName: string, source: string): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS));
  return found;
}

/** The module a relative specifier names among `files` (as the bundler resolves it), or null. */
function resolveSpecifier(from: string, specifier: string, files: ReadonlySet<string>): string | null {
  const base = join(dirname(from), specifier);
  const candidates = [base, `${base}.ts`, join(base, "index.ts"), base.replace(/\.js$/, ".ts")];
  return candidates.find((c) => files.has(c)) ?? null;
}

/** Edges from each module to the modules it names; relative specifiers that name no module are returned apart. */
function importGraph(sources: ReadonlyMap<string, string>): { graph: Graph; unresolved: string[] } {
  const files = new Set(sources.keys());
  const graph: Graph = new Map();
  const unresolved: string[] = [];
  for (const [file, source] of sources) {
    const targets = new Set<string>();
    for (const specifier of specifiers(file, source)) {
      if (!specifier.startsWith(".")) continue; // packages and runtime modules
      const target = resolveSpecifier(file, specifier, files);
      if (target) targets.add(target);
      else unresolved.push(`${file}: ${specifier}`);
    }
    graph.set(file, targets);
  }
  return { graph, unresolved };
}

/** The strongly connected components with a cycle (more than one module, or one naming itself), Tarjan's algorithm. */
function cyclicComponents(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.has(v)) components.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return components;
}

/** The shortest cycle through `start` inside its component (breadth first), as a path `a -> b -> a`. */
function cycleThrough(graph: Graph, component: string[], start: string): string[] {
  const inside = new Set(component);
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [start];
        for (let at = v; at !== start; at = previous.get(at)!) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!previous.has(w)) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

function describeCycles(graph: Graph, components: string[][]): string {
  if (components.length === 0) return "no import cycles";
  return components.map((c) => `${c.length} modules: ${c.join(", ")}\n  e.g. ${cycleThrough(graph, c, c[0]!).join(" -> ")}`).join("\n");
}

function sourcesUnder(dir: string): Map<string, string> {
  const sources = new Map<string, string>();
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith(".ts")) sources.set(relative(ROOT, path), readFileSync(path, "utf8"));
    }
  };
  walk(join(ROOT, dir));
  return sources;
}

describe("import cycles in src/", () => {
  const { graph, unresolved } = importGraph(sourcesUnder("src"));
  const components = cyclicComponents(graph);
  const report = describeCycles(graph, components);

  it("reads every relative import of src/ (an import the check cannot resolve would hide its edge)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(unresolved).toEqual([]);
    // Type-only imports count: env.ts names the clock's RPC type and nothing else of the clock.
    expect([...graph.get("src/env.ts")!].filter((m) => m.startsWith("src/company-clock/"))).toEqual(["src/company-clock/api.ts"]);
  });

  it("has no cycle through src/env.ts", () => {
    const throughEnv = components.find((c) => c.includes("src/env.ts"));
    expect(throughEnv ? cycleThrough(graph, throughEnv, "src/env.ts").join(" -> ") : null, report).toBeNull();
  });

  it("has no cycle through a module of src/company-clock", () => {
    const clock = components.filter((c) => c.some((m) => m.startsWith("src/company-clock/")));
    expect(clock, report).toEqual([]);
  });

  it("finds the cycles an import type, a re-export or an import() makes", () => {
    const sample = new Map([
      ["src/a.ts", 'import type { B } from "./b";\nexport type A = B;'],
      ["src/b.ts", 'export * from "./c";\nexport type B = number;'],
      ["src/c.ts", 'export const c = () => import("./a");'],
      ["src/d.ts", 'import { c } from "./c";\nexport type D = import("./d").D;'],
    ]);
    const { graph: g, unresolved: none } = importGraph(sample);
    expect(none).toEqual([]);
    expect(cyclicComponents(g)).toEqual([["src/a.ts", "src/b.ts", "src/c.ts"], ["src/d.ts"]]);
    expect(cycleThrough(g, ["src/a.ts", "src/b.ts", "src/c.ts"], "src/a.ts")).toEqual(["src/a.ts", "src/b.ts", "src/c.ts", "src/a.ts"]);
  });
});
