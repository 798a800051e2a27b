import type { Db } from "../../db/client";
import { auditActor } from "../../lib/context";
import { idempotencyKeyFor } from "../../idempotency/middleware";
// GET /v1/webhooks/{webhook_id}/deliveries and POST .../deliveries/{delivery_id}/retry: the
// deliveries the company's Durable Object keeps for an endpoint (docs/webhooks.md).

import { z } from "@hono/zod-openapi";
import { createRouter, jsonResponse, scopedRoute } from "../../lib/openapi";
import { notFound } from "../../lib/errors";
import { page } from "../../lib/respond";
import { integerString, pageEnvelope, paginationQuery } from "../../lib/schemas";
import { clockFor } from "../../company-clock/handoff/worker";
import { endpointOfCompany } from "../../webhooks/outbox";
import { unwrap } from "../../records/reminders";

const tags = ["Webhooks"];

const EndpointParams = z.object({
  webhook_id: integerString("webhook_id must be a positive integer", 1).openapi({
    param: { name: "webhook_id", in: "path" },
    example: 1,
  }),
});
const DeliveryParams = EndpointParams.extend({
  delivery_id: integerString("delivery_id must be a positive integer", 1).openapi({
    param: { name: "delivery_id", in: "path" },
    example: 1,
  }),
});
const DeliveriesQuery = z.object(paginationQuery(100, 20));

export const WebhookDeliverySchema = z
  .object({
    delivery_id: z.number().int().openapi({ example: 42 }),
    message_id: z.string().openapi({
      example: "msg_2Xb1tQ9oQqGm6pJc0Zr8Vw",
      description: "The `webhook-id` header: the same on every attempt of this delivery",
    }),
    event_type: z.string().openapi({ example: "item.created" }),
    attempts: z
      .number()
      .int()
      .openapi({ example: 1, description: "Attempts made so far (at most 8, plus manual retries)" }),
    last_status: z
      .number()
      .int()
      .nullable()
      .openapi({ example: 200, description: "HTTP status of the last attempt (null: none yet, or no response)" }),
    last_error: z
      .string()
      .nullable()
      .openapi({ example: null, description: "Why the last attempt failed (null after a success)" }),
    next_attempt_at: z.string().nullable().openapi({ example: null, description: "ISO 8601 UTC; set while pending" }),
    state: z.enum(["pending", "delivered", "failed"]).openapi({ example: "delivered" }),
    delivered_at: z.string().nullable().openapi({ example: "2026-03-01T09:00:01.123Z" }),
    created_at: z.string().openapi({ example: "2026-03-01T09:00:00.456Z" }),
  })
  .openapi("WebhookDelivery");

const DeliveryListEnvelope = pageEnvelope(WebhookDeliverySchema, "WebhookDeliveryList");
const RetryEnvelope = z
  .object({ success: z.literal(true), msg: z.string(), data: WebhookDeliverySchema })
  .openapi("WebhookDeliveryRetried");

export const webhookDeliveriesRouter = createRouter();

async function ownEndpoint(db: Db, companyId: number, endpointId: number) {
  const endpoint = await endpointOfCompany(db.d1, companyId, endpointId);
  if (!endpoint) throw notFound("Webhook endpoint");
  return endpoint;
}

webhookDeliveriesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/webhooks/{webhook_id}/deliveries",
    operationId: "listWebhookDeliveries",
    scope: "webhooks:read",
    owner: true,
    tags,
    summary: "List an endpoint's deliveries",
    description:
      "Extension. Newest first, `limit` 1 to 100 (default 20) and `offset`. One " +
      "delivery per event sent to this endpoint, with its attempts: " +
      "`pending` (waiting for its next attempt, `next_attempt_at`), `delivered` (a 2xx " +
      "answer) or `failed` (8 attempts over about 31 hours " +
      "failed, or the endpoint was disabled). Kept for 30 days. An endpoint of another company is 404.",
    request: { params: EndpointParams, query: DeliveriesQuery },
    responses: { 200: jsonResponse(DeliveryListEnvelope, "A page of deliveries") },
  }),
  async (c) => {
    const endpointId = c.req.valid("param").webhook_id;
    const { limit, offset } = c.req.valid("query");
    await ownEndpoint(c.var.db, c.var.companyId, endpointId);
    const result = await clockFor(c.env, c.var.companyId).webhookDeliveries(c.var.companyId, endpointId, {
      limit,
      offset,
    });
    return page(c, { rows: result.rows, meta: { total: result.total, limit, offset } });
  },
);

webhookDeliveriesRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
    operationId: "retryWebhookDelivery",
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Retry a delivery now",
    description:
      "Extension. Queues a `failed` or `pending` delivery for an immediate attempt, " +
      "with the same `webhook-id` (a failed delivery gets one " +
      "more attempt). 202: the attempt happens right after the response; read the " +
      "delivery again for its outcome. A delivered delivery " +
      "is 400; a disabled endpoint is 400 (enable it first); a delivery or endpoint of another company is 404.",
    request: { params: DeliveryParams },
    responses: { 202: jsonResponse(RetryEnvelope, "Delivery queued for an attempt") },
  }),
  async (c) => {
    const { webhook_id: endpointId, delivery_id: deliveryId } = c.req.valid("param");
    const endpoint = await ownEndpoint(c.var.db, c.var.companyId, endpointId);
    if (!endpoint.enabled)
      unwrap({
        error: {
          status: 400 as const,
          msg: `Webhook endpoint ${endpointId} is disabled: enable it (PATCH enabled: true) before retrying`,
        },
      });
    const view = unwrap(
      await clockFor(c.env, c.var.companyId).retryWebhookDelivery(
        c.var.companyId,
        endpointId,
        deliveryId,
        await idempotencyKeyFor(c),
        auditActor(c),
      ),
    );
    return c.json({ success: true as const, msg: "Delivery queued", data: view }, 202);
  },
);
