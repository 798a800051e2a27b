import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { echo } from "./echo";
import { redactSecrets } from "./secret-paths";

/** Shape A: OAuth-style errors for authentication and scope problems. */
export interface OAuthErrorBody {
  error: string;
  error_description: string;
  required_scope?: string;
  /** Added by the central handler: the request's X-Request-Id. */
  request_id?: string;
}

/** Shape B: every other error. */
export interface ApiErrorBody {
  success: false;
  msg: string;
  /** Added by the central handler: the request's X-Request-Id. */
  request_id?: string;
}

/**
 * Thrown anywhere in a request; the central handler renders it. `body` is already in the
 * shape the spec prescribes for the case.
 */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly body: OAuthErrorBody | ApiErrorBody,
    readonly headers: Record<string, string> = {},
  ) {
    super("error" in body ? body.error_description : body.msg);
  }
}

/** Shape B error. */
export function apiError(status: ContentfulStatusCode, msg: string, headers?: Record<string, string>): ApiError {
  return new ApiError(status, { success: false, msg }, headers);
}

export const badRequest = (msg: string) => apiError(400, msg);
export const notFound = (what: string) => apiError(404, `${what} not found`);
export const conflict = (msg: string) => apiError(409, msg);
export const forbidden = (msg: string) => apiError(403, msg);

/** Shape A error. */
export function oauthError(
  status: ContentfulStatusCode,
  error: string,
  description: string,
  extra: { requiredScope?: string; headers?: Record<string, string> } = {},
): ApiError {
  const body: OAuthErrorBody = { error, error_description: description };
  if (extra.requiredScope) body.required_scope = extra.requiredScope;
  return new ApiError(status, body, extra.headers);
}

export function invalidToken(description: string): ApiError {
  return oauthError(401, "invalid_token", description, {
    headers: { "WWW-Authenticate": `Bearer error="invalid_token", error_description="${description}"` },
  });
}

/**
 * The longest message any error body carries. Messages quote client input through `echo()`; this
 * is the backstop for a message that lists many such quotes.
 */
export const MAX_MESSAGE_CHARS = 1000;

function bounded<T extends OAuthErrorBody | ApiErrorBody>(body: T): T {
  if ("error" in body) {
    return body.error_description.length > MAX_MESSAGE_CHARS
      ? { ...body, error_description: echo(body.error_description, MAX_MESSAGE_CHARS) }
      : body;
  }
  return body.msg.length > MAX_MESSAGE_CHARS ? { ...body, msg: echo(body.msg, MAX_MESSAGE_CHARS) } : body;
}

/** Central error handler: known errors keep their status and shape, the rest become a bare 500. Every body carries the request id. */
export function renderError(thrown: Error, c: Context): Response {
  const requestId = (c.get("requestId") as string | undefined) ?? "";
  // drizzle wraps what the D1 layer throws (a write guard's 409 or 412) in its DrizzleQueryError.
  const err = thrown.cause instanceof ApiError ? thrown.cause : thrown;
  if (err instanceof ApiError) {
    return c.json({ ...bounded(err.body), request_id: requestId }, err.status, err.headers);
  }
  if (err instanceof HTTPException) {
    const status = err.status as ContentfulStatusCode;
    // Hono's validators throw these for unparsable JSON (400) and a non-JSON Content-Type (415).
    const msg = status === 415 ? "Content-Type must be application/json" : err.message || "Bad request";
    return c.json({ ...bounded({ success: false, msg } satisfies ApiErrorBody), request_id: requestId }, status);
  }
  console.error(
    JSON.stringify({
      level: "error",
      request_id: requestId,
      path: echo(redactSecrets(c.req.path)),
      method: c.req.method,
      error: String(err?.stack ?? err),
    }),
  );
  return c.json({ success: false, msg: "Internal server error", request_id: requestId } satisfies ApiErrorBody, 500);
}
