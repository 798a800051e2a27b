import { createRoute } from "@hono/zod-openapi";
import { toBase64 } from "../lib/bytes";
import { escapeHtml, prefersHtml } from "../lib/html";
import { createRouter, errorResponses, jsonResponse, named, z } from "../lib/openapi";
import { DOCS_PATH, OPENAPI_PATH } from "./docs";
import { tokenRoute } from "./oauth";

export const systemRouter = createRouter();

const HEALTH_PATH = "/health";

const ServiceIndexSchema = z
  .object({
    success: z.literal(true),
    name: z.string().openapi({ example: "Expiry-tracking and reminder API" }),
    docs: z.url().openapi({
      example: `https://api.example.com${DOCS_PATH}`,
      description: "The interactive API reference (an HTML page for browsers).",
    }),
    openapi: z
      .url()
      .openapi({ example: `https://api.example.com${OPENAPI_PATH}`, description: "The OpenAPI 3.0.3 document." }),
    token_endpoint: z.url().openapi({
      example: "https://api.example.com/v1/oauth/token",
      description: "Where clients get access tokens (client credentials).",
    }),
    health: z.url().openapi({ example: `https://api.example.com${HEALTH_PATH}`, description: "The liveness check." }),
  })
  .openapi("ServiceIndex");

const SERVICE_NAME = "Expiry-tracking and reminder API";
const TOKEN_LIFETIME = "24 hours";

type ServiceIndex = z.infer<typeof ServiceIndexSchema>;

// GET / for people: one small page, no script and nothing from another origin; its only inline
// style is allowed by hash, so the Content-Security-Policy holds no 'unsafe-*'.
const INDEX_STYLE = `
:root { color-scheme: light dark; --muted: #5b6470; --rule: #d5d9de; --code: #f2f4f6; }
@media (prefers-color-scheme: dark) { :root { --muted: #a3acb7; --rule: #3a4048; --code: #22272e; } }
body { font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 42rem; padding: 1.5rem 1rem 3rem; }
h1 { font-size: 1.55rem; line-height: 1.25; margin: 0 0 .5rem; }
h2 { font-size: 1.1rem; margin: 2rem 0 .5rem; }
p { margin: .5rem 0; }
.lead { color: var(--muted); }
ul.links { list-style: none; padding: 0; margin: 1rem 0; }
ul.links li { border-top: 1px solid var(--rule); padding: .75rem 0; }
ul.links li:last-child { border-bottom: 1px solid var(--rule); }
ul.links a { font-weight: 600; font-size: 1.05rem; }
ul.links span { display: block; color: var(--muted); }
code, pre { font: .9em/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); border-radius: 4px; }
code { padding: .1em .3em; overflow-wrap: anywhere; }
pre { padding: .75rem; overflow-x: auto; }
pre code { padding: 0; background: none; overflow-wrap: normal; }
`;

let indexStyleHash: Promise<string> | undefined;
/** The style's CSP source, computed once per isolate. */
const styleSource = () =>
  (indexStyleHash ??= crypto.subtle
    .digest("SHA-256", new TextEncoder().encode(INDEX_STYLE))
    .then((d) => `'sha256-${toBase64(new Uint8Array(d))}'`));

