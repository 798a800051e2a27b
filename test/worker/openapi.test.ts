import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { RESOURCE_SCOPES } from "../../src/auth/scopes";
import { ContactExportRecordSchema, ItemExportRecordSchema } from "../../src/schemas/exports";
import { documentedPath, expectShapeA, tokenFor, type OpenApiJson, expectStatus, callRaw } from "./helpers";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
/** Operations that need no token. */
const PUBLIC = new Set([
  "get /",
  "get /health",
  "post /v1/oauth/token",
  "get /.well-known/oauth-authorization-server",
  "get /.well-known/openid-configuration",
  "get /v1/calendar/{token}.ics",
]);
/** Writes that need only a read scope: a calendar feed reads items and nothing more (docs/api-notes.md, "Calendar feeds"). */
const READ_SCOPED_WRITES = new Set(["post /v1/calendar-feeds", "delete /v1/calendar-feeds/{feed_id}"]);

let doc: OpenApiJson;
let operations: Array<{ method: string; path: string; op: OpenApiJson }>;

beforeAll(async () => {
  const res = await callRaw("GET", "/v1/openapi.json");
  expectStatus(res, 200);
  expect(res.headers.get("Content-Type") ?? "").toMatch(/^application\/json/);
  doc = res.body;
  operations = Object.entries<OpenApiJson>(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ method, path, op: item[method] as OpenApiJson })),
  );
});

/** Routes that are not operations of the document: the document itself, the reference page and the recipient's pages (HTML). */
const UNDOCUMENTED = new Set([
  "/v1/openapi.json",
  "/docs",
  "/r/:token",
  "/r/:token/:action",
  "/u/:token",
  "/u/:token/preferences",
]);

/** `METHOD /openapi/{path}` for every route registered on the Hono app (middleware entries folded). */
function registeredRoutes(): Set<string> {
  return new Set(
    app.routes
      .filter((r) => r.method !== "ALL" && !UNDOCUMENTED.has(r.path))
      .map((r) => `${r.method.toLowerCase()} ${documentedPath(r.path)}`),
  );
}

/** Resolves a `$ref` into components (schemas, parameters, headers), or returns the value itself. */
function deref(schema: OpenApiJson): OpenApiJson {
  const ref = schema?.$ref as string | undefined;
  if (!ref) return schema;
  const [, kind, name] = /^#\/components\/([^/]+)\/([^/]+)$/.exec(ref) ?? [];
  const target = kind && name ? doc.components[kind]?.[name] : undefined;
  if (!target) throw new Error(`dangling $ref ${ref}`);
  return target;
}

/** Every `$ref` string anywhere in a value. */
function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => refsIn(v, out));
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (k === "$ref" && typeof v === "string") out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe("GET /v1/openapi.json", () => {
  it("is served without authentication, as OpenAPI 3.0.3", () => {
    expect(doc.openapi).toBe("3.0.3");
    expect(typeof doc.info.title).toBe("string");
    expect(doc.info.version).toBeTruthy();
    expect(doc.info.description).toMatch(/Shape A/);
  });

  it("is the same document on every call", async () => {
    const again = await callRaw("GET", "/v1/openapi.json", { token: await tokenFor("demo-readonly") });
    expect(again.body).toEqual(doc);
  });

  it("documents every registered route, and nothing else", () => {
    const registered = registeredRoutes();
    const documented = new Set(operations.map(({ method, path }) => `${method} ${path}`));
    expect(registered.size).toBeGreaterThan(10);
    for (const route of registered) expect(documented, `route ${route} is not in the document`).toContain(route);
    for (const op of documented) expect(registered, `documented ${op} has no route`).toContain(op);
  });

  it("gives every operation a summary, tags and at least one success response", () => {
    for (const { method, path, op } of operations) {
      const where = `${method} ${path}`;
      expect(op.summary, where).toBeTruthy();
      expect(op.tags?.length, where).toBeGreaterThan(0);
      expect(
        Object.keys(op.responses).some((s) => /^2\d\d$/.test(s)),
        where,
      ).toBe(true);
    }
  });

  it("declares each {param} of a path as a required path parameter", () => {
    for (const { method, path, op } of operations) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = (op.parameters ?? []).filter((p: OpenApiJson) => p.in === "path");
      expect(declared.map((p: OpenApiJson) => p.name).sort(), `${method} ${path}`).toEqual(names.sort());
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
    }
  });

  it("has no dangling $ref", () => {
    for (const ref of refsIn(doc)) deref({ $ref: ref });
  });
});

