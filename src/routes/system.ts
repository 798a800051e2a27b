import { createRoute } from "@hono/zod-openapi";
import { createRouter, jsonResponse, z } from "../lib/openapi";

export const systemRouter = createRouter();

systemRouter.openapi(
  createRoute({
    method: "get",
    path: "/health",
    tags: ["System"],
    summary: "Liveness check (no authentication)",
    responses: {
      200: jsonResponse(z.object({ success: z.literal(true), status: z.literal("ok") }).openapi("Health"), "The Worker is up"),
    },
  }),
  (c) => c.json({ success: true as const, status: "ok" as const }, 200),
);
