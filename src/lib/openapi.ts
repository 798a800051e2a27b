import { OpenAPIHono, createRoute, z, type RouteConfig } from "@hono/zod-openapi";
import type { AppBindings } from "../env";
import type { Context, MiddlewareHandler } from "hono";
import { authenticate, checkScope, requireOwner } from "../auth/middleware";
import { idempotency } from "../idempotency/middleware";
import { checkIfMatch, etagged, type ConditionalRecord } from "./conditional";
import { provideTenant } from "./context";
import { limitAuthenticated } from "./rate-limit";
import { integerString } from "./schemas";
import { validationHook } from "./validation";

export { z };

/** A router whose validation failures become Shape B errors. */
export function createRouter() {
  return new OpenAPIHono<AppBindings>({ defaultHook: validationHook });
}

const requestIdField = z.string().openapi({
  description: "The request's id, also in the X-Request-Id response header: quote it when reporting a problem",
  example: "3f2b8c1e-8d4a-4f7e-9a51-2c6d0e9b7a10",
});

export const OAuthErrorSchema = z
  .object({
    error: z.string().openapi({ example: "insufficient_scope" }),
    error_description: z.string().openapi({ example: "This call needs the contacts:write scope" }),
    required_scope: z.string().optional().openapi({ example: "contacts:write" }),
    request_id: requestIdField,
  })
  .openapi("OAuthError", { description: "Shape A: authentication and scope errors" });

export const ApiErrorSchema = z
  .object({
    success: z.literal(false),
    msg: z.string().openapi({ example: "first_name is required" }),
    request_id: requestIdField,
  })
  .openapi("ApiError", { description: "Shape B: every other error" });

const headerText = (description: string) => ({ description, schema: { type: "string" as const } });

/** Response headers the service sets, for the OpenAPI `headers` of a response. */
export const responseHeaders = {
  wwwAuthenticate: { "WWW-Authenticate": headerText('RFC 6750 challenge, e.g. `Bearer error="invalid_token"`') },
  allow: { Allow: headerText("Methods the path supports, comma separated") },
  retryAfter: { "Retry-After": headerText("Seconds to wait before retrying") },
  noStore: {
    "Cache-Control": headerText("`no-store`: the response carries a credential"),
    Pragma: headerText("`no-cache`, for HTTP/1.0 caches"),
  },
};

/** A required JSON request body. */
export const jsonBody = <T extends z.ZodType>(schema: T) => ({
  required: true,
  content: { "application/json": { schema } },
});

/**
 * A zod schema as an inline OpenAPI 3.0 schema object, for a place the generator does not convert (an
 * `x-` field). A schema it names inside must be inline too: a `$ref` would point at a component the
 * document does not have.
 */
export function inlineSchema(schema: z.ZodType, name: string) {
  const scratch = new OpenAPIHono();
  scratch.openAPIRegistry.register(name, schema);
  return scratch.getOpenAPIDocument({ openapi: "3.0.3", info: { title: name, version: "1" } }).components!.schemas![
    name
  ]!;
}

/** A JSON response. */
export const jsonResponse = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});
const json = jsonResponse;

