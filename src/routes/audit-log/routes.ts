// The audit log (docs/audit-log.md): who changed what, for the account owner. Read only: entries are
// written by the changes themselves (triggers, the company clock's outbox, the token endpoint).
import { createRouter, jsonResponse, scopedRoute } from "../../lib/openapi";
import { page } from "../../lib/respond";
import { listAuditLog } from "../../records/audit-log/queries";
import { AUDIT_RESOURCE_TYPES, AuditPageEnvelope, ListAuditQuery, RETENTION_DAYS } from "../../schemas/audit-log";

export const auditLogRouter = createRouter();

auditLogRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/audit-log",
    operationId: "listAuditLog",
    scope: "audit:read",
    owner: true,
    tags: ["Audit log"],
    summary: "List the audit log",
    description:
      "Extension. Every change of the account's resources, newest first: who (API " +
      "client, user, the token's company), the request " +
      "(`X-Request-Id`, operationId), what (resource type and id, action) and the " +
      "fields that changed, before and after, by their API names. " +
      "Secrets, tokens and file bytes are never in an entry. Also the token endpoint's " +
      "issued tokens (`api_client`, `token_issued`) and its " +
      "refusals of revoked or deactivated clients (`token_refused`). An entry is " +
      "written in the same transaction as its change, so no change " +
      "exists without one. The log cannot be written or edited through the API. " +
      `Entries are kept ${RETENTION_DAYS} days; the daily cron job deletes older ones. ` +
      `Resource types: ${AUDIT_RESOURCE_TYPES.join(", ")}. Parts of a resource (an item's tags, attachments and custom-field values, a document ` +
      "type's fields) are `updated` entries of the resource under dotted names " +
      "(`tags.7`, `attachments.fil_…`, `fields.12`). " +
      "Account owner only, scope `audit:read` (granted by `*`). Keyset pagination: " +
      "pass `meta.next_cursor` as `cursor`.",
    request: { query: ListAuditQuery },
    responses: { 200: jsonResponse(AuditPageEnvelope, "A page of audit entries") },
  }),
  async (c) => page(c, await listAuditLog(c.var.db, c.var.auth.accountId, c.req.valid("query"))),
);
