// What every page behind a link token (the recipient pages /r/, the unsubscribe pages /u/) does
// first: check the token and read the page's data, with the same work whatever the token.
import type { Context } from "hono";
import { shardOfCompany } from "../../db/directory";
import { openRequestSession } from "../../db/session";
import { isShard } from "../../db/shards";
import type { AppBindings } from "../../env";
import type { LinkClaims, TokenVerdict } from "../../lib/link-token";
import { noteOnLog } from "../../lib/request-context";
import { todayIn } from "../../lib/time";

export interface OpenedPage<V> {
  token: string;
  claims: LinkClaims;
  view: V;
  session: ReturnType<typeof openRequestSession>;
}

/**
 * The token's claims and the page's data, or null for a link that does not work (malformed,
 * forged, of another purpose, signed by a dropped key, expired, or what it names deleted). Whatever
 * the token, the same work: its signature checked against every key, then the page's one statement
 * run with the ids it names (ids 0 when it names none) on its company's shard (shard 0 when
 * unknown). Every page reads the primary: a recipient who just acted sees what was done (no
 * X-D1-Bookmark for browsers).
 */
export async function openTokenPage<V>(
  c: Context<AppBindings>,
  write: boolean,
  verify: (keys: string | undefined, token: string, today: string) => Promise<TokenVerdict>,
  read: (d1: D1Database, claims: LinkClaims) => Promise<V | null>,
): Promise<OpenedPage<V> | null> {
  const token = c.req.param("token") ?? "";
  const { state, claims } = await verify(c.env.LINK_SIGNING_KEYS, token, todayIn("UTC"));
  const shard = await shardOfCompany(c.env, claims.companyId);
  const session = openRequestSession(c.env, isShard(c.env, shard) ? shard : 0, { write, bookmark: null });
  const view = await read(session.d1, claims);
  if (session.stats) noteOnLog(c, { d1_queries: session.stats.queries, d1_rows_read: session.stats.rowsRead });
  if (state !== "valid" || !view) return null;
  return { token, claims, view, session };
}
