// A request's D1 session, as src/db/session.ts opens it. Apart from that code so that src/env.ts
// (the request's context variables) names it without importing a module that imports env.ts.
import type { D1Stats } from "./query-stats";

export interface RequestSession {
  shard: number;
  /** The session as a D1Database (prepare and batch; what every query helper takes). */
  d1: D1Database;
  /** The D1 work of the request so far (with D1_STATS=on only). */
  stats?: D1Stats;
  /** The session's latest bookmark, as the X-D1-Bookmark value; null before its first query. */
  bookmark(): string | null;
}
