// A contact's own side of its email subscription (docs/recipient-journey.md, "Unsubscribe and
// preferences"): what its unsubscribe and preferences pages show, the one-click unsubscribe, the
// re-subscription only the contact can make, and the preferences it sets itself. The pages
// (src/routes/unsubscribe/) reach it with the claims of a verified unsubscribe token.
import type { Db } from "../db/client";
import type { LinkClaims } from "../lib/link-token";
import {
  parseChannels,
  type ContactChannel,
  type Digest,
  type EmailStatus,
  type Weekday,
} from "../lib/contact-preferences";
import { DEFAULT_LANGUAGE } from "../lib/languages";
import { addressFingerprint } from "../lib/unsubscribe-links";

export interface SubscriptionView {
  companyId: number;
  accountId: number;
  companyName: string;
  /** The company's settings.language (the default of a contact without its own). */
  companyLanguage: string;
  /** The account is moving to another shard: nothing can be changed for a few minutes. */
  readOnly: boolean;
  contactId: number;
  contactName: string;
  email: string;
  emailStatus: EmailStatus;
  emailStatusChangedAt: string | null;
  language: string | null;
  digest: Digest;
  digestWeekday: Weekday | null;
  channels: ContactChannel[] | null;
}

const VIEW_SQL = `SELECT c.first_name, c.last_name, c.email, c.email_key, c.email_status, c.email_status_changed_at,
    c.language, c.digest, c.digest_weekday, c.channels, co.name AS company_name, co.account_id,
    co.settings ->> '$.language' AS company_language, a.shard_state
  FROM contacts AS c
  JOIN companies AS co ON co.id = c.company_id
  JOIN accounts AS a ON a.id = co.account_id
  WHERE c.id = ?2 AND c.company_id = ?1`;

type ViewRow = {
  first_name: string;
  last_name: string;
  email: string;
  email_key: string | null;
  email_status: EmailStatus;
  email_status_changed_at: string | null;
  language: string | null;
  digest: Digest;
  digest_weekday: Weekday | null;
  channels: string | null;
  company_name: string;
  account_id: number;
  company_language: string | null;
  shard_state: string;
};

function toView(claims: LinkClaims, row: ViewRow): SubscriptionView {
  return {
    companyId: claims.companyId,
    accountId: row.account_id,
    companyName: row.company_name,
    companyLanguage: row.company_language || DEFAULT_LANGUAGE,
    readOnly: row.shard_state !== "active",
    contactId: claims.contactId,
    contactName: `${row.first_name} ${row.last_name}`.trim(),
    email: row.email,
    emailStatus: row.email_status,
    emailStatusChangedAt: row.email_status_changed_at,
    language: row.language,
    digest: row.digest,
    digestWeekday: row.digest_weekday,
    channels: parseChannels(row.channels),
  };
}

/**
 * The contact a token's claims name, or null: the contact or its company is gone, or its address is
 * no longer the one the link was mailed to. The same statement and hash whatever the claims (ids 0
 * for a token that names none).
 */
export async function readSubscriptionView(d1: D1Database, claims: LinkClaims): Promise<SubscriptionView | null> {
  const row = await d1.prepare(VIEW_SQL).bind(claims.companyId, claims.contactId).first<ViewRow>();
  const fingerprint = await addressFingerprint(row?.email_key ?? "");
  if (!row || fingerprint !== claims.epoch) return null;
  return toView(claims, row);
}

/** The contact's row, by the token's claims, in the guarded statements below. */
const CONTACT = "id = ?1 AND company_id = ?2";
const NOW_ISO = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/** `applied`: this request changed it; `unchanged`: it already was so. */
export type SubscriptionOutcome = "applied" | "unchanged";

/**
 * Unsubscribes the contact from the company's reminder emails: email_status `unsubscribed` and its
 * time, the audit entry (the contacts audit trigger, with the contact as the actor) and the webhook
 * event `contact.unsubscribed` (when an endpoint wants it), in one batch. Idempotent: a contact
 * already unsubscribed is left as it is, with no new entry or event.
 */
export async function unsubscribeContact(db: Db, view: SubscriptionView): Promise<SubscriptionOutcome> {
  const [changed] = await db.commit([
    db.d1
      .prepare(
        `UPDATE contacts SET email_status = 'unsubscribed', email_status_changed_at = ${NOW_ISO}, updated_at = CURRENT_TIMESTAMP
         WHERE ${CONTACT} AND email_status <> 'unsubscribed' RETURNING id`,
      )
      .bind(view.contactId, view.companyId),
    // Right after the UPDATE: changes() is its count (trigger writes are not counted).
    db.d1
      .prepare(
        `INSERT INTO webhook_events (company_id, type, data, created_at)
         SELECT c.company_id, 'contact.unsubscribed',
           json_object('contact_id', c.id, 'firstname', c.first_name, 'lastname', c.last_name, 'email', c.email,
             'email_status', c.email_status, 'email_status_changed_at', c.email_status_changed_at, 'via', 'link'),
           CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
         FROM contacts AS c
         WHERE changes() = 1 AND c.id = ?1 AND c.company_id = ?2
           AND EXISTS (SELECT 1 FROM webhook_endpoints AS e WHERE e.company_id = c.company_id AND e.enabled = 1
             AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'contact.unsubscribed')))`,
      )
      .bind(view.contactId, view.companyId),
  ]);
  return changed!.results.length > 0 ? "applied" : "unchanged";
}

/**
 * Re-subscribes the contact, by its own POST on its page: only from `unsubscribed` or `complained`
 * (its own choices). `bounced` belongs to the address, and is reset by a new address.
 */
export async function resubscribeContact(db: Db, view: SubscriptionView): Promise<SubscriptionOutcome> {
  const [changed] = await db.commit([
    db.d1
      .prepare(
        `UPDATE contacts SET email_status = 'active', email_status_changed_at = ${NOW_ISO}, updated_at = CURRENT_TIMESTAMP
         WHERE ${CONTACT} AND email_status IN ('unsubscribed', 'complained') RETURNING id`,
      )
      .bind(view.contactId, view.companyId),
  ]);
  return changed!.results.length > 0 ? "applied" : "unchanged";
}

/** What the preferences form sets (checked by the page). */
export interface PreferencesInput {
  language: string | null;
  digest: Digest;
  digestWeekday: Weekday | null;
  channels: ContactChannel[] | null;
}

/** Stores the contact's preferences from its page (its audit entry names the contact). */
export async function setPreferences(db: Db, view: SubscriptionView, input: PreferencesInput): Promise<void> {
  await db.commit([
    db.d1
      .prepare(
        `UPDATE contacts SET language = ?3, digest = ?4, digest_weekday = ?5, channels = ?6, updated_at = CURRENT_TIMESTAMP
         WHERE ${CONTACT}`,
      )
      .bind(
        view.contactId,
        view.companyId,
        input.language,
        input.digest,
        input.digest === "weekly" ? input.digestWeekday : null,
        input.channels ? JSON.stringify(input.channels) : null,
      ),
  ]);
}