describe("security", () => {
  it("defines the oauth2 client-credentials scheme with the token URL and every scope", () => {
    const scheme = doc.components.securitySchemes.oauth2;
    expect(scheme.type).toBe("oauth2");
    expect(Object.keys(scheme.flows)).toEqual(["clientCredentials"]);
    expect(scheme.flows.clientCredentials.tokenUrl).toBe("/v1/oauth/token");
    expect(Object.keys(scheme.flows.clientCredentials.scopes).sort()).toEqual(["*", ...RESOURCE_SCOPES].sort());
  });

  it("has no global security requirement (the public operations stay public)", () => {
    expect(doc.security ?? []).toEqual([]);
  });

  it("marks exactly the public operations as unauthenticated", () => {
    for (const { method, path, op } of operations) {
      const key = `${method} ${path}`;
      if (PUBLIC.has(key)) expect(op.security ?? [], key).toEqual([]);
      else expect(op.security, key).toBeDefined();
    }
    expect(PUBLIC.size).toBe(6);
  });

  it("gives each authenticated operation the oauth2 requirement with exactly its scope", () => {
    for (const { method, path, op } of operations) {
      const key = `${method} ${path}`;
      if (PUBLIC.has(key)) continue;
      // One requirement, or alternatives (an import names its resource's scope): each one oauth2 scope.
      expect(op.security.length, key).toBeGreaterThanOrEqual(1);
      if (op.security.length > 1) {
        for (const alternative of op.security) {
          expect(Object.keys(alternative), key).toEqual(["oauth2"]);
          expect(alternative.oauth2[0], key).toMatch(method === "get" ? /:read$/ : /:write$/);
        }
        continue;
      }
      const [requirement] = op.security;
      // The file-bytes upload is authenticated only by its upload token (spec, Authentication 7).
      if (key === "put /v1/uploads") {
        expect(requirement, key).toEqual({ uploadToken: [] });
        continue;
      }
      expect(Object.keys(requirement), key).toEqual(["oauth2"]);
      if (path === "/v1/oauth/me") {
        expect(requirement.oauth2, key).toEqual([]);
        continue;
      }
      // Reads need a `:read` scope, writes a `:write` scope, whatever the resource (but READ_SCOPED_WRITES).
      expect(requirement.oauth2, key).toHaveLength(1);
      expect(requirement.oauth2[0], key).toMatch(
        method === "get" || READ_SCOPED_WRITES.has(key) ? /:read$/ : /:write$/,
      );
      expect(RESOURCE_SCOPES as readonly string[], key).toContain(requirement.oauth2[0]);
    }
  });

  it("publishes the scope the Worker actually enforces for every scoped operation", async () => {
    const checked: string[] = [];
    for (const { method, path, op } of operations) {
      const scope: string | undefined = op.security?.[0]?.oauth2?.[0];
      if (!scope) continue;
      const alternatives: string[] = op.security.map((r: { oauth2: string[] }) => r.oauth2[0]);
      const url = path.replace(/\{[^}]+\}/g, "987654321");
      // A token with some other scope is refused with exactly the documented scope ...
      const other = RESOURCE_SCOPES.find((s) => !alternatives.includes(s))!;
      const refused = await callRaw(method.toUpperCase(), url, { token: await tokenFor("demo-owner", other) });
      expectShapeA(refused, 403, "insufficient_scope");
      expect(refused.body.required_scope, `${method} ${path}`).toBe(scope);
      // ... and a token with only that scope gets past the scope check.
      const allowed = await callRaw(method.toUpperCase(), url, { token: await tokenFor("demo-owner", scope) });
      expect([401, 403], `${method} ${path}: ${JSON.stringify(allowed.body)}`).not.toContain(allowed.status);
      checked.push(`${method} ${path}`);
    }
    expect(checked.length).toBeGreaterThanOrEqual(11);
  });

  it("documents 401 (OAuthError) on authenticated operations and 403 (OAuthError) on scoped ones", () => {
    for (const { method, path, op } of operations) {
      const key = `${method} ${path}`;
      if (PUBLIC.has(key)) continue;
      expect(deref(op.responses["401"]?.content?.["application/json"]?.schema), key).toBe(
        doc.components.schemas.OAuthError,
      );
      if (op.security[0].oauth2?.length > 0) {
        const schema = op.responses["403"]?.content?.["application/json"]?.schema;
        // Owner-only operations answer either shape: Shape A for the scope (checked first), Shape B for a non-owner.
        const shapes = (schema?.anyOf ?? schema?.oneOf ?? [schema]).map(deref);
        expect(shapes, key).toContain(doc.components.schemas.OAuthError);
        if (shapes.length > 1) {
          expect(shapes, key).toContain(doc.components.schemas.ApiError);
          expect(op.description, key).toMatch(/Account owner only/);
        }
      }
    }
  });
});