/** The Content-Security-Policy of GET /'s page: nothing but its own inline style (and a blank data: icon). */
export function indexContentSecurityPolicy(styleSrc: string): string {
  return [
    "default-src 'none'",
    `style-src ${styleSrc}`,
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

function indexPage(links: ServiceIndex): string {
  const e = escapeHtml;
  const curl = [
    "curl -X POST \\",
    `  ${links.token_endpoint} \\`,
    "  -d grant_type=client_credentials \\",
    "  -d client_id=YOUR_CLIENT_ID \\",
    "  -d client_secret=YOUR_CLIENT_SECRET",
  ].join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(links.name)}</title>
<link rel="icon" href="data:,">
<style>${INDEX_STYLE}</style>
</head>
<body>
<main>
<h1>${e(links.name)}</h1>
<p class="lead">A REST API (v1) for companies that track dated items (expirations, due dates, appointments, events) and want reminders about them at the right hour.</p>
<ul class="links">
<li><a href="${e(links.docs)}">API reference</a><span>Every operation with its parameters, bodies and responses; send test requests with a token.</span></li>
<li><a href="${e(links.openapi)}">OpenAPI document</a><span>OpenAPI 3.0.3 (JSON), for client generators and API tools.</span></li>
<li><a href="${e(links.health)}">Health</a><span>The liveness check: <code>{"success":true,"status":"ok"}</code> while the service is up.</span></li>
</ul>
<h2>Getting a token</h2>
<p>Every operation under <code>/v1</code> needs an access token. Clients get one with their client ID and secret (OAuth 2.0 client credentials, issued by the operator of this deployment) from the token endpoint, <code>POST ${e(links.token_endpoint)}</code>, in a form or JSON body or with HTTP Basic authentication:</p>
<pre><code>${e(curl)}</code></pre>
<p>The answer's <code>access_token</code> goes into an <code>Authorization: Bearer &lt;token&gt;</code> header on every other request; it lasts ${TOKEN_LIFETIME}. OAuth client libraries find the token endpoint by discovery at <code>/.well-known/oauth-authorization-server</code>.</p>
<p>Programs that ask for JSON (or send no <code>Accept</code> header) get these links as JSON from this same address.</p>
</main>
</body>
</html>
`;
}

systemRouter.openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getServiceIndex",
    middleware: [named("getServiceIndex")] as const,
    security: [],
    tags: ["System"],
    summary: "Where the documentation is (no authentication)",
    description: [
      "Links to the interactive API reference (`/docs`), the OpenAPI document, the " +
        "token endpoint and the liveness check, " +
        "as absolute URLs on the origin the request was sent to.",
      "Two representations, chosen by the `Accept` header (`Vary: Accept`): a browser, " +
        "whose `Accept` rates `text/html` above " +
        "`application/json` (directly, or through `application/*` or `*/*`), gets a " +
        "small HTML page with the same links and how to get a " +
        "token; no `Accept`, `*/*`, `application/json`, a tie or anything else gets the " +
        "JSON object. Never 406. The page runs no script, " +
        "loads nothing and has a Content-Security-Policy that allows only its own inline style.",
    ].join("\n\n"),
    responses: {
      200: {
        description: "The service's links: JSON for programs, an HTML page for browsers",
        headers: { Vary: { description: "`Accept`", schema: { type: "string" as const } } },
        content: {
          "application/json": { schema: ServiceIndexSchema },
          "text/html": {
            schema: z.string().openapi({
              example: '<!doctype html>\n<html lang="en">…</html>\n',
              description: "The same links as a page for people",
            }),
          },
        },
      },
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  }),
  async (c) => {
    const origin = new URL(c.req.url).origin;
    const links = {
      success: true as const,
      name: SERVICE_NAME,
      docs: `${origin}${DOCS_PATH}`,
      openapi: `${origin}${OPENAPI_PATH}`,
      token_endpoint: `${origin}${tokenRoute.path}`,
      health: `${origin}${HEALTH_PATH}`,
    };
    c.header("Vary", "Accept");
    if (prefersHtml(c.req.header("Accept"))) {
      return c.html(indexPage(links), 200, {
        "Content-Security-Policy": indexContentSecurityPolicy(await styleSource()),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
      });
    }
    return c.json(links, 200);
  },
);

systemRouter.openapi(
  createRoute({
    method: "get",
    path: HEALTH_PATH,
    operationId: "getHealth",
    middleware: [named("getHealth")] as const,
    security: [],
    tags: ["System"],
    summary: "Liveness check (no authentication)",
    description:
      'Answers 200 `{success: true, status: "ok"}` while the Worker runs. It reads no ' +
      "database, Durable Object or bucket, so it says " +
      "nothing about them: use it for liveness, not readiness. Counted against the " +
      "anonymous rate limit of the caller's address.",
    responses: {
      200: jsonResponse(
        z.object({ success: z.literal(true), status: z.literal("ok") }).openapi("Health"),
        "The Worker is up",
      ),
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  }),
  (c) => c.json({ success: true as const, status: "ok" as const }, 200),
);
