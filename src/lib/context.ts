import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { getDb } from "../db/client";
import { guardedDb, type WriteGuards } from "../db/write-guards";
import type { AppBindings } from "../env";
import type { AuditActor } from "../db/audit-context";

/** What every authenticated handler needs: `c.var.db` (over the request's D1 session, `c.var.d1`) and `c.var.companyId` (the token's company). */
export const provideTenant = createMiddleware<AppBindings>(async (c, next) => {
  const guards = c.get("writeGuards");
  c.set("db", guards ? guardedDb(c.var.d1, guards) : getDb(c.var.d1));
  c.set("companyId", c.var.auth.companyId);
  await next();
});

/**
 * The request's write guards (an Idempotency-Key's fence, an If-Match precondition): from the first
 * call on, `c.var.db` is a handle whose every write carries them (src/db/write-guards.ts). A write
 * request's guards exist from authentication on (they carry its audit actor); `c.var.d1` stays the
 * bare session, for the request's own bookkeeping (the Idempotency-Key's claim and answer).
 */
export function guardedWrites(c: Context<AppBindings>): WriteGuards {
  let guards = c.get("writeGuards");
  if (!guards) {
    guards = { committed: 0 };
    c.set("writeGuards", guards);
    c.set("db", guardedDb(c.var.d1, guards));
  }
  return guards;
}

/** Who the request's writes are by, for changes made outside D1 (the company clock's audit entries). */
export function auditActor(c: Context<AppBindings>): AuditActor | undefined {
  return c.get("writeGuards")?.actor;
}
