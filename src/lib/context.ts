import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AuditActor, WriteContext } from "../db/commit";
import type { AppBindings } from "../env";

/** What every authenticated handler needs besides `c.var.db` (set at authentication): `c.var.companyId`, the token's company. */
export const provideTenant = createMiddleware<AppBindings>(async (c, next) => {
  c.set("companyId", c.var.auth.companyId);
  await next();
});

/**
 * The request's write context: what every commit of `c.var.db` carries (src/db/commit.ts). A write
 * request's exists from authentication on (it carries the audit actor); the Idempotency-Key and
 * If-Match middleware add the key and the precondition to it.
 */
export function writeContext(c: Context<AppBindings>): WriteContext {
  const context = c.get("writes");
  if (!context)
    throw new Error("writeContext: the request has no write context (a read method, or before " + "authentication)");
  return context;
}

/** Who the request's writes are by, for changes made outside D1 (the company clock's audit entries). */
export function auditActor(c: Context<AppBindings>): AuditActor | undefined {
  return c.get("writes")?.actor;
}