describe("what every operation declares", () => {
  it("has a unique operationId on every operation", () => {
    const ids = operations.map(({ op }) => op.operationId);
    for (const [i, id] of ids.entries())
      expect(id, `${operations[i]!.method} ${operations[i]!.path}`).toMatch(/^[a-z][A-Za-z]+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("describes every tag it uses, and has contact and license information", () => {
    const described = new Map<string, string>((doc.tags as OpenApiJson[]).map((t) => [t.name, t.description]));
    for (const { op } of operations) for (const tag of op.tags) expect(described.get(tag), tag).toBeTruthy();
    expect(doc.info.contact?.email).toBeTruthy();
    expect(doc.info.license?.name).toBeTruthy();
  });

  it("documents 400, 500 and 503 on every scoped operation, 404 where the path has an id, 413 and 415 where there is a body", () => {
    for (const { method, path, op } of operations) {
      if (!op.security?.[0]?.oauth2?.length) continue;
      const key = `${method} ${path}`;
      const statuses = Object.keys(op.responses);
      for (const status of ["400", "401", "403", "500", "503"]) expect(statuses, key).toContain(status);
      if (path.includes("{")) expect(statuses, key).toContain("404");
      if (op.requestBody) for (const status of ["413", "415"]) expect(statuses, key).toContain(status);
      else expect(statuses, key).not.toContain("415");
    }
  });

  it("describes the WWW-Authenticate header of 401 and 403 and the Retry-After of 503", () => {
    for (const { method, path, op } of operations) {
      const key = `${method} ${path}`;
      if (op.responses["401"]) expect(op.responses["401"].headers?.["WWW-Authenticate"], key).toBeDefined();
      if (op.responses["403"]) expect(op.responses["403"].headers?.["WWW-Authenticate"], key).toBeDefined();
      if (op.responses["503"]) expect(op.responses["503"].headers?.["Retry-After"], key).toBeDefined();
    }
  });

  it("guarantees msg (required) in the envelopes of writes that return a record", () => {
    let checked = 0;
    for (const { method, path, op } of operations) {
      if (method === "get" || PUBLIC.has(`${method} ${path}`)) continue;
      for (const [status, response] of Object.entries<OpenApiJson>(op.responses)) {
        if (!/^2/.test(status)) continue;
        const schema = deref(response.content["application/json"].schema);
        expect(schema.required, `${method} ${path} ${status}`).toContain("msg");
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(5);
  });

  it("publishes every isdefault as an integer enum of 0 and 1", () => {
    const found: string[] = [];
    const visit = (value: unknown, where: string) => {
      if (Array.isArray(value)) value.forEach((v, i) => visit(v, `${where}/${i}`));
      else if (value && typeof value === "object") {
        for (const [k, v] of Object.entries(value)) {
          if (k === "isdefault" && v && typeof v === "object" && !("$ref" in v) && where.endsWith("properties")) {
            expect(v, where).toMatchObject({ type: "integer", enum: [0, 1] });
            found.push(where);
          } else visit(v, `${where}/${k}`);
        }
      }
    };
    visit(doc.components.schemas, "#");
    expect(found.length).toBeGreaterThanOrEqual(3);
  });

  it("publishes the item list's period as one of the named periods or a YYYY-MM-DD..YYYY-MM-DD range (list and export)", () => {
    const named = [
      "expired",
      "today",
      "next_7_days",
      "next_30_days",
      "next_60_days",
      "next_90_days",
      "this_month",
      "next_month",
      "this_year",
    ];
    for (const path of ["/v1/items", "/v1/items/export"]) {
      const { schema } = (doc.paths[path].get.parameters as OpenApiJson[]).find((p) => p.name === "period")!;
      expect(schema, path).toEqual({
        anyOf: [
          { type: "string", enum: named },
          { type: "string", pattern: expect.any(String) },
        ],
        example: "next_30_days",
      });
      const range = new RegExp(schema.anyOf[1].pattern);
      expect(
        ["2026-01-01..2026-12-31", "2026-02-28..2026-02-28"].every((p) => range.test(p)),
        path,
      ).toBe(true);
      expect(
        [...named, "2026-01-01", "2026-01-01..", "x2026-01-01..2026-12-31", "2026-1-01..2026-12-31"].some((p) =>
          range.test(p),
        ),
        path,
      ).toBe(false);
    }
  });
});

describe("components", () => {
  it("has the two error shapes", () => {
    const { OAuthError, ApiError } = doc.components.schemas;
    expect(OAuthError.type).toBe("object");
    expect(Object.keys(OAuthError.properties).sort()).toEqual([
      "error",
      "error_description",
      "request_id",
      "required_scope",
    ]);
    expect(OAuthError.required.sort()).toEqual(["error", "error_description", "request_id"]);
    expect(ApiError.type).toBe("object");
    expect(Object.keys(ApiError.properties).sort()).toEqual(["msg", "request_id", "success"]);
    expect(ApiError.required.sort()).toEqual(["msg", "request_id", "success"]);
    expect(ApiError.properties.success.enum).toEqual([false]);
  });

  it("uses ApiError for the documented 400/404/409/413/415 responses of scoped operations", () => {
    for (const { method, path, op } of operations) {
      if (!op.security?.[0]?.oauth2?.length) continue;
      for (const status of ["400", "404", "409", "413", "415"]) {
        const response = op.responses[status];
        if (!response) continue;
        expect(deref(response.content["application/json"].schema), `${method} ${path} ${status}`).toBe(
          doc.components.schemas.ApiError,
        );
      }
    }
  });

  it("uses OAuthError for every error of the token endpoint", () => {
    const op = doc.paths["/v1/oauth/token"].post;
    for (const status of ["400", "401", "500", "503"]) {
      expect(deref(op.responses[status].content["application/json"].schema), status).toBe(
        doc.components.schemas.OAuthError,
      );
    }
  });

  it("documents JSON and form bodies for the token endpoint", () => {
    const content = doc.paths["/v1/oauth/token"].post.requestBody.content;
    expect(Object.keys(content).sort()).toEqual(["application/json", "application/x-www-form-urlencoded"]);
    const schema = deref(content["application/json"].schema);
    expect(schema.required).toEqual(["grant_type"]);
  });

  it("has examples on every Contact property, and the output field names of the spec", () => {
    const contact = doc.components.schemas.Contact;
    const fields = [
      "contact_id",
      "firstname",
      "lastname",
      "email",
      "groupid",
      "deptid",
      "country_code",
      "mobile_code",
      "phone_number",
      "iso",
      "add_date",
      "email_status",
      "email_status_changed_at",
      "language",
      "digest",
      "digest_weekday",
      "channels",
    ];
    expect(Object.keys(contact.properties).sort()).toEqual([...fields].sort());
    for (const field of fields) expect(contact.properties[field].example, field).toBeDefined();
    expect(contact.properties.contact_id.type).toBe("integer");
    expect(contact.properties.add_date.example).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it("documents the contact input names of the spec (first_name/last_name in, strict bodies)", () => {
    const create = doc.components.schemas.CreateContact;
    expect(create.required.sort()).toEqual(["email", "first_name", "last_name"]);
    expect(create.additionalProperties).toBe(false);
    for (const field of ["first_name", "last_name", "email"])
      expect(create.properties[field].example, field).toBeDefined();
  });
});

describe("bodies and answers that are not one JSON record (docs/api-notes.md, General)", () => {
  it("publishes the audit log's before and after as objects of any values, or null", () => {
    const entry = deref(doc.components.schemas.AuditEntry);
    for (const side of ["before", "after"]) {
      expect(entry.properties[side]).toMatchObject({ type: "object", nullable: true, additionalProperties: true });
      expect(entry.required).toContain(side);
    }
  });

  it("describes each media type of an import as it is, JSON first, with an example", () => {
    const body = doc.paths["/v1/imports"].post.requestBody;
    expect(Object.keys(body.content)).toEqual(["application/json", "text/csv", "application/x-ndjson"]);
    expect(body.content["application/json"].schema).toMatchObject({
      type: "array",
      items: { type: "object", additionalProperties: true },
    });
    expect(body.content["text/csv"].schema.type).toBe("string");
    expect(body.content["application/x-ndjson"].schema.type).toBe("string");
    expect(body.content["application/json"].example.length).toBeGreaterThan(1);
    expect(body.content["text/csv"].example.split("\r\n").filter(Boolean).length).toBeGreaterThan(2);
    const lines = body.content["application/x-ndjson"].example.split("\n").filter(Boolean);
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(JSON.parse(line)).toEqual(expect.any(Object));
  });

  it("describes an NDJSON export as a string of several example lines, each a record of its x-itemSchema", () => {
    for (const [path, record] of [
      ["/v1/items/export", ItemExportRecordSchema],
      ["/v1/contacts/export", ContactExportRecordSchema],
    ] as const) {
      const content = doc.paths[path].get.responses["200"].content;
      expect(content["text/csv"].schema.type, path).toBe("string");
      const ndjson = content["application/x-ndjson"];
      expect(ndjson.schema.type, path).toBe("string");
      expect(ndjson["x-itemSchema"], path).toMatchObject({ type: "object", properties: expect.any(Object) });
      expect(Object.keys(ndjson["x-itemSchema"].properties), path).toEqual(Object.keys(record.shape));
      const lines = (ndjson.example as string).split("\n");
      expect(lines.pop(), `${path}: every line ends with LF`).toBe("");
      expect(lines.length, path).toBeGreaterThan(1);
      for (const line of lines) expect(() => record.strict().parse(JSON.parse(line)), `${path}: ${line}`).not.toThrow();
      // Not a component: no operation would use it (a linter warning).
      expect(refsIn(ndjson), path).toEqual([]);
    }
  });

  it("describes GET /health (Spectral's operation-description)", () => {
    expect(doc.paths["/health"].get.description).toMatch(/\S/);
  });
});
