import { describe, expect, it } from "vitest";
import { MAX_AUTHORIZATION_HEADER_CHARS } from "../../src/auth/middleware";
import { hashClientSecret, randomHex } from "../../src/auth/secret-hash";
import { CLOCK_SKEW_LEEWAY_SECONDS, TOKEN_LIFETIME_SECONDS } from "../../src/auth/tokens";
import { MAX_BASIC_AUTHORIZATION_CHARS, TOKEN_PARAM_MAX_CHARS } from "../../src/routes/oauth";
import {
  call,
  callWithEnv,
  decodeJwt,
  env,
  expectShapeA,
  signTestToken,
  uniqueWord,
  type CallOptions,
  type Answer,
  type CallResult,
  expectStatus,
  ok,
} from "./helpers";

// Tokens follow the client's current state: revocation (token generation), narrowed scopes,
// implausible iat/exp, and bounded input at the token endpoint. CLIENT_STATUS_TTL_SECONDS is "0"
// in tests, so every request reads the client afresh. The demo clients are left alone: every test
// that changes a client creates its own.

const TOKEN = "/v1/oauth/token";
const ME = "/v1/oauth/me";

interface TestClient {
  clientId: string;
  secret: string;
}

/** A new active client of Demo Company (company 1, owner user 1) with `scopes`. */
async function createClient(scopes: string, generation = 0): Promise<TestClient> {
  const clientId = uniqueWord("lifecycle-");
  const secret = `cs_${randomHex(32)}`;
  const salt = randomHex(16);
  await env.DB.prepare(
    `INSERT INTO api_clients (client_id, name, secret_hash, secret_salt, account_id, company_id, user_id, scopes, active, token_generation)
     VALUES (?, 'token lifecycle test', ?, ?, 1, 1, 1, ?, 1, ?)`,
  )
    .bind(clientId, await hashClientSecret(secret, salt), salt, scopes, generation)
    .run();
  return { clientId, secret };
}

function requestToken(client: TestClient, scope?: string): Promise<Answer<"issueToken">> {
  return call("issueToken", TOKEN, {
    body: {
      grant_type: "client_credentials",
      client_id: client.clientId,
      client_secret: client.secret,
      ...(scope ? { scope } : {}),
    },
  });
}

async function issue(client: TestClient, scope?: string): Promise<string> {
  const res = await requestToken(client, scope);
  expectStatus(res, 200, JSON.stringify(res.body));
  return res.body.access_token;
}

/** What `bash scripts/dev.sh client revoke` does (scripts/admin.ts). */
async function revoke(client: TestClient) {
  await env.DB.prepare("UPDATE api_clients SET active = 0, token_generation = token_generation + 1 WHERE client_id = ?")
    .bind(client.clientId)
    .run();
}

/** What `bash scripts/dev.sh client activate` does: the generation is kept. */
async function activate(client: TestClient) {
  await env.DB.prepare("UPDATE api_clients SET active = 1 WHERE client_id = ? AND active <> 1")
    .bind(client.clientId)
    .run();
}

async function setScopes(client: TestClient, scopes: string) {
  await env.DB.prepare("UPDATE api_clients SET scopes = ? WHERE client_id = ?").bind(scopes, client.clientId).run();
}

function expectInvalidToken(res: CallResult, description?: RegExp) {
  expectShapeA(res, 401, "invalid_token");
  expect(res.headers.get("WWW-Authenticate") ?? "").toMatch(/^Bearer\b.*error="invalid_token"/);
  if (description) expect(res.body.error_description).toMatch(description);
}

function expectInsufficientScope(res: CallResult, scope: string) {
  expectShapeA(res, 403, "insufficient_scope");
  expect(res.body.required_scope).toBe(scope);
}

/** A scoped write whose body is invalid: 403 without the scope, refused by validation (not 401/403) with it. */
const writeContact = (token: string) => call("createContact", "/v1/contacts", { token, body: {} });
const readContacts = (token: string) => call("listContacts", "/v1/contacts", { token });

function expectPastScopeCheck(res: CallResult) {
  expect([401, 403], JSON.stringify(res.body)).not.toContain(res.status);
}

