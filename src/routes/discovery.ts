// OAuth 2.0 Authorization Server Metadata (RFC 8414), so that client libraries (openid-client,
// oauth4webapi, ...) find the token endpoint and its client authentication by discovery.
import { createRoute } from "@hono/zod-openapi";
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
      description: "The origin (scheme and host) the request was sent to, so it equals the URL a client discovers from (RFC 8414 §3.3).",
    }),
    token_endpoint: z.url().openapi({ example: "https://api.example.com/v1/oauth/token" }),
    grant_types_supported: z.array(z.enum(["client_credentials"])),
    token_endpoint_auth_methods_supported: z.array(z.enum(TOKEN_AUTH_METHODS)).openapi({
      description: "HTTP Basic (`client_secret_basic`), or `client_id` and `client_secret` in the form or JSON body (`client_secret_post`).",
    }),
    scopes_supported: z.array(z.string()).openapi({ example: [ALL_SCOPES, "contacts:read", "contacts:write"] }),
    response_types_supported: z.array(z.string()).max(0).openapi({
      description: "Always empty: there is no authorization endpoint, so no response type is supported.",
    }),
    service_documentation: z.url().openapi({ example: `https://api.example.com${DOCS_PATH}`, description: "The API reference page for people (it renders the OpenAPI document, /v1/openapi.json)." }),
  })
  .openapi("AuthorizationServerMetadata");

const metadataRoute = createRoute({
  method: "get",
  path: METADATA_PATH,
  operationId: "getAuthorizationServerMetadata",
  middleware: [named("getAuthorizationServerMetadata")] as const,
  security: [],
  tags: ["Authentication"],
  summary: "OAuth 2.0 Authorization Server Metadata (RFC 8414; no authentication)",
  description: [
    "What an OAuth client library needs to request tokens: the issuer, the token endpoint, the client-credentials " +
      "grant, the client authentication methods and every scope. `issuer` and the URLs are built from the origin the " +
      "request was sent to, so discovery from `https://<host>` finds `issuer` equal to `https://<host>`.",
    "This is not OpenID Connect: there is no `/.well-known/openid-configuration`, no ID token, no userinfo and no JWKS " +
      "(tokens are verified by this service only). With openid-client, pass `algorithm: \"oauth2\"` to `discovery()`.",
    "The access tokens' `iss` claim stays `expiry-reminder-api`, whichever host issued them.",
  ].join("\n\n"),
  responses: {
    200: {
      description: "The metadata",
      headers: { "Cache-Control": { description: `\`${METADATA_CACHE_CONTROL}\``, schema: { type: "string" as const } } },
      content: { "application/json": { schema: MetadataSchema } },
    },
    414: errorResponses.uriTooLong,
    429: errorResponses.tooManyRequests,
  },
});

export const discoveryRouter = createRouter();

discoveryRouter.openapi(metadataRoute, (c) => {
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
});
