// The send gate (docs/reminders.md, "The send gate"): whether a delivery to a contact may go out.
// One small function, asked for every delivery just before it is sent; a delivery it stops is
// `suppressed`, with the reason first in its last_error. The address check comes first: an address
// the company suppressed after bounces or a complaint (bounces.ts), whatever the contact's status.
import { parseChannels, type EmailStatus } from "../lib/contact-preferences";

export interface GateFacts {
  channel: string;
  /** The contact's email_status. */
  emailStatus: EmailStatus;
  /** The contact's `channels` column (JSON array or null: every channel). */
  channels: string | null;
  /** Why the recipient's address is suppressed for the company after bounces or a complaint (bounces.ts), if it is. */
  addressSuppressed?: string | null;
}

/** Why a delivery must not go out (`reason: explanation`), or null when it may. */
export function sendGate(facts: GateFacts): string | null {
  const wanted = parseChannels(facts.channels);
  if (wanted && !(wanted as string[]).includes(facts.channel))
    return `channel_declined: the contact does not want ${facts.channel} reminders (its channels preference)`;
  if (facts.channel !== "email") return null;
  if (facts.addressSuppressed)
    return `address_suppressed: the address is suppressed for the company (${facts.addressSuppressed})`;
  switch (facts.emailStatus) {
    case "active":
      return null;
    case "unsubscribed":
      return "unsubscribed: the contact unsubscribed from this company's reminder emails";
    case "bounced":
      return "bounced: the contact's address bounced";
    case "complained":
      return "complained: the contact reported this company's reminder emails as spam";
  }
}
