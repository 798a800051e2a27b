// GET /docs (the API reference page) and GET / (the links to it: JSON, or a page for browsers), over
// the Worker's fetch. Both pages in a real browser, offline: test/e2e/smoke.test.ts.
import { describe, expect, it } from "vitest";
import { toBase64 } from "../../src/lib/bytes";
import { prefersHtml } from "../../src/lib/html";
import { BASE, call, callRaw, expectStatus, openApiDocument, textOf } from "./helpers";

const text = textOf;

describe("GET /docs", () => {
  it("is an HTML page that runs the same-origin bundle on the same-origin document", async () => {
    const res = await callRaw("GET", "/docs", { headers: { Accept: "text/html" } });
    expectStatus(res, 200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/html; charset=utf-8/i);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    const html = text(res);
    expect(html).toContain('<script src="/docs/scalar-api-reference.js"></script>');
    expect(html).toContain('"url":"/v1/openapi.json"');
    expect(html).toContain('"withDefaultFonts":false');
    expect(html).toContain('"telemetry":false');
    // Nothing from another origin: no absolute URL in the page at all.
    expect(html).not.toMatch(/(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]/i);
  });

  it("allows only this origin, and inline scripts only with the response's nonce", async () => {
    const [a, b] = [await callRaw("GET", "/docs"), await callRaw("GET", "/docs")];
    const csp = a.headers.get("Content-Security-Policy") ?? "";
    const nonce = /'nonce-([A-Za-z0-9+/=]+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain(`script-src 'self' 'nonce-${nonce}'`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("style-src 'self' 'unsafe-inline'"); // the bundle's run-time <style> elements
    expect(csp.replace("style-src 'self' 'unsafe-inline'", "")).not.toMatch(/unsafe-|https?:|\*/);
    expect(text(a)).toContain(`<script nonce="${nonce}">`);
    expect(b.headers.get("Content-Security-Policy")).not.toContain(nonce!);
  });

  it("answers HEAD, and 405 to other methods", async () => {
    expectStatus(await callRaw("HEAD", "/docs"), 200);
    const res = await callRaw("POST", "/docs");
    expectStatus(res, 405);
    expect(res.headers.get("Allow")).toBe("GET, HEAD");
  });
});

/** What Chromium and Firefox send when they navigate to a page. */
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
const LINKS = {
  success: true,
  name: "Expiry-tracking and reminder API",
  docs: `${BASE}/docs`,
  openapi: `${BASE}/v1/openapi.json`,
  token_endpoint: `${BASE}/v1/oauth/token`,
  health: `${BASE}/health`,
};

describe("GET /", () => {
  it("answers programs with the links as JSON, on the request's origin, without a token", async () => {
    for (const accept of [
      undefined,
      "*/*",
      "application/json",
      "application/*",
      "application/json, text/html",
      "text/html;q=0.5, */*",
      "text/plain",
      "text/html;q=0",
    ]) {
      const res = await call("getServiceIndex", "/", { headers: accept === undefined ? {} : { Accept: accept } });
      expectStatus(res, 200, accept);
      expect(res.headers.get("Content-Type"), accept).toMatch(/^application\/json/);
      expect(res.headers.get("Vary"), accept).toBe("Accept");
      expect(res.body, accept).toEqual(LINKS);
    }
  });

  it("answers a browser with an HTML page whose links work, naming the token endpoint", async () => {
    for (const accept of [BROWSER_ACCEPT, "text/html", "application/json;q=0.5, text/html", "text/*"]) {
      const res = await call("getServiceIndex", "/", { headers: { Accept: accept } });
      expectStatus(res, 200, accept);
      expect(res.headers.get("Content-Type"), accept).toMatch(/^text\/html; charset=utf-8/i);
      expect(res.headers.get("Vary"), accept).toBe("Accept");
    }
    const html = text(await call("getServiceIndex", "/", { headers: { Accept: BROWSER_ACCEPT } }));
    const hrefs = [...html.matchAll(/<a href="([^"]+)"/g)].map((m) => m[1]);
    expect(hrefs).toEqual([LINKS.docs, LINKS.openapi, LINKS.health]);
    expect(html).toContain(`POST ${LINKS.token_endpoint}`);
    expect(html).toContain("client_credentials");
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">');
    expect(html).not.toMatch(/<script|<iframe|<img|<form|\son[a-z]+=/i);
    // Every absolute URL on the page is on the request's origin.
    for (const url of html.match(/https?:\/\/[^\s"<]+/g) ?? []) expect(url.startsWith(BASE), url).toBe(true);
    for (const href of hrefs) expectStatus(await callRaw("GET", new URL(href!).pathname), 200, href);
  });

  it("allows nothing but its own inline style, by hash", async () => {
    const res = await call("getServiceIndex", "/", { headers: { Accept: "text/html" } });
    const html = text(res);
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1];
    expect(style).toBeTruthy();
    const hash = toBase64(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(style!))));
    expect(res.headers.get("Content-Security-Policy")).toBe(
      `default-src 'none'; style-src 'sha256-${hash}'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    expect(res.headers.get("X-Content-Type-Options")).toBe("nosniff");
    expect(html.match(/<style>/g)).toHaveLength(1);
    expect(html).not.toMatch(/\sstyle=/);
  });

  it("answers HEAD with the headers of the representation asked for", async () => {
    const page = await callRaw("HEAD", "/", { headers: { Accept: BROWSER_ACCEPT } });
    expectStatus(page, 200);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html/);
    const json = await callRaw("HEAD", "/");
    expect(json.headers.get("Content-Type")).toMatch(/^application\/json/);
  });

  it("describes both representations in the OpenAPI document", async () => {
    const doc = await openApiDocument();
    const ok = doc.paths["/"].get.responses["200"];
    expect(Object.keys(ok.content)).toEqual(["application/json", "text/html"]);
    expect(ok.headers.Vary).toBeDefined();
  });
});

describe("prefersHtml (the Accept header, RFC 9110 quality values)", () => {
  it.each([
    [undefined, false],
    ["", false],
    ["*/*", false],
    ["application/json", false],
    ["text/html", true],
    ["TEXT/HTML", true],
    [BROWSER_ACCEPT, true],
    ["text/html, application/json", false], // a tie: JSON
    ["application/json;q=0.9, text/html", true],
    ["text/html;q=0.9, application/json", false],
    ["text/html;q=0.8, */*;q=0.9", false],
    ["text/*;q=0.5, application/*;q=0.4", true],
    ["text/html;q=0, */*", false],
    ["text/html;q=abc", false],
    ["text/plain", false],
    ["text/html ; q=1 , application/json ; q=0.2", true],
  ])("%j: %s", (accept, html) => {
    expect(prefersHtml(accept)).toBe(html);
  });
});
