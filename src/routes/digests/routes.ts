// GET /v1/digests: the company's digests (docs/reminders.md, "Digests").
import { createRouter, jsonResponse, scopedRoute } from "../../lib/openapi";
import { page } from "../../lib/respond";
import { listDigests } from "../../records/digests";
import { DigestPage, ListDigestsQuery, MAX_DIGEST_PAGE } from "../../schemas/digests";

export const digestsRouter = createRouter();

digestsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/digests",
    operationId: "listDigests",
    scope: "contacts:read",
    tags: ["Reminders"],
    summary: "List digests",
    description:
      "Extension. The digests made for the company's contacts whose `digest` is `daily` or `weekly`: one per " +
      "contact and period (the local day, or the ISO week), made at the company's `settings.digest_hour` in its " +
      "time zone, newest day first, then by contact. Each says what became of it (sent with its item count, " +
      "empty and not sent, suppressed with the reason, …). `contact_id`, `state` and `since` (a local date) " +
      `narrow it. Scope \`contacts:read\`. Keyset pagination (\`limit\` 1 to ${MAX_DIGEST_PAGE}, default 50): ` +
      'pass `meta.next_cursor` as `cursor`. How digests are made: docs/reminders.md, "Digests".',
    request: { query: ListDigestsQuery },
    responses: { 200: jsonResponse(DigestPage, "A page of digests") },
  }),
  async (c) => page(c, await listDigests(c.var.db, c.env, c.var.companyId, c.req.valid("query"))),
);
