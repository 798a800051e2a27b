import { Hono } from "hono";
import { SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { authenticate, requireOwner } from "../../src/auth/middleware";
import type { AppBindings } from "../../src/env";
import { renderError } from "../../src/lib/errors";
import {
  call,
  callWithEnv,
  captureErrorLogs,
  decodeJwt,
  env,
  expectShapeA,
  expectShapeB,
  signTestToken,
  testSigningKeys,
  tokenFor,
  type Answer,
  type CallResult,
  type OAuthError,
  type WithStatus,
  expectStatus,
  callRaw,
  ok,
} from "./helpers";

const TOKEN = "/v1/oauth/token";
const ME = "/v1/oauth/me";

const creds = (clientId: string, extra: Record<string, unknown> = {}) => ({
  grant_type: "client_credentials",
  client_id: clientId,
  client_secret: `${clientId}-secret`,
  ...extra,
});

const postToken = (body: unknown, headers?: Record<string, string>) => call("issueToken", TOKEN, { body, headers });
const postForm = (form: Record<string, string>, headers: Record<string, string> = {}) =>
  call("issueToken", TOKEN, {
    rawBody: new URLSearchParams(form).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...headers },
  });
const basic = (id: string, secret: string) => `Basic ${btoa(`${id}:${secret}`)}`;

