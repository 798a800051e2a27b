import { OpenAPIHono, createRoute, z, type RouteConfig } from "@hono/zod-openapi";
import type { AppBindings } from "../env";
import { requireScope } from "../auth/middleware";
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
  badRequest: json(ApiErrorSchema, "Validation failure (Shape B)"),
  unauthorized: json(OAuthErrorSchema, "Missing, invalid or expired token, or inactive client (Shape A: invalid_token)"),
  forbiddenScope: json(OAuthErrorSchema, "Token lacks the required scope (Shape A: insufficient_scope)"),
  notFound: json(ApiErrorSchema, "Record not found in the caller's company (Shape B)"),
  conflict: json(ApiErrorSchema, "Duplicate (Shape B)"),
  unsupportedMediaType: json(ApiErrorSchema, "Body is not application/json (Shape B)"),
};

/** Response helpers for the success envelope. */
export function envelope<T extends z.ZodType>(data: T, name?: string) {
  const schema = z.object({ success: z.literal(true), msg: z.string().optional(), data });
  return name ? schema.openapi(name) : schema;
}

export const MessageEnvelope = z
  .object({ success: z.literal(true), msg: z.string().openapi({ example: "Contact deleted" }) })
  .openapi("MessageEnvelope");

/** A positive integer path id (`/v1/contacts/{contact_id}`) with a readable error. */
export function idParam<N extends string>(name: N) {
  const id = integerString(`${name} must be a positive integer`, 1).openapi({ param: { name, in: "path" }, example: 1 });
  return z.object({ [name]: id } as Record<N, typeof id>);
}

type ScopedRoute = Omit<RouteConfig, "security" | "middleware"> & { scope: string };

/**
 * Declares an authenticated operation: the scope both guards the handler and is published
 * as the operation's OAuth2 security requirement, so the two cannot drift apart.
 */
export function scopedRoute<R extends ScopedRoute>({ scope, ...config }: R) {
  const responses = {
    401: errorResponses.unauthorized,
    403: errorResponses.forbiddenScope,
    ...config.responses,
  };
  return createRoute({
    ...config,
    responses,
    security: [{ oauth2: [scope] }],
    middleware: [requireScope(scope)] as const,
    description: `${config.description ?? ""}\n\nRequired scope: \`${scope}\` (or \`*\`).`.trim(),
  } as Omit<R, "scope"> & { security: RouteConfig["security"]; middleware: [ReturnType<typeof requireScope>] });
}
