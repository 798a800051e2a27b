import { createRoute } from "@hono/zod-openapi";
import { createRouter, errorResponses, jsonResponse, named, z } from "../lib/openapi";

export const systemRouter = createRouter();

systemRouter.openapi(
  createRoute({
    method: "get",
    path: "/health",
    operationId: "getHealth",
    middleware: [named("getHealth")] as const,
    security: [],
    tags: ["System"],
    summary: "Liveness check (no authentication)",
    responses: {
      200: jsonResponse(z.object({ success: z.literal(true), status: z.literal("ok") }).openapi("Health"), "The Worker is up"),
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  }),
  (c) => c.json({ success: true as const, status: "ok" as const }, 200),
);
