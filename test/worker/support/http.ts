// HTTP through the Worker's own fetch, typed by operation, and assertions on the two error shapes.
//
// `call("getItem", `/v1/items/${id}`, { token })` sends the operation's method to the path (checked
// against the operation's path template) and answers a union over the operation's documented
// statuses, each with its body's type, generated from the OpenAPI document (support/api.ts, itself
// generated from the routes' zod schemas). A status check narrows it: `expectStatus(res, 200)`,
// `ok(res)` (any 2xx), `expectShapeB(res, 404)`, `expectShapeA(res, 401, ...)`; a misspelt field
// then fails tsc (test/worker/typed-calls.typecheck.ts). `callRaw` sends what no operation
// describes (unknown paths, other methods); its body is `unknown` until a shape check narrows it.
import { env, exports } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { expect } from "vitest";
import worker from "../../../src/index";
import { operationRoutes, type components, type operations } from "./api";

export const BASE = "https://api.test";

export type Operation = keyof operations;
/** The document's component schemas (bodies), by name: `Schemas["ItemDetail"]`. */
export type Schemas = components["schemas"];
/** Shape B: every error but authentication and scope. */
export type ApiError = Schemas["ApiError"];
/** Shape A: authentication and scope errors. */
export type OAuthError = Schemas["OAuthError"];
/** Either error shape: both carry `request_id`. */
export type ErrorBody = ApiError | OAuthError;
/** A body that is not JSON (CSV, NDJSON, iCalendar, HTML, bytes): its text. */
export interface TextBody {
  __text: string;
}
/** What no body reads as (304). */
export type EmptyBody = Record<string, never>;

type BodyOf<R> = R extends { content: { "application/json": infer B } }
  ? B
  : R extends { content: object }
    ? TextBody
    : EmptyBody;
type Responses<O extends Operation> = operations[O]["responses"];
type Statuses<O extends Operation> = keyof Responses<O> & number;

/** What an operation answers: one member per documented status, with that status's body. */
export type Answer<O extends Operation> = {
  [S in Statuses<O>]: { status: S; body: BodyOf<Responses<O>[S]>; headers: Headers };
}[Statuses<O>];
/** The body of an operation's answer with a status (its success by default). */
export type BodyOfStatus<O extends Operation, S extends Statuses<O>> = BodyOf<Responses<O>[S]>;
/** The body of an operation's 2xx answer. */
export type SuccessBody<O extends Operation> = Success<Answer<O>>["body"];
/** The `data` of an operation's 2xx answer. */
export type DataOf<O extends Operation> = SuccessBody<O> extends { data: infer D } ? D : never;

/** A loose object: a request body a test builds (valid or not), a D1 row. */
export type Fields = Record<string, unknown>;

