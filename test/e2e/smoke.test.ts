// End to end: starts the real service (`node scripts/start.ts`: migrate + seed + wrangler dev) on a
// free port with a fresh --persist-to directory, talks to it over HTTP, and drives the operator
// CLI (scripts/admin.ts) against the same local database while the server runs. The HTTP calls go
// through Prism's validating proxy: an answer (or request) the OpenAPI document does not describe
// fails its call (test/e2e/conformance.test.ts sends every operation through it).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import * as oidc from "openid-client";
import type { Browser, Locator } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/local.ts";
import { DEMO_CLIENTS, SHARD_ONE_DEMO as DEMO_CLIENTS_SHARD_ONE } from "../../scripts/seed-data.ts";
import { launchChromium, originPage, type OriginPage } from "./support/browser.ts";
import { startPrism, violationsOf, type Prism } from "./support/prism.ts";
import {
  cliField as field,
  operatorCli,
  runCommand as run,
  sleep,
  startService,
  type Service,
} from "./support/service.ts";

const owner = DEMO_CLIENTS.find((c) => c.clientId === "demo-owner")!;

let service: Service | undefined;
let prism: Prism | undefined;
let persistDir = "";
let base = "";

/** The operator CLI against the running server's database. */
const cli = (...args: string[]) => operatorCli(persistDir, ...args);

/** A call through Prism (the document's operations) or straight to the service (the document itself). */
async function http(method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}) {
  const direct = path === "/v1/openapi.json";
  const res = await fetch(`${direct ? base : prism!.base}${path}`, { method, headers: init.headers, body: init.body });
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  if (!direct) expect(violationsOf(res.status, res.headers, body), `${method} ${path} → ${res.status}`).toEqual([]);
  return { status: res.status, headers: res.headers, body };
}

function tokenRequest(params: Record<string, string>) {
  return http("POST", "/v1/oauth/token", {
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ grant_type: "client_credentials", ...params }),
  });
}

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

beforeAll(async () => {
  service = await startService("expiry-e2e-");
  base = service.base;
  persistDir = service.persistDir;
  writeFileSync(join(persistDir, "openapi.json"), await (await fetch(`${base}/v1/openapi.json`)).text());
  prism = await startPrism(join(persistDir, "openapi.json"), base);
});

afterAll(async () => {
  await prism?.stop();
  await service?.stop();
});

