// The values of a contact's email status and digest preference: one list each, for the schema, the
// migration's CHECKs, the API and the preferences page.

/** Whether reminder emails may go to the contact: only `active` is mailed (docs/reminders.md, "The send gate"). */
export const EMAIL_STATUSES = ["active", "unsubscribed", "bounced", "complained"] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

export const DIGESTS = ["off", "daily", "weekly"] as const;
export type Digest = (typeof DIGESTS)[number];

/** The day of a weekly digest, named in English lower case (ISO order: Monday first). */
export const WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * The channels a contact can want (webhooks go to the company, not to a person). `chat`: the team
 * chats, reminders about the contact posted to the company's channel endpoints (docs/channels.md);
 * a contact whose list leaves it out gets those deliveries suppressed (`channel_declined`).
 */
export const CONTACT_CHANNELS = ["email", "sms", "chat"] as const;
export type ContactChannel = (typeof CONTACT_CHANNELS)[number];

/** The stored `channels` column (JSON array or null) as the API shows it; null = all. */
export function parseChannels(stored: string | null): ContactChannel[] | null {
  if (stored === null) return null;
  try {
    const value: unknown = JSON.parse(stored);
    if (!Array.isArray(value)) return null;
    return CONTACT_CHANNELS.filter((c) => value.includes(c));
  } catch {
    return null;
  }
}