const now = () => Math.floor(Date.now() / 1000);

describe("revocation ends a client's tokens for good", () => {
  it("revoke then activate: tokens issued before the revocation stay invalid, a fresh token works", async () => {
    const client = await createClient("*");
    const old = await issue(client);
    expect(decodeJwt(old).payload.gen).toBe(0);
    expectStatus(await call("getTokenInfo", ME, { token: old }), 200);
    expectStatus(await readContacts(old), 200);

    await revoke(client);
    expectInvalidToken(await call("getTokenInfo", ME, { token: old }), /not active/);
    expectShapeA(await requestToken(client), 401, "invalid_client");

    await activate(client);
    expectInvalidToken(await call("getTokenInfo", ME, { token: old }), /revoked/);
    expectInvalidToken(await readContacts(old), /revoked/);

    const fresh = await issue(client);
    expect(decodeJwt(fresh).payload.gen).toBe(1);
    const me = await call("getTokenInfo", ME, { token: fresh });
    expectStatus(me, 200, JSON.stringify(me.body));
    expect(me.body.client_id).toBe(client.clientId);
    expectStatus(await readContacts(fresh), 200);
  });

  it("a second revoke → activate cycle also ends the tokens of the first reactivation", async () => {
    const client = await createClient("contacts:read");
    const first = await issue(client);
    await revoke(client);
    await activate(client);
    const second = await issue(client);
    expectStatus(await readContacts(second), 200);
    await revoke(client);
    await activate(client);
    expectInvalidToken(await readContacts(first), /revoked/);
    expectInvalidToken(await readContacts(second), /revoked/);
    expectStatus(await readContacts(await issue(client)), 200);
  });

  it("only the revoked client's tokens are affected", async () => {
    const revoked = await createClient("*");
    const bystander = await createClient("*");
    const bystanderToken = await issue(bystander);
    await issue(revoked);
    await revoke(revoked);
    await activate(revoked);
    expectStatus(await call("getTokenInfo", ME, { token: bystanderToken }), 200);
  });

  it("treats a token without a gen claim as generation 0", async () => {
    const client = await createClient("*");
    const token = await signTestToken({ sub: client.clientId, claims: { userid: 1, scope: "*" } });
    expect(decodeJwt(token).payload).not.toHaveProperty("gen");
    const me = await call("getTokenInfo", ME, { token });
    expectStatus(me, 200, JSON.stringify(me.body));

    await env.DB.prepare("UPDATE api_clients SET token_generation = 1 WHERE client_id = ?").bind(client.clientId).run();
    expectInvalidToken(await call("getTokenInfo", ME, { token }), /revoked/);
    // A token of the current generation is fine.
    const current = await signTestToken({ sub: client.clientId, claims: { userid: 1, scope: "*", gen: 1 } });
    expectStatus(await call("getTokenInfo", ME, { token: current }), 200);
  });

  it("refuses a token whose generation is ahead of the client's, or malformed", async () => {
    const client = await createClient("*");
    for (const gen of [1, -1, 1.5, "0", null]) {
      const token = await signTestToken({ sub: client.clientId, claims: { userid: 1, scope: "*", gen } });
      expectInvalidToken(await call("getTokenInfo", ME, { token }));
    }
  });
});