describe("service over HTTP", () => {
  let ownerToken = "";

  it("GET /health answers 200", async () => {
    const res = await http("GET", "/health");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, status: "ok" });
  });

  it("issues a token for JSON client credentials", async () => {
    const res = await tokenRequest({ client_id: owner.clientId, client_secret: owner.secret });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 86400, scope: "*" });
    expect(res.body.access_token).toEqual(expect.any(String));
    expect(res.headers.get("cache-control")).toContain("no-store");
    ownerToken = res.body.access_token;
  });

  it("issues a token for form-encoded client credentials", async () => {
    const res = await http("POST", "/v1/oauth/token", {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: owner.clientId,
        client_secret: owner.secret,
      }).toString(),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 86400, scope: "*" });
  });

  it("issues a token for HTTP Basic client authentication", async () => {
    const basic = Buffer.from(`${encodeURIComponent(owner.clientId)}:${encodeURIComponent(owner.secret)}`).toString(
      "base64",
    );
    const res = await http("POST", "/v1/oauth/token", {
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${basic}` },
      body: "grant_type=client_credentials",
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ token_type: "Bearer", expires_in: 86400, scope: "*" });
  });

  it("refuses a wrong secret with 401 invalid_client", async () => {
    const res = await tokenRequest({ client_id: owner.clientId, client_secret: "not-the-secret" });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: "invalid_client" });
  });

  it("GET /v1/oauth/me describes the token", async () => {
    const res = await http("GET", "/v1/oauth/me", { headers: bearer(ownerToken) });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      client_id: owner.clientId,
      company_id: owner.companyId,
      userid: owner.userId,
      scope: "*",
    });
    expect(res.body.exp - res.body.iat).toBe(86400);
  });

  it("GET /v1/openapi.json is a valid OpenAPI 3.0.3 document listing /v1/contacts", async () => {
    const res = await http("GET", "/v1/openapi.json");
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe("3.0.3");
    const validator = new Validator();
    const result = await validator.validate(res.body);
    expect(result.errors, JSON.stringify(result.errors, null, 2)).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.0");
    expect(Object.keys(res.body.paths)).toContain("/v1/contacts");
  });
});

// openid-client's defaults fetch /.well-known/openid-configuration; `algorithm: "oauth2"` fetches the
// RFC 8414 path. Both serve the same document (docs/api-notes.md, "Discovery"). Plain http needs
// allowInsecureRequests; nothing else is set.
describe("discovery with an unmodified client library (openid-client)", () => {
  for (const [name, method, algorithm] of [
    ["client_secret_basic", oidc.ClientSecretBasic, undefined],
    ["client_secret_post", oidc.ClientSecretPost, undefined],
    ["client_secret_basic", oidc.ClientSecretBasic, "oauth2"],
  ] as const) {
    it(`discovers the token endpoint from the base URL and gets a working token (${name}, algorithm ${algorithm ?? "default"})`, async () => {
      const config = await oidc.discovery(new URL(base), owner.clientId, owner.secret, method(), {
        ...(algorithm ? { algorithm } : {}),
        execute: [oidc.allowInsecureRequests],
      });
      const metadata = config.serverMetadata();
      expect(metadata.issuer).toBe(base);
      expect(metadata.token_endpoint_auth_methods_supported).toContain(name);
      const tokens = await oidc.clientCredentialsGrant(config, { scope: "items:read" });
      expect(tokens).toMatchObject({ token_type: "bearer", scope: "items:read" });
      const me = await http("GET", "/v1/oauth/me", { headers: bearer(tokens.access_token) });
      expect(me.status, JSON.stringify(me.body)).toBe(200);
      expect(me.body).toMatchObject({ client_id: owner.clientId, scope: "items:read" });
    });
  }
});

describe("operator CLI against the running service", () => {
  it("rejects unknown scopes (exit 1) and unknown options (exit 2)", async () => {
    const badScope = await cli("client", "create", "--company", "1", "--scopes", "contacts:read contacts:delete");
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toContain("Unknown scope: contacts:delete");
    const badFlag = await cli("client", "create", "--company", "1", "--scopes", "contacts:read", "--colour", "red");
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("Unknown option: --colour");
    expect(badFlag.stderr).toContain("Usage:");
  });

  it("client create / list / revoke: a scoped client works over HTTP until revoked", async () => {
    const created = await cli(
      "client",
      "create",
      "--company",
      "1",
      "--scopes",
      "contacts:read",
      "--name",
      "e2e reader",
    );
    expect(created.code, created.stderr).toBe(0);
    const clientId = field(created.stdout, "client_id");
    const secret = field(created.stdout, "client_secret");
    expect(clientId).toMatch(/^ck_[0-9a-f]{24}$/);
    expect(secret).toMatch(/^cs_[0-9a-f]{64}$/);
    expect(created.stdout).toMatch(/cannot be shown again/);

    const token = await tokenRequest({ client_id: clientId, client_secret: secret });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    expect(token.body).toMatchObject({ token_type: "Bearer", scope: "contacts:read" });
    const scoped = await tokenRequest({ client_id: clientId, client_secret: secret, scope: "contacts:read" });
    expect(scoped.status).toBe(200);
    expect(scoped.body.scope).toBe("contacts:read");
    const refused = await tokenRequest({ client_id: clientId, client_secret: secret, scope: "contacts:write" });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "invalid_scope" });

    const me = await http("GET", "/v1/oauth/me", { headers: bearer(token.body.access_token) });
    expect(me.body).toMatchObject({ client_id: clientId, company_id: 1, userid: 1, scope: "contacts:read" });
    const contacts = await http("GET", "/v1/contacts", { headers: bearer(token.body.access_token) });
    expect(contacts.status, JSON.stringify(contacts.body)).toBe(200);

    // Through the package.json script, as an operator would run it.
    const listed = await run("npm", [
      "run",
      "--silent",
      "client",
      "--",
      "list",
      "--company",
      "1",
      "--json",
      "--persist-to",
      persistDir,
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    expect(rows.find((r) => r.client_id === clientId)).toMatchObject({
      company_id: 1,
      scopes: "contacts:read",
      active: true,
      name: "e2e reader",
    });
    expect(listed.stdout).not.toContain(secret);
    expect(listed.stdout).not.toMatch(/secret|hash|salt/i);

    const revoked = await cli("client", "revoke", "--client-id", clientId);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toContain("now revoked");
    const afterRevoke = await tokenRequest({ client_id: clientId, client_secret: secret });
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.body).toMatchObject({ error: "invalid_client" });

    // Activated again, the client gets new tokens, but the token issued before the revocation
    // stays refused for good (token generation).
    const activated = await cli("client", "activate", "--client-id", clientId);
    expect(activated.code, activated.stderr).toBe(0);
    expect(activated.stdout).toContain("active again");
    const fresh = await tokenRequest({ client_id: clientId, client_secret: secret });
    expect(fresh.status, JSON.stringify(fresh.body)).toBe(200);
    const freshMe = await http("GET", "/v1/oauth/me", { headers: bearer(fresh.body.access_token) });
    expect(freshMe.status, JSON.stringify(freshMe.body)).toBe(200);
    // A newer token refreshes the isolate's cached client record at once; the loop only guards
    // against another isolate holding an older record for up to CLIENT_STATUS_TTL_SECONDS (15 s).
    let oldMe = await http("GET", "/v1/oauth/me", { headers: bearer(token.body.access_token) });
    for (const deadline = Date.now() + 20_000; oldMe.status === 200 && Date.now() < deadline; ) {
      await sleep(500);
      oldMe = await http("GET", "/v1/oauth/me", { headers: bearer(token.body.access_token) });
    }
    expect(oldMe.status, JSON.stringify(oldMe.body)).toBe(401);
    expect(oldMe.body).toMatchObject({ error: "invalid_token" });
    expect(oldMe.body.error_description).toMatch(/revoked/);
    expect((await http("GET", "/v1/contacts", { headers: bearer(token.body.access_token) })).status).toBe(401);
    expect((await http("GET", "/v1/contacts", { headers: bearer(fresh.body.access_token) })).status).toBe(200);

    // The operator command through scripts/dev.sh (which provides Node >= 22.18): stdout is the
    // JSON alone, and the list shows the bumped generation.
    const viaDevSh = await run("bash", [
      join(ROOT, "scripts", "dev.sh"),
      "client",
      "list",
      "--company",
      "1",
      "--json",
      "--persist-to",
      persistDir,
    ]);
    expect(viaDevSh.code, viaDevSh.stderr).toBe(0);
    const listedAgain = JSON.parse(viaDevSh.stdout) as Array<Record<string, unknown>>;
    expect(listedAgain.find((r) => r.client_id === clientId)).toMatchObject({ active: true, token_generation: 1 });

    // The owner's audit log tells the client's story: made by the operator, its tokens, the
    // revocation and the refusals that followed.
    const ownerTokenRes = await tokenRequest({ client_id: owner.clientId, client_secret: owner.secret });
    const story = await http("GET", `/v1/audit-log?resource_type=api_client&resource_id=${clientId}&limit=200`, {
      headers: bearer(ownerTokenRes.body.access_token),
    });
    expect(story.status, JSON.stringify(story.body)).toBe(200);
    const actions = (story.body.data as Array<{ action: string; actor: { client_id: string | null } }>)
      .map((e) => e.action)
      .reverse();
    expect(actions[0]).toBe("created");
    expect(actions.filter((a) => a === "token_issued")).toHaveLength(3);
    expect(actions).toEqual(expect.arrayContaining(["updated", "token_refused"]));
    expect(JSON.stringify(story.body)).not.toContain(secret);

    const missing = await cli("client", "revoke", "--client-id", "ck_does_not_exist");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("No API client with id ck_does_not_exist");
  });

  it("account create, then client create for the new company", async () => {
    const account = await cli(
      "account",
      "create",
      "--name",
      "Acme",
      "--owner-email",
      "ops@acme.example",
      "--company",
      "Acme Ltd",
    );
    expect(account.code, account.stderr).toBe(0);
    const companyId = Number(field(account.stdout, "company_id"));
    const userId = Number(field(account.stdout, "user_id"));
    expect(companyId).toBeGreaterThan(2); // the seed has companies 1 and 2
    expect(account.stdout).toContain(`bash scripts/dev.sh client create --company ${companyId}`);

    const created = await cli(
      "client",
      "create",
      "--company",
      String(companyId),
      "--scopes",
      "contacts:read contacts:write",
    );
    expect(created.code, created.stderr).toBe(0);
    const clientId = field(created.stdout, "client_id");
    const secret = field(created.stdout, "client_secret");

    const token = await tokenRequest({ client_id: clientId, client_secret: secret });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    expect(token.body.scope).toBe("contacts:read contacts:write");
    const me = await http("GET", "/v1/oauth/me", { headers: bearer(token.body.access_token) });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ client_id: clientId, company_id: companyId, userid: userId });
    const contacts = await http("GET", "/v1/contacts", { headers: bearer(token.body.access_token) });
    expect(contacts.status, JSON.stringify(contacts.body)).toBe(200);
  });
});

// The README's check of a deployment (scripts/smoke-check.ts), here against the local service.
describe("bash scripts/dev.sh smoke-check against the running service", () => {
  const smokeCheck = (secret: string) =>
    run("bash", [join(ROOT, "scripts", "dev.sh"), "smoke-check", `${base}/`, "--client-id", owner.clientId], {
      SMOKE_CLIENT_SECRET: secret,
    });

  it("passes every step: /health, the links, discovery, a token, one item written, read back and deleted", async () => {
    const result = await smokeCheck(owner.secret);
    expect(result.code, result.stdout + result.stderr).toBe(0);
    const steps = result.stdout.split("\n").filter((line) => /^(ok|FAILED) \d/.test(line));
    expect(
      steps.map((line) =>
        line
          .replace(/ \(\d+ ms\)$/, "")
          .replace(/items\/\d+/g, "items/N")
          .replace(/item \d+/, "item N"),
      ),
    ).toEqual([
      "ok 1  GET /health",
      "ok 2  GET / (links on this origin)",
      "ok 3  GET /.well-known/oauth-authorization-server",
      `ok 4  POST /v1/oauth/token (client ${owner.clientId}): scope "*", expires in 86400 s`,
      "ok 5  POST /v1/items (one item): item N",
      "ok 6  GET /v1/items/N (read back, X-D1-Bookmark)",
      "ok 7  DELETE /v1/items/N",
      "ok 8  GET /v1/items/N (gone)",
    ]);
    expect(result.stdout).toContain(`Smoke check of ${base} passed: 8 steps.`);
    expect(result.stdout + result.stderr).not.toContain(owner.secret);
  });

  it("stops at the step that fails, naming it, with exit 1", async () => {
    const result = await smokeCheck("not-the-secret");
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAILED 4 {2}POST \/v1\/oauth\/token .*got 401 .*invalid_client/);
    expect(result.stdout).not.toMatch(/^ok 5/m);
  });
});

describe("two shards (docs/scale.md)", () => {
  it("serves the shard-1 demo account and a CLI-made shard-1 account, each seeing only its own data, with bookmarks", async () => {
    const shardOne = DEMO_CLIENTS_SHARD_ONE;
    const token = await tokenRequest({ client_id: shardOne.clientId, client_secret: shardOne.secret });
    expect(token.status, JSON.stringify(token.body)).toBe(200);
    const headers = { ...bearer(token.body.access_token), "Content-Type": "application/json" };
    const created = await http("POST", "/v1/contacts", {
      headers,
      body: JSON.stringify({ first_name: "Shard", last_name: "One", email: "s1@example.test" }),
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const bookmark = created.headers.get("X-D1-Bookmark");
    expect(bookmark).toMatch(/^1:/);
    const read = await http("GET", `/v1/contacts/${created.body.data.contact_id}`, {
      headers: { ...headers, "X-D1-Bookmark": bookmark! },
    });
    expect(read.status).toBe(200);
    expect((await http("GET", "/v1/contacts", { headers: { ...headers, "X-D1-Bookmark": "garbage" } })).status).toBe(
      400,
    );

    const account = await cli(
      "account",
      "create",
      "--name",
      "Far",
      "--owner-email",
      "ops@far.example",
      "--company",
      "Far Ltd",
      "--shard",
      "1",
    );
    expect(account.code, account.stderr).toBe(0);
    const companyId = Number(field(account.stdout, "company_id"));
    expect(companyId).toBeGreaterThan(500_000); // shard 1's id block
    const client = await cli("client", "create", "--company", String(companyId), "--scopes", "*");
    expect(client.code, client.stderr).toBe(0);
    const farToken = await tokenRequest({
      client_id: field(client.stdout, "client_id"),
      client_secret: field(client.stdout, "client_secret"),
    });
    expect(farToken.status, JSON.stringify(farToken.body)).toBe(200);
    const far = bearer(farToken.body.access_token);
    expect((await http("GET", `/v1/contacts/${created.body.data.contact_id}`, { headers: far })).status).toBe(404);
    expect((await http("GET", "/v1/contacts", { headers: far })).body.data).toEqual([]);

    const list = await cli("client", "list", "--company", String(companyId), "--json");
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toHaveLength(1);
    const revoke = await cli("client", "revoke", "--client-id", field(client.stdout, "client_id"));
    expect(revoke.code, revoke.stderr).toBe(0);
    const shards = await cli("shard", "list");
    expect(shards.code, shards.stderr).toBe(0);
    expect(shards.stdout).toMatch(/shard 1 +DB_1 +accounts 2 +companies 2/);
  });
});

// The API reference page in a real browser (src/routes/docs.ts, docs/api-notes.md "API reference
// page"): headless Chromium that may reach only the service's origin, so a request to a CDN (a script,
// a font, telemetry) fails the test instead of loading.
describe("the API reference page (GET /docs) in headless Chromium", () => {
  let browser: Browser | undefined;
  let tab: OriginPage;
  let doc: any;

  beforeAll(async () => {
    doc = (await http("GET", "/v1/openapi.json")).body;
    browser = await launchChromium();
    tab = await originPage(browser, base);
  });

  afterAll(async () => {
    await browser?.close();
  });

  /** Waits until the locator's element is visible; fails naming it after 10 s. */
  const visible = (locator: Locator) => locator.waitFor({ state: "visible", timeout: 10_000 });
  /** The section of one operation (its id ends with the tag slug, method and path). */
  const operation = (slug: string) => tab.page.locator(`section[id$="/tag/${slug}"]`);

  it("GET / links to it: JSON for programs, a page for the browser whose link opens it", async () => {
    const res = await http("GET", "/");
    expect(res.status).toBe(200);
    expect(res.body.docs).toBe(`${base}/docs`);

    const page = await tab.page.goto(`${base}/`);
    expect(page?.status()).toBe(200);
    expect(page?.headers()["content-type"]).toMatch(/^text\/html/);
    const main = tab.page.getByRole("main");
    await visible(main.getByRole("heading", { name: "Expiry-tracking and reminder API", level: 1 }));
    await visible(main.getByText(`POST ${base}/v1/oauth/token`, { exact: true }));
    // On a phone's width the page does not scroll sideways (the code block scrolls by itself).
    await tab.page.setViewportSize({ width: 390, height: 844 });
    expect(await tab.page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")).toBe(
      0,
    );
    await tab.page.setViewportSize({ width: 1400, height: 1000 });
    for (const [name, path] of [
      ["OpenAPI document", "/v1/openapi.json"],
      ["Health", "/health"],
    ] as const) {
      const [answer] = await Promise.all([
        tab.page.waitForResponse((r) => new URL(r.url()).pathname === path),
        main.getByRole("link", { name, exact: true }).click(),
      ]);
      expect(answer.status(), path).toBe(200);
      await tab.page.goBack();
    }
    await Promise.all([
      tab.page.waitForURL(`${base}/docs`),
      main.getByRole("link", { name: "API reference", exact: true }).click(),
    ]);
    // The page's own style passed its Content-Security-Policy: a blocked one would be a console error (checked last).
    expect(await tab.page.title()).toContain("reference");
  });

  it("lists every tag of the document in its navigation, with nothing loaded from another origin", async () => {
    const res = await tab.page.goto(`${base}/docs`);
    expect(res?.status()).toBe(200);
    const nav = tab.page.getByRole("complementary");
    const tags = new Set<string>([
      ...doc.tags.map((t: { name: string }) => t.name),
      ...(doc["x-tagGroups"] ?? []).flatMap((g: { name: string; tags: string[] }) => [g.name, ...g.tags]),
      ...Object.values<any>(doc.paths).flatMap((item) => Object.values<any>(item).flatMap((op) => op.tags ?? [])),
    ]);
    expect(tags.size).toBeGreaterThan(10);
    await nav.getByRole("link", { name: "Introduction", exact: true }).waitFor();
    for (const tag of tags) await visible(nav.getByRole("link", { name: tag, exact: true }));
  });

  it("opens an operation's details from the navigation (POST /v1/items: its request body and responses)", async () => {
    const nav = tab.page.getByRole("complementary");
    await nav.getByRole("button", { name: "Open Group - Items", exact: true }).click();
    await nav.locator('a[href$="/POST/v1/items"]').click();
    const section = operation("items/POST/v1/items");
    await expect.poll(() => new URL(tab.page.url()).hash).toBe("#tag/items/POST/v1/items");
    // Scrolled to: the section's box overlaps the viewport.
    const height = tab.page.viewportSize()!.height;
    await expect
      .poll(async () => section.boundingBox().then((box) => box !== null && box.y < height && box.y + box.height > 0))
      .toBe(true);
    await visible(section.getByRole("heading", { name: doc.paths["/v1/items"].post.summary, exact: true }));
    const body = section.getByRole("group", { name: "Request Body" });
    for (const field of ["title", "expiry_date"]) await visible(body.getByText(field, { exact: true }).first());
    await visible(section.getByText("Responses", { exact: true }).first());
  });

  it("its client-credentials form gets a token from /v1/oauth/token on the same origin", async () => {
    const auth = tab.page.getByRole("main").getByRole("region", { name: "Authentication", exact: true });
    await auth.getByRole("combobox").nth(1).fill(owner.clientId); // Token URL, then Client ID
    await auth.getByRole("textbox", { name: "Client Secret" }).fill(owner.secret);
    const [token] = await Promise.all([
      tab.page.waitForResponse((r) => new URL(r.url()).pathname === "/v1/oauth/token"),
      auth.getByRole("button", { name: "Authorize", exact: true }).click(),
    ]);
    expect(token.status()).toBe(200);
    expect(new URL(token.url()).origin).toBe(base);
    const issued = (await token.json()).access_token as string;
    await expect.poll(() => auth.getByRole("textbox", { name: "Access Token" }).inputValue()).toBe(issued);
  });

  it("Test Request sends GET /v1/contacts to the same origin with a pasted token and shows the 200", async () => {
    const token = (await tokenRequest({ client_id: owner.clientId, client_secret: owner.secret })).body
      .access_token as string;
    const section = operation("contacts/GET/v1/contacts");
    await tab.page
      .getByRole("complementary")
      .getByRole("button", { name: "Open Group - Contacts", exact: true })
      .click();
    await tab.page.getByRole("complementary").locator('a[href$="/GET/v1/contacts"]').click();
    await section.getByRole("button", { name: /Test Request/ }).click();
    const client = tab.page.getByRole("dialog", { name: "API Client" });
    // The page offers "bearerToken" (a pasted token) besides the document's oauth2 scheme.
    await client.getByRole("button", { name: /^Selected Auth Type/ }).click();
    await tab.page.getByRole("option", { name: /^bearerToken/ }).click();
    await tab.page.getByRole("option", { name: /^oauth2/ }).click();
    await client.getByRole("textbox", { name: "Bearer Token" }).fill(token);
    const [response] = await Promise.all([
      tab.page.waitForResponse((r) => new URL(r.url()).pathname === "/v1/contacts"),
      client.getByRole("button", { name: /^Send get request/ }).click(),
    ]);
    expect(response.url().startsWith(`${base}/v1/contacts`)).toBe(true);
    expect(response.request().headers().authorization).toBe(`Bearer ${token}`);
    expect(response.status()).toBe(200);
    await visible(client.getByRole("region", { name: "Response" }).getByText("200 OK"));
  });

  it("asked for nothing outside the origin and logged no error", () => {
    expect(tab.foreign).toEqual([]);
    expect(tab.errors).toEqual([]);
  });
});
