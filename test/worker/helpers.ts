import { env, exports } from "cloudflare:workers";
import { SignJWT } from "jose";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";

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

async function readResult(response: Response): Promise<CallResult> {
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

/** Tokens of the four demo clients, for a file's `beforeAll`. */
export async function demoTokens() {
  const [owner, member, readonly, other] = await Promise.all(
    ["demo-owner", "demo-member", "demo-readonly", "demo-other"].map((id) => tokenFor(id)),
  );
  return { owner: owner!, member: member!, readonly: readonly!, other: other! };
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

// ---------------------------------------------------------------------------
// Contacts and contact groups (additive helpers).

/** A random lowercase word (letters only), unique enough that no other test's word shares its prefix. */
export function uniqueWord(prefix = "w"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return prefix + Array.from(bytes, (b) => String.fromCharCode(97 + (b % 26))).join("");
}

/** A unique email address, optionally built around `word`. */
export function uniqueEmail(word = uniqueWord("e")): string {
  return `${word}@example.test`;
}

export const TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

/** Output fields of a contact, exactly. */
export const CONTACT_FIELDS = [
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
].sort();

/** Output fields of a contact group, exactly. */
export const GROUP_FIELDS = ["groupid", "group_name", "deptid", "isdefault", "add_date", "contacts_count"].sort();

/** Creates a contact through the API (expects 201) and returns its output record. */
export async function createContact(token: string, body: Record<string, unknown> = {}): Promise<Json> {
  const res = await call("POST", "/v1/contacts", {
    token,
    body: { first_name: "Test", last_name: "Contact", email: uniqueEmail(), ...body },
  });
  if (res.status !== 201) throw new Error(`create contact: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Creates a contact group through the API (expects 201) and returns its output record. */
export async function createGroup(token: string, body: Record<string, unknown> = {}): Promise<Json> {
  const res = await call("POST", "/v1/contact-groups", { token, body: { group_name: uniqueWord("g"), ...body } });
  if (res.status !== 201) throw new Error(`create group: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Inserts a (non-default) department directly in D1 (departments have no API yet); returns its id. */
export async function createDepartment(companyId = 1, name = uniqueWord("dept")): Promise<number> {
  const row = await env.DB.prepare("INSERT INTO departments (company_id, name, name_key, is_default) VALUES (?, ?, ?, 0) RETURNING id")
    .bind(companyId, name, name.toLowerCase())
    .first<{ id: number }>();
  if (!row) throw new Error("department insert returned no row");
  return row.id;
}

/** A company's trigger-maintained contacts_used counter and its real number of contacts. */
export async function contactCounts(companyId: number): Promise<{ used: number; actual: number }> {
  const row = await env.DB.prepare(
    "SELECT contacts_used AS used, (SELECT count(*) FROM contacts WHERE company_id = companies.id) AS actual FROM companies WHERE id = ?",
  )
    .bind(companyId)
    .first<{ used: number; actual: number }>();
  if (!row) throw new Error(`company ${companyId} not found`);
  return row;
}

// ---------------------------------------------------------------------------------------------
// Additions for the auth / errors / platform tests.


/** The `kid:secret` pairs the tests run with (vitest.config.ts), in order: current first. */
export function testSigningKeys(): Array<{ kid: string; secret: string }> {
  return (env.JWT_SIGNING_KEYS ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .map((pair) => {
      const colon = pair.indexOf(":");
      return { kid: pair.slice(0, colon), secret: pair.slice(colon + 1) };
    });
}

/**
 * Signs an access token outside the Worker, shaped like the ones it issues (demo-owner by
 * default). Every part can be overridden to forge a bad one.
 */
export async function signTestToken(
  options: {
    kid?: string;
    secret?: string;
    alg?: string;
    issuer?: string;
    sub?: string;
    claims?: Record<string, unknown>;
    iat?: number;
    exp?: number;
  } = {},
): Promise<string> {
  const current = testSigningKeys()[0]!;
  const now = Math.floor(Date.now() / 1000);
  const key = new TextEncoder().encode(options.secret ?? current.secret);
  return new SignJWT({ company_id: 1, userid: 1, scope: "*", ...options.claims })
    .setProtectedHeader({ alg: options.alg ?? "HS256", kid: options.kid ?? current.kid, typ: "JWT" })
    .setIssuer(options.issuer ?? "expiry-reminder-api")
    .setSubject(options.sub ?? "demo-owner")
    .setIssuedAt(options.iat ?? now)
    .setExpirationTime(options.exp ?? now + 3600)
    .setJti(crypto.randomUUID())
    .sign(key);
}

/** The decoded (unverified) protected header and payload of a JWT. */
export function decodeJwt(token: string): { header: Json; payload: Json } {
  const [h, p] = token.split(".");
  const decode = (part: string) => JSON.parse(atob(part.replace(/-/g, "+").replace(/_/g, "/")));
  return { header: decode(h!), payload: decode(p!) };
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