describe("the per-isolate client cache (CLIENT_STATUS_TTL_SECONDS)", () => {
  // `call` runs with the tests' TTL of 0; these requests run with a TTL of 60 s on their own client.
  const cached = (token: string) => callWithEnv({ CLIENT_STATUS_TTL_SECONDS: "60" }, "getTokenInfo", ME, { token });

  it("a revocation is noticed within the TTL; a token of a newer generation refreshes the cached record at once", async () => {
    const client = await createClient("*");
    const old = await issue(client);
    expectStatus(await cached(old), 200); // caches the client: active, generation 0

    await revoke(client);
    await activate(client);
    // Within the TTL this isolate still trusts its record (the documented window) ...
    expectStatus(await cached(old), 200);
    // ... but a token of generation 1 proves the record stale: it is read again, not refused.
    const fresh = await issue(client);
    const me = await cached(fresh);
    expectStatus(me, 200, JSON.stringify(me.body));
    // The refreshed record now ends the old token in this isolate too.
    expectInvalidToken(await cached(old), /revoked/);
  });

  it("a client activated again: its new tokens work at once, though this isolate cached it as inactive", async () => {
    const client = await createClient("*");
    const old = await issue(client);
    await revoke(client);
    expectInvalidToken(await cached(old), /not active/); // caches the client: inactive, generation 1
    await activate(client);
    const fresh = await issue(client); // generation 1, the cached one: only its issue time says the record is stale
    const me = await cached(fresh);
    expectStatus(me, 200, JSON.stringify(me.body));
    expectStatus(
      await callWithEnv({ CLIENT_STATUS_TTL_SECONDS: "60" }, "listContacts", "/v1/contacts", { token: fresh }),
      200,
    );
    expectInvalidToken(await cached(old), /revoked/);
  });
});

describe("the effective scope is the token's scope intersected with the client's current scopes", () => {
  it("narrowing a client narrows its existing tokens at once (TTL 0), and /me reports the effective scope", async () => {
    const client = await createClient("contacts:read contacts:write");
    const token = await issue(client);
    expect(decodeJwt(token).payload.scope).toBe("contacts:read contacts:write");
    expectPastScopeCheck(await writeContact(token));

    await setScopes(client, "contacts:read");
    expectInsufficientScope(await writeContact(token), "contacts:write");
    expectStatus(await readContacts(token), 200);
    expect(ok(await call("getTokenInfo", ME, { token })).body.scope).toBe("contacts:read");

    // Widening the client again gives back no more than the token was issued with.
    await setScopes(client, "*");
    const me = ok(await call("getTokenInfo", ME, { token }));
    expect(me.body.scope).toBe("contacts:read contacts:write");
    expectPastScopeCheck(await writeContact(token));
  });

  it("an empty intersection still authenticates, but every scoped route answers 403", async () => {
    const client = await createClient("contacts:read contacts:write");
    const token = await issue(client, "contacts:read");
    await setScopes(client, "items:read");
    const me = await call("getTokenInfo", ME, { token });
    expectStatus(me, 200, JSON.stringify(me.body));
    expect(me.body.scope).toBe("");
    expectInsufficientScope(await readContacts(token), "contacts:read");
    expectInsufficientScope(await call("listContactGroups", "/v1/contact-groups", { token }), "contacts:read");
    expectInsufficientScope(await writeContact(token), "contacts:write");
  });

  it("a * token gets the client's current allowed scopes", async () => {
    const client = await createClient("*");
    const token = await issue(client);
    expect(decodeJwt(token).payload.scope).toBe("*");
    expect(ok(await call("getTokenInfo", ME, { token })).body.scope).toBe("*");
    expectPastScopeCheck(await writeContact(token));

    await setScopes(client, "contacts:read items:read");
    const me = ok(await call("getTokenInfo", ME, { token }));
    expect(me.body.scope).toBe("contacts:read items:read");
    expectStatus(await readContacts(token), 200);
    expectInsufficientScope(await writeContact(token), "contacts:write");
  });

  it("a client allowed * keeps the token's own scopes", async () => {
    const client = await createClient("*");
    const token = await issue(client, "contacts:read");
    const me = ok(await call("getTokenInfo", ME, { token }));
    expect(me.body.scope).toBe("contacts:read");
    expectInsufficientScope(await writeContact(token), "contacts:write");
  });
});

