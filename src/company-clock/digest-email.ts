// PLACEHOLDER until render-34 lands: the digest email's body. Replaced by the real renderer.
import type { Speech } from "../i18n/language";
import type { RecipientLinks } from "../lib/recipient-links";
import { escapeHtml } from "../lib/html";
import type { DateFormat } from "../lib/time";
import type { ReminderItemType } from "./reminder-email";

export const DIGEST_MAX_ITEMS = 200;
export interface DigestEntry {
  itemId: number;
  title: string;
  itemType: ReminderItemType;
  documentType: string | null;
  expiryDate: string;
  links: RecipientLinks | null;
}
export interface DigestMessageInput {
  speech: Speech;
  kind: "daily" | "weekly";
  today: string;
  dateFormat: DateFormat;
  companyName: string;
  recipientFirstName: string | null;
  recipientLastName: string | null;
  entries: DigestEntry[];
  total?: number;
  preferencesUrl: string | null;
}
export function digestMessage(input: DigestMessageInput): { subject: string; text: string; html: string } {
  const lines = input.entries.map((e) => `${e.title} ${e.expiryDate} ${e.links?.page ?? ""}`);
  return {
    subject: `Your ${input.kind} reminders from ${input.companyName}: ${input.total ?? input.entries.length} items`,
    text: lines.join("\n"),
    html: `<ul>${input.entries.map((e) => `<li>${escapeHtml(e.title)}</li>`).join("")}</ul>`,
  };
}
