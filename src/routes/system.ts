import { createRoute } from "@hono/zod-openapi";
import { createRouter, errorResponses, jsonResponse, named, z } from "../lib/openapi";
import { DOCS_PATH, OPENAPI_PATH } from "./docs";
import { tokenRoute } from "./oauth";

export const systemRouter = createRouter();

const HEALTH_PATH = "/health";

const ServiceIndexSchema = z
  .object({
    success: z.literal(true),
    name: z.string().openapi({ example: "Expiry-tracking and reminder API" }),
    docs: z.url().openapi({ example: `https://api.example.com${DOCS_PATH}`, description: "The interactive API reference (an HTML page for browsers)." }),
    openapi: z.url().openapi({ example: `https://api.example.com${OPENAPI_PATH}`, description: "The OpenAPI 3.0.3 document." }),
    token_endpoint: z.url().openapi({ example: "https://api.example.com/v1/oauth/token", description: "Where clients get access tokens (client credentials)." }),
    health: z.url().openapi({ example: `https://api.example.com${HEALTH_PATH}`, description: "The liveness check." }),
  })
  .openapi("ServiceIndex");

systemRouter.openapi(
  createRoute({
    method: "get",
    path: "/",
    operationId: "getServiceIndex",
    middleware: [named("getServiceIndex")] as const,
    security: [],
    tags: ["System"],
    summary: "Where the documentation is (no authentication)",
    description:
      "Links to the interactive API reference (`/docs`), the OpenAPI document, the token endpoint and the liveness check, " +
      "as absolute URLs on the origin the request was sent to.",
    responses: {
      200: jsonResponse(ServiceIndexSchema, "The service's links"),
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  }),
  (c) => {
    const origin = new URL(c.req.url).origin;
    return c.json(
      {
        success: true as const,
        name: "Expiry-tracking and reminder API",
        docs: `${origin}${DOCS_PATH}`,
        openapi: `${origin}${OPENAPI_PATH}`,
        token_endpoint: `${origin}${tokenRoute.path}`,
        health: `${origin}${HEALTH_PATH}`,
      },
      200,
    );
  },
);

systemRouter.openapi(
  createRoute({
    method: "get",
    path: HEALTH_PATH,
    operationId: "getHealth",
    middleware: [named("getHealth")] as const,
    security: [],
    tags: ["System"],
    summary: "Liveness check (no authentication)",
    description:
      "Answers 200 `{success: true, status: \"ok\"}` while the Worker runs. It reads no database, Durable Object or bucket, so it says " +
      "nothing about them: use it for liveness, not readiness. Counted against the anonymous rate limit of the caller's address.",
    responses: {
      200: jsonResponse(z.object({ success: z.literal(true), status: z.literal("ok") }).openapi("Health"), "The Worker is up"),
      414: errorResponses.uriTooLong,
      429: errorResponses.tooManyRequests,
    },
  }),
  (c) => c.json({ success: true as const, status: "ok" as const }, 200),
);
