import { auditActor } from "../../lib/context";
import { idempotencyKeyFor } from "../../idempotency/middleware";
import { conditionalRecord, rowVersion } from "../../lib/conditional";
// Webhook endpoints (docs/webhooks.md): CRUD, secret rotation, a test event, and the event
// catalogue. Deliveries (list, retry) are in ./deliveries.ts; the engine in the company clock
// (src/company-clock/webhooks.ts, webhook-deliveries.ts).

import {
  ApiErrorSchema,
  MessageEnvelope,
  OAuthErrorSchema,
  createRouter,
  dataEnvelope,
  idParam,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  responseHeaders,
  scopedRoute,
  z,
} from "../../lib/openapi";
import { badRequest } from "../../lib/errors";
import { created, done, ok, page, updated } from "../../lib/respond";
import { clockFor } from "../../company-clock/handoff/worker";
import { EVENT_DESCRIPTIONS, EVENT_TYPES } from "../../webhooks/events";
import { allowsPrivateUrls } from "../../webhooks/urls";
import { unwrap } from "../../records/reminders";
import {
  checkUrl,
  createEndpoint,
  deleteEndpoint,
  endpointOutput,
  getEndpoint,
  listEndpoints,
  rotateSecret,
  secretsKey,
  updateEndpoint,
} from "../../records/webhooks";
import {
  CreateWebhookSchema,
  MAX_ENDPOINTS,
  UpdateWebhookSchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
  WebhookEventTypeListEnvelope,
  WebhookListEnvelope,
  WebhookTestResultSchema,
  examplePayload,
} from "../../schemas/webhooks";

const tags = ["Webhooks"];
const WebhookParams = idParam("webhook_id");

/** What If-Match on its PATCH and DELETE compares: the ETag of its GET (src/lib/conditional.ts). */
const webhookRecord = conditionalRecord({
  what: "Webhook endpoint",
  table: "webhook_endpoints",
  params: WebhookParams,
  load: async (c, { webhook_id }) => {
    const version = await rowVersion(c, "webhook_endpoints", webhook_id);
    return { id: webhook_id, version, data: endpointOutput(await getEndpoint(c.var.db, c.var.companyId, webhook_id)) };
  },
});
const WebhookEnvelope = dataEnvelope(WebhookEndpointSchema, "WebhookEndpointEnvelope");
const WebhookResult = resultEnvelope(WebhookEndpointSchema, "WebhookEndpointResult");
const WebhookSecretResult = resultEnvelope(WebhookEndpointWithSecretSchema, "WebhookEndpointSecretResult");
const WebhookTestEnvelope = resultEnvelope(WebhookTestResultSchema, "WebhookTestQueued");

/** 503 of the operations that need the secrets key: Shape B when it is not configured. */
const notConfigured = {
  ...jsonResponse(
    z.union([OAuthErrorSchema, ApiErrorSchema]),
    'Shape B "webhooks are not configured on this deployment" when ' +
      "WEBHOOK_SECRETS_KEY is not set; Shape A service_unavailable when the credential " +
      "store could not be reached (retry after Retry-After seconds)",
  ),
  headers: responseHeaders.retryAfter,
};

const SIGNING =
  "Deliveries are signed per Standard Webhooks: headers webhook-id, " +
  "webhook-timestamp and webhook-signature (`v1,<base64 HMAC-SHA256 of " +
  "id.timestamp.body>` with the secret's bytes after `whsec_`).";

export const webhooksRouter = createRouter();

webhooksRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/webhook-event-types",
    operationId: "listWebhookEventTypes",
    scope: "webhooks:read",
    tags,
    summary: "List webhook event types",
    description:
      "Extension. The event catalogue: every type an endpoint can subscribe to, what " +
      "it means, and an example payload (the body POSTed to the endpoint, " +
      "WebhookPayload). Any user with the scope may read it.",
    responses: { 200: jsonResponse(WebhookEventTypeListEnvelope, "The event catalogue") },
  }),
  (c) =>
    ok(
      c,
      EVENT_TYPES.map((type) => ({
        type,
        description: EVENT_DESCRIPTIONS[type],
        example: examplePayload(type),
      })),
    ),
);

webhooksRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/webhooks",
    operationId: "listWebhooks",
    scope: "webhooks:read",
    owner: true,
    tags,
    summary: "List webhook endpoints",
    description: `Extension. Every endpoint of the company (at most ${MAX_ENDPOINTS}, so there is no pagination), by webhook_id. The signing secret is never shown here.`,
    responses: { 200: jsonResponse(WebhookListEnvelope, "The company's webhook endpoints") },
  }),
  async (c) => {
    const result = await listEndpoints(c.var.db, c.var.companyId);
    return page(c, { rows: result.rows.map(endpointOutput), meta: result.meta });
  },
);

webhooksRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/webhooks",
    operationId: "createWebhook",
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Create a webhook endpoint",
    description: `Extension. Registers a URL to receive the events listed in \`events\` (types of GET /v1/webhook-event-types, or ["*"] for every type; an unknown type is 400 naming it). The response carries the signing secret (\`whsec_\` + base64), shown only here and on rotation. ${SIGNING} A company has at most ${MAX_ENDPOINTS} endpoints: one more is 400 (checked inside the insert, so concurrent creates cannot overshoot). 503 when the deployment has no WEBHOOK_SECRETS_KEY.`,
    request: { body: jsonBody(CreateWebhookSchema) },
    responses: { 201: jsonResponse(WebhookSecretResult, "Endpoint created, with its secret"), 503: notConfigured },
  }),
  async (c) => {
    const input = c.req.valid("json");
    const url = checkUrl(input.url, allowsPrivateUrls(c.env));
    const key = secretsKey(c.env);
    const { row, secret } = await createEndpoint(c.var.db, c.var.companyId, c.var.auth.userId, { ...input, url }, key);
    return created(c, "Webhook endpoint created", { ...endpointOutput(row), secret });
  },
);

webhooksRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/webhooks/{webhook_id}",
    operationId: "getWebhook",
    etag: true,
    scope: "webhooks:read",
    owner: true,
    tags,
    summary: "Get a webhook endpoint",
    description: "Extension. Never shows the secret. Another company's endpoint is 404.",
    request: { params: WebhookParams },
    responses: { 200: jsonResponse(WebhookEnvelope, "The endpoint") },
  }),
  async (c) => ok(c, endpointOutput(await getEndpoint(c.var.db, c.var.companyId, c.req.valid("param").webhook_id))),
);

webhooksRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/webhooks/{webhook_id}",
    operationId: "updateWebhook",
    precondition: webhookRecord,
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Update a webhook endpoint",
    description:
      "Extension. url, events (replaces the list), description, enabled. enabled=true " +
      "on a disabled endpoint (by a PATCH, or by the service after failing for 5 days) " +
      "enables it again and clears disabled_reason and failing_since; enabled=false " +
      "stops deliveries (no new events are recorded for it; those pending fail). A new " +
      "url clears failing_since. An empty body is 400. Another company's endpoint is " +
      "404.",
    request: { params: WebhookParams, body: jsonBody(UpdateWebhookSchema) },
    responses: { 200: jsonResponse(WebhookResult, "Endpoint updated") },
  }),
  async (c) => {
    const input = c.req.valid("json");
    const url = input.url === undefined ? undefined : checkUrl(input.url, allowsPrivateUrls(c.env));
    const row = await updateEndpoint(c.var.db, c.var.companyId, c.req.valid("param").webhook_id, { ...input, url });
    return updated(c, "Webhook endpoint updated", endpointOutput(row));
  },
);

webhooksRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/webhooks/{webhook_id}",
    operationId: "deleteWebhook",
    precondition: webhookRecord,
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Delete a webhook endpoint",
    description:
      "Extension. The endpoint receives nothing more: its pending deliveries are " +
      "dropped. Another company's endpoint is 404.",
    request: { params: WebhookParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Endpoint deleted") },
  }),
  async (c) => {
    await deleteEndpoint(c.var.db, c.var.companyId, c.req.valid("param").webhook_id);
    return done(c, "Webhook endpoint deleted");
  },
);

webhooksRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/webhooks/{webhook_id}/rotate-secret",
    operationId: "rotateWebhookSecret",
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Rotate a webhook endpoint's secret",
    description:
      "Extension. Returns a new secret, which signs every delivery from now on. The " +
      "secret it replaces keeps signing alongside for 24 hours (each delivery then " +
      "carries two `v1,` signatures in webhook-signature, as Standard Webhooks " +
      "allows), so a receiver can switch to the new secret at its own pace. Rotating " +
      "again within those 24 hours makes the secret just replaced the previous one: " +
      "the older one stops signing at once. No body. 503 when the deployment has no " +
      "WEBHOOK_SECRETS_KEY.",
    request: { params: WebhookParams },
    responses: {
      200: jsonResponse(WebhookSecretResult, "Secret rotated: the endpoint with its new secret"),
      503: notConfigured,
    },
  }),
  async (c) => {
    const key = secretsKey(c.env);
    const { row, secret } = await rotateSecret(c.var.db, c.var.companyId, c.req.valid("param").webhook_id, key);
    return updated(c, "Webhook secret rotated; the previous secret keeps signing for 24 hours", {
      ...endpointOutput(row),
      secret,
    });
  },
);

webhooksRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/webhooks/{webhook_id}/test",
    operationId: "testWebhook",
    scope: "webhooks:write",
    owner: true,
    tags,
    summary: "Send a test event",
    description:
      "Extension. Queues a `webhook.test` event (data: {webhook_id, message}) to this " +
      "endpoint only, whatever it subscribes to; it is attempted right after the " +
      "response and retried like any delivery. 202 with the delivery (see GET " +
      "/v1/webhooks/{webhook_id}/deliveries) and its webhook-id. A disabled endpoint " +
      "is 400 (enable it first); another company's endpoint is 404; 503 when the " +
      "deployment has no WEBHOOK_SECRETS_KEY.",
    request: { params: WebhookParams },
    responses: { 202: jsonResponse(WebhookTestEnvelope, "Test event queued"), 503: notConfigured },
  }),
  async (c) => {
    const endpointId = c.req.valid("param").webhook_id;
    secretsKey(c.env);
    const endpoint = await getEndpoint(c.var.db, c.var.companyId, endpointId);
    if (endpoint.enabled !== 1)
      throw badRequest(`Webhook endpoint ${endpointId} is disabled: enable it (PATCH enabled: true) before testing it`);
    const result = unwrap(
      await clockFor(c.env, c.var.companyId).testWebhook(
        c.var.companyId,
        endpointId,
        await idempotencyKeyFor(c),
        auditActor(c),
      ),
    );
    return c.json(
      {
        success: true as const,
        msg: "Test event queued",
        data: { delivery_id: result.delivery_id, message_id: result.message_id },
      },
      202,
    );
  },
);
