// Property-based "bad input" test over every operation of the public API.
//
// The operations are read from the live OpenAPI document (GET /v1/openapi.json: `paths` × methods),
// so a new route is fuzzed without touching this file. For each one fast-check generates requests
// from the operation's own schemas: path ids (junk, well-formed but absent, and real records of the
// test company so that body validation is reached), query strings (wrong types, out of range,
// duplicated, control characters, invalid UTF-8, over-long URLs, unknown keys) and bodies (wrong
// types, null, -0, 1e309, 2^53+1, lone surrogates as raw `\ud800` escapes, invalid UTF-8 bytes,
// huge strings within and above the 64 KiB limit, nesting deeper than 32, arrays where objects are
// expected, duplicate keys, unknown fields, empty and non-JSON bodies, wrong Content-Type and
// charset). Every case knows whether the documented contract makes it invalid. Checked:
//   - never a 5xx; a 4xx whenever the input is invalid (2xx is allowed only for inputs that may be
//     valid, e.g. lists with ignored junk in the query);
//   - the error shape: Shape A (`error`, `error_description`) for 401, 403 insufficient_scope and
//     every error of the token endpoint; Shape B (`success: false`, non-empty `msg`) otherwise;
//     JSON, bounded, without stack traces or source paths; 405 carries `Allow`;
//   - no state change after a failed request (reads included): a fingerprint of the test
//     account's rows (D1), its R2 objects and its company clock (Durable Object) is equal before and after.
// Separately: 401 Shape A on every authenticated operation without a valid token; PUT /v1/uploads
// with a real upload token and a refused Content-Length (nothing changes, the token stays usable);
// 405 + Allow for undocumented methods; a coverage check (every documented and registered operation
// was exercised, and every JSON body was reached by validation with a message naming a field); and,
// at the end, regression tests for the bugs this test found.
//
// Runs per operation: 15 by default (the whole file takes about half a minute on two cores).
//   FUZZ_RUNS=500 FUZZ_SEED=random npx vitest run --project worker test/worker/fuzz.test.ts
//   FUZZ_SEED=<seed from a failure report> npx vitest run --project worker test/worker/fuzz.test.ts -t "<METHOD /path>"
//   FUZZ_VERBOSE=1 … prints the statuses each operation answered.
// These variables reach the test as bindings (tests in workerd see no host environment):
// vitest.config.ts forwards them in the worker project's miniflare.bindings. Not VITE_* variables: Vitest inlines
// import.meta.env into its module cache (node_modules/.vitest-cache, keyed by the file's content)
// and reuses it on later runs whatever the variables are then.

import { runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { MAX_JSON_DEPTH, MAX_URL_LENGTH, bodyRuleFor } from "../../src/lib/body";
import { MAX_MESSAGE_CHARS } from "../../src/lib/errors";
import { clockFor } from "../../src/company-clock/handoff/worker";
import {
  BASE,
  call,
  captureErrorLogs,
  createAccount,
  createContact,
  createDocumentType,
  createGroup,
  createItem,
  documentedPath,
  readResult,
  signTestToken,
  uniqueWord,
  type CallResult,
  type OpenApiJson,
  type Fields,
  type TestAccount,
  fieldsOf,
  type Operation as ApiOperation,
  ok,
  expectStatus,
  openApiDocument,
} from "./helpers";

// ---------------------------------------------------------------------------------------------
// Settings

const DEFAULT_RUNS = 15;
/** Set to a seed from a failure report to replay it (when FUZZ_SEED cannot be passed). */
const REPLAY_SEED: number | undefined = undefined;

/** A binding's value (see the note at the top), or undefined when not bound or empty. */
function setting(name: string): string | undefined {
  const bound = (env as unknown as Record<string, unknown>)[name];
  return typeof bound === "string" && bound.trim() !== "" ? bound.trim() : undefined;
}
const RUNS = Math.max(1, Number.parseInt(setting("FUZZ_RUNS") ?? "", 10) || DEFAULT_RUNS);
const seedSetting = Number.parseInt(setting("FUZZ_SEED") ?? "", 10);
// A fixed seed by default, so that `npm test` (and CI) is repeatable; FUZZ_SEED=random explores.
const FIXED_SEED = 20261121;
const SEED = Number.isFinite(seedSetting)
  ? seedSetting
  : setting("FUZZ_SEED") === "random"
    ? Math.floor(Math.random() * 0x7fffffff)
    : (REPLAY_SEED ?? FIXED_SEED);
const OP_TIMEOUT = Math.max(30_000, RUNS * 400);

/** Each operation's own seed, derived from the file's seed (so that operations do not draw alike). */
function seedFor(key: string): number {
  let h = SEED | 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 1;
}

// ---------------------------------------------------------------------------------------------
// The operations, from the live document

const doc: OpenApiJson = await openApiDocument();
const METHODS = ["get", "put", "post", "delete", "patch", "options", "head", "trace"] as const;
const TOKEN_URL: string =
  doc.components?.securitySchemes?.oauth2?.flows?.clientCredentials?.tokenUrl ?? "/v1/oauth/token";

function deref(schema: OpenApiJson | undefined): OpenApiJson | undefined {
  let s = schema;
  for (let i = 0; s && typeof s.$ref === "string" && i < 10; i++)
    s = doc.components?.schemas?.[s.$ref.replace("#/components/schemas/", "")];
  return s;
}

interface Operation {
  key: string;
  method: string;
  path: string;
  pathParams: OpenApiJson[];
  queryParams: OpenApiJson[];
  /** bearer: OAuth2 token; public: `security: []`; apiKey: another scheme (the upload token header). */
  auth: "bearer" | "public" | "apiKey";
  apiKeyHeader?: string;
  tokenEndpoint: boolean;
  body?: { required: boolean; json?: OpenApiJson };
}

function toOperation(path: string, method: string, op: OpenApiJson): Operation {
  const params: OpenApiJson[] = (op.parameters ?? []).map((p: OpenApiJson) => deref(p) ?? p);
  const security: OpenApiJson[] | undefined = op.security;
  let auth: Operation["auth"] = "bearer";
  let apiKeyHeader: string | undefined;
  if (Array.isArray(security) && security.length === 0) auth = "public";
  else if (Array.isArray(security) && security.every((req) => !("oauth2" in req))) {
    auth = "apiKey";
    const scheme = doc.components?.securitySchemes?.[Object.keys(security[0] ?? {})[0] ?? ""];
    apiKeyHeader = scheme?.in === "header" ? scheme.name : undefined;
  }
  const content: OpenApiJson | undefined = op.requestBody?.content;
  const jsonType = content && Object.keys(content).find((t) => /^application\/([\w.-]+\+)?json$/i.test(t));
  return {
    key: `${method.toUpperCase()} ${path}`,
    method: method.toUpperCase(),
    path,
    pathParams: params.filter((p) => p.in === "path"),
    queryParams: params.filter((p) => p.in === "query"),
    auth,
    apiKeyHeader,
    tokenEndpoint: path === TOKEN_URL && method === "post",
    body: content
      ? { required: op.requestBody.required === true, json: jsonType ? deref(content[jsonType].schema) : undefined }
      : undefined,
  };
}

const operations: Operation[] = Object.entries<OpenApiJson>(doc.paths ?? {}).flatMap(([path, item]) =>
  METHODS.filter((m) => item[m]).map((m) => toOperation(path, m, item[m])),
);

// ---------------------------------------------------------------------------------------------
// Fixtures: a fresh account with one record of each kind, and the fingerprint of its state

interface Fixtures {
  account: TestAccount;
  /** Real ids of the test company, by path parameter name. */
  realIds: Record<string, string[]>;
}
let fx: Fixtures;

async function mustCall<O extends ApiOperation>(token: string, operation: O, path: string, body?: unknown) {
  const res = await call(operation, path, { token, body });
  if (res.status >= 300) throw new Error(`fixture ${operation} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return ok(res);
}

async function firstId(sql: string, ...binds: unknown[]): Promise<number> {
  const row = await env.DB.prepare(sql)
    .bind(...binds)
    .first<{ id: number }>();
  if (!row) throw new Error(`fixture: no row for ${sql}`);
  return row.id;
}

/** A date a few years ahead: the fixtures' reminders never come due while the tests run. */
const FUTURE_YEAR = new Date().getUTCFullYear() + 4;

async function makeFixtures(): Promise<Fixtures> {
  const account = await createAccount();
  const { ownerToken: t, companyId } = account;
  const contact = await createContact(t);
  const group = await createGroup(t);
  await mustCall(t, "createDepartment", "/v1/departments", { dept_name: uniqueWord("Dept ") });
  const docType = await createDocumentType(t, { fields: [{ field_name: "Policy number", field_type: "text" }] });
  await mustCall(t, "createFolder", "/v1/folders", { folder_name: uniqueWord("Folder ") });
  const item = await createItem(t, { expiry_date: `${FUTURE_YEAR}-01-15`, contact_id: contact.contact_id });
  await mustCall(t, "setItemTags", `/v1/items/${item.item_id}/tags`, { tags: ["fuzz"] });
  await mustCall(t, "createReminderSequence", "/v1/reminder-sequences", {
    name: uniqueWord("Seq "),
    reminders: [{ period: 7, unit: "day", type: 1 }],
  });
  await mustCall(t, "createTask", "/v1/tasks", {
    title: "Fuzz task",
    due_at: `${FUTURE_YEAR}-01-01 09:00:00`,
    item_id: item.item_id,
  });
  const session = await mustCall(t, "createUploadSession", "/v1/uploads", { filename: "fuzz.txt" });
  const put = await readResult(
    await exports.default.fetch(
      new Request(`${BASE}/v1/uploads`, {
        method: "PUT",
        headers: { "X-Upload-Token": session.body.data.upload_token, "Content-Type": "application/octet-stream" },
        body: new TextEncoder().encode("fuzz bytes"),
      }),
    ),
    "uploadFileBytes",
  );
  if (put.status !== 200) throw new Error(`fixture upload: ${put.status} ${JSON.stringify(put.body)}`);
  const fileId: string = put.body.data.file_id;
  await mustCall(t, "attachFile", `/v1/items/${item.item_id}/attachments`, { file_id: fileId });
  let reminders = await mustCall(t, "listItemReminders", `/v1/items/${item.item_id}/reminders`);
  if (!reminders.body.data.queued.length) {
    await mustCall(t, "createItemReminder", `/v1/items/${item.item_id}/reminders`, {
      period: 3,
      unit: "day",
      rtype: 1,
    });
    reminders = await mustCall(t, "listItemReminders", `/v1/items/${item.item_id}/reminders`);
  }
  // Disabled: no events are recorded for it, so no deliveries run in the background.
  const webhook = await mustCall(t, "createWebhook", "/v1/webhooks", {
    url: "http://127.0.0.1:9/fuzz",
    events: ["item.created"],
    enabled: false,
  });
  const task = await env.DB.prepare("SELECT id, public_id FROM tasks WHERE company_id = ?")
    .bind(companyId)
    .first<{ id: number; public_id: string }>();
  const ids = (...xs: Array<number | string>) => xs.map(String);
  return {
    account,
    realIds: {
      contact_id: ids(contact.contact_id),
      group_id: ids(group.groupid),
      company_id: ids(companyId),
      dept_id: ids(
        await firstId("SELECT id FROM departments WHERE company_id = ? AND is_default = 0", companyId),
        account.deptId,
      ),
      type_id: ids(docType.typeid),
      item_id: ids(item.item_id),
      seqid: ids(await firstId("SELECT id FROM reminder_sequences WHERE company_id = ? ORDER BY id DESC", companyId)),
      folder_id: ids(await firstId("SELECT id FROM folders WHERE company_id = ?", companyId)),
      task_id: ids(task!.id, task!.public_id),
      file_id: [fileId],
      reminder_id: ids(reminders.body.data.queued[0]!.reminder_id),
      webhook_id: ids(webhook.body.data.webhook_id),
    },
  };
}

/** Rows of company data, per table: all of them, for the account's companies. */
const STATE_TABLES: Array<[table: string, columns: string, order: string]> = [
  ["departments", "*", "id"],
  ["contact_groups", "*", "id"],
  ["contacts", "*", "id"],
  ["document_types", "*", "id"],
  ["document_type_fields", "*", "id"],
  ["folders", "*", "id"],
  ["items", "*", "id"],
  ["item_renewals", "*", "id"],
  ["tags", "*", "id"],
  ["item_tags", "*", "item_id, tag_id"],
  ["files", "*", "id"],
  ["item_files", "*", "item_id, file_id"],
  ["upload_sessions", "*", "id"],
  ["reminder_sequences", "*", "id"],
  // synced_version is the Durable Object's acknowledgement, not the company's data.
  ["reminder_sync", "company_id, item_id, version", "company_id, item_id"],
  ["reminder_wakeups", "*", "company_id"],
  ["tasks", "*", "id"],
  ["task_counts", "*", "company_id, status"],
  // failing_since is kept by the deliveries, in the background.
  [
    "webhook_endpoints",
    "id, company_id, url, description, events, enabled, secret_ciphertext, previous_secret_ciphertext, previous_secret_expires_at, disabled_reason, updated_at",
    "id",
  ],
];

type Fingerprint = Record<string, string>;

/**
 * The test account's whole state: its D1 rows, its R2 objects and its company clock (Durable Object)
 * (items and reminders; its webhook events and deliveries move in the background and are left out).
 */
async function fingerprint(): Promise<Fingerprint> {
  const { accountId, companyId } = fx.account;
  const inAccount = "company_id IN (SELECT id FROM companies WHERE account_id = ?1)";
  const statements = [
    env.DB.prepare("SELECT * FROM companies WHERE account_id = ?1 ORDER BY id"),
    env.DB.prepare(
      "SELECT client_id, scopes, active, token_generation, company_id, user_id FROM api_clients WHERE account_id = ?1 ORDER BY client_id",
    ),
    ...STATE_TABLES.map(([table, columns, order]) =>
      env.DB.prepare(`SELECT ${columns} FROM ${table} WHERE ${inAccount} ORDER BY ${order}`),
    ),
    // Webhook events are taken out of D1 by the Durable Object in the background: their counter,
    // which only a recorded event moves, tells whether a request recorded one.
    env.DB.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'webhook_events' AND ?1 = ?1"),
  ].map((s) => s.bind(accountId));
  const names = ["companies", "api_clients", ...STATE_TABLES.map(([table]) => table), "webhook_events"];
  const results = await env.DB.batch(statements);
  const print: Fingerprint = {};
  names.forEach((name, i) => (print[name] = JSON.stringify(results[i]?.results)));
  const objects = await env.FILES.list({ prefix: `c/${companyId}/` });
  print.r2 = JSON.stringify(objects.objects.map((o) => [o.key, o.size]));
  print.reminderObject = JSON.stringify(
    await runInDurableObject(clockFor(env, companyId), (_instance, state) => [
      state.storage.sql.exec("SELECT * FROM items ORDER BY item_id").toArray(),
      state.storage.sql.exec("SELECT * FROM reminders ORDER BY reminder_id").toArray(),
      state.storage.sql.exec("SELECT * FROM triggered ORDER BY reminder_id").toArray(),
      state.storage.sql.exec("SELECT * FROM deliveries ORDER BY reminder_id, channel").toArray(),
    ]),
  );
  return print;
}

function changedParts(before: Fingerprint, after: Fingerprint): string[] {
  return Object.keys({ ...before, ...after }).filter((k) => before[k] !== after[k]);
}

/** The changed parts, each with the text around its first difference. */
function describeChanges(before: Fingerprint, after: Fingerprint): string {
  return changedParts(before, after)
    .map((k) => {
      const a = before[k] ?? "";
      const b = after[k] ?? "";
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      const from = Math.max(0, i - 80);
      return `${k}: …${a.slice(from, i + 120)}… → …${b.slice(from, i + 120)}…`;
    })
    .join("\n    ");
}

// ---------------------------------------------------------------------------------------------
// Generated inputs. A JSON value is generated as raw JSON text, so that escapes (`"\ud800"`),
// `-0`, `1e309` and duplicate keys reach the service exactly as written.

type Raw = string;
interface Val {
  raw: Raw;
  /** True when the documented schema refuses the value (so the request must fail). */
  invalid: boolean;
}

const NON_STRING: Raw[] = [
  "null",
  "true",
  "false",
  "0",
  "-1",
  "1.5",
  "1e309",
  "-0",
  "9007199254740993",
  "[]",
  "{}",
  '["x"]',
  '{"a":"b"}',
  "[[[]]]",
];
const NON_NUMBER: Raw[] = [
  "null",
  "true",
  "false",
  '"1"',
  '""',
  '"abc"',
  '"NaN"',
  '"1e3"',
  "[]",
  "{}",
  "[1]",
  '{"$gt":0}',
];
const NON_BOOLEAN: Raw[] = ["null", "0", "1", '"true"', '"false"', '""', "[]", "{}", "[true]"];
const NON_ARRAY: Raw[] = ["null", "true", "0", '"a"', "{}", '{"0":"a"}', '"[]"'];
const NON_OBJECT: Raw[] = ["null", "true", "0", '"a"', "[]", "[{}]", '"{}"'];
/** Text the service refuses in every text field: lone surrogates and control characters. */
const BAD_TEXT: Raw[] = [
  '"\\ud800"',
  '"a\\udc00b"',
  '"\\ud83d"',
  '"\\udfff\\ud800"',
  '"a\\u0000b"',
  '"\\u0007"',
  '"x\\u007f"',
  '"x\\u0085"',
  '"\\u001b[31m"',
];
const BAD_DATES = [
  "2023-02-30",
  "2023-13-01",
  "2023-00-10",
  "20230101",
  "2023-1-1",
  "01.02.2023",
  "2023-02-29",
  "tomorrow",
  "",
  "9999-99-99",
  "2030-01-15T00:00:00Z",
];
const BAD_EMAILS = ["", "a", "a@", "@b.example", "a b@c.example", "a@@b.example"];
const PATTERN_PROBES = ["", "x", "99:99", "1:00", "abc/def/ghi", "fil_", "tsk_", "a".repeat(300), "ñ", "0"];
/** Junk that may or may not be valid for a field. */
const JUNK: Raw[] = [
  "null",
  '""',
  '"x"',
  "0",
  "-0",
  "1",
  "2",
  "9007199254740993",
  "1e309",
  "true",
  "false",
  "[]",
  "{}",
  '"2030-01-15"',
  '"\\ud800"',
  '"day"',
  '"  "',
  "[null]",
  '{"a":[1,{"b":null}]}',
];
const UNKNOWN_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "__fuzz",
  "",
  "FIRST_NAME",
  "first name",
  "id",
  "company_id",
  "x".repeat(300),
  "\u00e9t\u00e9",
  "\ud83d\ude00",
];

const json = (value: unknown) => JSON.stringify(value);

/** A value of the schema's JSON type that the schema refuses, or undefined when none is known. */
function invalidValue(schemaIn: OpenApiJson | undefined, depth = 0): fc.Arbitrary<Raw> | undefined {
  const s = deref(schemaIn);
  if (!s || depth > 3) return undefined;
  const arbs: fc.Arbitrary<Raw>[] = [];
  const add = (raws: Raw[]) => {
    const kept = s.nullable ? raws.filter((r) => r !== "null") : raws;
    if (kept.length) arbs.push(fc.constantFrom(...kept));
  };
  const type = s.type ?? (s.properties ? "object" : undefined);
  switch (type) {
    case "string": {
      add(NON_STRING);
      add(BAD_TEXT);
      const bad: string[] = [];
      if (typeof s.maxLength === "number") bad.push("x".repeat(s.maxLength + 1), "\u00e9".repeat(s.maxLength + 1));
      if (typeof s.maxLength === "number" || s.enum || s.pattern || s.format) bad.push("x".repeat(60_000)); // within the body limit
      if ((s.minLength ?? 0) >= 1) bad.push("", "   ", "\u200b", "\u00a0\u3000");
      if (Array.isArray(s.enum)) {
        const values = s.enum.map(String);
        bad.push(
          ...[
            "",
            "x",
            "null",
            ...values.map((v: string) => `${v.toUpperCase()}_`),
            ...values.map((v: string) => `${v}\u0000`),
          ].filter((v) => !values.includes(v)),
        );
      }
      if (typeof s.pattern === "string") {
        const re = new RegExp(s.pattern);
        bad.push(...PATTERN_PROBES.filter((v) => !re.test(v)));
      }
      if (s.format === "date") bad.push(...BAD_DATES);
      if (s.format === "email") bad.push(...BAD_EMAILS);
      if (bad.length) arbs.push(fc.constantFrom(...bad).map(json));
      break;
    }
    case "integer":
    case "number": {
      add(NON_NUMBER);
      const bad: Raw[] = ["1e309", "-1e309"];
      if (type === "integer") bad.push("1.5", "0.5", "-2.5", "1e-7", "4.000001");
      const min = s.minimum;
      const max = s.maximum;
      if (typeof min === "number") {
        bad.push(String(min - 1), String(min - 1000));
        if (s.exclusiveMinimum === true) bad.push(String(min), ...(min === 0 ? ["-0"] : []));
      }
      if (typeof s.exclusiveMinimum === "number") bad.push(String(s.exclusiveMinimum), String(s.exclusiveMinimum - 1));
      if (typeof max === "number" && max <= Number.MAX_SAFE_INTEGER) {
        bad.push(String(max + 1), "9007199254740993", "1e21");
        if (s.exclusiveMaximum === true) bad.push(String(max));
      }
      if (Array.isArray(s.enum)) {
        const values: number[] = s.enum.filter((v: unknown) => typeof v === "number");
        bad.push(
          ...[Math.max(...values) + 1, Math.min(...values) - 1, 0.5].filter((v) => !values.includes(v)).map(String),
        );
      }
      add(bad);
      break;
    }
    case "boolean":
      add(NON_BOOLEAN);
      break;
    case "array": {
      add(NON_ARRAY);
      const bad: Raw[] = [];
      if ((s.minItems ?? 0) >= 1) bad.push("[]");
      if (typeof s.maxItems === "number" && s.maxItems < 1000)
        bad.push(
          `[${Array(s.maxItems + 1)
            .fill(sampleValue(s.items))
            .join(",")}]`,
        );
      add(bad);
      const item = invalidValue(s.items, depth + 1);
      if (item) arbs.push(item.map((r) => `[${r}]`));
      break;
    }
    case "object": {
      add(NON_OBJECT);
      if (s.additionalProperties === false) arbs.push(fc.constant('{"__fuzz_unknown":1}'));
      if (Array.isArray(s.required) && s.required.length) arbs.push(fc.constant("{}"));
      if (s.properties && depth < 3) arbs.push(objectArb(s, depth + 1, true).map((v) => v.raw));
      break;
    }
  }
  return arbs.length ? fc.oneof(...arbs) : undefined;
}

/** A plausible value (the documented example when there is one). */
function sampleValue(schemaIn: OpenApiJson | undefined): Raw {
  const s = deref(schemaIn);
  if (!s) return '"x"';
  if (s.example !== undefined) return json(s.example);
  if (s.default !== undefined) return json(s.default);
  if (Array.isArray(s.enum)) return json(s.enum[0]);
  if (s.type === "integer" || s.type === "number") return String(s.minimum ?? 1);
  if (s.type === "boolean") return "true";
  if (s.type === "array") return "[]";
  if (s.type === "object") return "{}";
  return '"x"';
}

/** A value that may or may not be valid: examples, enum members, junk, random JSON. */
function maybeValue(schemaIn: OpenApiJson | undefined): fc.Arbitrary<Raw> {
  const s = deref(schemaIn);
  const arbs: fc.Arbitrary<Raw>[] = [fc.constantFrom(...JUNK), fc.constant(sampleValue(s)), fc.json({ maxDepth: 2 })];
  if (Array.isArray(s?.enum)) arbs.push(fc.constantFrom(...s.enum.map(json)));
  return fc.oneof(...arbs);
}

/**
 * A JSON object for an object schema: each property absent, plausible or invalid; sometimes
 * unknown keys; sometimes a key given twice (JSON.parse keeps the last one, which decides).
 * `forceInvalid` makes sure the object violates the schema.
 */
function objectArb(s: Fields, depth: number, forceInvalid: boolean): fc.Arbitrary<Val & { label: string }> {
  const props = Object.entries<OpenApiJson>(s.properties ?? {});
  const names = new Set(props.map(([name]) => name));
  const required: string[] = Array.isArray(s.required) ? s.required : [];
  const strict = s.additionalProperties === false;
  const invalids = props.map(([, ps]) => invalidValue(ps, depth + 1));
  const propArbs = props.map(([, ps], i) => {
    const choices: Array<fc.WeightedArbitrary<Val | null>> = [
      { weight: 3, arbitrary: fc.constant(null) },
      { weight: 3, arbitrary: maybeValue(ps).map((raw) => ({ raw, invalid: false })) },
    ];
    const bad = invalids[i];
    if (bad) choices.push({ weight: 2, arbitrary: bad.map((raw) => ({ raw, invalid: true })) });
    return fc.oneof(...choices);
  });
  const badIndexes = invalids.flatMap((a, i) => (a ? [i] : []));
  const forced: fc.Arbitrary<{ index: number; raw: Raw } | null> =
    forceInvalid && badIndexes.length
      ? fc.constantFrom(...badIndexes).chain((index) => invalids[index]!.map((raw) => ({ index, raw })))
      : fc.constant(null);
  const unknown = fc.array(
    fc.oneof(fc.constantFrom(...UNKNOWN_KEYS), fc.string({ maxLength: 12 })).filter((k) => !names.has(k)),
    { maxLength: 2 },
  );
  return fc
    .record({ values: fc.tuple(...propArbs), forced, unknown, dup: fc.option(fc.constantFrom(...JUNK), { freq: 4 }) })
    .map(({ values, forced, unknown, dup }) => {
      const entries: Array<[string, Val]> = [];
      values.forEach((v, i) => {
        if (forced?.index === i) entries.push([props[i]![0], { raw: forced.raw, invalid: true }]);
        else if (v) entries.push([props[i]![0], v]);
      });
      const unknownKeys = [...unknown];
      if (forceInvalid && !forced) {
        // No property has a known invalid value: break the object another way.
        if (strict) unknownKeys.push("__fuzz_unknown");
        else if (required.length) {
          const drop = required[0]!;
          entries.splice(0, entries.length, ...entries.filter(([k]) => k !== drop));
        }
      }
      for (const k of unknownKeys) entries.push([k, { raw: "1", invalid: strict }]);
      const missing = required.filter((r) => !entries.some(([k]) => k === r));
      let invalid = entries.some(([, v]) => v.invalid) || missing.length > 0;
      if (forceInvalid && !invalid) {
        // Not even that was possible (no properties, not strict, nothing required).
        return { raw: "[]", invalid: true, label: "array instead of object" };
      }
      const parts = entries.map(([k, v]) => `${json(k)}:${v.raw}`);
      const first = entries[0];
      if (dup !== null && first) parts.unshift(`${json(first[0])}:${dup}`); // earlier duplicate: the last one counts
      invalid = invalid || (strict && unknownKeys.length > 0);
      const label = `object{${entries.map(([k, v]) => `${k.slice(0, 20)}${v.invalid ? "!" : ""}=${preview(v.raw, 24)}`).join(", ")}}${dup !== null && first ? ` dup:${first[0]}` : ""}`;
      return { raw: `{${parts.join(",")}}`, invalid, label };
    });
}

// ---------------------------------------------------------------------------------------------
// Cases

interface PathChoice {
  kind: "real" | "absent" | "junk" | "none";
  values: Record<string, string>;
}
interface QueryChoice {
  pairs: Array<[string, string]>;
  invalid: boolean;
  label: string;
}
interface BodyChoice {
  label: string;
  contentType?: string;
  /** Built when sent, so that huge payloads stay out of fast-check's reports. */
  payload: () => string | Uint8Array | null;
  invalid: boolean;
}
interface Case {
  path: PathChoice;
  query: QueryChoice;
  body: BodyChoice;
  /** The apiKey header value (upload token), for operations authenticated by one. */
  apiKey?: string;
}

const NO_QUERY: QueryChoice = { pairs: [], invalid: false, label: "-" };
const NO_BODY: BodyChoice = { label: "none", payload: () => null, invalid: false };

function preview(text: string, max = 200): string {
  const clean = text.replace(
    /[\u0000-\u001f\u007f-\u009f]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return clean.length > max ? `${clean.slice(0, max)}… (${text.length} chars)` : clean;
}

function describeCase(op: Operation, c: Case): string {
  const path = c.path.kind === "none" ? "" : ` path[${c.path.kind}]=${preview(JSON.stringify(c.path.values), 120)}`;
  const apiKey = op.auth === "apiKey" ? ` apiKey=${preview(String(c.apiKey), 40)}` : "";
  return `${op.key}${path} query=${preview(c.query.label, 120)} body=${preview(c.body.label, 160)}${c.body.contentType ? ` (${c.body.contentType})` : ""}${apiKey}`;
}

/** Attaches a short description for fast-check's counterexample report. */
function labelled(op: Operation, c: Case): Case {
  Object.defineProperty(c, fc.toStringMethod, { value: () => describeCase(op, c), enumerable: false });
  return c;
}

// Path ids --------------------------------------------------------------------------------------

const JUNK_SEGMENTS = [
  "0",
  "-1",
  "-0",
  "00",
  "01",
  "%2B1",
  "1.5",
  "1e3",
  "0x1F",
  "1_000",
  "%201",
  "1%20",
  "%09",
  "abc",
  "null",
  "undefined",
  "NaN",
  "Infinity",
  "true",
  "%5B%5D",
  "%7B%7D",
  "9007199254740993",
  "99999999999999999999",
  "9".repeat(400),
  "1".repeat(3000),
  "%00",
  "%0A",
  "1%00",
  "%ED%A0%80",
  "%E9",
  "%C0%AF",
  "%F0%9F%98%80",
  "%",
  "%%",
  "%25",
  "%2F",
  "a%2Fb",
  "%2E%2E",
  "..",
  ".",
  "%3Cscript%3E",
  "'%20OR%201=1--",
  "tsk_",
  "tsk_%00aaaaaaaaaaaaaaaaaaa",
  "fil_",
  `fil_${"a".repeat(21)}`,
  `fil_${"a".repeat(23)}`,
  `FIL_${"a".repeat(22)}`,
  "x".repeat(MAX_URL_LENGTH + 10),
];

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** True when `segment` is a well-formed value of the path parameter (it might name a record). */
function wellFormed(param: Fields, segment: string): boolean {
  const value = decodeSegment(segment);
  if (value === undefined || value === "." || value === "..") return false;
  const s = deref(param.schema) ?? {};
  if (s.type === "integer")
    return /^[1-9][0-9]*$/.test(value) && Number(value) <= (s.maximum ?? Number.MAX_SAFE_INTEGER);
  if (typeof s.maxLength === "number" && value.length > s.maxLength) return false;
  if (typeof s.pattern === "string") return new RegExp(s.pattern).test(value);
  return value.length > 0;
}

const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/** A well-formed id that names no record. */
function absentId(param: Fields): fc.Arbitrary<string> {
  const s = deref(param.schema) ?? {};
  const example = param.example ?? s.example;
  if (typeof example === "string" && example.length > 8) {
    return fc
      .array(fc.constantFrom(...B64URL), { minLength: 6, maxLength: 6 })
      .map((chars) => example.slice(0, -6) + chars.join(""))
      .map((id) => (wellFormed(param, encodeURIComponent(id)) ? encodeURIComponent(id) : encodeURIComponent(example)));
  }
  return fc.integer({ min: 900_000_000, max: 999_999_999 }).map(String);
}

function pathArb(op: Operation): fc.Arbitrary<PathChoice> {
  if (!op.pathParams.length) return fc.constant({ kind: "none", values: {} });
  const names = op.pathParams.map((p) => p.name as string);
  const real = names.every((n) => fx.realIds[n]?.length);
  const absent = fc
    .tuple(...op.pathParams.map(absentId))
    .map((v): PathChoice => ({ kind: "absent", values: Object.fromEntries(names.map((n, i) => [n, v[i]!])) }));
  const junkFor = (p: OpenApiJson) =>
    fc
      .oneof(
        fc.constantFrom(...JUNK_SEGMENTS),
        fc.string({ minLength: 1, maxLength: 30 }).map(encodeURIComponent),
        fc.integer({ min: -1e6, max: 0 }).map(String),
      )
      .filter((seg) => !wellFormed(p, seg));
  // Each parameter junk, real or absent; at least one junk.
  const junk = fc
    .tuple(
      fc.nat(op.pathParams.length - 1),
      ...op.pathParams.map((p) =>
        fc.tuple(junkFor(p), real ? fc.constantFrom(...fx.realIds[p.name]!) : absentId(p), fc.boolean()),
      ),
    )
    .map(
      ([forcedIndex, ...per]): PathChoice => ({
        kind: "junk",
        values: Object.fromEntries(names.map((n, i) => [n, i === forcedIndex || per[i]![2] ? per[i]![0] : per[i]![1]])),
      }),
    );
  const choices: Array<fc.WeightedArbitrary<PathChoice>> = [
    { weight: 2, arbitrary: absent },
    { weight: 3, arbitrary: junk },
  ];
  if (real) {
    // The pair of ids of a nested path belongs together (the reminder and the file are the item's).
    const realArb = fc
      .tuple(...names.map((n) => fc.constantFrom(...fx.realIds[n]!)))
      .map((v): PathChoice => ({ kind: "real", values: Object.fromEntries(names.map((n, i) => [n, v[i]!])) }));
    choices.push({ weight: 5, arbitrary: realArb });
  }
  return fc.oneof(...choices);
}

// Query strings -------------------------------------------------------------------------------

/** A query parameter's schema; an `anyOf` of named values and a pattern (the item list's period) is read as its named values. */
function querySchema(param: Fields): OpenApiJson {
  const s = deref(param.schema) ?? {};
  const named = (s.anyOf as OpenApiJson[] | undefined)?.find((branch) => Array.isArray(branch.enum));
  return named ? { ...s, enum: named.enum } : s;
}

/** Percent-encoded query values that the parameter's schema refuses. */
function invalidQueryValues(param: Fields): string[] {
  const s = querySchema(param);
  const out: string[] = ["%00", "%0A", "a%1Bb"]; // control characters
  if (s.type === "integer" || s.type === "number") {
    out.push(
      "abc",
      "1.5",
      "1e3",
      "0x10",
      "%2B5",
      "%205",
      "5%20",
      "",
      "NaN",
      "Infinity",
      "9".repeat(2000),
      "true",
      "%5B%5D",
    );
    if ((s.minimum ?? -Infinity) >= 0) out.push("-1", "-5");
    if (typeof s.minimum === "number") out.push(String(s.minimum - 1));
    if (typeof s.maximum === "number" && s.maximum < Number.MAX_SAFE_INTEGER) out.push(String(s.maximum + 1));
    if ((s.maximum ?? Infinity) <= Number.MAX_SAFE_INTEGER) out.push("9007199254740993");
  }
  if (Array.isArray(s.enum))
    out.push(
      ...["x", "", "%20", ...s.enum.map((v: unknown) => encodeURIComponent(`${String(v).toUpperCase()}_`))].filter(
        (v) => !s.enum.includes(decodeSegment(v)),
      ),
    );
  if (typeof s.maxLength === "number") out.push("a".repeat(s.maxLength + 1), "%C3%A9".repeat(s.maxLength + 1));
  return out;
}

function maybeQueryValue(param: Fields): fc.Arbitrary<string> {
  const s = querySchema(param);
  const arbs: fc.Arbitrary<string>[] = [
    fc.constantFrom("1", "0", "-0", "01", "", "a", "%C3%A9", "%F0%9F%98%80", "%25", "50%", "%2B", "+"),
  ];
  if (Array.isArray(s.enum)) arbs.push(fc.constantFrom(...s.enum.map((v: unknown) => encodeURIComponent(String(v)))));
  if (s.example !== undefined) arbs.push(fc.constant(encodeURIComponent(String(s.example))));
  arbs.push(fc.string({ maxLength: 20 }).map(encodeURIComponent));
  return fc.oneof(...arbs);
}

const GUARD_QUERIES: Array<[string, string]> = [
  ["q", "%ED%A0%80"],
  ["x", "%E9"],
  ["q", "Jos%E9"],
  ["x", "%C3%28"],
  ["q", "%F0%28%8C%28"],
  ["pad", "a".repeat(MAX_URL_LENGTH)],
];
const UNKNOWN_QUERY_KEYS = [
  "foo",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "limit%5B%5D",
  "a%5Bb%5D",
  "",
  "%00",
  "x".repeat(100),
  "LIMIT",
];

function queryArb(op: Operation, weightInvalid: number): fc.Arbitrary<QueryChoice> {
  type Part = { pairs: Array<[string, string]>; invalid: boolean };
  const parts: Array<fc.WeightedArbitrary<Part>> = [
    { weight: 1, arbitrary: fc.constantFrom(...GUARD_QUERIES).map((pair) => ({ pairs: [pair], invalid: true })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(...UNKNOWN_QUERY_KEYS), fc.constantFrom("1", "", "%00", "x", "%C3%A9"))
        .map((pair) => ({ pairs: [pair], invalid: false })),
    },
  ];
  for (const p of op.queryParams) {
    const name = encodeURIComponent(p.name);
    parts.push({
      weight: weightInvalid,
      arbitrary: fc.constantFrom(...invalidQueryValues(p)).map((v) => ({ pairs: [[name, v]], invalid: true })),
    });
    parts.push({
      weight: 1,
      arbitrary: fc.tuple(maybeQueryValue(p), maybeQueryValue(p)).map(([a, b]) => ({
        pairs: [
          [name, a],
          [name, b],
        ],
        invalid: true,
      })),
    });
    parts.push({ weight: 2, arbitrary: maybeQueryValue(p).map((v) => ({ pairs: [[name, v]], invalid: false })) });
  }
  return fc.array(fc.oneof(...parts), { maxLength: 3 }).map((list) => {
    const pairs = list.flatMap((part) => part.pairs);
    // A parameter given twice is refused (`limit must be given only once`), also across parts.
    const counts = new Map<string, number>();
    for (const [k] of pairs) counts.set(k, (counts.get(k) ?? 0) + 1);
    const declared = new Set(op.queryParams.map((p) => encodeURIComponent(p.name)));
    const repeated = [...counts].some(([k, n]) => n > 1 && declared.has(k));
    const invalid = list.some((part) => part.invalid) || repeated;
    return { pairs, invalid, label: pairs.map(([k, v]) => `${k}=${v}`).join("&") || "-" };
  });
}

// Bodies ----------------------------------------------------------------------------------------

const encoder = new TextEncoder();
const JSON_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "Application/JSON",
  "application/json;charset=UTF-8",
];
const WRONG_TYPES = [
  "text/plain",
  "text/plain; charset=utf-8",
  "application/xml",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "application/octet-stream",
  "application/jsonx",
  "json",
  "text/json",
];
const BAD_CHARSETS = [
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  'application/json; charset="iso-8859-1"',
  "text/plain; charset=windows-1252",
  "application/json; charset=utf-8; charset=ascii",
];
const BAD_UTF8: number[][] = [
  [0xff],
  [0xfe, 0xff],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xc3],
];
const MALFORMED = [
  " ",
  "{",
  "}",
  '{"a":}',
  "{'a':1}",
  "[1,]",
  '{"a":1}}',
  "nul",
  "NaN",
  "Infinity",
  "-",
  "0x10",
  '"unterminated',
  '{"a":1,}',
  "\u0000",
  "{}{}",
  "undefined",
  '{"a":01}',
  '{"a":"\\x41"}',
  '{"a":"\u0001"}',
  "//",
  '{"__proto__":',
];

function bodyField(op: Operation): string {
  return Object.keys(op.body?.json?.properties ?? {})[0] ?? "data";
}

/** Bodies the request guard refuses before routing: too large, not UTF-8, too deep, another charset. */
function guardBodyArb(op: Operation): fc.Arbitrary<BodyChoice> {
  const field = bodyField(op);
  const limit = bodyRuleFor(op.method, op.path).limit;
  const oversize = fc
    .tuple(
      fc.oneof(fc.constant(100_000), fc.integer({ min: limit + 1, max: limit + 40_000 })),
      fc.constantFrom(undefined, ...JSON_TYPES.slice(0, 2), "text/plain"),
    )
    .map(
      ([chars, contentType]): BodyChoice => ({
        label: `"${field}": ${chars} chars (over the ${limit}-byte limit)`,
        contentType,
        payload: () => `{${json(field)}:"${"x".repeat(chars)}"}`,
        invalid: true,
      }),
    );
  const deep = fc
    .tuple(
      fc.integer({ min: MAX_JSON_DEPTH + 1, max: 3000 }),
      fc.constantFrom("array", "object", "unbalanced", "in-field"),
      fc.constantFrom(undefined, "application/json"),
    )
    .map(
      ([depth, shape, contentType]): BodyChoice => ({
        label: `${shape} nesting ${depth} deep`,
        contentType,
        payload: () =>
          shape === "array"
            ? "[".repeat(depth) + "]".repeat(depth)
            : shape === "object"
              ? `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`
              : shape === "unbalanced"
                ? "[".repeat(depth)
                : `{${json(field)}:${"[".repeat(depth)}${"]".repeat(depth)}}`,
        invalid: true,
      }),
    );
  const badUtf8 = fc.tuple(fc.constantFrom(...BAD_UTF8), fc.constantFrom(undefined, "application/json")).map(
    ([bytes, contentType]): BodyChoice => ({
      label: `"${field}" with bytes ${bytes.map((b) => b.toString(16)).join(" ")} (not UTF-8)`,
      contentType,
      payload: () => new Uint8Array([...encoder.encode(`{${json(field)}:"ab`), ...bytes, ...encoder.encode('"}')]),
      invalid: true,
    }),
  );
  const charset = fc.constantFrom(...BAD_CHARSETS).map(
    (contentType): BodyChoice => ({
      label: "{} in another charset",
      contentType,
      payload: () => "{}",
      invalid: true,
    }),
  );
  // The streamed upload route does not buffer, decode or depth-check its body.
  const buffered = bodyRuleFor(op.method, op.path).mode === "buffer";
  return fc.oneof(oversize, deep, badUtf8, charset).map((b) => ({ ...b, invalid: b.invalid && buffered }));
}

