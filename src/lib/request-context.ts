// The first middleware of every request: its id and its one log line.
import type { Context, MiddlewareHandler } from "hono";
import type { AppBindings } from "../env";
import { echo } from "./echo";
import { redactSecrets } from "./secret-paths";

/** A client's own `X-Request-Id` is kept when it is 1–128 characters of these (UUIDs, hex, `req_…`, `1-5f…`). */
export const SANE_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,127}$/;

export const REQUEST_ID_HEADER = "X-Request-Id";

/** The request's id: the client's `X-Request-Id` when sane, else a new UUID. */
export function requestIdFor(header: string | undefined): string {
  return header !== undefined && SANE_REQUEST_ID.test(header) ? header : crypto.randomUUID();
}

/** What a request adds to its log line beyond the common fields (idempotent replays, rate limiting, ...). */
export function noteOnLog(c: Context<AppBindings>, note: Record<string, string | number | boolean>): void {
  c.set("logNotes", { ...c.get("logNotes"), ...note });
}

/** Sets a header on the final response, copying it first when its headers are immutable (a fetched response). */
export function setResponseHeader(c: Context, name: string, value: string): void {
  try {
    c.res.headers.set(name, value);
  } catch {
    c.res = new Response(c.res.body, c.res);
    c.res.headers.set(name, value);
  }
}

/**
 * Sets `c.var.requestId`, answers it in `X-Request-Id` on every response (errors included), and
 * writes one JSON line per request: id, method, path, status, duration, company, client,
 * operationId and any notes. Workers Logs (observability) indexes the fields.
 */
export function requestContext(): MiddlewareHandler<AppBindings> {
  return async (c, next) => {
    const started = Date.now();
    const requestId = requestIdFor(c.req.header(REQUEST_ID_HEADER));
    c.set("requestId", requestId);
    try {
      await next();
    } finally {
      setResponseHeader(c, REQUEST_ID_HEADER, requestId);
      if (c.env?.REQUEST_LOGS?.trim().toLowerCase() !== "off") logRequest(c, requestId, Date.now() - started);
    }
  };
}

function logRequest(c: Context<AppBindings>, requestId: string, durationMs: number): void {
  const auth = c.get("auth");
  // console.info, not console.log: Workers Logs records it at level info, and wrangler dev passes
  // info lines on as they are (it source-maps every console.log line before filtering it).
  console.info(
    JSON.stringify({
      level: "info",
      msg: "request",
      request_id: requestId,
      method: c.req.method,
      path: echo(redactSecrets(c.req.path), 200),
      status: c.res.status,
      duration_ms: durationMs,
      company_id: auth?.companyId ?? null,
      client_id: auth?.clientId ?? null,
      operation: c.get("operationId") ?? null,
      ...c.get("logNotes"),
    }),
  );
}
