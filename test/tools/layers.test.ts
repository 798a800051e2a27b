// The layers of src/ and the one direction imports take between them (README, "Map of the code"):
// routes (HTTP) -> records (data) -> schemas, db and lib. The company clock, the import jobs, the
// cron sweep and authentication call records, never routes: only src/app.ts, which mounts the
// routers, imports from src/routes/. Read from the same import graph as import-cycles.test.ts.
import { describe, expect, it } from "vitest";
import { importGraph, sourcesUnder, type Graph } from "./support/import-graph";

/** Modules that speak HTTP: the routers and the app, and the middleware every scoped route runs. */
const HTTP = (module: string) =>
  module === "src/app.ts" ||
  module.startsWith("src/routes/") ||
  [
    "src/lib/openapi.ts",
    "src/lib/respond.ts",
    "src/lib/validation.ts",
    "src/auth/middleware.ts",
    "src/idempotency/middleware.ts",
  ].includes(module);

const under = (dir: string) => (module: string) => module.startsWith(dir);

interface Rule {
  /** What the rule says, as the test's name. */
  says: string;
  /** The modules it constrains. */
  from: (module: string) => boolean;
  /** The modules they may not import. */
  never: (module: string) => boolean;
}

const RULES: Rule[] = [
  {
    says: "only src/app.ts (and the routers themselves) import from src/routes/",
    from: (m) => m !== "src/app.ts" && !m.startsWith("src/routes/"),
    never: under("src/routes/"),
  },
  {
    says: "records import nothing of HTTP (routes, the app, route middleware)",
    from: under("src/records/"),
    never: HTTP,
  },
  {
    says: "schemas import no records, no db and nothing of HTTP",
    from: under("src/schemas/"),
    never: (m) => m.startsWith("src/records/") || m.startsWith("src/db/") || HTTP(m),
  },
  {
    says: "db and lib import no records and no schemas",
    from: (m) => m.startsWith("src/db/") || m.startsWith("src/lib/"),
    never: (m) => m.startsWith("src/records/") || m.startsWith("src/schemas/"),
  },
  {
    says: "the company clock, the import jobs, the cron sweep, inbound email, webhooks and auth's lower modules import nothing of HTTP",
    from: (m) =>
      ["src/company-clock/", "src/imports/", "src/webhooks/", "src/inbound/"].some((dir) => m.startsWith(dir)) ||
      m === "src/scheduled.ts" ||
      (m.startsWith("src/auth/") && m !== "src/auth/middleware.ts"),
    never: HTTP,
  },
];

/** The imports that break `rule`: "from -> to". */
function violations(graph: Graph, rule: Rule): string[] {
  return [...graph].flatMap(([from, targets]) =>
    rule.from(from) ? [...targets].filter(rule.never).map((to) => `${from} -> ${to}`) : [],
  );
}

describe("layers of src/", () => {
  const { graph, unresolved } = importGraph(sourcesUnder("src"));

  it("reads every relative import of src/, and the layers exist", () => {
    expect(unresolved).toEqual([]);
    for (const dir of ["src/routes/", "src/records/", "src/schemas/", "src/db/", "src/lib/"]) {
      expect([...graph.keys()].filter(under(dir)).length, dir).toBeGreaterThan(3);
    }
    // src/app.ts mounts the routers: the one module outside src/routes/ that names them.
    expect([...graph.get("src/app.ts")!].filter(under("src/routes/")).length).toBeGreaterThan(10);
  });

  for (const rule of RULES) {
    it(rule.says, () => {
      expect(violations(graph, rule)).toEqual([]);
    });
  }

  it("finds an import that breaks a rule", () => {
    const sample = new Map([
      ["src/imports/items.ts", 'import { ruleAnchor } from "../routes/items/recurrence";'],
      ["src/routes/items/recurrence.ts", 'import type { Db } from "../../db/client";'],
      ["src/records/tags.ts", 'import { created } from "../lib/respond";'],
      ["src/schemas/tags.ts", 'import type { Tag } from "../records/tags";'],
      ["src/lib/respond.ts", ""],
      ["src/db/client.ts", ""],
      ["src/app.ts", 'import { x } from "./routes/items/recurrence";'],
    ]);
    const { graph: g } = importGraph(sample);
    expect(RULES.map((rule) => violations(g, rule))).toEqual([
      ["src/imports/items.ts -> src/routes/items/recurrence.ts"],
      ["src/records/tags.ts -> src/lib/respond.ts"],
      ["src/schemas/tags.ts -> src/records/tags.ts"],
      [],
      ["src/imports/items.ts -> src/routes/items/recurrence.ts"],
    ]);
  });
});
