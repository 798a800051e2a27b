// Runs in Node: builds the OpenAPI document from the app itself and checks it with the tools API
// clients point at it: Redocly's linter (recommended rules), Spectral (the `spectral:oas` ruleset) and
// the client generators openapi-typescript and openapi-zod-client, whose output must compile under
// `tsc --strict`. (test/e2e/conformance.test.ts checks real answers against it through Prism.)
// The document avoids what trips generators up: component names that shadow globals, `null`
// among enum values.
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { createConfig, lintFromString } from "@redocly/openapi-core";
import { Spectral } from "@stoplight/spectral-core";
import { oas } from "@stoplight/spectral-rulesets";
import openapiTS, { astToString } from "openapi-typescript";
import { generateZodClientFromOpenAPI } from "openapi-zod-client";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { libGlobals, strictErrors } from "./support/typescript";

type Json = Record<string, any>;

let source = "";
let doc: Json;
let types = "";

beforeAll(async () => {
  const res = await app.request("/v1/openapi.json");
  expect(res.status).toBe(200);
  source = await res.text();
  doc = JSON.parse(source);
  types = astToString(await openapiTS(doc));
});

/** Where each package the zod client imports lives: the versions openapi-zod-client itself depends on (zod 3, not the app's zod 4). */
function zodClientImports(): Record<string, string> {
  const generator = createRequire(createRequire(import.meta.url).resolve("openapi-zod-client"));
  return Object.fromEntries(
    ["zod", "@zodios/core"].map((name) => [name, dirname(generator.resolve(`${name}/package.json`))]),
  );
}

/** The `enum` of every schema in the document, by the schema's JSON pointer. */
function enumsIn(value: unknown, where = "#", out: Array<[string, unknown[]]> = []): Array<[string, unknown[]]> {
  if (Array.isArray(value)) value.forEach((v, i) => enumsIn(v, `${where}/${i}`, out));
  else if (value && typeof value === "object") {
    if ("enum" in value && Array.isArray(value.enum)) out.push([where, value.enum]);
    for (const [k, v] of Object.entries(value)) enumsIn(v, `${where}/${k}`, out);
  }
  return out;
}

describe("the OpenAPI document under real tools", () => {
  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const config = await createConfig({ extends: ["recommended"] });
    const problems = await lintFromString({ source, absoluteRef: "openapi.json", config });
    const report = problems.map(
      (p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(", ")}`,
    );
    expect(report).toEqual([]);
  });

  it("passes Spectral's spectral:oas ruleset with no problem of any severity (error, warning, info or hint)", async () => {
    const spectral = new Spectral();
    // What `extends: spectral:oas` means to the Spectral CLI: the ruleset's recommended rules.
    spectral.setRuleset({ extends: [[oas as never, "recommended"]] });
    const problems = await spectral.run(source);
    const report = problems.map(
      (p) => `${["error", "warning", "info", "hint"][p.severity]} ${p.code}: ${p.message} at ${p.path.join(".")}`,
    );
    expect(report).toEqual([]);
  }, 60_000);

  it("gives openapi-typescript a named operation for every operation", () => {
    expect(types).not.toMatch(/operations = Record<string, never>/);
    const ids = Object.values<Json>(doc.paths).flatMap((item) => Object.values<Json>(item).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === "string")).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(types).toContain(`    ${id}: {`);
  });

  it("generates openapi-typescript types and an openapi-zod-client client that compile under tsc --strict", async () => {
    // requirePragma: left unformatted (Prettier formats only files marked @format), which saves seconds.
    const zodClient = await generateZodClientFromOpenAPI({
      openApiDoc: doc as never,
      disableWriteToFile: true,
      prettierConfig: { requirePragma: true },
    });
    expect(
      strictErrors({ "openapi-typescript.ts": types, "openapi-zod-client.ts": zodClient }, zodClientImports()),
    ).toEqual([]);
  }, 120_000);

  it("names no component after a global of TypeScript's lib (ESNext and the DOM: File, Blob, Response, ...)", () => {
    const globals = libGlobals();
    const names = Object.values<Json>(doc.components).flatMap((section) => Object.keys(section));
    expect(names.filter((name) => globals.has(name))).toEqual([]);
  }, 30_000);

  it("publishes a nullable enum as nullable: true, with no null among its values", () => {
    expect(
      enumsIn(doc)
        .filter(([, values]) => values.includes(null))
        .map(([where]) => where),
    ).toEqual([]);
    const units = ["ReminderEntry", "WebhookReminder"].map((name) => doc.components.schemas[name].properties.unit);
    for (const unit of units)
      expect(unit).toEqual({ type: "string", nullable: true, enum: ["day", "week", "month", "year"] });
  });
});
