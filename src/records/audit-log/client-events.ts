// Entries that are not a row change: the token endpoint's issues and refusals (docs/audit-log.md).
// Row changes are logged by the audit triggers (scripts/triggers/audit.ts), never from here.
import type { ClientRecord } from "../../auth/clients";
import type { Db } from "../../db/client";

export interface ClientEvent {
  client: Pick<ClientRecord, "clientId" | "accountId" | "companyId" | "userId">;
  action: "token_issued" | "token_refused";
  requestId: string | null;
  operationId: string | null;
  /** What the entry shows (never a token or a secret). */
  details: Record<string, unknown>;
}

/** Logs a refused use of a deactivated or revoked client, best effort: a refused write must not turn the 401 into a 5xx. */
export async function logTokenRefusal(db: Db, event: Omit<ClientEvent, "action">): Promise<void> {
  try {
    await db.commit([clientEventStatement(db.d1, { ...event, action: "token_refused" })]);
  } catch (error) {
    console.error(JSON.stringify({ level: "error", msg: "token refusal not logged", error: String(error) }));
  }
}

/** The entry of a client event, as a statement (to batch with the event's own writes). */
export function clientEventStatement(d1: D1Database, event: ClientEvent): D1PreparedStatement {
  const { client } = event;
  return d1
    .prepare(
      `INSERT INTO audit_log (account_id, company_id, at, client_id, user_id, actor_company_id, request_id, operation_id, via, resource_type, resource_id, action, before, after)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'api', 'api_client', ?, ?, NULL, ?)`,
    )
    .bind(
      client.accountId,
      client.companyId,
      Date.now(),
      client.clientId,
      client.userId,
      client.companyId,
      event.requestId,
      event.operationId,
      client.clientId,
      event.action,
      JSON.stringify(event.details),
    );
}
