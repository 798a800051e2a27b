import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ALL_SCOPES, RESOURCE_SCOPES } from "../../src/auth/scopes";
import { BASE, call, expectShapeB, readResult, expectStatus, callRaw, ok, openApiDocument } from "./helpers";

const METADATA = "/.well-known/oauth-authorization-server";

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
      rawBody: new URLSearchParams({ grant_type: "client_credentials", client_id: "demo-owner", client_secret: "demo-owner-secret", scope }).toString(),
    });
    expectStatus(post, 200, JSON.stringify(post.body));
    expect(post.body.scope).toBe(scope);
    const basic = await call("issueToken", tokenPath, {
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Basic ${btoa("demo-owner:demo-owner-secret")}` },
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
    expect(doc.paths[METADATA].get).toMatchObject({ operationId: "getAuthorizationServerMetadata", security: [], tags: ["Authentication"] });
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

  it("serves no OpenID Connect discovery document (this is not an OpenID provider)", async () => {
    expectShapeB(await callRaw("GET", "/.well-known/openid-configuration"), 404);
    expectShapeB(await callRaw("GET", `${METADATA}/v1`), 404);
  });
});
