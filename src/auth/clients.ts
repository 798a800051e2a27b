import { oauthError } from "../lib/errors";

/** An API client as the authentication code needs it. */
export interface ClientRecord {
  clientId: string;
  secretHash: string;
  secretSalt: string;
  accountId: number;
  companyId: number;
  userId: number;
  scopes: string;
  active: boolean;
  isOwner: boolean;
  /** Bumped by every revocation; only tokens issued under the current generation are valid. */
  tokenGeneration: number;
  /** Failed token requests in the window that started at tokenFailuresSince (unix s; null: none). */
  tokenFailures: number;
  tokenFailuresSince: number | null;
  /** 'read_only' while the account moves to another shard (writes are refused with 503); 'moved' on the shard it left. */
  shardState: string;
}

export interface ClientRow {
  client_id: string;
  secret_hash: string;
  secret_salt: string;
  account_id: number;
  company_id: number;
  user_id: number;
  scopes: string;
  active: number;
  is_owner: number;
  token_generation: number;
  token_failures: number;
  token_failures_since: number | null;
  shard_state: string;
}

// Raw SQL on purpose: this runs on every cache miss of every authenticated request.
const CLIENT_SQL = `SELECT c.client_id, c.secret_hash, c.secret_salt, c.account_id, c.company_id, c.user_id,
  c.scopes, c.active, (a.owner_user_id = c.user_id) AS is_owner, c.token_generation, c.token_failures, c.token_failures_since, a.shard_state
  FROM api_clients c JOIN accounts a ON a.id = c.account_id
  WHERE c.client_id = ?`;

/** The statement that reads a client (its row: `clientFromRow`). */
export const clientStatement = (db: D1Database, clientId: string) => db.prepare(CLIENT_SQL).bind(clientId);

/** Runs `read` against the credential store; a D1 failure becomes a Shape A 503 `service_unavailable`. */
export async function fromCredentialStore<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    console.error(JSON.stringify({ level: "error", msg: "credential store unavailable", error: String(err) }));
    throw oauthError(503, "service_unavailable", "The credential store is unavailable; try again shortly", {
      headers: { "Retry-After": "5" },
    });
  }
}

/** Loads a client; a D1 failure becomes a Shape A 503 `service_unavailable`. */
export async function findClient(db: D1Database, clientId: string): Promise<ClientRecord | null> {
  return clientFromRow(await fromCredentialStore(() => clientStatement(db, clientId).first<ClientRow>()));
}

export function clientFromRow(row: ClientRow | null | undefined): ClientRecord | null {
  if (!row) return null;
  return {
    clientId: row.client_id,
    secretHash: row.secret_hash,
    secretSalt: row.secret_salt,
    accountId: row.account_id,
    companyId: row.company_id,
    userId: row.user_id,
    scopes: row.scopes,
    active: row.active === 1,
    isOwner: row.is_owner === 1,
    tokenGeneration: row.token_generation,
    tokenFailures: row.token_failures,
    tokenFailuresSince: row.token_failures_since,
    shardState: row.shard_state,
  };
}

interface CachedStatus {
  client: ClientRecord | null;
  fetchedAt: number;
  expiresAt: number;
}

const MAX_CACHED_CLIENTS = 1000;
const statusCache = new Map<string, CachedStatus>();

/**
 * The client behind a token on `shard`, from a short per-isolate cache so that a bearer request costs no
 * extra query most of the time. `ttlSeconds` bounds how long a change to the client (revocation,
 * token generation, allowed scopes) can go unnoticed by this isolate. `fetchedSince` (unix ms)
 * skips an entry read before that instant (and replaces it): for a token issued after the entry
 * was read, whose client may have changed since (activated again, say).
 */
export async function findClientCached(
  db: D1Database,
  shard: number,
  clientId: string,
  ttlSeconds: number,
  options: { fetchedSince?: number } = {},
): Promise<ClientRecord | null> {
  const now = Date.now();
  const key = `${shard}:${clientId}`;
  const hit = ttlSeconds <= 0 ? undefined : statusCache.get(key);
  if (hit && hit.expiresAt > now && hit.fetchedAt >= (options.fetchedSince ?? 0)) return hit.client;
  const client = await findClient(db, clientId);
  if (ttlSeconds > 0) {
    statusCache.delete(key); // re-inserted last: the oldest entry is the first evicted
    if (statusCache.size >= MAX_CACHED_CLIENTS) statusCache.delete(statusCache.keys().next().value!);
    statusCache.set(key, { client, fetchedAt: now, expiresAt: now + ttlSeconds * 1000 });
  }
  return client;
}
