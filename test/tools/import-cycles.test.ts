// Import cycles in src/: the strongly connected components of its import graph
// (support/import-graph.ts). src/env.ts (the bindings and context every module names) must be on no
// cycle, and neither may any module of src/company-clock.
import { describe, expect, it } from "vitest";
import { cycleThrough, cyclicComponents, describeCycles, importGraph, sourcesUnder } from "./support/import-graph";

describe("import cycles in src/", () => {
  const { graph, unresolved } = importGraph(sourcesUnder("src"));
  const components = cyclicComponents(graph);
  const report = describeCycles(graph, components);

  it("reads every relative import of src/ (an import the check cannot resolve would hide its edge)", () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(unresolved).toEqual([]);
    // Type-only imports count: env.ts names the clock's RPC type and nothing else of the clock.
    expect([...graph.get("src/env.ts")!].filter((m) => m.startsWith("src/company-clock/"))).toEqual([
      "src/company-clock/api.ts",
    ]);
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
    expect(cycleThrough(g, ["src/a.ts", "src/b.ts", "src/c.ts"], "src/a.ts")).toEqual([
      "src/a.ts",
      "src/b.ts",
      "src/c.ts",
      "src/a.ts",
    ]);
  });
});
