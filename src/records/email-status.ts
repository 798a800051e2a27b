// A contact's email_status after its address was suppressed by bounces or a complaint
// (docs/bounces.md). Every contact of the company with that address (email_key: the
// case-insensitive key, indexed with the company) is marked; a complaint wins over a bounce, and a
// bounce does not overwrite an unsubscription (the person's own choice stays visible).
import type { Db } from "../db/client";
import { nameKey } from "../lib/text-key";

export type SuppressedStatus = "bounced" | "complained";

export async function markSuppressedContacts(
  db: Db,
  companyId: number,
  address: string,
  status: SuppressedStatus,
  at: string,
): Promise<void> {
  await db.commit([
    db.d1
      .prepare(
        `UPDATE contacts SET email_status = ?1, email_status_changed_at = ?2
         WHERE company_id = ?3 AND email_key = ?4 AND email_status <> 'complained' AND email_status <> ?1
           AND (?1 = 'complained' OR email_status = 'active')`,
      )
      .bind(status, at, companyId, nameKey(address.trim())),
  ]);
}
