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
