// Who a write is by, for the audit triggers (docs/audit-log.md): a batch that writes inserts the
// one `audit_context` row first and deletes it last, so every entry its triggers write names the
// actor, and a write made outside such a batch finds no row and names none.

/** The actor of a write. A null client and user: the service itself (the company clock, an import job's own bookkeeping). */
export interface AuditActor {
  accountId: number | null;
  /** The company of the actor's token. */
  companyId: number | null;
  clientId: string | null;
  userId: number | null;
  requestId: string | null;
  operationId: string | null;
}

/** The statements that put `actor` around a batch's own: [first, last]. */
export function auditContextStatements(d1: D1Database, actor: AuditActor): [D1PreparedStatement, D1PreparedStatement] {
  return [
    d1
      .prepare(
        "INSERT OR REPLACE INTO audit_context (slot, account_id, company_id, at, client_id, user_id, request_id, operation_id) VALUES (1, ?, ?, ?, ?, ?, ?, ?)",
      )
      .bind(actor.accountId, actor.companyId, Date.now(), actor.clientId, actor.userId, actor.requestId, actor.operationId),
    d1.prepare("DELETE FROM audit_context"),
  ];
}
