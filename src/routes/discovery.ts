// OAuth 2.0 Authorization Server Metadata (RFC 8414), so that client libraries (openid-client,
// oauth4webapi, ...) find the token endpoint and its client authentication by discovery. Served at
// the RFC 8414 path and, unchanged, at /.well-known/openid-configuration, which OpenID Connect
// libraries fetch by default; it claims nothing of OpenID Connect (docs/api-notes.md, "Discovery").
import { createRoute } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppBindings } from "../env";
import { ALL_SCOPES, RESOURCE_SCOPES } from "../auth/scopes";
import { createRouter, errorResponses, named, z } from "../lib/openapi";
import { tokenRoute } from "./oauth";
import { DOCS_PATH } from "./docs";

export const METADATA_PATH = "/.well-known/oauth-authorization-server";
/** One hour: the document changes only with a deployment. */
export const METADATA_CACHE_CONTROL = "public, max-age=3600";

const TOKEN_AUTH_METHODS = ["client_secret_basic", "client_secret_post"] as const;

const MetadataSchema = z
  .object({
    issuer: z.url().openapi({
      example: "https://api.example.com",
      description:
        "The origin (scheme and host) the request was sent to, so it equals the URL a " +
        "client discovers from (RFC 8414 §3.3).",
    }),
    token_endpoint: z.url().openapi({ example: "https://api.example.com/v1/oauth/token" }),
    grant_types_supported: z.array(z.enum(["client_credentials"])),
    token_endpoint_auth_methods_supported: z.array(z.enum(TOKEN_AUTH_METHODS)).openapi({
      description:
        "HTTP Basic (`client_secret_basic`), or `client_id` and `client_secret` in the " +
        "form or JSON body (`client_secret_post`).",
    }),
    scopes_supported: z.array(z.string()).openapi({ example: [ALL_SCOPES, "contacts:read", "contacts:write"] }),
    response_types_supported: z.array(z.string()).max(0).openapi({
      description: "Always empty: there is no authorization endpoint, so no response type is supported.",
    }),
    service_documentation: z.url().openapi({
      example: `https://api.example.com${DOCS_PATH}`,
      description: "The API reference page for people (it renders the OpenAPI document, " + "/v1/openapi.json).",
    }),
  })
  .openapi("AuthorizationServerMetadata");

/** The path OpenID Connect client libraries request by default (openid-client's `discovery()`). */
export const OPENID_CONFIGURATION_PATH = "/.well-known/openid-configuration";

const NOT_OPENID =
  "This is not OpenID Connect: no ID token, no userinfo, no JWKS (tokens are " +
  "verified by this service only), no authorization " +
  "endpoint and no `openid` scope; OpenID Provider metadata's REQUIRED `jwks_uri`, `subject_types_supported` and " +
  "`id_token_signing_alg_values_supported` are absent, so a relying party that " +
  "checks them refuses the document instead of attempting a login.";

function metadataRoute(path: string, operationId: string, summary: string, description: string[]) {
  return createRoute({
    method: "get",
    path,
    operationId,
    middleware: [named(operationId)] as const,
    security: [],
    tags: ["Authentication"],
    summary,
    description: description.join("\n\n"),
    responses: {
      200: {
        description: "The metadata",
        headers: {
          "Cache-Control": { description: `\`${METADATA_CACHE_CONTROL}\``, schema: { type: "string" as const } },
        },
        content: { "application/json": { schema: MetadataSchema } },
      },
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  });
}

const routes = [
  metadataRoute(
    METADATA_PATH,
    "getAuthorizationServerMetadata",
    "OAuth 2.0 Authorization Server Metadata (RFC 8414; no authentication)",
    [
      "What an OAuth client library needs to request tokens: the issuer, the token endpoint, the client-credentials " +
        "grant, the client authentication methods and every scope. `issuer` and the URLs are built from the origin the " +
        "request was sent to, so discovery from `https://<host>` finds `issuer` equal to `https://<host>`.",
      `The same document is served at \`${OPENID_CONFIGURATION_PATH}\`, where libraries look by default (openid-client's ` +
        "`discovery(new URL(base), clientId, secret)` with no options).",
      NOT_OPENID,
      "The access tokens' `iss` claim stays `expiry-reminder-api`, whichever host issued them.",
    ],
  ),
  metadataRoute(
    OPENID_CONFIGURATION_PATH,
    "getOpenIdConfiguration",
    "The same metadata where OpenID Connect libraries look by default (no " + "authentication)",
    [
      `The document of \`${METADATA_PATH}\`, byte for byte, at the well-known path that openid-client's \`discovery()\` and other ` +
        "OpenID Connect client libraries request unless told otherwise, so they find the " +
        "token endpoint with their default options. " +
        "RFC 8414 (section 5) uses this path for OAuth 2.0 authorization server metadata " +
        "in general, not only for OpenID providers.",
      NOT_OPENID,
    ],
  ),
];

export const discoveryRouter = createRouter();

const metadata = (c: Context<AppBindings>) => {
  const issuer = new URL(c.req.url).origin;
  c.header("Cache-Control", METADATA_CACHE_CONTROL);
  return c.json(
    {
      issuer,
      token_endpoint: `${issuer}${tokenRoute.path}`,
      grant_types_supported: ["client_credentials" as const],
      token_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
      scopes_supported: [ALL_SCOPES, ...RESOURCE_SCOPES],
      response_types_supported: [],
      service_documentation: `${issuer}${DOCS_PATH}`,
    },
    200,
  );
};
for (const route of routes) discoveryRouter.openapi(route, metadata);