export const errorResponses = {
  badRequest: json(ApiErrorSchema, "Validation failure (Shape B): the message names the field"),
  unauthorized: {
    ...json(
      OAuthErrorSchema,
      "Missing, invalid, expired or revoked token, or inactive client (Shape A: " + "invalid_token)",
    ),
    headers: responseHeaders.wwwAuthenticate,
  },
  forbiddenScope: {
    ...json(OAuthErrorSchema, "Token lacks the required scope (Shape A: insufficient_scope with required_scope)"),
    headers: responseHeaders.wwwAuthenticate,
  },
  forbiddenScopeOrOwner: {
    ...json(
      z.union([OAuthErrorSchema, ApiErrorSchema]),
      "Shape A insufficient_scope when the token lacks the scope (checked first); " +
        "Shape B when the caller is not the account owner",
    ),
    headers: responseHeaders.wwwAuthenticate,
  },
  notFound: json(ApiErrorSchema, "Record not found in the caller's company (Shape B)"),
  conflict: json(ApiErrorSchema, "Duplicate, or lost a race with a concurrent change (Shape B)"),
  payloadTooLarge: json(
    ApiErrorSchema,
    "Request body over the documented limit, 64 KiB unless the operation says " + "otherwise (Shape B)",
  ),
  uriTooLong: json(ApiErrorSchema, "URL (path and query) over 8,192 characters (Shape B)"),
  unsupportedMediaType: json(ApiErrorSchema, "Body is not application/json in UTF-8 (Shape B)"),
  serverError: json(
    z.union([OAuthErrorSchema, ApiErrorSchema]),
    "Shape A server_error when the token signing key is not configured; Shape B for an unexpected failure",
  ),
  unavailable: {
    ...json(
      OAuthErrorSchema,
      "Shape A service_unavailable: the credential store could not be reached; retry " + "after Retry-After seconds",
    ),
    headers: responseHeaders.retryAfter,
  },
  tooManyRequests: {
    ...json(
      ApiErrorSchema,
      "Rate limit exceeded (Shape B): the message names the policy; RateLimit and " +
        "RateLimit-Policy describe it (docs/rate-limits.md)",
    ),
    headers: responseHeaders.retryAfter,
  },
  idempotencyKeyReused: json(
    ApiErrorSchema,
    "The Idempotency-Key was already used for a different request: another method, " + "path or body (Shape B)",
  ),
  preconditionFailed: {
    ...json(
      ApiErrorSchema,
      "If-Match names no current ETag of the record: it has changed since it was read " +
        "(Shape B); nothing was written",
    ),
    headers: { ETag: headerText("The record's current ETag") },
  },
  notModified: {
    description: "If-None-Match names the current ETag: the representation has not changed (no " + "body)",
    headers: { ETag: headerText("The current ETag") },
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
  const id = integerString(`${name} must be a positive integer`, 1).openapi({
    param: { name, in: "path" },
    example: 1,
  });
  return z.object({ [name]: id } as Record<N, typeof id>);
}

type ScopedRoute = Omit<RouteConfig, "security" | "middleware" | "operationId"> & {
  /** The scope; several: any one of them (or, with `scopeOf`, the one the request names), each published as an alternative. */
  scope: string | string[];
  scopeOf?: (c: Context<AppBindings>) => string;
  operationId: string;
  /** Account owner only (company, department and document-type management): 403 Shape B otherwise. */
  owner?: boolean;
  /** A single-record read: strong ETag, If-None-Match answered 304. */
  etag?: boolean;
  /** A PATCH or DELETE of a record that answers If-Match (412 when it has changed). */
  precondition?: ConditionalRecord<z.ZodType>;
};

const WRITE_METHODS = new Set(["post", "put", "patch", "delete"]);

/** Parameters the service reads on every operation of a kind (components registered in src/openapi-document.ts). */
export const sharedParameters = {
  d1Bookmark: { $ref: "#/components/parameters/D1Bookmark" },
  idempotencyKey: { $ref: "#/components/parameters/IdempotencyKey" },
  ifMatch: { $ref: "#/components/parameters/IfMatch" },
  ifNoneMatch: { $ref: "#/components/parameters/IfNoneMatch" },
};

const IDEMPOTENCY_409 =
  "With an Idempotency-Key: a request with the same key is still in progress " +
  "(retry after Retry-After), or it was applied but its response could not be " +
  "recorded (it is not applied again).";

/** Names the operation for the request's log line. */
export const named =
  (operationId: string): MiddlewareHandler<AppBindings> =>
  async (c, next) => {
    c.set("operationId", operationId);
    await next();
  };

/**
 * Declares an authenticated operation. The scope both guards the handler and is published as the
 * operation's OAuth2 security requirement, so the two cannot drift apart. It adds what every such
 * operation has: authentication, the client's and company's rate limits, scope (and owner) checks,
 * `c.var.db` / `c.var.companyId`, Idempotency-Key on writes, ETags on single-record reads, If-Match
 * where the operation names its record, and the error responses 400, 401, 403, 404 (paths with an
 * id), 409 and 422 (writes), 412, 413 and 415 (operations with a body), 414, 429, 500 and 503.
 * A route lists only its success responses and its own extra errors (409, ...).
 */
export function scopedRoute<R extends ScopedRoute>({ scope, scopeOf, owner, etag, precondition, ...config }: R) {
  const scopes = typeof scope === "string" ? [scope] : scope;
  const hasBody = config.request?.body !== undefined;
  const write = WRITE_METHODS.has(config.method);
  const conflict = (config.responses[409] as { description: string } | undefined) ?? errorResponses.conflict;
  const responses = {
    400: errorResponses.badRequest,
    401: errorResponses.unauthorized,
    403: owner ? errorResponses.forbiddenScopeOrOwner : errorResponses.forbiddenScope,
    ...(config.path.includes("{") && { 404: errorResponses.notFound }),
    ...(write && { 422: errorResponses.idempotencyKeyReused }),
    ...(precondition && { 412: errorResponses.preconditionFailed }),
    ...(etag && { 304: errorResponses.notModified }),
    ...(hasBody && { 413: errorResponses.payloadTooLarge, 415: errorResponses.unsupportedMediaType }),
    414: errorResponses.uriTooLong,
    429: errorResponses.tooManyRequests,
    500: errorResponses.serverError,
    503: errorResponses.unavailable,
    ...config.responses,
    // A write's 409 also covers its Idempotency-Key (the operation's own 409 cases come first).
    ...(write && { 409: { ...conflict, description: `${conflict.description} ${IDEMPOTENCY_409}` } }),
  };
  const parameters = [
    sharedParameters.d1Bookmark,
    ...(write ? [sharedParameters.idempotencyKey] : []),
    ...(precondition ? [sharedParameters.ifMatch] : []),
    ...(etag ? [sharedParameters.ifNoneMatch] : []),
    ...(config.parameters ?? []),
  ];
  const middleware: MiddlewareHandler<AppBindings>[] = [
    named(config.operationId),
    authenticate,
    limitAuthenticated,
    checkScope(scopeOf ?? scopes),
    ...(owner ? [requireOwner] : []),
    provideTenant,
    ...(write ? [idempotency] : []),
    ...(precondition ? [checkIfMatch(precondition)] : []),
    ...(etag ? [etagged] : []),
  ];
  const who = owner ? " Account owner only (403 Shape B for other users)." : "";
  return createRoute({
    ...config,
    parameters,
    responses,
    security: scopes.map((s) => ({ oauth2: [s] })),
    middleware: middleware as [typeof provideTenant],
    description:
      `${config.description ?? ""}\n\nRequired scope: ${scopes.map((s) => `\`${s}\``).join(" or ")} (or \`*\`).${who}`.trim(),
  } as Omit<R, "scope" | "scopeOf" | "owner" | "etag" | "precondition"> & {
    security: RouteConfig["security"];
    middleware: [typeof provideTenant];
  });
}
