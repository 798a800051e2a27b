import { env, exports } from "cloudflare:workers";

export const BASE = "https://api.test";

export type Json = Record<string, any>;

export interface CallResult {
  status: number;
  body: Json;
  headers: Headers;
}

/** Calls the Worker's fetch like an HTTP client would. */
export async function call(
  method: string,
  path: string,
  options: { token?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
  if (options.token) headers.Authorization = `Bearer ${options.token}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers["Content-Type"] ??= "application/json";
  }
  const response = await exports.default.fetch(new Request(`${BASE}${path}`, { method, headers, body }));
  const text = await response.text();
  let parsed: Json = {};
  try {
    parsed = text ? JSON.parse(text) : {};
  } catch {
    parsed = { __text: text };
  }
  return { status: response.status, body: parsed, headers: response.headers };
}

const tokens = new Map<string, string>();

/** A token for a demo client (cached per test file). */
export async function tokenFor(clientId: string, scope?: string): Promise<string> {
  const key = `${clientId} ${scope ?? ""}`;
  const cached = tokens.get(key);
  if (cached) return cached;
  const res = await call("POST", "/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: clientId, client_secret: `${clientId}-secret`, ...(scope ? { scope } : {}) },
  });
  if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${JSON.stringify(res.body)}`);
  tokens.set(key, res.body.access_token);
  return res.body.access_token;
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

export { env };
