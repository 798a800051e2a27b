// HTTP through the Worker's own fetch, and assertions on the two error shapes.
import { env, exports } from "cloudflare:workers";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../../src/index";

export const BASE = "https://api.test";

export type Json = Record<string, any>;

export interface CallResult {
  status: number;
  body: Json;
  headers: Headers;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

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

export async function readResult(response: Response): Promise<CallResult> {
  const text = await response.text();
  let parsed: Json = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { __text: text };
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

/** Calls the Worker's fetch like an HTTP client would. */
export async function call(method: string, path: string, options: CallOptions = {}): Promise<CallResult> {
  return readResult(await exports.default.fetch(buildRequest(method, path, options)));
}

/** Expects a Shape B error with the status and a message matching `msg`. */
export function expectShapeB(res: CallResult, status: number, msg?: RegExp) {
  const problems: string[] = [];
  if (res.status !== status) problems.push(`status ${res.status} != ${status}`);
  if (res.body.success !== false) problems.push("success is not false");
  if (typeof res.body.msg !== "string") problems.push("msg is not a string");
  if (msg && !msg.test(res.body.msg)) problems.push(`msg ${JSON.stringify(res.body.msg)} !~ ${msg}`);
  if ("error" in res.body) problems.push("Shape B must not carry error");
  if (problems.length) throw new Error(`${problems.join("; ")}: ${JSON.stringify(res.body)}`);
}

/** Expects a Shape A error with the status and code. */
export function expectShapeA(res: CallResult, status: number, error: string) {
  const problems: string[] = [];
  if (res.status !== status) problems.push(`status ${res.status} != ${status}`);
  if (res.body.error !== error) problems.push(`error ${res.body.error} != ${error}`);
  if (typeof res.body.error_description !== "string") problems.push("error_description is not a string");
  if (problems.length) throw new Error(`${problems.join("; ")}: ${JSON.stringify(res.body)}`);
}

/** Calls the Worker's default export with a modified environment (e.g. a missing secret). */
export async function callWithEnv(
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
export const documentedPath = (honoPath: string) => honoPath.replace(/:(\w+)\{[^/]*\\\.(\w+)\}/g, "{$1}.$2").replace(/:([^/]+)/g, "{$1}");
