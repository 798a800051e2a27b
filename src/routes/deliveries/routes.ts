// GET /v1/deliveries: the company's problem deliveries (docs/bounces.md).
import { createRouter, jsonResponse, scopedRoute } from "../../lib/openapi";
import { page } from "../../lib/respond";
import { listProblemDeliveries } from "../../records/deliveries";
import { ListDeliveriesQuery, MAX_DELIVERY_PAGE, ProblemDeliveryPage } from "../../schemas/deliveries";

export const deliveriesRouter = createRouter();

deliveriesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/deliveries",
    operationId: "listProblemDeliveries",
    scope: "items:read",
    tags: ["Reminders"],
    summary: "List problem deliveries",
    description:
      "Extension. The company's reminder deliveries that did not reach their recipient, newest " +
      "change first: `bounced` (a delivery status notification said so, hard or soft), " +
      "`complained` (the recipient reported it as spam), `suppressed` (not sent: the address " +
      "bounced hard, complained, or bounced soft 3 times in 30 days) and `failed` (the " +
      "provider refused every attempt). Each with its item, contact, address, reason and time. " +
      "`state` picks one of them; `since` keeps changes at or after an instant. Scope " +
      `\`items:read\`. Keyset pagination (\`limit\` 1 to ${MAX_DELIVERY_PAGE}, default 50): pass ` +
      "`meta.next_cursor` as `cursor`. Bounce handling: docs/bounces.md.",
    request: { query: ListDeliveriesQuery },
    responses: { 200: jsonResponse(ProblemDeliveryPage, "A page of problem deliveries") },
  }),
  async (c) => page(c, await listProblemDeliveries(c.var.db, c.env, c.var.companyId, c.req.valid("query"))),
);
