// Compiled by `tsc` in `npm test`, never run: proves that a handler whose body breaks the schema
// its route publishes fails type checking. Each `@ts-expect-error` must meet an error; should the
// typing of responses loosen (an `any` helper, a route that accepts a plain Response), the
// directive is unused and tsc fails.
import { created, done, ok, page } from "../../src/lib/respond";
import type { RouteConfig } from "@hono/zod-openapi";
import { MessageEnvelope, createRouter, dataEnvelope, jsonResponse, resultEnvelope, scopedRoute, z } from "../../src/lib/openapi";
import { Flag, pageEnvelope } from "../../src/lib/schemas";

const Thing = z.object({ id: z.number().int(), groupid: z.number().int(), isdefault: Flag });
const router = createRouter();
function route<M extends "get" | "post" | "delete", R extends RouteConfig["responses"]>(method: M, responses: R) {
  return { method, path: "/typecheck", operationId: "typecheck", scope: "contacts:read", responses };
}

router.openapi(scopedRoute(route("get", { 200: jsonResponse(dataEnvelope(Thing, "T1"), "ok") })), (c) =>
  ok(c, { id: 1, groupid: 0, isdefault: 1 as const }),
);
router.openapi(scopedRoute(route("get", { 200: jsonResponse(dataEnvelope(Thing, "T2"), "ok") })), (c) =>
  // @ts-expect-error groupid may be null: the published schema says integer
  ok(c, { id: 1, groupid: null as number | null, isdefault: 1 as const }),
);
// @ts-expect-error isdefault must be 0 or 1, not any number
router.openapi(scopedRoute(route("get", { 200: jsonResponse(dataEnvelope(Thing, "T3"), "ok") })), (c) => ok(c, { id: 1, groupid: 0, isdefault: 2 }));
// @ts-expect-error a 201 route cannot answer 200
router.openapi(scopedRoute(route("post", { 201: jsonResponse(resultEnvelope(Thing, "T4"), "created") })), (c) => ok(c, { id: 1, groupid: 0, isdefault: 0 as const }));
router.openapi(scopedRoute(route("post", { 201: jsonResponse(resultEnvelope(Thing, "T5"), "created") })), (c) =>
  created(c, "Created", { id: 1, groupid: 0, isdefault: 0 as const }),
);
// @ts-expect-error a list needs its meta
router.openapi(scopedRoute(route("get", { 200: jsonResponse(pageEnvelope(Thing, "T6"), "page") })), (c) => ok(c, [{ id: 1, groupid: 0, isdefault: 0 as const }]));
router.openapi(scopedRoute(route("get", { 200: jsonResponse(pageEnvelope(Thing, "T7"), "page") })), (c) =>
  page(c, { rows: [{ id: 1, groupid: 0, isdefault: 0 as const }], meta: { total: 1, limit: 50, offset: 0 } }),
);
router.openapi(scopedRoute(route("delete", { 200: jsonResponse(MessageEnvelope, "deleted") })), (c) => done(c, "Deleted"));
// @ts-expect-error a plain Response escapes the schema, so it is refused
router.openapi(scopedRoute(route("delete", { 200: jsonResponse(MessageEnvelope, "deleted") })), () => new Response("{}"));