/** Bodies for an operation with a JSON body schema. */
function jsonBodyArb(op: Operation): fc.Arbitrary<BodyChoice> {
  const s = op.body!.json!;
  const requiredProps = Array.isArray(s.required) && s.required.length > 0;
  const jsonType = fc.constantFrom(...JSON_TYPES);
  const asBody = (v: Val & { label: string }, contentType: string): BodyChoice => ({
    label: v.label,
    contentType,
    payload: () => v.raw,
    invalid: v.invalid,
  });
  const topLevel = [
    "null",
    "0",
    "-0",
    "1e309",
    "9007199254740993",
    '"str"',
    '"\\ud800"',
    "true",
    "[]",
    "[{}]",
    `[${sampleValue(s)}]`,
  ];
  return fc.oneof(
    { weight: 6, arbitrary: fc.tuple(objectArb(s, 0, true), jsonType).map(([v, t]) => asBody(v, t)) },
    { weight: 2, arbitrary: fc.tuple(objectArb(s, 0, false), jsonType).map(([v, t]) => asBody(v, t)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(...topLevel).map(
        (raw): BodyChoice => ({
          label: `top level ${raw}`,
          contentType: "application/json",
          payload: () => raw,
          invalid: true,
        }),
      ),
    },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          fc.constantFrom(...MALFORMED),
          fc.string({ maxLength: 30 }).map((x) => `{${x},}`),
        )
        .map(
          (text): BodyChoice => ({
            label: `malformed ${json(text)}`,
            contentType: "application/json",
            payload: () => text,
            invalid: true,
          }),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...WRONG_TYPES), objectArb(s, 0, false)).map(
        ([contentType, v]): BodyChoice => ({
          label: `${v.label} as ${contentType}`,
          contentType,
          payload: () => v.raw,
          invalid: true,
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: objectArb(s, 0, false).map(
        (v): BodyChoice => ({ label: `${v.label} without Content-Type`, payload: () => v.raw, invalid: true }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constant<BodyChoice>({
        label: "empty, no Content-Type",
        payload: () => null,
        invalid: op.body!.required && requiredProps,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constant<BodyChoice>({
        label: "empty with Content-Type: application/json",
        contentType: "application/json",
        payload: () => "",
        invalid: true,
      }),
    },
    { weight: 3, arbitrary: guardBodyArb(op) },
  );
}

/** Bodies for an operation that takes none (DELETE, PATCH …/default): ignored unless the guard refuses them. */
function looseBodyArb(op: Operation, guardOnly: boolean): fc.Arbitrary<BodyChoice> {
  if (guardOnly) return guardBodyArb(op);
  return fc.oneof(
    { weight: 3, arbitrary: guardBodyArb(op) },
    { weight: 2, arbitrary: fc.constant(NO_BODY) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(
          fc.oneof(fc.constantFrom(...MALFORMED, ...JUNK), fc.json({ maxDepth: 3 })),
          fc.constantFrom(undefined, "application/json", "text/plain"),
        )
        .map(
          ([text, contentType]): BodyChoice => ({
            label: json(text),
            contentType,
            payload: () => text,
            invalid: false,
          }),
        ),
    },
  );
}

/** Bodies for an operation whose body is raw bytes (PUT /v1/uploads). */
function bytesBodyArb(): fc.Arbitrary<BodyChoice> {
  return fc.oneof(
    fc
      .tuple(
        fc.uint8Array({ maxLength: 2048 }),
        fc.constantFrom(undefined, "application/octet-stream", "text/plain", "application/json"),
      )
      .map(
        ([bytes, contentType]): BodyChoice => ({
          label: `${bytes.length} random bytes`,
          contentType,
          payload: () => bytes,
          invalid: false,
        }),
      ),
    fc.constant<BodyChoice>({
      label: "70 KiB of zeros",
      contentType: "application/octet-stream",
      payload: () => new Uint8Array(70 * 1024),
      invalid: false,
    }),
    fc.constant(NO_BODY),
  );
}

function apiKeyArb(): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    fc.constantFrom(
      undefined,
      "",
      "upt_",
      "UPT_",
      "Bearer x",
      "null",
      `upt_${"a".repeat(42)}`,
      `upt_${"a".repeat(44)}`,
      `upt_${"+".repeat(43)}`,
    ),
    fc.array(fc.constantFrom(...B64URL), { minLength: 43, maxLength: 43 }).map((c) => `upt_${c.join("")}`), // well-formed, unknown
    fc.string({ maxLength: 60 }).filter((x) => /^[\x20-\x7e]*$/.test(x)),
  );
}

function caseArb(op: Operation): fc.Arbitrary<Case> {
  const isRead = op.method === "GET" || op.method === "HEAD";
  const withBody = op.body?.json !== undefined;
  const paths = pathArb(op);
  return paths.chain((path) => {
    const query = isRead
      ? fc.oneof({ weight: 1, arbitrary: fc.constant(NO_QUERY) }, { weight: 4, arbitrary: queryArb(op, 3) })
      : fc.oneof({ weight: 3, arbitrary: fc.constant(NO_QUERY) }, { weight: 1, arbitrary: queryArb(op, 1) });
    // A write without a JSON body on a real record (or on no record) would simply succeed: only
    // bodies the guard refuses are sent there.
    const guardOnly = !withBody && !isRead && (path.kind === "real" || path.kind === "none");
    const body: fc.Arbitrary<BodyChoice> = isRead
      ? fc.constant(NO_BODY)
      : op.auth === "apiKey" && !withBody
        ? bytesBodyArb()
        : withBody
          ? jsonBodyArb(op)
          : looseBodyArb(op, guardOnly && op.auth !== "apiKey");
    const apiKey = op.auth === "apiKey" ? apiKeyArb() : fc.constant(undefined);
    return fc.record({ path: fc.constant(path), query, body, apiKey }).map((c) => labelled(op, c));
  });
}

/** Whether the documented contract refuses the case (then it must be a 4xx that changes nothing). */
function isInvalid(op: Operation, c: Case): boolean {
  if (op.auth === "apiKey") return true; // never a valid key
  return c.path.kind === "absent" || c.path.kind === "junk" || c.query.invalid || c.body.invalid;
}

// ---------------------------------------------------------------------------------------------
// Sending a case and judging the response

const exercised = new Set<string>();
const bodyValidated = new Set<string>();
const statusTally = new Map<string, Map<number, number>>();

function buildUrl(op: Operation, c: Case): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => c.path.values[name] ?? "1");
  const query = c.query.pairs.map(([k, v]) => `${k}=${v}`).join("&");
  return `${BASE}${path}${query ? `?${query}` : ""}`;
}

const STACK_TRACE =
  /\bat\s+\S+\s+\(|\.ts:\d+|\.js:\d+|node_modules|file:\/\/|\/work\/|\bsrc\/|SQLITE_|D1_ERROR|TypeError|ReferenceError|ZodError|Internal server error/;

function shapeProblems(op: Operation, res: CallResult): string[] {
  const problems: string[] = [];
  // Any status of any operation, fuzzed: the body is checked field by field, so it is read as loose fields.
  const body = fieldsOf(res);
  const keys = Object.keys(body);
  const shapeA = () => {
    if (typeof body.error !== "string" || body.error === "")
      problems.push("Shape A: `error` is not a non-empty string");
    if (typeof body.error_description !== "string") problems.push("Shape A: `error_description` is not a string");
    const extra = keys.filter((k) => !["error", "error_description", "required_scope", "request_id"].includes(k));
    if (extra.length) problems.push(`Shape A has other keys: ${extra.join(", ")}`);
  };
  const shapeB = () => {
    if (body.success !== false) problems.push("Shape B: `success` is not false");
    if (typeof body.msg !== "string" || body.msg.trim() === "")
      problems.push("Shape B: `msg` is not a non-empty string");
    const extra = keys.filter((k) => !["success", "msg", "request_id"].includes(k));
    if (extra.length) problems.push(`Shape B has other keys: ${extra.join(", ")}`);
  };
  if (op.tokenEndpoint || res.status === 401) shapeA();
  else if (res.status === 403 && "error" in body) {
    shapeA();
    if (body.error !== "insufficient_scope") problems.push("403 Shape A must be insufficient_scope");
  } else shapeB();
  if (!/^application\/json\b/i.test(res.headers.get("Content-Type") ?? ""))
    problems.push(`error Content-Type is ${res.headers.get("Content-Type")}`);
  if (res.status === 405 && !res.headers.get("Allow")) problems.push("405 without Allow");
  // invalid_token carries its challenge; the token endpoint's invalid_client has one only for HTTP Basic (as documented).
  if (res.status === 401 && body.error === "invalid_token" && !res.headers.get("WWW-Authenticate"))
    problems.push("401 invalid_token without WWW-Authenticate");
  const message = String(body.msg ?? body.error_description ?? "");
  if (message.length > MAX_MESSAGE_CHARS + 50)
    problems.push(`message of ${message.length} characters (unbounded echo)`);
  if (STACK_TRACE.test(JSON.stringify(body))) problems.push("error body looks like a stack trace or internal detail");
  return problems;
}

/** A 400 whose message names one of the body's documented fields: the body reached validation. */
function namesBodyField(op: Operation, res: CallResult): boolean {
  const names = Object.keys(op.body?.json?.properties ?? {});
  if (res.status !== 400 || !names.length) return false;
  const body = fieldsOf(res);
  const message = op.tokenEndpoint ? body.error_description : body.success === false ? body.msg : undefined;
  if (typeof message !== "string") return false;
  const escaped = names.map((n) => n.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`(^|[^A-Za-z0-9_])(${escaped.join("|")})([^A-Za-z0-9_]|$)`).test(message);
}

async function send(
  op: Operation,
  c: Case,
  token: string | undefined,
): Promise<{ res: CallResult; url: string; headers: Record<string, string>; payload: string | Uint8Array | null }> {
  const url = buildUrl(op, c);
  const headers: Record<string, string> = { Accept: "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  if (op.apiKeyHeader && c.apiKey !== undefined) headers[op.apiKeyHeader] = c.apiKey;
  if (c.body.contentType) headers["Content-Type"] = c.body.contentType;
  const payload = c.body.payload();
  // As bytes: a string body would get `Content-Type: text/plain;charset=UTF-8` from fetch.
  const bytes = typeof payload === "string" ? encoder.encode(payload) : payload;
  const res = await readResult(
    await exports.default.fetch(new Request(url, { method: op.method, headers, body: bytes })),
  );
  return { res, url, headers, payload };
}

function report(op: Operation, c: Case, sent: Awaited<ReturnType<typeof send>>, problems: string[]): string {
  const { res, url, headers, payload } = sent;
  const bodyText =
    payload === null
      ? "(none)"
      : typeof payload === "string"
        ? payload
        : `bytes ${new TextDecoder().decode(payload.slice(0, 300))}`;
  const shownHeaders = { ...headers, ...(headers.Authorization ? { Authorization: "Bearer <owner token>" } : {}) };
  return [
    problems.join("; "),
    `  request:  ${op.method} ${preview(url, 300)}`,
    `  case:     ${describeCase(op, c)} (invalid per contract: ${isInvalid(op, c)})`,
    `  headers:  ${JSON.stringify(shownHeaders)}`,
    `  body:     ${preview(bodyText, 300)} [${payload === null ? 0 : typeof payload === "string" ? encoder.encode(payload).length : payload.length} bytes]`,
    `  response: ${res.status} ${preview(JSON.stringify(res.body), 500)}`,
    `  replay:   FUZZ_SEED=${SEED} (or REPLAY_SEED = ${SEED}) npx vitest run --project worker test/worker/fuzz.test.ts -t "${op.key}" (fast-check's seed ${seedFor(op.key)} is derived from it)`,
  ].join("\n");
}

async function runCase(op: Operation, c: Case): Promise<void> {
  const invalid = isInvalid(op, c);
  const before = await fingerprint();
  const sent = await send(op, c, fx.account.ownerToken);
  const { res } = sent;
  exercised.add(op.key);
  const tally = statusTally.get(op.key) ?? new Map<number, number>();
  tally.set(res.status, (tally.get(res.status) ?? 0) + 1);
  statusTally.set(op.key, tally);
  if (namesBodyField(op, res)) bodyValidated.add(op.key);

  const problems: string[] = [];
  const ok2xx = res.status >= 200 && res.status < 300;
  const is4xx = res.status >= 400 && res.status < 500;
  if (res.status >= 500) problems.push(`server error ${res.status}`);
  else if (invalid && !is4xx) problems.push(`expected a 4xx for input the contract refuses, got ${res.status}`);
  else if (!ok2xx && !is4xx) problems.push(`unexpected status ${res.status}`);
  if (res.status >= 400) problems.push(...shapeProblems(op, res));

  if (res.status >= 400) {
    const after = await fingerprint();
    if (changedParts(before, after).length)
      problems.push(`state changed after a failed request:\n    ${describeChanges(before, after)}`);
  }
  if (problems.length) throw new Error(report(op, c, sent, problems));
}

// ---------------------------------------------------------------------------------------------
// Fixed examples, so that every operation certainly gets an invalid field and an oversized body

function wrongType(schemaIn: OpenApiJson | undefined): Raw {
  const s = deref(schemaIn) ?? {};
  if (s.type === "string") return "12345";
  if (s.type === "integer" || s.type === "number") return '"not a number"';
  if (s.type === "boolean") return '"yes"';
  if (s.type === "array") return '{"not":"an array"}';
  return '"not an object"';
}

/** The parameter's documented example when it is well-formed (a record of no other company of ours), else a large id. */
function wellFormedExample(param: Fields): string {
  const example = param.example ?? deref(param.schema)?.example;
  return example !== undefined && wellFormed(param, encodeURIComponent(String(example)))
    ? encodeURIComponent(String(example))
    : "987654321";
}

function examples(op: Operation): Case[] {
  const out: Case[] = [];
  const names = op.pathParams.map((p) => p.name as string);
  const real =
    names.length === 0
      ? { kind: "none" as const, values: {} }
      : names.every((n) => fx.realIds[n]?.length)
        ? { kind: "real" as const, values: Object.fromEntries(names.map((n) => [n, fx.realIds[n]![0]!])) }
        : {
            kind: "absent" as const,
            values: Object.fromEntries(op.pathParams.map((p) => [p.name, wellFormedExample(p)])),
          };
  const s = op.body?.json;
  if (s?.properties) {
    const [field, fieldSchema] =
      Object.entries<OpenApiJson>(s.properties).find(([k]) => s.required?.includes(k)) ??
      Object.entries<OpenApiJson>(s.properties)[0]!;
    const raw = `{${json(field)}:${wrongType(fieldSchema)}}`;
    out.push({
      path: real,
      query: NO_QUERY,
      body: { label: `${field} of the wrong type`, contentType: "application/json", payload: () => raw, invalid: true },
    });
    const dup = `{${json(field)}:${sampleValue(fieldSchema)},${json(field)}:${wrongType(fieldSchema)}}`;
    out.push({
      path: real,
      query: NO_QUERY,
      body: {
        label: `${field} twice, the last of the wrong type`,
        contentType: "application/json",
        payload: () => dup,
        invalid: true,
      },
    });
    const surrogate = Object.entries<OpenApiJson>(s.properties).find(([, ps]) => deref(ps)?.type === "string");
    if (surrogate) {
      const text = `{${json(surrogate[0])}:"\\ud800"}`;
      out.push({
        path: real,
        query: NO_QUERY,
        body: {
          label: `${surrogate[0]} a lone surrogate`,
          contentType: "application/json",
          payload: () => text,
          invalid: true,
        },
      });
    }
  }
  if (op.method !== "GET" && op.method !== "HEAD" && bodyRuleFor(op.method, op.path).mode === "buffer") {
    const field = bodyField(op);
    out.push({
      path: real,
      query: NO_QUERY,
      body: {
        label: `"${field}": 100000 chars`,
        contentType: "application/json",
        payload: () => `{${json(field)}:"${"x".repeat(100_000)}"}`,
        invalid: true,
      },
    });
  }
  const firstQuery = op.queryParams[0];
  if (firstQuery) {
    const values = invalidQueryValues(firstQuery);
    const pairs: Array<[string, string]> = [
      [
        encodeURIComponent(firstQuery.name),
        values.find((v) => !v.startsWith("%0") && !v.startsWith("a%1B")) ?? values[0]!,
      ],
    ];
    out.push({
      path: real,
      query: { pairs, invalid: true, label: pairs.map(([k, v]) => `${k}=${v}`).join("&") },
      body: NO_BODY,
    });
  }
  return out.map((c) => labelled(op, { ...c, apiKey: op.auth === "apiKey" ? `upt_${"A".repeat(43)}` : undefined }));
}

// ---------------------------------------------------------------------------------------------
// The tests

beforeAll(async () => {
  fx = await makeFixtures();
}, 60_000);

describe("bad input to every operation", () => {
  const logged = captureErrorLogs();

  it("reads a document with operations", () => {
    expect(operations.length).toBeGreaterThan(10);
  });

  for (const op of operations) {
    it(
      op.key,
      async () => {
        const fixed = examples(op).map((c) => [c] as [Case]);
        // fast-check counts the examples among numRuns: RUNS generated cases come on top of them.
        await fc.assert(
          fc.asyncProperty(caseArb(op), (c) => runCase(op, c)),
          {
            numRuns: RUNS + fixed.length,
            seed: seedFor(op.key),
            endOnFailure: true,
            examples: fixed,
          },
        );
        expect(logged, `console.error during ${op.key}`).toEqual([]);
      },
      OP_TIMEOUT,
    );
  }
});

describe("without a valid token", () => {
  it(
    "every authenticated operation answers 401 Shape A invalid_token; the public ones never 5xx",
    async () => {
      const now = Math.floor(Date.now() / 1000);
      const owner = fx.account.ownerToken;
      const flipped = owner.slice(0, -2) + (owner.endsWith("AA") ? "BB" : "AA");
      const variants: Array<[string, string | undefined]> = [
        ["no Authorization", undefined],
        ["bare Bearer", "Bearer"],
        ["not a JWT", `Bearer ${"x".repeat(20)}`],
        ["three dots", "Bearer a.b.c"],
        ["wrong signing key", `Bearer ${await signTestToken({ secret: "some-other-signing-key-0123456789abcdef" })}`],
        ["expired", `Bearer ${await signTestToken({ iat: now - 7200, exp: now - 3600 })}`],
        ["tampered signature", `Bearer ${flipped}`],
        ["Basic scheme", `Basic ${btoa("demo-owner:demo-owner-secret")}`],
        ["token without scheme", owner],
        ["oversized header", `Bearer ${"x".repeat(5000)}`],
      ];
      const before = await fingerprint();
      let checked = 0;
      for (const [i, op] of operations.entries()) {
        // Every operation gets no header and three others, in rotation: each variant meets many operations.
        const mine = [variants[0]!, ...[1, 2, 3].map((k) => variants[1 + ((i + k) % (variants.length - 1))]!)];
        for (const [label, authorization] of mine) {
          const url = `${BASE}${op.path.replace(/\{[^}]+\}/g, "987654321")}`;
          const headers: Record<string, string> = {};
          if (authorization !== undefined) headers.Authorization = authorization;
          let body: string | undefined;
          if (op.body?.json) {
            headers["Content-Type"] = "application/json";
            body = "{}";
          }
          const res = await readResult(
            await exports.default.fetch(new Request(url, { method: op.method, headers, body })),
          );
          const where = `${op.key} with ${label}: ${res.status} ${JSON.stringify(res.body)}`;
          expect(res.status, where).toBeLessThan(500);
          if (op.auth === "bearer" || op.auth === "apiKey") {
            expectStatus(res, 401, where);
            expect(fieldsOf(res).error, where).toBe("invalid_token");
            expect(typeof fieldsOf(res).error_description, where).toBe("string");
            expect(res.headers.get("WWW-Authenticate"), where).toBeTruthy();
          } else if (res.status >= 400) {
            expect(shapeProblems(op, res), where).toEqual([]);
          }
          checked++;
        }
      }
      expect(checked).toBeGreaterThanOrEqual(operations.length * 4);
      expect(changedParts(before, await fingerprint())).toEqual([]);
    },
    OP_TIMEOUT,
  );

  it(
    "random Authorization headers never pass and never 5xx",
    async () => {
      const bearerOps = operations.filter((op) => op.auth === "bearer");
      const header = fc.oneof(
        fc.string({ maxLength: 80 }).filter((x) => /^[\x20-\x7e]*$/.test(x)),
        fc
          .string({ maxLength: 200 })
          .filter((x) => /^[\x21-\x7e]*$/.test(x))
          .map((x) => `Bearer ${x}`),
        fc
          .tuple(
            fc.base64String({ maxLength: 40 }),
            fc.base64String({ maxLength: 80 }),
            fc.base64String({ maxLength: 40 }),
          )
          .map(([a, b, c]) => `Bearer ${a}.${b}.${c}`),
      );
      await fc.assert(
        fc.asyncProperty(fc.constantFrom(...bearerOps), header, async (op, authorization) => {
          const res = await readResult(
            await exports.default.fetch(
              new Request(`${BASE}${op.path.replace(/\{[^}]+\}/g, "987654321")}`, {
                method: op.method,
                headers: { Authorization: authorization },
              }),
            ),
          );
          if (res.status !== 401 || fieldsOf(res).error !== "invalid_token" || !res.headers.get("WWW-Authenticate")) {
            throw new Error(
              `${op.key} with Authorization ${JSON.stringify(authorization)}: ${res.status} ${JSON.stringify(res.body)}`,
            );
          }
        }),
        { numRuns: Math.max(50, RUNS * 5), seed: SEED, endOnFailure: true },
      );
    },
    OP_TIMEOUT,
  );
});

describe("PUT /v1/uploads with a real upload token", () => {
  // The generic property never has a valid upload token; here each run opens a session and sends
  // a Content-Length refused before the token is claimed (missing, not a whole number, too large).
  // Documented: the refusal changes nothing and the token stays usable.
  it(
    "refusals before the claim change nothing and leave the token usable",
    async () => {
      const contentLength = fc.oneof(
        fc.constant(undefined),
        fc.constantFrom(
          "abc",
          "-1",
          "1e3",
          "1.5",
          "0x10",
          "+5",
          "5 5",
          "NaN",
          "Infinity",
          "1_0",
          "99999999999999999",
          String(95 * 1024 * 1024 + 1),
        ),
        fc.string({ minLength: 1, maxLength: 20 }).filter((x) => /^[\x21-\x7e]+$/.test(x) && !/^\d{1,16}$/.test(x)),
      );
      await fc.assert(
        fc.asyncProperty(contentLength, fc.uint8Array({ minLength: 1, maxLength: 64 }), async (declared, bytes) => {
          const session = await mustCall(fx.account.ownerToken, "createUploadSession", "/v1/uploads", {
            filename: "fuzz.bin",
          });
          const token: string = session.body.data.upload_token;
          const before = await fingerprint();
          const headers: Record<string, string> = {
            "X-Upload-Token": token,
            "Content-Type": "application/octet-stream",
          };
          if (declared !== undefined) headers["Content-Length"] = declared;
          // A stream: fetch sets no Content-Length of its own for it.
          const body = new ReadableStream<Uint8Array>({
            start: (controller) => (controller.enqueue(bytes), controller.close()),
          });
          const res = await readResult(
            await exports.default.fetch(new Request(`${BASE}/v1/uploads`, { method: "PUT", headers, body })),
            "uploadFileBytes",
          );
          const where = `PUT /v1/uploads with Content-Length ${JSON.stringify(declared)} and ${bytes.length} bytes: ${res.status} ${JSON.stringify(res.body)}`;
          if (![400, 411, 413].includes(res.status)) throw new Error(`expected 400, 411 or 413: ${where}`);
          const problems = shapeProblems({ key: "PUT /v1/uploads", tokenEndpoint: false } as Operation, res);
          const changed = changedParts(before, await fingerprint());
          if (problems.length || changed.length)
            throw new Error(`${[...problems, ...changed.map((k) => `${k} changed`)].join("; ")}: ${where}`);
          const retry = await readResult(
            await exports.default.fetch(
              new Request(`${BASE}/v1/uploads`, { method: "PUT", headers: { "X-Upload-Token": token }, body: bytes }),
            ),
            "uploadFileBytes",
          );
          if (retry.status !== 200)
            throw new Error(
              `the token did not stay usable (${retry.status} ${JSON.stringify(retry.body)}) after ${where}`,
            );
        }),
        { numRuns: Math.max(5, Math.ceil(RUNS / 2)), seed: seedFor("PUT /v1/uploads real token"), endOnFailure: true },
      );
    },
    OP_TIMEOUT,
  );
});

describe("undocumented methods", () => {
  it(
    "answer 405 Shape B with Allow naming the documented methods, and change nothing",
    async () => {
      const before = await fingerprint();
      const byPath = new Map<string, Set<string>>();
      for (const op of operations) byPath.set(op.path, (byPath.get(op.path) ?? new Set()).add(op.method));
      let checked = 0;
      for (const [path, methods] of byPath) {
        for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"].filter((m) => !methods.has(m))) {
          const op = { key: `${method} ${path}`, tokenEndpoint: false } as Operation;
          const url = `${BASE}${path.replace(/\{[^}]+\}/g, "987654321")}`;
          const res = await readResult(
            await exports.default.fetch(
              new Request(url, {
                method,
                headers: {
                  Authorization: `Bearer ${fx.account.ownerToken}`,
                  ...(method === "GET" ? {} : { "Content-Type": "application/json" }),
                },
                body: method === "GET" ? undefined : "{}",
              }),
            ),
          );
          const where = `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`;
          expectStatus(res, 405, where);
          expect(shapeProblems(op, res), where).toEqual([]);
          const allow = (res.headers.get("Allow") ?? "").split(/\s*,\s*/);
          for (const m of methods) expect(allow, where).toContain(m);
          expect(allow, where).not.toContain(method);
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(0);
      expect(changedParts(before, await fingerprint())).toEqual([]);
    },
    OP_TIMEOUT,
  );
});

describe("coverage (runs last)", () => {
  it("exercised every documented and registered operation, and reached body validation for every JSON body", () => {
    const documented = operations.map((op) => op.key);
    expect(documented.length).toBeGreaterThan(10);
    expect(exercised.size).toBeGreaterThanOrEqual(documented.length);
    for (const key of documented) expect(exercised, `${key} was never exercised`).toContain(key);
    const registered = app.routes
      // Not operations: the document itself, the reference page (HTML, test/worker/docs-page.test.ts) and the
      // recipient's pages (HTML, test/worker/recipient-pages.test.ts) and the unsubscribe pages
      // (test/worker/unsubscribe.test.ts).
      .filter(
        (r) =>
          r.method !== "ALL" &&
          r.path !== "/v1/openapi.json" &&
          r.path !== "/docs" &&
          !r.path.startsWith("/r/") &&
          !r.path.startsWith("/u/"),
      )
      .map((r) => `${r.method} ${documentedPath(r.path)}`);
    for (const key of registered) expect(exercised, `registered route ${key} was never exercised`).toContain(key);
    for (const op of operations.filter((o) => o.body?.json?.properties)) {
      expect(bodyValidated, `${op.key}: no case reached body validation (a 400 naming a field)`).toContain(op.key);
    }
    if (setting("FUZZ_VERBOSE")) {
      const lines = [...statusTally].map(
        ([key, tally]) =>
          `${key}: ${[...tally]
            .sort(([a], [b]) => a - b)
            .map(([status, n]) => `${status}×${n}`)
            .join(" ")}`,
      );
      console.info(`statuses per operation (seed ${SEED}):\n${lines.join("\n")}`);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Regressions the fuzzing found. BUG-1: a 404 GET /v1/items/{item_id} had the company's reminder
// Durable Object store a tombstone for the unknown id (state changed by a failed read), which then
// hid an item created later under that id (GET 404 for good, its reminders never queued). Fixed in
// 426e7b0 ("no tombstones for unknown ids").

describe("regressions found by fuzzing", () => {
  /** The id the next item will get (AUTOINCREMENT; tests of one file run one after another). */
  async function nextItemId(): Promise<number> {
    const row = await env.DB.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'items'").first<{ seq: number }>();
    return (row?.seq ?? 0) + 1;
  }

  it("BUG-1: a 404 GET /v1/items/{item_id} leaves the company clock unchanged", async () => {
    const { companyId, ownerToken } = await createAccount();
    await createItem(ownerToken); // the company's object exists
    const dump = () =>
      runInDurableObject(clockFor(env, companyId), (_instance, state) =>
        state.storage.sql.exec("SELECT * FROM items ORDER BY item_id").toArray(),
      );
    const before = await dump();
    const res = await call("getItem", "/v1/items/987654321", { token: ownerToken });
    expectStatus(res, 404);
    expect(await dump()).toEqual(before);
  });

  it("BUG-1: an item created under an id that was once read as 404 is readable and gets its reminders", async () => {
    const { ownerToken } = await createAccount();
    const id = await nextItemId();
    expectStatus(await call("getItem", `/v1/items/${id}`, { token: ownerToken }), 404);
    const created = await call("createItem", "/v1/items", {
      token: ownerToken,
      body: { title: "Created after a 404", expiry_date: `${FUTURE_YEAR}-06-01` },
    });
    expectStatus(created, 201);
    expect(created.body.data.item_id).toBe(id);
    const detail = await call("getItem", `/v1/items/${id}`, { token: ownerToken });
    expectStatus(detail, 200, JSON.stringify(detail.body));
    expect(detail.body.data.reminders.queued.length).toBeGreaterThan(0);
  });
});
