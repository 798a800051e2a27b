// GET /docs (the API reference page) and GET / (the links to it), over the Worker's fetch. The page in
// a real browser, offline, with "Test Request": test/e2e/smoke.test.ts ("the API reference page").
import { describe, expect, it } from "vitest";
import { BASE, call, type CallResult, expectStatus, callRaw, textOf } from "./helpers";

const text = (res: CallResult) => textOf(res);

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

describe("GET /", () => {
  it("links to the reference page and the document, on the request's origin, without a token", async () => {
    const res = await call("getServiceIndex", "/");
    expectStatus(res, 200);
    expect(res.body).toEqual({
      success: true,
      name: "Expiry-tracking and reminder API",
      docs: `${BASE}/docs`,
      openapi: `${BASE}/v1/openapi.json`,
      token_endpoint: `${BASE}/v1/oauth/token`,
      health: `${BASE}/health`,
    });
  });
});
