import { OpenAPIHono, createRoute, z, type RouteConfig } from "@hono/zod-openapi";
import type { AppBindings } from "../env";
import { requireOwner, requireScope } from "../auth/middleware";
import { provideTenant } from "./context";
import { integerString } from "./schemas";
import { validationHook } from "./validation";

export { z };

/** A router whose validation failures become Shape B errors. */
export function createRouter() {
  return new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
}

export const OAuthErrorSchema = z
  .object({
    error: z.string().openapi({ example: "insufficient_scope" }),
    error_description: z.string().openapi({ example: "This call needs the contacts:write scope" }),
    required_scope: z.string().optional().openapi({ example: "contacts:write" }),
  })
  .openapi("OAuthError", { description: "Shape A: authentication and scope errors" });

export const ApiErrorSchema = z
  .object({
    success: z.literal(false),
    msg: z.string().openapi({ example: "first_name is required" }),
  })
  .openapi("ApiError", { description: "Shape B: every other error" });

const headerText = (description: string) => ({ description, schema: { type: "string" as const } });

/** Response headers the service sets, for the OpenAPI `headers` of a response. */
export const responseHeaders = {
  wwwAuthenticate: { "WWW-Authenticate": headerText("RFC 6750 challenge, e.g. `Bearer error=\"invalid_token\"`") },
  allow: { Allow: headerText("Methods the path supports, comma separated") },
  retryAfter: { "Retry-After": headerText("Seconds to wait before retrying") },
  noStore: {
    "Cache-Control": headerText("`no-store`: the response carries a credential"),
    Pragma: headerText("`no-cache`, for HTTP/1.0 caches"),
  },
};

/** A required JSON request body. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({ required: true, content: { "application/json": { schema } } });

/** A JSON response. */
export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const json = jsonResponse;

export const errorResponses = {
  badRequest: json(ApiErrorSchema, "Validation failure (Shape B): the message names the field"),
  unauthorized: {
    ...json(OAuthErrorSchema, "Missing, invalid, expired or revoked token, or inactive client (Shape A: invalid_token)"),
    headers: responseHeaders.wwwAuthenticate,
  },
  forbiddenScope: {
    ...json(OAuthErrorSchema, "Token lacks the required scope (Shape A: insufficient_scope with required_scope)"),
    headers: responseHeaders.wwwAuthenticate,
  },
  forbiddenScopeOrOwner: {
    ...json(
      z.union([OAuthErrorSchema, ApiErrorSchema]),
      "Shape A insufficient_scope when the token lacks the scope (checked first); Shape B when the caller is not the account owner",
    ),
    headers: responseHeaders.wwwAuthenticate,
  },
  notFound: json(ApiErrorSchema, "Record not found in the caller's company (Shape B)"),
  conflict: json(ApiErrorSchema, "Duplicate, or lost a race with a concurrent change (Shape B)"),
  payloadTooLarge: json(ApiErrorSchema, "Request body over the documented limit, 64 KiB unless the operation says otherwise (Shape B)"),
  uriTooLong: json(ApiErrorSchema, "URL (path and query) over 8,192 characters (Shape B)"),
  unsupportedMediaType: json(ApiErrorSchema, "Body is not application/json in UTF-8 (Shape B)"),
  serverError: json(
    z.union([OAuthErrorSchema, ApiErrorSchema]),
    "Shape A server_error when the token signing key is not configured; Shape B for an unexpected failure",
  ),
  unavailable: {
    ...json(OAuthErrorSchema, "Shape A service_unavailable: the credential store could not be reached; retry after Retry-After seconds"),
    headers: responseHeaders.retryAfter,
  },
};

/** `{success: true, data}`: a read. */
export function dataEnvelope<T extends z.ZodType>(data: T, name: string) {
  return z.object({ success: z.literal(true), data }).openapi(name);
}

/** `{success: true, msg, data}`: a create or update; `msg` is always present. */
export function resultEnvelope<T extends z.ZodType>(data: T, name: string) {
  return z.object({ success: z.literal(true), msg: z.string().openapi({ example: "Saved" }), data }).openapi(name);
}

export const MessageEnvelope = z
  .object({ success: z.literal(true), msg: z.string().openapi({ example: "Contact deleted" }) })
  .openapi("MessageEnvelope");

/** A positive integer path id (`/v1/contacts/{contact_id}`) with a readable error. */
export function idParam<N extends string>(name: N) {
  const id = integerString(`${name} must be a positive integer`, 1).openapi({ param: { name, in: "path" }, example: 1 });
  return z.object({ [name]: id } as Record<N, typeof id>);
}

type ScopedRoute = Omit<RouteConfig, "security" | "middleware" | "operationId"> & {
  scope: string;
  operationId: string;
  /** Account owner only (company, department and document-type management): 403 Shape B otherwise. */
  owner?: boolean;
};

/**
 * Declares an authenticated operation. The scope both guards the handler and is published as the
 * operation's OAuth2 security requirement, so the two cannot drift apart. It adds what every such
 * operation has: authentication, scope (and owner) checks, `c.var.db` / `c.var.companyId`, and the
 * error responses 400, 401, 403, 404 (paths with an id), 413 and 415 (operations with a body),
 * 414, 500 and 503. A route lists only its success responses and its own extra errors (409, ...).
 */
export function scopedRoute<R extends ScopedRoute>({ scope, owner, ...config }: R) {
  const hasBody = config.request?.body !== undefined;
  const responses = {
    400: errorResponses.badRequest,
    401: errorResponses.unauthorized,
    403: owner ? errorResponses.forbiddenScopeOrOwner : errorResponses.forbiddenScope,
    ...(config.path.includes("{") && { 404: errorResponses.notFound }),
    ...(hasBody && { 413: errorResponses.payloadTooLarge, 415: errorResponses.unsupportedMediaType }),
    414: errorResponses.uriTooLong,
    500: errorResponses.serverError,
    503: errorResponses.unavailable,
    ...config.responses,
  };
  const who = owner ? " Account owner only (403 Shape B for other users)." : "";
  return createRoute({
    ...config,
    responses,
    security: [{ oauth2: [scope] }],
    middleware: (owner ? [requireScope(scope), requireOwner, provideTenant] : [requireScope(scope), provideTenant]) as [
      ReturnType<typeof requireScope>,
      typeof provideTenant,
    ],
    description: `${config.description ?? ""}\n\nRequired scope: \`${scope}\` (or \`*\`).${who}`.trim(),
  } as Omit<R, "scope" | "owner"> & {
    security: RouteConfig["security"];
    middleware: [ReturnType<typeof requireScope>, typeof provideTenant];
  });
}
