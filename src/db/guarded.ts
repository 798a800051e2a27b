import { sql } from "drizzle-orm";
import { conflict, type ApiError } from "../lib/errors";
import { isForeignKeyViolation, isUniqueViolation, type Db } from "./client";
import type { Statement } from "./commit";

// Shared pieces of the race-safe write pattern (docs/concurrency.md).

/** How often an operation whose guarded write changed nothing reads again before answering 409. */
export const MAX_ATTEMPTS = 3;

/** The 409 of an operation that kept losing races: nothing was written. */
export const lostRace = (what: string) =>
  conflict(`The ${what} was changed by another request at the same time; retry the request`);

/**
 * Commits `statements` (one D1 batch, one transaction). A UNIQUE violation naming `duplicate.marker`
 * (e.g. "contact_groups.name_key") is the client's duplicate: `duplicate.error()`. Any other UNIQUE
 * violation (a partial "one default" index) or FOREIGN KEY violation (a parent deleted in between)
 * means a concurrent request won: 409 `lostRace(what)`. The batch wrote nothing either way.
 */
export async function writeBatch<const T extends readonly Statement[]>(
  db: Db,
  statements: T,
  what: string,
  duplicate?: { marker: string; error: () => ApiError },
) {
  try {
    return await db.commit(statements);
  } catch (err) {
    if (duplicate && isUniqueViolation(err, duplicate.marker)) throw duplicate.error();
    if (isUniqueViolation(err, "") || isForeignKeyViolation(err)) throw lostRace(what);
    throw err;
  }
}

/** `(rows of the company in table) < limit`, for the WHERE of an INSERT … SELECT that must not pass a per-company limit. */
export const companyCountBelow = (table: string, companyId: number, limit: number) =>
  sql`(SELECT count(*) FROM ${sql.identifier(table)} AS q WHERE q.company_id = ${companyId}) < ${limit}`;

/**
 * An INSERT guarded by a per-company limit counted inside it (`companyCountBelow`), so concurrent
 * creates cannot pass the limit. `insert()` commits it and returns the row, or undefined when the
 * guard held it back; `used()` then says whether the limit is why (`limitReached()`); otherwise a
 * row went meanwhile (or the company did), and the insert is tried again: 409 after MAX_ATTEMPTS.
 */
export async function insertUnderLimit<T>(options: {
  what: string;
  limit: number;
  insert: () => Promise<T | undefined>;
  used: () => Promise<number>;
  limitReached: () => ApiError;
}): Promise<T> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const inserted = await options.insert();
    if (inserted) return inserted;
    if ((await options.used()) >= options.limit) throw options.limitReached();
  }
  throw lostRace(options.what);
}
