// Failed token requests per client_id (docs/rate-limits.md): past TOKEN_FAILURE_LIMIT in a window
// of TOKEN_FAILURE_WINDOW_SECONDS, the token endpoint answers 429 for the client until the window
// ends, whatever the secret, so a secret cannot be guessed by brute force. Kept in D1 (exact, and
// read with the client record the endpoint loads anyway), not in the approximate Rate Limiting binding.
import type { ClientRecord } from "./clients";

export const TOKEN_FAILURE_LIMIT = 10;
export const TOKEN_FAILURE_WINDOW_SECONDS = 900;

/** Seconds the client is still locked out for (0: not locked). */
export function lockedSeconds(client: ClientRecord, nowSeconds: number): number {
  if (client.tokenFailures < TOKEN_FAILURE_LIMIT || client.tokenFailuresSince === null) return 0;
  return Math.max(0, client.tokenFailuresSince + TOKEN_FAILURE_WINDOW_SECONDS - nowSeconds);
}

/** Counts a wrong secret: a new window starts when the last one has ended. */
export async function recordTokenFailure(db: D1Database, clientId: string, nowSeconds: number): Promise<void> {
  const fresh = `token_failures_since IS NULL OR token_failures_since <= ?1 - ${TOKEN_FAILURE_WINDOW_SECONDS}`;
  await db
    .prepare(
      `UPDATE api_clients SET token_failures = CASE WHEN ${fresh} THEN 1 ELSE token_failures + 1 END,
         token_failures_since = CASE WHEN ${fresh} THEN ?1 ELSE token_failures_since END
       WHERE client_id = ?2`,
    )
    .bind(nowSeconds, clientId)
    .run();
}

/** A token issued: earlier failures are forgotten (sent in the batch). */
export function clearTokenFailuresStatement(db: D1Database, clientId: string): D1PreparedStatement {
  return db.prepare("UPDATE api_clients SET token_failures = 0, token_failures_since = NULL WHERE client_id = ?").bind(clientId);
}