/** A successful token response, checked field by field. */
function expectToken(res: Answer<"issueToken">, scope: string): asserts res is WithStatus<Answer<"issueToken">, 200> {
  expectStatus(res, 200, JSON.stringify(res.body));
  expect(res.body.token_type).toBe("Bearer");
  expect(res.body.expires_in).toBe(86400);
  expect(res.body.scope).toBe(scope);
  expect(res.body.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  expect(res.headers.get("Cache-Control")).toBe("no-store");
}

/** A Shape A 401 from the bearer middleware, with its WWW-Authenticate challenge. */
function expectInvalidToken(res: CallResult): asserts res is CallResult & { status: 401; body: OAuthError } {
  expectShapeA(res, 401, "invalid_token");
  expect(res.headers.get("WWW-Authenticate") ?? "").toMatch(/^Bearer\b.*error="invalid_token"/);
  expect(res.body).not.toHaveProperty("success");
}

async function setActive(clientId: string, active: 0 | 1) {
  await env.DB.prepare("UPDATE api_clients SET active = ? WHERE client_id = ?").bind(active, clientId).run();
}

describe("POST /v1/oauth/token: client authentication forms", () => {
  it("accepts a JSON body", async () => {
    const res = await postToken(creds("demo-owner"));
    expectToken(res, "*");
    const me = await call("getTokenInfo", ME, { token: res.body.access_token });
    expectStatus(me, 200);
    expect(me.body.client_id).toBe("demo-owner");
  });

  it("accepts an application/x-www-form-urlencoded body", async () => {
    const res = await postForm({
      grant_type: "client_credentials",
      client_id: "demo-readonly",
      client_secret: "demo-readonly-secret",
    });
    expectToken(res, "contacts:read items:read");
    const me = ok(await call("getTokenInfo", ME, { token: res.body.access_token }));
    expect(me.body.client_id).toBe("demo-readonly");
  });

  it("accepts a form body with a charset parameter and a requested scope", async () => {
    const res = await postForm(
      {
        grant_type: "client_credentials",
        client_id: "demo-owner",
        client_secret: "demo-owner-secret",
        scope: "contacts:read",
      },
      { "Content-Type": "application/x-www-form-urlencoded; charset=utf-8" },
    );
    expectToken(res, "contacts:read");
  });

  it("accepts HTTP Basic client authentication with only grant_type in the body", async () => {
    const res = await postToken(
      { grant_type: "client_credentials" },
      { Authorization: basic("demo-owner", "demo-owner-secret") },
    );
    expectToken(res, "*");
    expect(decodeJwt(res.body.access_token).payload.sub).toBe("demo-owner");
  });

  it("accepts HTTP Basic with a form body", async () => {
    const res = await postForm(
      { grant_type: "client_credentials", scope: "items:read" },
      { Authorization: basic("demo-readonly", "demo-readonly-secret") },
    );
    expectToken(res, "items:read");
  });

  it("accepts HTTP Basic when the body repeats the same client_id", async () => {
    const res = await postToken(
      { grant_type: "client_credentials", client_id: "demo-owner" },
      { Authorization: basic("demo-owner", "demo-owner-secret") },
    );
    expectToken(res, "*");
  });

  it("refuses HTTP Basic plus a different body client_id with 400 invalid_request", async () => {
    const res = await postToken(
      { grant_type: "client_credentials", client_id: "demo-other", client_secret: "demo-other-secret" },
      { Authorization: basic("demo-owner", "demo-owner-secret") },
    );
    expectShapeA(res, 400, "invalid_request");
  });

  it("refuses a wrong secret sent by HTTP Basic with 401 invalid_client and a Basic challenge", async () => {
    const res = await postToken({ grant_type: "client_credentials" }, { Authorization: basic("demo-owner", "nope") });
    expectShapeA(res, 401, "invalid_client");
    expect(res.headers.get("WWW-Authenticate") ?? "").toMatch(/^Basic\b/);
  });

  it("refuses malformed HTTP Basic credentials with 401 invalid_client", async () => {
    // Not base64; no colon; a malformed %-escape in the (form-encoded, RFC 6749 2.3.1) id or secret.
    for (const header of [
      "Basic !!!notbase64!!!",
      `Basic ${btoa("no-colon-here")}`,
      `Basic ${btoa("demo%:x")}`,
      `Basic ${btoa("demo-owner:%E0%A4%A")}`,
    ]) {
      const res = await postToken({ grant_type: "client_credentials" }, { Authorization: header });
      expectShapeA(res, 401, "invalid_client");
    }
  });
});

describe("POST /v1/oauth/token: response and scopes", () => {
  it("issues a JWT whose claims match the response and the client", async () => {
    const before = Math.floor(Date.now() / 1000);
    const res = await postToken(creds("demo-member"));
    expectToken(res, "*");
    expect(res.body.success).toBe(true);
    const { header, payload } = decodeJwt(res.body.access_token);
    expect(header.alg).toBe("HS256");
    expect(payload.sub).toBe("demo-member");
    expect(payload.company_id).toBe(1);
    expect(payload.userid).toBe(2);
    expect(payload.scope).toBe("*");
    expect(payload.gen).toBe(0); // the client's token generation
    expect(payload.exp! - payload.iat!).toBe(86400);
    expect(payload.iat).toBeGreaterThanOrEqual(before - 1);
    expect(payload.iat).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
  });

  it("grants every allowed scope when scope is omitted", async () => {
    expectToken(await postToken(creds("demo-owner")), "*");
    expectToken(await postToken(creds("demo-readonly")), "contacts:read items:read");
  });

  it("treats an empty or blank scope like an omitted one", async () => {
    expectToken(await postToken(creds("demo-readonly", { scope: "" })), "contacts:read items:read");
    expectToken(await postToken(creds("demo-readonly", { scope: "   " })), "contacts:read items:read");
  });

  it("grants a requested subset as requested", async () => {
    expectToken(
      await postToken(creds("demo-owner", { scope: "contacts:read items:write" })),
      "contacts:read items:write",
    );
    expectToken(await postToken(creds("demo-readonly", { scope: "items:read" })), "items:read");
    expectToken(await postToken(creds("demo-readonly", { scope: "contacts:read  contacts:read" })), "contacts:read");
  });

  it("lets a * client request * explicitly", async () => {
    expectToken(await postToken(creds("demo-owner", { scope: "*" })), "*");
  });

  it("refuses a scope outside the client's allowed ones with 400 invalid_scope", async () => {
    const res = await postToken(creds("demo-readonly", { scope: "contacts:read contacts:write" }));
    expectShapeA(res, 400, "invalid_scope");
    expect(res.body.error_description).toContain("contacts:write");
    expect(res.body.error_description).not.toContain("contacts:read ");
  });

  it("refuses * for a client that is not allowed *", async () => {
    expectShapeA(await postToken(creds("demo-readonly", { scope: "*" })), 400, "invalid_scope");
  });

  it("refuses an unknown scope with 400 invalid_scope, even for a * client", async () => {
    const res = await postToken(creds("demo-owner", { scope: "contacts:read admin:everything" }));
    expectShapeA(res, 400, "invalid_scope");
    expect(res.body.error_description).toContain("admin:everything");
  });
});

describe("POST /v1/oauth/token: request errors", () => {
  it("refuses another grant_type with 400 unsupported_grant_type", async () => {
    for (const grant of ["password", "authorization_code", "refresh_token", ""]) {
      const res = await postToken(creds("demo-owner", { grant_type: grant }));
      expectShapeA(res, 400, "unsupported_grant_type");
    }
  });

  it("refuses a missing grant_type with 400 invalid_request", async () => {
    const res = await postToken({ client_id: "demo-owner", client_secret: "demo-owner-secret" });
    expectShapeA(res, 400, "invalid_request");
    expect(res.body.error_description).toMatch(/grant_type/);
  });

  it("refuses an empty body with 400 invalid_request", async () => {
    expectShapeA(
      await call("issueToken", TOKEN, { headers: { "Content-Type": "application/json" } }),
      400,
      "invalid_request",
    );
    expectShapeA(await call("issueToken", TOKEN), 400, "invalid_request");
  });

  it("refuses malformed JSON with 400 invalid_request", async () => {
    const res = await call("issueToken", TOKEN, {
      rawBody: '{"grant_type": "client_credentials",',
      headers: { "Content-Type": "application/json" },
    });
    expectShapeA(res, 400, "invalid_request");
  });

  it("refuses a JSON body that is not an object with 400 invalid_request", async () => {
    for (const rawBody of ["[]", '"client_credentials"', "null", "42"]) {
      const res = await call("issueToken", TOKEN, { rawBody, headers: { "Content-Type": "application/json" } });
      expectShapeA(res, 400, "invalid_request");
    }
  });

  it("refuses non-string parameters with 400 invalid_request", async () => {
    expectShapeA(await postToken(creds("demo-owner", { scope: ["*"] })), 400, "invalid_request");
    expectShapeA(await postToken(creds("demo-owner", { client_secret: 12345 })), 400, "invalid_request");
  });

  it("refuses an unsupported Content-Type with 400 invalid_request", async () => {
    const res = await call("issueToken", TOKEN, {
      rawBody: "grant_type=client_credentials",
      headers: { "Content-Type": "text/plain" },
    });
    expectShapeA(res, 400, "invalid_request");
  });

  it("refuses a wrong secret with 401 invalid_client", async () => {
    const res = await postToken(creds("demo-owner", { client_secret: "demo-member-secret" }));
    expectShapeA(res, 401, "invalid_client");
    expect(res.body).not.toHaveProperty("access_token");
  });

  it("refuses an unknown client with 401 invalid_client", async () => {
    expectShapeA(await postToken(creds("no-such-client")), 401, "invalid_client");
  });

  it("challenges with Basic on every 401 invalid_client, also when the credentials came in the body (RFC 9110)", async () => {
    for (const body of [
      creds("demo-owner", { client_secret: "wrong-secret" }),
      creds("no-such-client"),
      { grant_type: "client_credentials" },
    ]) {
      const res = await postToken(body);
      expectShapeA(res, 401, "invalid_client");
      expect(res.headers.get("WWW-Authenticate"), JSON.stringify(body)).toBe('Basic realm="oauth"');
    }
  });

  it("refuses missing credentials with 401 invalid_client", async () => {
    expectShapeA(await postToken({ grant_type: "client_credentials" }), 401, "invalid_client");
    expectShapeA(await postToken({ grant_type: "client_credentials", client_id: "demo-owner" }), 401, "invalid_client");
    expectShapeA(
      await postToken({ grant_type: "client_credentials", client_secret: "demo-owner-secret" }),
      401,
      "invalid_client",
    );
    expectShapeA(
      await postToken({ grant_type: "client_credentials", client_id: "demo-owner", client_secret: "" }),
      401,
      "invalid_client",
    );
  });

  it("ignores a Bearer Authorization header at the token endpoint", async () => {
    const res = await postToken(creds("demo-owner"), { Authorization: "Bearer whatever" });
    expectToken(res, "*");
  });
});

describe("client deactivation", () => {
  it("refuses a deactivated client at the token endpoint and invalidates its issued tokens at once", async () => {
    const issued = ok(await postToken(creds("demo-member")));
    expectToken(issued, "*");
    const token = issued.body.access_token as string;
    expectStatus(await call("getTokenInfo", ME, { token }), 200);
    expectStatus(await call("listContacts", "/v1/contacts", { token }), 200);

    await setActive("demo-member", 0);
    try {
      expectShapeA(await postToken(creds("demo-member")), 401, "invalid_client");
      expectInvalidToken(await call("getTokenInfo", ME, { token }));
      expectInvalidToken(await call("listContacts", "/v1/contacts", { token }));
      // Other clients are unaffected.
      expectStatus(await call("getTokenInfo", ME, { token: await tokenFor("demo-owner") }), 200);
    } finally {
      await setActive("demo-member", 1);
    }
    // After reactivation the client gets tokens again. (Revocation proper also bumps the token
    // generation, so its old tokens stay dead: test/worker/token-lifecycle.test.ts.)
    const fresh = ok(await postToken(creds("demo-member")));
    expectToken(fresh, "*");
    expectStatus(await call("getTokenInfo", ME, { token: fresh.body.access_token }), 200);
  });

  it("refuses a token whose company no longer matches its client", async () => {
    const token = await signTestToken({ sub: "demo-member", claims: { company_id: 2, userid: 2 } });
    expectInvalidToken(await call("getTokenInfo", ME, { token }));
  });

  it("refuses a validly signed token for a client that does not exist", async () => {
    const token = await signTestToken({ sub: "ghost-client" });
    expectInvalidToken(await call("getTokenInfo", ME, { token }));
  });
});

describe("signing key not configured", () => {
  const errorLogs = captureErrorLogs();

  for (const [label, value] of [
    ["missing", undefined],
    ["empty", ""],
    ["too short", "k1:short"],
    ["without a kid", "test-signing-key-current-0123456789abcdef"],
    [
      "listing one kid twice",
      "k1:test-signing-key-current-0123456789abcdef k1:test-signing-key-previous-0123456789abcdef",
    ],
  ] as const) {
    it(`answers 500 server_error at the token endpoint when the key is ${label}`, async () => {
      const res = await callWithEnv({ JWT_SIGNING_KEYS: value }, "issueToken", TOKEN, { body: creds("demo-owner") });
      expectShapeA(res, 500, "server_error");
      expect(JSON.stringify(res.body)).not.toContain("test-signing-key");
      // An unusable key is logged for the operator (a missing one needs no detail), never its secret.
      for (const line of errorLogs) expect(line).not.toContain("test-signing-key");
      if (value) expect(errorLogs.join("\n")).toMatch(/JWT_SIGNING_KEYS/);
    });

    it(`answers 500 server_error at /v1/oauth/me when the key is ${label}`, async () => {
      const token = await tokenFor("demo-owner");
      const res = await callWithEnv({ JWT_SIGNING_KEYS: value }, "getTokenInfo", ME, { token });
      expectShapeA(res, 500, "server_error");
    });
  }

  it("answers 500 server_error on an authenticated resource route too", async () => {
    const token = await tokenFor("demo-owner");
    expectShapeA(
      await callWithEnv({ JWT_SIGNING_KEYS: undefined }, "listContacts", "/v1/contacts", { token }),
      500,
      "server_error",
    );
  });

  it("works again through the same entry point with the configured keys (control)", async () => {
    const res = await callWithEnv({}, "issueToken", TOKEN, { body: creds("demo-owner") });
    expectToken(res, "*");
  });
});

describe("bearer authentication", () => {
  it("answers 401 invalid_token with a challenge when the Authorization header is missing", async () => {
    const res = await call("getTokenInfo", ME);
    expectInvalidToken(res);
    expectInvalidToken(await call("listContacts", "/v1/contacts"));
  });

  it("answers 401 invalid_token for a non-Bearer or empty Authorization header", async () => {
    const token = await tokenFor("demo-owner");
    for (const header of [
      `Basic ${btoa("demo-owner:demo-owner-secret")}`,
      "Bearer",
      "Bearer ",
      token,
      `Token ${token}`,
    ]) {
      expectInvalidToken(await call("getTokenInfo", ME, { headers: { Authorization: header } }));
    }
  });

  it("accepts the Bearer scheme case-insensitively", async () => {
    const token = await tokenFor("demo-owner");
    expectStatus(await call("getTokenInfo", ME, { headers: { Authorization: `bearer ${token}` } }), 200);
  });

  it("answers 401 invalid_token for a garbage token", async () => {
    for (const garbage of ["garbage", "a.b.c", "eyJhbGciOiJIUzI1NiJ9.e30.", "x".repeat(2000)]) {
      expectInvalidToken(await call("getTokenInfo", ME, { token: garbage }));
    }
  });

  it("accepts a token the test signs with the current key (control for the forgeries below)", async () => {
    const token = await signTestToken();
    const res = await call("getTokenInfo", ME, { token });
    expectStatus(res, 200, JSON.stringify(res.body));
    expect(res.body.client_id).toBe("demo-owner");
  });

  it("answers 401 invalid_token for a token signed with an unknown kid", async () => {
    const current = testSigningKeys()[0]!;
    expectInvalidToken(
      await call("getTokenInfo", ME, { token: await signTestToken({ kid: "unknown-kid", secret: current.secret }) }),
    );
  });

  it("answers 401 invalid_token for a token without a kid", async () => {
    const current = testSigningKeys()[0]!;
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT({ company_id: 1, userid: 1, scope: "*" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("expiry-reminder-api")
      .setSubject("demo-owner")
      .setIssuedAt(now)
      .setExpirationTime(now + 600)
      .sign(new TextEncoder().encode(current.secret));
    expectInvalidToken(await call("getTokenInfo", ME, { token }));
  });

  it("answers 401 invalid_token for a token signed with a wrong secret", async () => {
    const token = await signTestToken({ secret: "a-completely-different-secret-0123456789abcdef" });
    expectInvalidToken(await call("getTokenInfo", ME, { token }));
  });

  it("answers 401 invalid_token for a token signed with the previous key but labelled with the current kid", async () => {
    const [current, previous] = testSigningKeys();
    expectInvalidToken(
      await call("getTokenInfo", ME, { token: await signTestToken({ kid: current!.kid, secret: previous!.secret }) }),
    );
  });

  it("answers 401 invalid_token for an expired token", async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signTestToken({ iat: now - 2 * 86400, exp: now - 3600 });
    const res = await call("getTokenInfo", ME, { token });
    expectInvalidToken(res);
    expect(res.body.error_description).toMatch(/expired/i);
  });

  it("answers 401 invalid_token for a token from another issuer", async () => {
    expectInvalidToken(await call("getTokenInfo", ME, { token: await signTestToken({ issuer: "someone-else" }) }));
  });

  it("answers 401 invalid_token for a token signed with another algorithm", async () => {
    expectInvalidToken(await call("getTokenInfo", ME, { token: await signTestToken({ alg: "HS512" }) }));
  });

  it("answers 401 invalid_token for an unsigned (alg none) token", async () => {
    const enc = (o: object) => btoa(JSON.stringify(o)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    const now = Math.floor(Date.now() / 1000);
    const token = `${enc({ alg: "none", kid: "test-current" })}.${enc({ iss: "expiry-reminder-api", sub: "demo-owner", company_id: 1, userid: 1, scope: "*", iat: now, exp: now + 600 })}.`;
    expectInvalidToken(await call("getTokenInfo", ME, { token }));
  });

  it("answers 401 invalid_token for a token with malformed claims", async () => {
    expectInvalidToken(await call("getTokenInfo", ME, { token: await signTestToken({ claims: { company_id: "1" } }) }));
    expectInvalidToken(await call("getTokenInfo", ME, { token: await signTestToken({ claims: { scope: 7 } }) }));
  });

  it("answers 401 invalid_token for a tampered payload", async () => {
    const token = await tokenFor("demo-readonly");
    const [h, , s] = token.split(".");
    const payload = decodeJwt(token).payload;
    const forged = btoa(JSON.stringify({ ...payload, scope: "*" }))
      .replace(/=+$/, "")
      .replace(/\+/g, "-")
      .replace(/\//g, "_");
    expectInvalidToken(await call("getTokenInfo", ME, { token: `${h}.${forged}.${s}` }));
  });
});

describe("key rotation", () => {
  it("signs new tokens with the first (current) key", async () => {
    const res = await postToken(creds("demo-owner"));
    expectToken(res, "*");
    expect(decodeJwt(res.body.access_token).header.kid).toBe("test-current");
    expect(testSigningKeys()[0]!.kid).toBe("test-current");
  });

  it("still accepts a token signed with the previous key (second entry, kid test-previous)", async () => {
    const previous = testSigningKeys()[1]!;
    expect(previous.kid).toBe("test-previous");
    const token = await signTestToken({
      kid: previous.kid,
      secret: previous.secret,
      sub: "demo-readonly",
      claims: { userid: 2, scope: "contacts:read" },
    });
    const me = await call("getTokenInfo", ME, { token });
    expectStatus(me, 200, JSON.stringify(me.body));
    expect(me.body.client_id).toBe("demo-readonly");
    expectStatus(await call("listContacts", "/v1/contacts", { token }), 200);
  });

  it("rejects the previous key's tokens once that key is removed from the configuration", async () => {
    const [current, previous] = testSigningKeys();
    const token = await signTestToken({ kid: previous!.kid, secret: previous!.secret });
    const res = await callWithEnv({ JWT_SIGNING_KEYS: `${current!.kid}:${current!.secret}` }, "getTokenInfo", ME, {
      token,
    });
    expectInvalidToken(res);
  });

  it("accepts tokens of the old current key after a new key is prepended", async () => {
    const [current] = testSigningKeys();
    const token = await tokenFor("demo-owner");
    const rotated = `next-key:next-signing-key-0123456789abcdef-0123 ${current!.kid}:${current!.secret}`;
    const me = await callWithEnv({ JWT_SIGNING_KEYS: rotated }, "getTokenInfo", ME, { token });
    expectStatus(me, 200, JSON.stringify(me.body));
    const issued = ok(
      await callWithEnv({ JWT_SIGNING_KEYS: rotated }, "issueToken", TOKEN, { body: creds("demo-owner") }),
    );
    expect(decodeJwt(issued.body.access_token).header.kid).toBe("next-key");
  });
});

describe("GET /v1/oauth/me", () => {
  it("returns client_id, company_id, userid, scope, exp and iat matching the token", async () => {
    const issued = ok(await postToken(creds("demo-readonly", { scope: "items:read" })));
    const token = issued.body.access_token as string;
    const { payload } = decodeJwt(token);
    const res = await call("getTokenInfo", ME, { token });
    expectStatus(res, 200);
    expect(res.body).toEqual({
      success: true,
      client_id: "demo-readonly",
      company_id: 1,
      userid: 2,
      scope: "items:read",
      exp: payload.exp,
      iat: payload.iat,
    });
    expect(res.body.exp - res.body.iat).toBe(86400);
  });

  it("reports the other company for a client of another account", async () => {
    const res = await call("getTokenInfo", ME, { token: await tokenFor("demo-other") });
    expect(res.body).toMatchObject({ client_id: "demo-other", company_id: 2, userid: 3, scope: "*" });
  });

  it("needs no particular scope", async () => {
    const issued = ok(await postToken(creds("demo-owner", { scope: "tags:read" })));
    const res = await call("getTokenInfo", ME, { token: issued.body.access_token });
    expectStatus(res, 200);
    expect(res.body.scope).toBe("tags:read");
  });
});

describe("scopes", () => {
  it("lets demo-readonly read contacts but not write them (403 insufficient_scope contacts:write)", async () => {
    const token = await tokenFor("demo-readonly");
    expectStatus(await call("listContacts", "/v1/contacts", { token }), 200);
    const res = await call("createContact", "/v1/contacts", {
      token,
      body: { first_name: "Read", last_name: "Only", email: "readonly@example.com" },
    });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("contacts:write");
    expect(res.headers.get("WWW-Authenticate") ?? "").toMatch(/insufficient_scope/);
    // Nothing was created.
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM contacts WHERE email = 'readonly@example.com'").first<{
      n: number;
    }>();
    expect(row?.n).toBe(0);
  });

  it("refuses every contact and group write for a read-only token", async () => {
    const token = await tokenFor("demo-readonly");
    for (const [method, path] of [
      ["PATCH", "/v1/contacts/1"],
      ["DELETE", "/v1/contacts/1"],
      ["POST", "/v1/contact-groups"],
      ["PATCH", "/v1/contact-groups/1"],
      ["DELETE", "/v1/contact-groups/1"],
      ["PATCH", "/v1/contact-groups/1/default"],
    ] as const) {
      const res = await callRaw(method, path, { token, body: { group_name: "x" } });
      expectShapeA(res, 403, "insufficient_scope");
      expect(res.body.required_scope, `${method} ${path}`).toBe("contacts:write");
    }
  });

  it("refuses GET /v1/contacts to a token granted only items:read (required_scope contacts:read)", async () => {
    const issued = ok(await postToken(creds("demo-owner", { scope: "items:read" })));
    const res = await call("listContacts", "/v1/contacts", { token: issued.body.access_token });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("contacts:read");
  });

  it("does not let contacts:write imply contacts:read", async () => {
    const issued = ok(await postToken(creds("demo-owner", { scope: "contacts:write" })));
    const res = await call("listContactGroups", "/v1/contact-groups", { token: issued.body.access_token });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("contacts:read");
  });

  it("lets * grant every scope", async () => {
    const token = await tokenFor("demo-owner");
    expectStatus(await call("listContacts", "/v1/contacts", { token }), 200);
    const created = await call("createContact", "/v1/contacts", {
      token,
      body: { first_name: "Star", last_name: "Scope", email: "star-scope@example.com" },
    });
    expectStatus(created, 201, JSON.stringify(created.body));
    expectStatus(await call("listContactGroups", "/v1/contact-groups", { token }), 200);
  });

  it("checks the scope before validating the body", async () => {
    const token = await tokenFor("demo-readonly");
    const invalid = await call("createContact", "/v1/contacts", { token, body: { first_name: 5, unknown: true } });
    expectShapeA(invalid, 403, "insufficient_scope");
    const malformed = await call("createContact", "/v1/contacts", {
      token,
      rawBody: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    expectShapeA(malformed, 403, "insufficient_scope");
    const wrongType = await call("createContact", "/v1/contacts", {
      token,
      rawBody: "hello",
      headers: { "Content-Type": "text/plain" },
    });
    expectShapeA(wrongType, 403, "insufficient_scope");
  });

  it("checks authentication before the path id", async () => {
    expectInvalidToken(await call("getContact", "/v1/contacts/abc"));
    const token = await tokenFor("demo-owner", "items:read");
    expectShapeA(await call("getContact", "/v1/contacts/abc", { token }), 403, "insufficient_scope");
  });
});

describe("requireOwner", () => {
  const ownerApp = new Hono<AppBindings>();
  ownerApp.get("/owner-only", authenticate, requireOwner, (c) => c.json({ success: true, userid: c.var.auth.userId }));
  ownerApp.onError(renderError);

  async function request(token?: string): Promise<CallResult> {
    const response = await ownerApp.request(
      "/owner-only",
      { headers: token ? { Authorization: `Bearer ${token}` } : {} },
      env,
    );
    return {
      status: response.status,
      body: (await response.json()) as Record<string, unknown>,
      headers: response.headers,
    };
  }

  it("lets the account owner through", async () => {
    const res = await request(await tokenFor("demo-owner"));
    expectStatus(res, 200);
    expect(res.body).toEqual({ success: true, userid: 1 });
  });

  it("lets the owner of another account through", async () => {
    expectStatus(await request(await tokenFor("demo-other")), 200);
  });

  it("refuses a non-owner of the account with 403 Shape B", async () => {
    const res = await request(await tokenFor("demo-member"));
    expectShapeB(res, 403, /owner/i);
  });

  it("refuses a non-owner whatever its scopes, and lets an owner token with few scopes pass", async () => {
    expectShapeB(await request(await tokenFor("demo-readonly")), 403);
    expectStatus(await request(await tokenFor("demo-owner", "tags:read")), 200);
  });

  it("still answers 401 without a token (authenticate runs first)", async () => {
    expectShapeA(await request(), 401, "invalid_token");
  });
});