describe("implausible issue and expiry times", () => {
  it("refuses a token issued in the future beyond the clock-skew leeway", async () => {
    const t = now();
    const future = await signTestToken({ iat: t + CLOCK_SKEW_LEEWAY_SECONDS + 60, exp: t + 3600 });
    expectInvalidToken(await call("getTokenInfo", ME, { token: future }), /future/);
    const farFuture = await signTestToken({ iat: t + 86400 * 365, exp: t + 86400 * 365 + 600 });
    expectInvalidToken(await call("getTokenInfo", ME, { token: farFuture }));
  });

  it("accepts a token issued a moment ahead of this clock (within the leeway)", async () => {
    const t = now();
    const token = await signTestToken({ iat: t + 2, exp: t + 600 });
    const res = await call("getTokenInfo", ME, { token });
    expectStatus(res, 200, JSON.stringify(res.body));
  });

  it("refuses a token whose lifetime exceeds the issued lifetime", async () => {
    const t = now();
    const long = await signTestToken({ iat: t - 10, exp: t - 10 + TOKEN_LIFETIME_SECONDS + 1 });
    expectInvalidToken(await call("getTokenInfo", ME, { token: long }), /lifetime/);
    const forever = await signTestToken({ iat: t - 10, exp: t + 10 * 365 * 86400 });
    expectInvalidToken(await call("getTokenInfo", ME, { token: forever }));
    expectInvalidToken(await call("listContacts", "/v1/contacts", { token: forever }));
  });

  it("accepts exactly the issued lifetime", async () => {
    const t = now();
    const token = await signTestToken({ iat: t - 10, exp: t - 10 + TOKEN_LIFETIME_SECONDS });
    expectStatus(await call("getTokenInfo", ME, { token }), 200);
  });
});

/** A D1 binding that records any use and fails it. */
function untouchableDb() {
  const touched: string[] = [];
  const db = new Proxy(
    {},
    {
      get(_target, property) {
        touched.push(String(property));
        throw new Error("D1 must not be used for this request");
      },
    },
  );
  return { db, touched };
}

/** The token endpoint with a D1 binding that must not be touched. */
async function tokenWithoutD1(options: CallOptions): Promise<CallResult> {
  const { db, touched } = untouchableDb();
  const res = await callWithEnv({ DB: db as D1Database }, "issueToken", TOKEN, options);
  expect(touched, "D1 was accessed").toEqual([]);
  return res;
}

function expectInvalidRequestNaming(res: CallResult, field: string) {
  expectShapeA(res, 400, "invalid_request");
  expect(res.body.error_description).toContain(field);
  expect(res.body.error_description.length).toBeLessThan(200);
}

