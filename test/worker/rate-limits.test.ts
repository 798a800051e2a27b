// Rate limits (docs/rate-limits.md) with RATE_LIMITS on, as `npm start` runs (the other suites run
// with them off). Counters are per isolate and per key: every test uses its own clients and
// addresses. Windows are aligned to the clock, so a test that crossed a window boundary is run again.
import { describe, expect, it } from "vitest";
import { COSTS, POLICIES } from "../../src/lib/rate-limit";
import { TOKEN_FAILURE_LIMIT } from "../../src/auth/token-failures";
import { authenticatesBearer } from "../../src/app";
import {
  callRawWithEnv,
  callWithEnv,
  createAccount,
  createOwnerClient,
  env,
  expectShapeA,
  expectShapeB,
  type CallOptions,
  type CallResult,
  type Operation,
  expectStatus,
  openApiDocument,
} from "./helpers";

const ON = { RATE_LIMITS: "on" };
const send = <O extends Operation>(operation: O, path: string, options: CallOptions = {}) =>
  callWithEnv(ON, operation, path, options);

/**
 * Runs `body` until one run stays within a single window of `seconds` (at most 3 tries). Each try
 * makes its own clients (and address): a try that crossed a window left units in the new one.
 */
async function withinOneWindow(seconds: number, body: () => Promise<void>) {
  for (let attempt = 1; ; attempt++) {
    const window = () => Math.floor(Date.now() / 1000 / seconds);
    const start = window();
    try {
      await body();
      if (window() === start) return;
    } catch (error) {
      if (window() === start || attempt === 3) throw error;
    }
    if (attempt === 3) throw new Error(`every try crossed a ${seconds} s window`);
  }
}

/** A new `*` client of company `companyId`, with a token issued while limits are on. */
async function newClient(account: {
  accountId: number;
  companyId: number;
}): Promise<{ clientId: string; secret: string; token: string }> {
  const { clientId, secret } = await createOwnerClient(account.accountId, account.companyId, "rl");
  const res = await send("issueToken", "/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret },
    headers: { "CF-Connecting-IP": `10.9.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}` },
  });
  expectStatus(res, 200, JSON.stringify(res.body));
  return { clientId, secret, token: res.body.access_token };
}

function rateLimit(res: CallResult): { policy: string; r: number; t: number } {
  const match = /^"([a-z-]+)";r=(\d+);t=(\d+)$/.exec(res.headers.get("RateLimit") ?? "");
  expect(match, `RateLimit: ${res.headers.get("RateLimit")}`).not.toBeNull();
  return { policy: match![1]!, r: Number(match![2]), t: Number(match![3]) };
}

describe("headers", () => {
  it("describes the client's and the company's policies on every authenticated response, errors included", async () => {
    const account = await createAccount();
    const client = await newClient(account);
    const policy = '"client";q=1200;w=60, "client-burst";q=300;w=10, "company";q=3000;w=60';
    const requests = [
      ["listContacts", "/v1/contacts"],
      ["getContact", "/v1/contacts/999999999"],
      ["getTokenInfo", "/v1/oauth/me"],
      ["createItem", "/v1/items", {}],
    ] as const;
    for (const [operation, path, body] of requests) {
      const res = await send(operation, path, { token: client.token, body });
      expect(res.headers.get("RateLimit-Policy"), `${operation} ${path} ${res.status}`).toBe(policy);
      const { policy: name, r, t } = rateLimit(res);
      expect(["client", "client-burst", "company"]).toContain(name);
      expect(r).toBeLessThan(3000);
      expect(t).toBeGreaterThanOrEqual(1);
      expect(t).toBeLessThanOrEqual(60);
    }
  });

  it("counts a search as 5 units, a write as 2 and a read as 1, against the burst policy", async () => {
    const account = await createAccount();
    await withinOneWindow(10, async () => {
      const client = await newClient(account);
      const burst = async (operation: Operation, path: string, body?: unknown) =>
        rateLimit(await send(operation, path, { token: client.token, body }));
      const a = await burst("listContacts", "/v1/contacts");
      const b = await burst("listContacts", "/v1/contacts?q=ada");
      const c = await burst("createContact", "/v1/contacts", {});
      // RateLimit names the policy closest to its quota: the burst policy, until the minute ones catch up.
      expect([a.policy, b.policy, c.policy]).toEqual(["client-burst", "client-burst", "client-burst"]);
      expect(a.r - b.r).toBe(COSTS.search);
      expect(b.r - c.r).toBe(COSTS.write);
    });
  });

  it("sends none when RATE_LIMITS is off", async () => {
    const res = await callWithEnv({ RATE_LIMITS: "off" }, "getHealth", "/health");
    expectStatus(res, 200);
    expect(res.headers.get("RateLimit-Policy")).toBeNull();
    expect(res.headers.get("RateLimit")).toBeNull();
  });
});

