import { exports } from "cloudflare:workers";
import * as oidc from "openid-client";
import { describe, expect, it } from "vitest";
import { ALL_SCOPES, RESOURCE_SCOPES } from "../../src/auth/scopes";
import { BASE, call, callRaw, expectShapeB, expectStatus, ok, openApiDocument, readResult } from "./helpers";

const METADATA = "/.well-known/oauth-authorization-server";
/** Where OpenID Connect libraries look by default: the same document (docs/api-notes.md, "Discovery"). */
const OPENID_CONFIGURATION = "/.well-known/openid-configuration";

/** The Worker's fetch at another origin than `BASE` (call() always uses BASE). */
async function fetchAt(url: string, init?: RequestInit) {
  return readResult(await exports.default.fetch(new Request(url, init)), "getAuthorizationServerMetadata");
}

describe("GET /.well-known/oauth-authorization-server (RFC 8414)", () => {
  it("answers without authentication, as cacheable JSON", async () => {
    const res = await call("getAuthorizationServerMetadata", METADATA);
    expectStatus(res, 200);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=3600");
  });

  it("takes issuer, token endpoint and documentation URL from the origin the request was sent to", async () => {
    for (const origin of [BASE, "http://localhost:8787", "http://127.0.0.1:41234", "https://api.example.com"]) {
      const res = await fetchAt(`${origin}${METADATA}`);
      expectStatus(res, 200, origin);
      expect(res.body, origin).toEqual({
        issuer: origin,
        token_endpoint: `${origin}/v1/oauth/token`,
        grant_types_supported: ["client_credentials"],
        token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post"],
        scopes_supported: [ALL_SCOPES, ...RESOURCE_SCOPES],
        response_types_supported: [],
        service_documentation: `${origin}/docs`,
      });
    }
  });

  it("ignores the query string and forwarding headers when building the issuer", async () => {
    const res = await fetchAt(`${BASE}${METADATA}?issuer=https://evil.example`, {
      headers: { "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "http" },
    });
    expectStatus(res, 200);
    expect(res.body.issuer).toBe(BASE);
  });

  it("advertises a token endpoint that issues tokens for every advertised scope, by both auth methods", async () => {
    const { body: meta } = ok(await call("getAuthorizationServerMetadata", METADATA));
    const tokenPath = new URL(meta.token_endpoint).pathname;
    const scope = meta.scopes_supported.join(" ");
    const post = await call("issueToken", tokenPath, {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      rawBody: new URLSearchParams({
        grant_type: "client_credentials",
        client_id: "demo-owner",
        client_secret: "demo-owner-secret",
        scope,
      }).toString(),
    });
    expectStatus(post, 200, JSON.stringify(post.body));
    expect(post.body.scope).toBe(scope);
    const basic = await call("issueToken", tokenPath, {
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa("demo-owner:demo-owner-secret")}`,
      },
      rawBody: "grant_type=client_credentials",
    });
    expectStatus(basic, 200, JSON.stringify(basic.body));
  });

  it("points service_documentation at the reference page, which renders the OpenAPI document that publishes this operation", async () => {
    const { body: meta } = ok(await call("getAuthorizationServerMetadata", METADATA));
    const page = await exports.default.fetch(new Request(meta.service_documentation));
    expectStatus(page, 200);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(await page.text()).toContain("/v1/openapi.json");
    const doc = await openApiDocument();
    expect(doc.paths[METADATA].get).toMatchObject({
      operationId: "getAuthorizationServerMetadata",
      security: [],
      tags: ["Authentication"],
    });
  });

  it("answers HEAD with the headers only", async () => {
    const res = await callRaw("HEAD", METADATA);
    expectStatus(res, 200);
    expect(res.body).toEqual({});
    expect(res.headers.get("Cache-Control")).toBe("public, max-age=3600");
  });

  it("answers other methods with 405 and Allow: GET, HEAD", async () => {
    for (const method of ["POST", "PUT", "DELETE"]) {
      const res = await callRaw(method, METADATA);
      expectShapeB(res, 405, new RegExp(method));
      expect(res.headers.get("Allow")).toBe("GET, HEAD");
    }
  });

  it("serves nothing at other well-known paths", async () => {
    expectShapeB(await callRaw("GET", `${METADATA}/v1`), 404);
    expectShapeB(await callRaw("GET", `${OPENID_CONFIGURATION}/v1`), 404);
    expectShapeB(await callRaw("GET", "/v1/.well-known/openid-configuration"), 404);
  });
});

describe("GET /.well-known/openid-configuration (the same metadata, where OpenID Connect libraries look)", () => {
  it("is the RFC 8414 document, byte for byte, with the same caching, on every origin", async () => {
    for (const origin of [BASE, "http://127.0.0.1:41234", "https://api.example.com"]) {
      const [oauth, openid] = await Promise.all(
        [METADATA, OPENID_CONFIGURATION].map((path) => exports.default.fetch(new Request(`${origin}${path}`))),
      );
      expect(openid!.status, origin).toBe(200);
      expect(openid!.headers.get("Content-Type")).toMatch(/^application\/json/);
      expect(openid!.headers.get("Cache-Control")).toBe("public, max-age=3600");
      expect(await openid!.text(), origin).toBe(await oauth!.text());
    }
  });

  it("claims nothing of OpenID Connect: no openid scope, no ID token, JWKS, userinfo or authorization endpoint", async () => {
    const { body } = ok(await call("getOpenIdConfiguration", OPENID_CONFIGURATION));
    expect(body.scopes_supported).not.toContain("openid");
    expect(body.response_types_supported).toEqual([]);
    expect(body.grant_types_supported).toEqual(["client_credentials"]);
    for (const field of [
      "authorization_endpoint",
      "jwks_uri",
      "userinfo_endpoint",
      "subject_types_supported",
      "id_token_signing_alg_values_supported",
    ]) {
      expect(body, field).not.toHaveProperty(field);
    }
  });

  it("is in the OpenAPI document as its own operation, without authentication", async () => {
    const doc = await openApiDocument();
    expect(doc.paths[OPENID_CONFIGURATION].get).toMatchObject({
      operationId: "getOpenIdConfiguration",
      security: [],
      tags: ["Authentication"],
    });
    expect(doc.paths[OPENID_CONFIGURATION].get.description).toMatch(/not OpenID Connect/);
  });
});

// openid-client v6 with its default options, over the Worker's fetch (the one option set here only
// routes its requests to the Worker). Over real HTTP: test/e2e/smoke.test.ts.
describe("openid-client's discovery() with its default options", () => {
  const origin = "https://api.example.com";
  const viaWorker: oidc.CustomFetch = (url, options) => exports.default.fetch(new Request(url, options as RequestInit));

  it("fetches /.well-known/openid-configuration, finds the token endpoint and gets a working token", async () => {
    const fetched: string[] = [];
    const config = await oidc.discovery(new URL(origin), "demo-owner", "demo-owner-secret", undefined, {
      [oidc.customFetch]: (url, options) => (fetched.push(url), viaWorker(url, options)),
    });
    expect(fetched).toEqual([`${origin}${OPENID_CONFIGURATION}`]);
    expect(config.serverMetadata()).toMatchObject({ issuer: origin, token_endpoint: `${origin}/v1/oauth/token` });
    const tokens = await oidc.clientCredentialsGrant(config, { scope: "items:read" });
    expect(tokens).toMatchObject({ token_type: "bearer", scope: "items:read" });
    const me = await call("getTokenInfo", "/v1/oauth/me", {
      headers: { Authorization: `Bearer ${tokens.access_token}` },
    });
    expectStatus(me, 200, JSON.stringify(me.body));
    expect(me.body).toMatchObject({ client_id: "demo-owner", scope: "items:read" });
  });

  it('also works with algorithm: "oauth2", which fetches the RFC 8414 path', async () => {
    const fetched: string[] = [];
    const config = await oidc.discovery(new URL(origin), "demo-owner", "demo-owner-secret", undefined, {
      algorithm: "oauth2",
      [oidc.customFetch]: (url, options) => (fetched.push(url), viaWorker(url, options)),
    });
    expect(fetched).toEqual([`${origin}${METADATA}`]);
    expect(config.serverMetadata().issuer).toBe(origin);
  });
});
