// Runs in Node: builds the OpenAPI document from the app itself and checks it with the tools API
// clients point at it: Redocly's linter (recommended rules) and openapi-typescript's generator.
import { createConfig, lintFromString } from "@redocly/openapi-core";
import openapiTS, { astToString } from "openapi-typescript";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";

let source = "";

beforeAll(async () => {
  const res = await app.request("/v1/openapi.json");
  expect(res.status).toBe(200);
  source = await res.text();
});

describe("the OpenAPI document under real tools", () => {
  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source, absoluteRef: "openapi.json", config });
    const report = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(", ")}`);
    expect(report).toEqual([]);
  });

  it("gives openapi-typescript a named operation for every operation", async () => {
    const ast = await openapiTS(JSON.parse(source));
    const types = astToString(ast);
    expect(types).not.toMatch(/operations = Record<string, never>/);
    const doc = JSON.parse(source) as { paths: Record<string, Record<string, { operationId?: string }>> };
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === "string")).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(types).toContain(`    ${id}: {`);
  });
});