/**
 * The OpenAPI document as tests of the document itself walk it (paths × methods, schemas by `$ref`).
 * `any` on purpose, here only: it is not an answer the document describes but the description, a
 * JSON Schema tree navigated by key; its keywords are checked by Redocly and Spectral (test/tools).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: the OpenAPI document itself, walked by path
export type OpenApiJson = any;

/** Any answer: a typed one, or a raw one whose body is not known. */
export interface CallResult {
  status: number;
  body: unknown;
  headers: Headers;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

type SuccessStatus = 200 | 201 | 202 | 203 | 204 | 206;
/** The 2xx members of an answer. */
export type Success<R> = R extends { status: infer S }
  ? S extends SuccessStatus
    ? R
    : number extends S
      ? R
      : never
  : never;
/** The members of an answer with status S. */
export type WithStatus<R, S extends number> = OrElse<
  R extends { status: infer T } ? (S extends T ? R & { status: S } : never) : never,
  Omit<R, "status" | "body"> & { status: S; body: unknown }
>;
/** The members of an answer whose body can be B, with that body. */
export type WithBody<R, B> = OrElse<
  R extends { body: infer T } ? (B extends T ? R & { body: B } : never) : never,
  Omit<R, "body"> & { body: B }
>;
/** What a status check takes: an answer, or anything with a status (a download, a Response). */
export type Checked = { status: number; body?: unknown };
// A status or shape the document does not list for the operation (the check passed all the same): what was checked.
type OrElse<T, Otherwise> = [T] extends [never] ? Otherwise : T;

function buildRequest(method: string, path: string, options: CallOptions): Request {
  const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  return new Request(`${BASE}${path}`, { method, headers, body });
}

/** Reads a response as the tests see it: JSON parsed, anything else as `{ __text }`; typed as `operation`'s answer when named. */
export async function readResult(response: Response): Promise<CallResult>;
export async function readResult<O extends Operation>(response: Response, operation: O): Promise<Answer<O>>;
export async function readResult(response: Response, _operation?: Operation): Promise<CallResult> {
  const text = await response.text();
  let parsed: unknown = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { __text: text };
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** `/v1/items/{item_id}` -> `^/v1/items/[^/]+$` (the query string is not part of the match). */
function templatePattern(template: string): RegExp {
  const parts = template.split(/\{[^}]+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"));
  return new RegExp(`^${parts.join("[^/]+")}$`);
}

/** The operation's method and path template; throws when `path` is not one of its paths. */
function routeOf(operation: Operation, path: string): { method: string; path: string } {
  const route = operationRoutes[operation];
  if (!templatePattern(route.path).test(path.split("?")[0]!))
    throw new Error(`${path} is not a path of ${operation} (${route.method} ${route.path})`);
  return route;
}

/** Calls an operation through the Worker's fetch like an HTTP client would; the answer is typed by status. */
export async function call<O extends Operation>(
  operation: O,
  path: string,
  options: CallOptions = {},
): Promise<Answer<O>> {
  return readResult(
    await exports.default.fetch(buildRequest(routeOf(operation, path).method, path, options)),
    operation,
  );
}

/** Sends what no operation describes (an unknown path, an unsupported method); the body is `unknown`. */
export async function callRaw(method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  return readResult(await exports.default.fetch(buildRequest(method, path, options)));
}

/** The text of an answer that is not JSON (HTML, CSV); throws when the body was JSON. */
export function textOf(res: CallResult): string {
  const text = (res.body as Partial<TextBody> | null)?.__text;
  if (typeof text !== "string") throw new Error(`expected a body that is not JSON, got ${JSON.stringify(res.body)}`);
  return text;
}

/** GET /v1/openapi.json (expects 200). */
export async function openApiDocument(options: CallOptions = {}): Promise<OpenApiJson> {
  const res = await callRaw("GET", "/v1/openapi.json", options);
  expectStatus(res, 200);
  return res.body;
}

/** Expects the status (the body in the message) and narrows the answer to it. */
export function expectStatus<R extends Checked, S extends number>(
  res: R | Checked,
  status: S,
  message?: string,
): asserts res is WithStatus<R, S> {
  expect(res.status, message ?? JSON.stringify(res.body)).toBe(status);
}

/** Expects a 2xx answer and returns it narrowed to its success statuses. */
export function ok<R extends CallResult>(res: R): Success<R> {
  if (res.status < 200 || res.status > 299)
    throw new Error(`expected a 2xx answer, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res as Success<R>;
}

/** The body's fields, for shape checks of answers no operation describes (an answer's body is an object or `{ __text }`). */
export const fieldsOf = (res: Checked): Fields =>
  typeof res.body === "object" && res.body !== null ? (res.body as Fields) : {};

/** Expects a Shape B error with the status and a message matching `msg`, and narrows the answer to it. */
export function expectShapeB<R extends Checked, S extends number>(
  res: R | Checked,
  status: S,
  msg?: RegExp,
): asserts res is WithBody<WithStatus<R, S>, ApiError> {
  const body = fieldsOf(res);
  const problems: string[] = [];
  if (res.status !== status) problems.push(`status ${res.status} != ${status}`);
  if (body.success !== false) problems.push("success is not false");
  if (typeof body.msg !== "string") problems.push("msg is not a string");
  if (msg && !msg.test(String(body.msg))) problems.push(`msg ${JSON.stringify(body.msg)} !~ ${msg}`);
  if ("error" in body) problems.push("Shape B must not carry error");
  if (problems.length) throw new Error(`${problems.join("; ")}: ${JSON.stringify(res.body)}`);
}

/** Expects a Shape A error with the status and code, and narrows the answer to it. */
export function expectShapeA<R extends Checked, S extends number>(
  res: R | Checked,
  status: S,
  error: string,
): asserts res is WithBody<WithStatus<R, S>, OAuthError> {
  const body = fieldsOf(res);
  const problems: string[] = [];
  if (res.status !== status) problems.push(`status ${res.status} != ${status}`);
  if (body.error !== error) problems.push(`error ${body.error} != ${error}`);
  if (typeof body.error_description !== "string") problems.push("error_description is not a string");
  if (problems.length) throw new Error(`${problems.join("; ")}: ${JSON.stringify(res.body)}`);
}

/** Calls the Worker's default export with a modified environment (e.g. a missing secret); the body is `unknown`. */
export async function callRawWithEnv(
  envOverrides: Partial<Cloudflare.Env> & Record<string, unknown>,
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const ctx = createExecutionContext();
  const request = buildRequest(method, path, options) as Request<unknown, IncomingRequestCfProperties>;
  const response = await worker.fetch(request, { ...env, ...envOverrides } as Cloudflare.Env, ctx);
  await waitOnExecutionContext(ctx);
  return readResult(response);
}

/** Calls an operation through the Worker's default export with a modified environment; the answer is typed by status. */
export async function callWithEnv<O extends Operation>(
  envOverrides: Partial<Cloudflare.Env> & Record<string, unknown>,
  operation: O,
  path: string,
  options: CallOptions = {},
): Promise<Answer<O>> {
  return (await callRawWithEnv(envOverrides, routeOf(operation, path).method, path, options)) as Answer<O>;
}

/** Fails when an error body carries anything that looks like a stack trace or source location. */
export function expectNoStackTrace(res: CallResult) {
  const text = JSON.stringify(res.body);
  if (/\bat\s+\S+\s+\(|\.ts:\d+|\.js:\d+|node_modules|stack/i.test(text)) {
    throw new Error(`error body looks like it carries a stack trace: ${text}`);
  }
}

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/**
 * A Hono route path as the OpenAPI document writes it: `:id` → `{id}`, and a regex parameter that
 * ends in an extension (`:token{[A-Za-z0-9_-]+\.ics}`) → `{token}.ics`.
 */
export const documentedPath = (honoPath: string) =>
  honoPath.replace(/:(\w+)\{[^/]*\\\.(\w+)\}/g, "{$1}.$2").replace(/:([^/]+)/g, "{$1}");
