// A contact's email_status after its address was suppressed by bounces or a complaint
// (docs/bounces.md). Every contact of the company with that address (email_key: the
// case-insensitive key, indexed with the company) is marked; a complaint wins over a bounce, and a
// bounce does not overwrite an unsubscription (the person's own choice stays visible).
import type { Db } from "../db/client";
import { nameKey } from "../lib/text-key";

export type SuppressedStatus = "bounced" | "complained";

/** One suppressed address and what its contacts become. */
export interface SuppressedMark {
  address: string;
  status: SuppressedStatus;
  /** When the address was suppressed (RFC 3339): the contacts' email_status_changed_at. */
  at: string;
}

/** The most addresses one call marks (one D1 batch: one round trip, one transaction). */
export const MARKS_PER_BATCH = 200;

/** Marks the contacts of every address in `marks` (at most MARKS_PER_BATCH): one guarded, indexed UPDATE each, in one commit. */
export async function markSuppressedContacts(db: Db, companyId: number, marks: SuppressedMark[]): Promise<void> {
  if (marks.length === 0) return;
  if (marks.length > MARKS_PER_BATCH) throw new Error(`at most ${MARKS_PER_BATCH} addresses a batch`);
  await db.commit(
    marks.map((m) =>
      db.d1
        .prepare(
          `UPDATE contacts SET email_status = ?1, email_status_changed_at = ?2
           WHERE company_id = ?3 AND email_key = ?4 AND email_status <> 'complained' AND email_status <> ?1
             AND (?1 = 'complained' OR email_status = 'active')`,
        )
        .bind(m.status, m.at, companyId, nameKey(m.address.trim())),
    ),
  );
}
