// Failed token requests per client_id (docs/rate-limits.md): at most TOKEN_FAILURE_LIMIT secrets are
// checked in a window of TOKEN_FAILURE_WINDOW_SECONDS that turn out wrong; past that the token
// endpoint answers 429 for the client until the window ends, whatever the secret, so a secret cannot
// be guessed by brute force. Kept in D1 (exact and global), not in the approximate Rate Limiting binding.
//
// The count is taken before the secret is compared, in one guarded UPDATE: an attempt is admitted
// only while the window holds fewer than the limit, so however many requests arrive at once, at most
// the limit of them are ever checked. A right secret hands its attempt back; a wrong one keeps it.

import type { Db } from "../db/client";
import { clientFromRow, clientStatement, fromCredentialStore, type ClientRecord, type ClientRow } from "./clients";

export const TOKEN_FAILURE_LIMIT = 10;
export const TOKEN_FAILURE_WINDOW_SECONDS = 900;

/** The window that began at `token_failures_since` is over (or none began): `?1` is now (unix s). */
const FRESH = `(token_failures_since IS NULL OR token_failures_since <= ?1 - ${TOKEN_FAILURE_WINDOW_SECONDS})`;

/**
 * Admits one attempt of `clientId` at `nowSeconds`: counts it, starting a new window when the last
 * one has ended, unless the window already holds TOKEN_FAILURE_LIMIT. Returns a row only when the
 * attempt was admitted (none for an unknown client_id either: the client's own read tells them apart).
 */
export function admitTokenAttemptStatement(db: D1Database, clientId: string, nowSeconds: number): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE api_clients SET token_failures = CASE WHEN ${FRESH} THEN 1 ELSE token_failures + 1 END,
         token_failures_since = CASE WHEN ${FRESH} THEN ?1 ELSE token_failures_since END
       WHERE client_id = ?2 AND (${FRESH} OR token_failures < ${TOKEN_FAILURE_LIMIT})
       RETURNING token_failures`,
    )
    .bind(nowSeconds, clientId);
}

/**
 * One round trip: the attempt admitted (or not) and the client read after it, in one transaction.
 * `admitted` is false for an unknown client_id too (`client` null); a known client not admitted is
 * over its limit until `lockedSeconds(client.tokenFailuresSince, now)`.
 */
export async function admitTokenAttempt(
  db: Db,
  clientId: string,
  nowSeconds: number,
): Promise<{ client: ClientRecord | null; admitted: boolean }> {
  const [admit, read] = await fromCredentialStore(() =>
    db.commit([admitTokenAttemptStatement(db.d1, clientId, nowSeconds), clientStatement(db.d1, clientId)]),
  );
  return { client: clientFromRow(read.results[0] as ClientRow | undefined), admitted: admit.results.length > 0 };
}

/** Seconds until the window that refused an attempt ends (at least 1). */
export function lockedSeconds(failuresSince: number | null, nowSeconds: number): number {
  return Math.max(1, (failuresSince ?? nowSeconds) + TOKEN_FAILURE_WINDOW_SECONDS - nowSeconds);
}

/**
 * A right secret's attempt handed back (sent in the batch that issues the token, or after a refusal
 * that was not the secret's fault): the failures of the window stay counted. Forgiving them on a
 * success would let every token the real client fetches buy a guesser another TOKEN_FAILURE_LIMIT.
 */
export function releaseTokenAttemptStatement(db: D1Database, clientId: string): D1PreparedStatement {
  return db
    .prepare(
      `UPDATE api_clients SET token_failures = max(token_failures - 1, 0),
         token_failures_since = CASE WHEN token_failures <= 1 THEN NULL ELSE token_failures_since END
       WHERE client_id = ?`,
    )
    .bind(clientId);
}
