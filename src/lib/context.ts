import { createMiddleware } from "hono/factory";
import { getDb } from "../db/client";
import type { AppBindings } from "../env";

/** What every authenticated handler needs: `c.var.db` and `c.var.companyId` (the token's company). */
export const provideTenant = createMiddleware<AppBindings>(async (c, next) => {
  c.set("db", getDb(c.env.DB));
  c.set("companyId", c.var.auth.companyId);
  await next();
});
