// GET /docs: the interactive API reference. A small HTML page that runs Scalar's standalone bundle
// (a static asset, /docs/scalar-api-reference.js, copied from node_modules by
// scripts/docs-assets.ts) on the live OpenAPI document of the same origin. Nothing is loaded from
// another origin: Scalar's web fonts, telemetry, AI agent and MCP features are switched off, and the
// Content-Security-Policy allows only this origin, the page's one inline script (by nonce) and the
// inline styles the bundle writes. Its "Test Request" client sends requests to this origin with a token the
// reader pastes or obtains through the client-credentials form (POST /v1/oauth/token).
// Not an operation of the OpenAPI document: it is HTML for people (docs/api-notes.md, "API reference page").
import type { Context } from "hono";
import type { AppBindings } from "../env";
import { toBase64 } from "../lib/bytes";

export const DOCS_PATH = "/docs";
const BUNDLE = "/docs/scalar-api-reference.js";
/** Where the OpenAPI document is served (src/app.ts). */
export const OPENAPI_PATH = "/v1/openapi.json";
const TITLE = "Expiry-tracking and reminder API: reference";

/** Scalar's configuration (https://github.com/scalar/scalar, @scalar/types api-reference-configuration). */
const CONFIGURATION = {
  url: OPENAPI_PATH,
  // No request leaves this origin: system fonts instead of fonts.scalar.com, no telemetry, no agent
  // chat (api.scalar.com), no MCP button, no proxy (requests go straight to the same origin).
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: "never",
  documentDownloadType: "direct",
  hideClientButton: true,
  persistAuth: false,
  // The document's oauth2 scheme is a form (client ID and secret -> POST /v1/oauth/token); a token
  // got elsewhere is pasted into this extra scheme, which exists on this page only.
  authentication: {
    preferredSecurityScheme: "oauth2",
    securitySchemes: {
      bearerToken: {
        type: "http",
        scheme: "bearer",
        bearerFormat: "JWT",
        description:
          "Paste an access token from POST /v1/oauth/token (the oauth2 form gets one from " +
          "a client ID and secret).",
      },
    },
  },
};

function page(nonce: string): string {
  // The server is this origin, set in the browser: the document's `servers: [{ url: "/" }]` would
  // have the client send to `<origin>//v1/...`.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${TITLE}</title>
<link rel="icon" href="data:,">
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a>.</noscript>
<!-- Not id="api-reference": the bundle mounts a second, unconfigured reference on that element. -->
<div id="reference"></div>
<script src="${BUNDLE}"></script>
<script nonce="${nonce}">
const configuration = ${JSON.stringify(CONFIGURATION)};
configuration.servers = [{ url: location.origin, description: "This deployment" }];
if (typeof Scalar === "undefined") {
  document.getElementById("reference").textContent = "The reference could not load ${BUNDLE}. The OpenAPI document is at ${OPENAPI_PATH}.";
} else {
  Scalar.createApiReference("#reference", configuration);
}
</script>
</body>
</html>
`;
}

/** The Content-Security-Policy of the page: this origin only; inline scripts only by nonce. */
export function docsContentSecurityPolicy(nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'self' 'nonce-${nonce}'`,
    // The bundle writes <style> elements (its theme, toasts) and style attributes at run time, and
    // only its main stylesheet takes a nonce: blocked, the page would render unstyled.
    "style-src 'self' 'unsafe-inline'",
    // blob: for the client's preview of an image response.
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

export function docsPage(c: Context<AppBindings>) {
  const nonce = toBase64(crypto.getRandomValues(new Uint8Array(18)));
  return c.html(page(nonce), 200, {
    "Content-Security-Policy": docsContentSecurityPolicy(nonce),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
  });
}
