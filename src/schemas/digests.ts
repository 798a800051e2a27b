// GET /v1/digests: the company's digests (docs/reminders.md, "Digests").
import { z } from "@hono/zod-openapi";
import { DIGEST_STATES } from "../company-clock/api";
import { cleanText, idQuery, keysetPageQuery } from "../lib/schemas";
import { isCalendarDate } from "../lib/time";

export const MAX_DIGEST_PAGE = 200;

export const ListDigestsQuery = z.object({
  contact_id: idQuery("contact_id").openapi({ description: "Only this contact's digests" }),
  state: z
    .enum(DIGEST_STATES, { error: `state must be one of: ${DIGEST_STATES.join(", ")}` })
    .optional()
    .openapi({ param: { name: "state", in: "query" }, description: "Only digests in this state" }),
  since: cleanText("since")
    .max(10, { error: "since must be a date YYYY-MM-DD" })
    .refine(isCalendarDate, { error: "since must be a real calendar date YYYY-MM-DD" })
    .optional()
    .openapi({
      param: { name: "since", in: "query" },
      description: "Digests of this local day (the company's time zone) or later",
      example: "2026-11-30",
    }),
  ...keysetPageQuery(MAX_DIGEST_PAGE),
});
export type ListDigestsInput = z.infer<typeof ListDigestsQuery>;

export const DigestSchema = z
  .object({
    contact: z.object({
      contact_id: z.number().int().openapi({ example: 42 }),
      name: z.string().nullable().openapi({ example: "Ada Lovelace", description: "null: the contact was deleted" }),
    }),
    kind: z.enum(["daily", "weekly"]),
    period: z.string().openapi({
      example: "2026-W49",
      description:
        "The period the digest covers: the local day (daily, YYYY-MM-DD) or the ISO week (weekly, YYYY-Www). One digest per contact and period.",
    }),
    date: z.string().openapi({ example: "2026-11-30", description: "The local day it was made for" }),
    state: z.enum(DIGEST_STATES).openapi({
      description:
        "pending: waiting for its (next) attempt; sent: handed to the email provider; bounced / complained: a " +
        "delivery status notification or a complaint came back for it (docs/bounces.md); empty: nothing to list, " +
        "not sent; suppressed: stopped by the send gate (unsubscribed, bounced, complained, channel_declined, " +
        "address_suppressed: `reason` says which); no_recipient: the contact has no email address or was deleted; " +
        "skipped: the contact turned its digest off before it went; failed: every attempt failed",
    }),
    items: z
      .number()
      .int()
      .nullable()
      .openapi({ example: 4, description: "How many items it listed (sent), 0 (empty); null otherwise" }),
    recipient: z.string().nullable().openapi({ example: "ada@example.com" }),
    message_id: z.string().nullable().openapi({ description: "The email provider's message id (sent)" }),
    reason: z.string().nullable().openapi({ description: "Why it was not sent, or the last failed attempt's error" }),
    attempts: z.number().int().openapi({ example: 1 }),
    created_at: z.string().openapi({ example: "2026-11-30T07:00:00.120Z", description: "When it was planned" }),
    at: z.string().openapi({ example: "2026-11-30T07:00:01.480Z", description: "When its state was reached" }),
  })
  .openapi("Digest");
export type Digest = z.infer<typeof DigestSchema>;

export const DigestPage = z
  .object({
    success: z.literal(true),
    data: z.array(DigestSchema),
    meta: z.object({
      limit: z.number().int(),
      next_cursor: z
        .string()
        .nullable()
        .openapi({ description: "Pass as `cursor` for the next page; null on the last page" }),
    }),
  })
  .openapi("DigestPage");