describe("limits", () => {
  it("answers 429 Shape B with Retry-After once a client spends its burst, and only for that client", async () => {
    const account = await createAccount();
    await withinOneWindow(10, async () => {
      const [client, neighbour] = [await newClient(account), await newClient(account)];
      const searches = POLICIES["client-burst"].quota / COSTS.search;
      for (let i = 0; i < searches; i++) {
        const res = await send("listContacts", "/v1/contacts?q=x", { token: client.token });
        expectStatus(res, 200, `search ${i + 1}`);
      }
      const over = await send("listContacts", "/v1/contacts?q=x", { token: client.token });
      expectShapeB(over, 429, /client-burst limit allows 300 request units per 10 s per API client/);
      const retryAfter = Number(over.headers.get("Retry-After"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(10);
      expect(rateLimit(over)).toMatchObject({ policy: "client-burst", r: 0, t: retryAfter });
      // Refused before any work: a write is refused too, and nothing is created.
      expectShapeB(
        await send("createContact", "/v1/contacts", {
          token: client.token,
          body: { first_name: "A", last_name: "B", email: "x@y.test" },
        }),
        429,
      );
      // Another client of the same company is not affected.
      expectStatus(await send("listContacts", "/v1/contacts?q=x", { token: neighbour.token }), 200);
    });
    const rows = await env.DB.prepare("SELECT count(*) AS n FROM contacts WHERE company_id = ?")
      .bind(account.companyId)
      .first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("spends nothing of the other policies on a refused request: a flooding client does not use up its company's quota", async () => {
    await withinOneWindow(10, async () => {
      const account = await createAccount();
      const [flooder, sibling] = [await newClient(account), await newClient(account)];
      for (let i = 0; i < 60; i++)
        expectStatus(await send("listContacts", "/v1/contacts?q=x", { token: flooder.token }), 200);
      for (let i = 0; i < 100; i++)
        expectStatus(await send("listContacts", "/v1/contacts?q=x", { token: flooder.token }), 429);
      // The company has spent the flooder's 300 accepted units and the sibling's 1, not the 500 refused.
      const res = await send("listContacts", "/v1/contacts", { token: sibling.token });
      expect(rateLimit(res)).toMatchObject({ policy: "company", r: POLICIES.company.quota - 300 - 1 });
    });
  });

  it("shares the company's quota between its clients", async () => {
    await withinOneWindow(60, async () => {
      const account = await createAccount();
      const clients = await Promise.all(Array.from({ length: 11 }, () => newClient(account)));
      // Each client spends its burst (60 searches = 300 units); ten of them spend the company's 3,000.
      let spent = 0;
      for (const client of clients.slice(0, 10)) {
        for (let i = 0; i < 60 && spent < POLICIES.company.quota; i++, spent += COSTS.search) {
          const res = await send("listContacts", "/v1/contacts?q=x", { token: client.token });
          expectStatus(res, 200, `unit ${spent}`);
        }
      }
      const over = await send("listContacts", "/v1/contacts", { token: clients[10]!.token });
      expectShapeB(over, 429, /company limit allows 3000 request units per 60 s per company/);
      const other = await createAccount();
      expectStatus(await send("listContacts", "/v1/contacts", { token: (await newClient(other)).token }), 200);
    });
    // 600 requests: more than the default 5 s on a busy machine.
  }, 30_000);

  it("limits requests without a valid token per address (the anonymous policy)", async () => {
    await withinOneWindow(60, async () => {
      const ip = `203.0.113.${Math.floor(Math.random() * 250)}`;
      for (let i = 0; i < POLICIES.anonymous.quota; i++) {
        const res = await send("getHealth", "/health", { headers: { "CF-Connecting-IP": ip } });
        expectStatus(res, 200, `request ${i + 1}`);
      }
      const over = await send("getHealth", "/health", { headers: { "CF-Connecting-IP": ip } });
      expectShapeB(over, 429, /anonymous limit/);
      expect(over.headers.get("RateLimit-Policy")).toBe('"anonymous";q=300;w=60');
      // The token endpoint answers it in Shape A, as all its errors.
      const token = await send("issueToken", "/v1/oauth/token", {
        body: { grant_type: "client_credentials" },
        headers: { "CF-Connecting-IP": ip },
      });
      expectShapeA(token, 429, "too_many_requests");
      expect(token.headers.get("Retry-After")).toBeTruthy();
      // Another address is not affected.
      expectStatus(await send("getHealth", "/health", { headers: { "CF-Connecting-IP": `${ip}1` } }), 200);
    });
  });
});

describe("requests whose bearer token does not authenticate (issue 31.2)", () => {
  const address = () => `203.0.114.${Math.floor(Math.random() * 250)}`;
  /** `n` requests from `ip`, 50 at a time; the statuses counted. */
  async function flood(
    n: number,
    ip: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) {
    const counts: Record<number, number> = {};
    let last!: CallResult;
    for (let sent = 0; sent < n; sent += 50) {
      const results = await Promise.all(
        Array.from({ length: Math.min(50, n - sent) }, () =>
          callRawWithEnv(ON, method, path, { headers: { ...headers, "CF-Connecting-IP": ip }, body }),
        ),
      );
      for (const res of results) counts[res.status] = (counts[res.status] ?? 0) + 1;
      last = results[results.length - 1]!;
    }
    return { counts, last };
  }

  it("refuses an invalid token with 429 and Retry-After once the address has spent its anonymous units; a valid token from it still works", async () => {
    const account = await createAccount();
    const client = await newClient(account);
    await withinOneWindow(60, async () => {
      const ip = address();
      const { counts, last } = await flood(400, ip, "GET", "/v1/items?limit=1", { Authorization: "Bearer not.a.jwt" });
      expect(counts).toEqual({ 401: POLICIES.anonymous.quota, 429: 400 - POLICIES.anonymous.quota });
      expectShapeB(last, 429, /anonymous limit allows 300 request units per 60 s/);
      const retryAfter = Number(last.headers.get("Retry-After"));
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(rateLimit(last)).toMatchObject({ policy: "anonymous", r: 0, t: retryAfter });
      // The address's anonymous units do not bind a client that authenticates.
      const valid = await send("listItems", "/v1/items?limit=1", {
        token: client.token,
        headers: { "CF-Connecting-IP": ip },
      });
      expectStatus(valid, 200);
    });
  }, 30_000);

  it("counts a bearer header on a route that does not take one (health, the token endpoint, an unknown path) up front, like no header", async () => {
    await withinOneWindow(60, async () => {
      const ip = address();
      const bearer = { Authorization: "Bearer whatever" };
      const health = await flood(POLICIES.anonymous.quota - 2, ip, "GET", "/health", bearer);
      expect(health.counts).toEqual({ 200: POLICIES.anonymous.quota - 2 });
      expect((await flood(2, ip, "GET", "/v1/no-such-thing", bearer)).counts).toEqual({ 404: 2 });
      const over = await flood(1, ip, "GET", "/health", bearer);
      expectShapeB(over.last, 429, /anonymous limit/);
      const token = await flood(1, ip, "POST", "/v1/oauth/token", bearer, {
        grant_type: "client_credentials",
        client_id: "demo-owner",
        client_secret: "demo-owner-secret",
      });
      expectShapeA(token.last, 429, "too_many_requests");
      expect(token.last.headers.get("Retry-After")).toBeTruthy();
      expectShapeB((await flood(1, ip, "GET", "/v1/no-such-thing", bearer)).last, 429);
    });
  }, 30_000);
});

describe("the caller's address (issue 31.6)", () => {
  it("is CF-Connecting-IP alone: X-Real-IP picks no bucket", async () => {
    await withinOneWindow(60, async () => {
      // Without CF-Connecting-IP (only tests lack it: Cloudflare, and Miniflare locally, always set it) every request shares one bucket.
      const spread = (i: number) => ({ "X-Real-IP": `192.0.2.${i % 250}`, "X-Forwarded-For": `192.0.2.${i % 250}` });
      const results = await Promise.all(
        Array.from({ length: POLICIES.anonymous.quota + 5 }, (_, i) =>
          send("getHealth", "/health", { headers: spread(i) }),
        ),
      );
      expect(results.filter((r) => r.status === 429)).toHaveLength(5);
    });
  });
});

describe("requests that arrive together", () => {
  it("are counted exactly: of quota + 5 sent at once from one address, 5 are refused", async () => {
    await withinOneWindow(60, async () => {
      const ip = `203.0.115.${Math.floor(Math.random() * 250)}`;
      const results = await Promise.all(
        Array.from({ length: POLICIES.anonymous.quota + 5 }, () =>
          send("getHealth", "/health", { headers: { "CF-Connecting-IP": ip } }),
        ),
      );
      expect(results.filter((r) => r.status === 429)).toHaveLength(5);
    });
  });
});

describe("which bearer requests wait for their token to be judged", () => {
  it("exactly the document's operations secured by oauth2 (the token endpoint, feeds, uploads and health are their address's)", async () => {
    const doc = await openApiDocument();
    let checked = 0;
    for (const [path, item] of Object.entries<Record<string, { security?: Array<Record<string, unknown>> }>>(
      doc.paths,
    )) {
      for (const [method, op] of Object.entries(item)) {
        if (!op || typeof op !== "object" || !("responses" in op)) continue;
        const bearer = (op.security ?? []).some((s) => "oauth2" in s);
        const sample = path.replace(/\{[^}]+\}/g, "1");
        expect(authenticatesBearer(method.toUpperCase(), sample), `${method} ${path}`).toBe(bearer);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(80);
    expect(authenticatesBearer("HEAD", "/v1/items/1")).toBe(true);
    expect(authenticatesBearer("GET", "/v1/no-such-thing")).toBe(false);
  });
});

describe("the token endpoint and failed attempts", () => {
  it(`locks a client_id out after ${TOKEN_FAILURE_LIMIT} wrong secrets, even for the right one, until the window ends`, async () => {
    const account = await createAccount();
    const client = await newClient(account);
    const attempt = (secret: string) =>
      send("issueToken", "/v1/oauth/token", {
        body: { grant_type: "client_credentials", client_id: client.clientId, client_secret: secret },
        headers: { "CF-Connecting-IP": `198.51.100.${Math.floor(Math.random() * 250)}` },
      });
    for (let i = 0; i < TOKEN_FAILURE_LIMIT; i++) expectShapeA(await attempt("wrong"), 401, "invalid_client");
    for (const secret of ["wrong", client.secret]) {
      const locked = await attempt(secret);
      expectShapeA(locked, 429, "too_many_requests");
      expect(Number(locked.headers.get("Retry-After"))).toBeGreaterThan(800);
    }
    // The window ends: the right secret works again and the count starts over.
    await env.DB.prepare("UPDATE api_clients SET token_failures_since = token_failures_since - 900 WHERE client_id = ?")
      .bind(client.clientId)
      .run();
    expectStatus(await attempt(client.secret), 200);
    const row = await env.DB.prepare("SELECT token_failures FROM api_clients WHERE client_id = ?")
      .bind(client.clientId)
      .first<{ token_failures: number }>();
    expect(row!.token_failures).toBe(0);
  });

  /** `secrets` sent at once for `clientId`, each from one of 50 addresses (the probe of issue 31). */
  const burst = (clientId: string, secrets: string[]) => {
    const net = Math.floor(Math.random() * 250);
    return Promise.all(
      secrets.map((secret, i) =>
        send("issueToken", "/v1/oauth/token", {
          body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret },
          headers: { "CF-Connecting-IP": `198.18.${net}.${i % 50}` },
        }),
      ),
    );
  };
  const statuses = (results: CallResult[]) =>
    results.reduce<Record<number, number>>((n, r) => ({ ...n, [r.status]: (n[r.status] ?? 0) + 1 }), {});

  it(`checks at most ${TOKEN_FAILURE_LIMIT} secrets of 100 sent at once over 50 addresses: the rest, the right one included, are 429`, async () => {
    const account = await createAccount();
    const client = await createOwnerClient(account.accountId, account.companyId, "rl");
    const results = await burst(client.clientId, [...Array<string>(99).fill("wrong"), client.secret]);
    const right = results[99]!;
    const n = statuses(results);
    // Exactly the limit is checked (401, or 200 for the right secret when it was among them); nothing else.
    expect((n[401] ?? 0) + (n[200] ?? 0), JSON.stringify(n)).toBe(TOKEN_FAILURE_LIMIT);
    expect(n[429], JSON.stringify(n)).toBe(100 - TOKEN_FAILURE_LIMIT);
    for (const res of results.filter((r) => r.status === 429)) {
      expectShapeA(res, 429, "too_many_requests");
      expect(Number(res.headers.get("Retry-After"))).toBeGreaterThan(800);
    }
    if (right.status === 429) {
      // Ten wrong secrets were checked: the client is locked, the right secret included.
      expect(n[401]).toBe(TOKEN_FAILURE_LIMIT);
      expectShapeA((await burst(client.clientId, [client.secret]))[0]!, 429, "too_many_requests");
    } else {
      // The right secret was among the first ten: it is not a failure, nine are counted.
      expectStatus(right, 200);
      expect(n[401]).toBe(TOKEN_FAILURE_LIMIT - 1);
    }
    const row = await env.DB.prepare("SELECT token_failures FROM api_clients WHERE client_id = ?")
      .bind(client.clientId)
      .first<{ token_failures: number }>();
    expect(row!.token_failures).toBe(n[401]);
  });

  it("answers two bursts of 60 wrong secrets with 10 checked and 110 refused", async () => {
    const account = await createAccount();
    const client = await createOwnerClient(account.accountId, account.companyId, "rl");
    expect(statuses(await burst(client.clientId, Array<string>(60).fill("wrong")))).toEqual({
      401: TOKEN_FAILURE_LIMIT,
      429: 60 - TOKEN_FAILURE_LIMIT,
    });
    expect(statuses(await burst(client.clientId, Array<string>(60).fill("wrong")))).toEqual({ 429: 60 });
    // HTTP Basic is the same door.
    const basic = await send("issueToken", "/v1/oauth/token", {
      rawBody: "grant_type=client_credentials",
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa(`${client.clientId}:${client.secret}`)}`,
        "CF-Connecting-IP": "198.18.251.1",
      },
    });
    expectShapeA(basic, 429, "too_many_requests");
  });

  it("counts neither a right secret nor its refusals (inactive, invalid_scope), and does not forgive the window's failures on a success", async () => {
    const account = await createAccount();
    const client = await createOwnerClient(account.accountId, account.companyId, "rl");
    const attempt = (secret: string) => burst(client.clientId, [secret]).then((r) => r[0]!);
    for (let i = 0; i < TOKEN_FAILURE_LIMIT - 1; i++) expectShapeA(await attempt("wrong"), 401, "invalid_client");
    expectStatus(await attempt(client.secret), 200);
    const scoped = await send("issueToken", "/v1/oauth/token", {
      body: {
        grant_type: "client_credentials",
        client_id: client.clientId,
        client_secret: client.secret,
        scope: "no:such",
      },
      headers: { "CF-Connecting-IP": "198.18.252.1" },
    });
    expectShapeA(scoped, 400, "invalid_scope");
    const failures = () =>
      env.DB.prepare("SELECT token_failures AS n FROM api_clients WHERE client_id = ?")
        .bind(client.clientId)
        .first<number>("n");
    expect(await failures()).toBe(TOKEN_FAILURE_LIMIT - 1);
    // The tenth failure locks it: a token issued in between bought a guesser nothing.
    expectShapeA(await attempt("wrong"), 401, "invalid_client");
    expectShapeA(await attempt(client.secret), 429, "too_many_requests");
  });

  it("does not count a right secret, nor lock an unknown client_id", async () => {
    const account = await createAccount();
    const client = await newClient(account);
    for (let i = 0; i < TOKEN_FAILURE_LIMIT + 2; i++) {
      expectStatus(
        await callWithEnv({ RATE_LIMITS: "off" }, "issueToken", "/v1/oauth/token", {
          body: { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.secret },
        }),
        200,
      );
      expectShapeA(
        await callWithEnv({ RATE_LIMITS: "off" }, "issueToken", "/v1/oauth/token", {
          body: { grant_type: "client_credentials", client_id: "no-such-client", client_secret: "x" },
        }),
        401,
        "invalid_client",
      );
    }
  });
});

describe("configuration", () => {
  it("stays within the documented ceiling: at most 1,200 units a minute per client", () => {
    expect(POLICIES.client.quota).toBeLessThanOrEqual(1200);
  });
});