describe("bounded input at the token endpoint", () => {
  const base = { grant_type: "client_credentials", client_id: "demo-owner", client_secret: "demo-owner-secret" };
  const over = (field: keyof typeof TOKEN_PARAM_MAX_CHARS, char = "a") => char.repeat(TOKEN_PARAM_MAX_CHARS[field] + 1);

  it("documents the limits the tests rely on", () => {
    expect(TOKEN_PARAM_MAX_CHARS).toEqual({ grant_type: 64, client_id: 128, client_secret: 256, scope: 1024 });
  });

  it("refuses an oversized client_id, client_secret, scope or grant_type with 400 invalid_request naming it, before D1", async () => {
    for (const field of ["client_id", "client_secret", "scope", "grant_type"] as const) {
      const body = { ...base, [field]: over(field) };
      expectInvalidRequestNaming(await tokenWithoutD1({ body }), field);
      const form = await tokenWithoutD1({
        rawBody: new URLSearchParams(body).toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      });
      expectInvalidRequestNaming(form, field);
    }
  });

  it("refuses a megabyte client_id without reaching D1 and without echoing it", async () => {
    // The app-wide body limit (src/lib/body.ts) may answer first (413); either way it is a Shape A
    // invalid_request, D1 is not touched and nothing of the value comes back.
    const res = await tokenWithoutD1({ body: { ...base, client_id: "x".repeat(1024 * 1024) } });
    expect([400, 413]).toContain(res.status);
    expectShapeA(res, res.status, "invalid_request");
    expect(JSON.stringify(res.body)).not.toContain("xxxxxxxxxx");
  });

  it("names the field for a long value that fits the body limit", async () => {
    const res = await tokenWithoutD1({ body: { ...base, client_id: "x".repeat(5000) } });
    expectInvalidRequestNaming(res, "client_id");
    expect(JSON.stringify(res.body)).not.toContain("xxxxxxxxxx");
  });

  it("refuses oversized HTTP Basic credentials with 400 invalid_request before D1", async () => {
    const basic = (id: string, secret: string) => ({ Authorization: `Basic ${btoa(`${id}:${secret}`)}` });
    const grant = { grant_type: "client_credentials" };
    expectInvalidRequestNaming(
      await tokenWithoutD1({ body: grant, headers: basic(over("client_id"), "s") }),
      "client_id",
    );
    expectInvalidRequestNaming(
      await tokenWithoutD1({ body: grant, headers: basic("demo-owner", over("client_secret")) }),
      "client_secret",
    );
    const huge = { Authorization: `Basic ${"A".repeat(MAX_BASIC_AUTHORIZATION_CHARS)}` };
    expectInvalidRequestNaming(await tokenWithoutD1({ body: grant, headers: huge }), "Authorization");
  });

  it("lets values at the limit through to the credential check", async () => {
    const id = await call("issueToken", TOKEN, {
      body: { ...base, client_id: "a".repeat(TOKEN_PARAM_MAX_CHARS.client_id) },
    });
    expectShapeA(id, 401, "invalid_client");
    const secret = await call("issueToken", TOKEN, {
      body: { ...base, client_secret: "a".repeat(TOKEN_PARAM_MAX_CHARS.client_secret) },
    });
    expectShapeA(secret, 401, "invalid_client");
    const scope = `contacts:read ${" ".repeat(TOKEN_PARAM_MAX_CHARS.scope - "contacts:read items:read".length)}items:read`;
    expect(scope).toHaveLength(TOKEN_PARAM_MAX_CHARS.scope);
    const scoped = await call("issueToken", TOKEN, { body: { ...base, scope } });
    expectStatus(scoped, 200, JSON.stringify(scoped.body));
    expect(scoped.body.scope).toBe("contacts:read items:read");
  });

  it("still answers unsupported_grant_type for another grant type of acceptable length", async () => {
    expectShapeA(await tokenWithoutD1({ body: { ...base, grant_type: "password" } }), 400, "unsupported_grant_type");
  });

  it("names at most a few refused scopes, each shortened", async () => {
    const many = Array.from({ length: 60 }, (_, i) => `unknown:scope${i}`).join(" ");
    expect(many.length).toBeLessThanOrEqual(TOKEN_PARAM_MAX_CHARS.scope);
    const res = await call("issueToken", TOKEN, { body: { ...base, scope: many } });
    expectShapeA(res, 400, "invalid_scope");
    expect(res.body.error_description).toContain("unknown:scope0");
    expect(res.body.error_description).not.toContain("unknown:scope59");
    expect(res.body.error_description).toMatch(/and 55 more/);
    expect(res.body.error_description.length).toBeLessThan(300);

    const long = `contacts:read ${"z".repeat(1000)}`;
    const one = await call("issueToken", TOKEN, { body: { ...base, scope: long } });
    expectShapeA(one, 400, "invalid_scope");
    expect(one.body.error_description).not.toContain("z".repeat(100));
    expect(one.body.error_description).toMatch(/1000 characters/);
    expect(one.body.error_description.length).toBeLessThan(300);
  });

  it("does not echo a long scope", async () => {
    const res = await call("issueToken", TOKEN, { body: { ...base, scope: "contacts:write ".repeat(400) } });
    expectInvalidRequestNaming(res, "scope");
    expect(JSON.stringify(res.body).length).toBeLessThan(300);
    const huge = await call("issueToken", TOKEN, { body: { ...base, scope: "contacts:write ".repeat(7000) } });
    expect([400, 413]).toContain(huge.status);
    expectShapeA(huge, huge.status, "invalid_request");
    expect(JSON.stringify(huge.body).length).toBeLessThan(300);
  });
});

describe("bounded Authorization header for bearer tokens", () => {
  it("answers 401 invalid_token for an over-long Authorization header", async () => {
    const token = `${"a".repeat(2000)}.${"b".repeat(MAX_AUTHORIZATION_HEADER_CHARS)}.c`;
    const res = await call("getTokenInfo", ME, { token });
    expectInvalidToken(res, /longer than/);
    expect(JSON.stringify(res.body)).not.toContain("aaaaaaaaaa");
    expectInvalidToken(await call("listContacts", "/v1/contacts", { token }));
  });
});
