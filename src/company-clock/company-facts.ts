// What a message needs to know of the company sending it, read from D1 inside each engine's own batch
// (reminder deliveries, digests, channel messages): one statement, one parse.

import { DEFAULT_TIME_ZONE, dateFormatOr, type DateFormat } from "../lib/time";
import type { ReminderTemplateTexts } from "./reminder-email";

/** Binds the company id. */
export const COMPANY_SENDER_SQL =
  "SELECT name, json_extract(settings, '$.timezone') AS timezone, json_extract(settings, '$.date_format') AS date_format, " +
  "json_extract(settings, '$.reply_to') AS reply_to, json_extract(settings, '$.language') AS language FROM companies WHERE id = ?";

export interface CompanySender {
  name: string;
  timezone: string;
  dateFormat: DateFormat;
  /** `settings.language`, null when not set. */
  language: string | null;
  /** `settings.reply_to`, null when not set or empty. */
  replyTo: string | null;
}

/** The row of COMPANY_SENDER_SQL (undefined when the company is gone) as a CompanySender. */
export function senderOf(row: Record<string, unknown> | undefined): CompanySender {
  return {
    name: typeof row?.name === "string" ? row.name : "",
    timezone: typeof row?.timezone === "string" && row.timezone ? row.timezone : DEFAULT_TIME_ZONE,
    dateFormat: dateFormatOr(row?.date_format),
    language: typeof row?.language === "string" ? row.language : null,
    replyTo: typeof row?.reply_to === "string" && row.reply_to ? row.reply_to : null,
  };
}

/** Binds the company id: its reminder templates (at most one per supported language). */
export const COMPANY_TEMPLATES_SQL =
  "SELECT language, subject, intro, footer FROM reminder_templates WHERE company_id = ?";

/** The rows of COMPANY_TEMPLATES_SQL by language. */
export function templatesOf(rows: Array<Record<string, unknown>>): Map<string, ReminderTemplateTexts> {
  return new Map(
    (rows as unknown as Array<ReminderTemplateTexts & { language: string }>).map(({ language, ...texts }) => [
      language,
      texts,
    ]),
  );
}
