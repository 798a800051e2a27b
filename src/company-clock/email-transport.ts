// How a reminder email is handed to the Email Service binding (docs/bounces.md). The message is
// the builder shape the sender composes (From defaults to EMAIL_FROM); this adds the delivery's
// bounce address. The builder form is the one used:
// the raw form (`new EmailMessage(envelopeFrom, to, raw)`) requires its envelope sender to equal
// the From header and to be listed in allowed_sender_addresses, and Cloudflare sets Return-Path
// itself (a Return-Path or Message-ID header is refused with E_HEADER_NOT_ALLOWED in production).
// So the bounce address travels in an `X-` header, which mail systems return inside DSNs and ARF
// reports (the original's headers), and Email Routing delivers `bounces+*@domain` to email().

import type { Env } from "../env";
import { BOUNCE_HEADER, mintBounceAddress } from "../lib/bounce-address";

/** The message as the sender composes it (the binding's builder shape, without `from`'s address). */
export interface OutgoingEmail {
  to: string;
  subject: string;
  text: string;
  html: string;
  /** The sender as composed (display name and the service's address); EMAIL_FROM when absent. */
  from?: string | { name: string; email: string };
  replyTo?: string;
  headers?: Record<string, string>;
  attachments?: EmailMessageBuilder["attachments"];
}

/** Which delivery a message is: its bounce address names it. */
export interface DeliveryIdentity {
  companyId: number;
  reminderId: number;
  contactId: number;
}

/** Hands one message to env.EMAIL with the delivery's bounce address; the binding's message id. */
export async function sendEmail(
  env: Pick<Env, "EMAIL" | "EMAIL_FROM" | "LINK_SIGNING_KEYS">,
  message: OutgoingEmail,
  delivery: DeliveryIdentity,
): Promise<string> {
  if (!env.EMAIL || !env.EMAIL_FROM) throw new Error("no email sender configured");
  const bounce = await mintBounceAddress(env.LINK_SIGNING_KEYS, env.EMAIL_FROM, delivery);
  const { from, headers, attachments, replyTo, ...content } = message;
  const result = await env.EMAIL.send({
    from: from ?? env.EMAIL_FROM,
    ...content,
    ...(replyTo ? { replyTo } : {}),
    ...(attachments?.length ? { attachments } : {}),
    headers: { ...headers, [BOUNCE_HEADER]: `<${bounce}>` },
  });
  return result.messageId;
}
