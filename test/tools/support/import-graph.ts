// The import graph of src/: every relative module reference (import, `import type`, `export ... from`,
// `import()` calls and types) read with TypeScript's own parser. Shared by import-cycles.test.ts
// (its strongly connected components) and layers.test.ts (which module may name which).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";

const ROOT = resolve(import.meta.dirname, "../../..");

export type Graph = Map<string, Set<string>>;

/** The module specifiers a source names: imports and re-exports (type-only too), import() calls and import types. */
function specifiers(fileName: string, source: string): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push(node.moduleSpecifier.text);
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      ts.isExternalModuleReference(node.moduleReference) &&
      ts.isStringLiteral(node.moduleReference.expression)
    ) {
      found.push(node.moduleReference.expression.text);
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      found.push(node.arguments[0].text);
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
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
export function importGraph(sources: ReadonlyMap<string, string>): { graph: Graph; unresolved: string[] } {
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
export function cyclicComponents(graph: Graph): string[][] {
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
export function cycleThrough(graph: Graph, component: string[], start: string): string[] {
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

export function describeCycles(graph: Graph, components: string[][]): string {
  if (components.length === 0) return "no import cycles";
  return components
    .map((c) => `${c.length} modules: ${c.join(", ")}\n  e.g. ${cycleThrough(graph, c, c[0]!).join(" -> ")}`)
    .join("\n");
}

export function sourcesUnder(dir: string): Map<string, string> {
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
