import { z } from "@hono/zod-openapi";
import { isSupportedCountry } from "libphonenumber-js/min";
import {
  Timestamp,
  cleanText,
  idField,
  idQuery,
  integerString,
  nullableEnum,
  optionalText,
  paginationQuery,
  requiredText,
  searchPageEnvelope,
  searchQuery,
} from "../lib/schemas";
import { CONTACT_CHANNELS, DIGESTS, EMAIL_STATUSES, WEEKDAYS } from "../lib/contact-preferences";
import { LANGUAGES, MAX_LANGUAGE_TAG, supportedLanguageTag } from "../lib/languages";

export const ContactSchema = z
  .object({
    contact_id: z.number().int().openapi({ example: 42 }),
    firstname: z.string().openapi({ example: "Ada" }),
    lastname: z.string().openapi({ example: "Lovelace" }),
    email: z.string().openapi({ example: "ada@example.com" }),
    groupid: z.number().int().openapi({ example: 3, description: "0 when the contact is in no group" }),
    deptid: z.number().int().openapi({ example: 1 }),
    country_code: z.string().openapi({ example: "+44" }),
    mobile_code: z.string().openapi({ example: "+44" }),
    phone_number: z.string().openapi({ example: "7700900123" }),
    iso: z.string().openapi({ example: "GB" }),
    add_date: Timestamp,
    email_status: z.enum(EMAIL_STATUSES).openapi({
      example: "active",
      description:
        "Whether reminder emails go to the contact: only `active` is mailed; the others' deliveries are " +
        "`suppressed`. Read-only: `unsubscribed` is set by the contact's one-click unsubscribe, and only " +
        "the contact can undo it, from the page of its email's unsubscribe link (docs/api-notes.md, " +
        '"Unsubscribe and re-subscription"). Changing `email` resets `bounced` and `complained` to ' +
        "`active` (they belong to the old address); `unsubscribed` stays.",
    }),
    email_status_changed_at: z.string().nullable().openapi({
      example: "2026-11-27T09:30:00.000Z",
      description: "When email_status last changed (RFC 3339, UTC); null while it never changed",
    }),
    language: z.string().nullable().openapi({
      example: "pt-BR",
      description: "BCP 47 language of the contact's emails and pages; null = the company's settings.language",
    }),
    digest: z.enum(DIGESTS).openapi({
      example: "off",
      description:
        "daily or weekly: one email per day (or week, on digest_weekday) at the company's settings.digest_hour, " +
        "listing the contact's pending items due within 30 days or overdue; its single reminder emails are folded " +
        "into it (except steps marked always). off: every reminder on its own",
    }),
    digest_weekday: nullableEnum(WEEKDAYS).openapi({
      example: "monday",
      description: "The day of a weekly digest; set exactly when digest is weekly, else null",
    }),
    channels: z
      .array(z.enum(CONTACT_CHANNELS))
      .nullable()
      .openapi({
        example: ["email"],
        description:
          "The reminder channels the contact wants: email, sms, chat (team chats: reminders about this " +
          "contact posted to the company's channel endpoints, /v1/channels); null = every channel",
      }),
  })
  .openapi("Contact");

/** A BCP 47 tag in a supported language, canonical, or null (the company's settings.language); channels share it. */
export const languageInput = cleanText("language")
  .max(MAX_LANGUAGE_TAG, { error: `language must be at most ${MAX_LANGUAGE_TAG} characters` })
  .transform((value, ctx) => {
    const tag = supportedLanguageTag(value);
    if (tag) return tag;
    ctx.addIssue({
      code: "custom",
      message: `language must be a BCP 47 tag in one of the supported languages: ${LANGUAGES.join(", ")} (e.g. de or pt-BR)`,
    });
    return z.NEVER;
  })
  .nullable()
  .openapi({
    type: "string",
    example: "de",
    description:
      `BCP 47 tag whose primary language is one of ${LANGUAGES.join(", ")}; kept in its canonical form, ` +
      "region included (pt-br → pt-BR). null: follow the company's settings.language.",
  });
const digest = z
  .enum(DIGESTS, { error: `digest must be one of: ${DIGESTS.join(", ")}` })
  .openapi({ description: "off (default), daily or weekly (weekly needs digest_weekday)" });
const digestWeekday = z
  .enum(WEEKDAYS, { error: `digest_weekday must be one of: ${WEEKDAYS.join(", ")}` })
  .openapi({ description: "The day of a weekly digest; only with digest weekly" });
const channels = z
  .array(z.enum(CONTACT_CHANNELS, { error: `channels must hold only: ${CONTACT_CHANNELS.join(", ")}` }), {
    error: "channels must be an array of channel names, or null",
  })
  .min(1, { error: "channels must name at least one channel (null: every channel)" })
  .max(CONTACT_CHANNELS.length, { error: `channels must hold at most ${CONTACT_CHANNELS.length} names` })
  .refine((list) => new Set(list).size === list.length, { error: "channels must not repeat a channel" })
  .nullable()
  .openapi({
    description:
      "The reminder channels the contact wants, among those this deployment delivers (400 otherwise): " +
      "email, sms, and chat (team chats: reminders about this contact posted to the company's channel " +
      "endpoints, /v1/channels; always accepted). A list without chat: those deliveries are suppressed " +
      "(channel_declined). null: every channel.",
  });

const preferenceFields = {
  language: languageInput.optional(),
  digest: digest.optional(),
  digest_weekday: digestWeekday.optional(),
  channels: channels.optional(),
};

/** digest_weekday goes with digest weekly: required with it, refused with off and daily. */
function weekdayFitsDigest(value: { digest?: string; digest_weekday?: string }, ctx: z.RefinementCtx) {
  if (value.digest === "weekly" && value.digest_weekday === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["digest_weekday"],
      message: "digest_weekday is required when digest is weekly",
    });
  }
  if (value.digest !== undefined && value.digest !== "weekly" && value.digest_weekday !== undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["digest_weekday"],
      message: `digest_weekday is only allowed with digest weekly (digest is ${value.digest})`,
    });
  }
}

const email = cleanText("email")
  .max(254, { error: "email must be at most 254 characters" })
  .email({ error: "email must be a valid email address" })
  .openapi({ example: "ada@example.com" });

const countryCode = optionalText("country_code", 8).openapi({
  example: "+44",
  description: "International dialling code; only together with iso.",
});
const iso = z
  .string()
  .trim()
  .regex(/^([A-Za-z]{2,3})?$/, { error: "iso must be a 2- or 3-letter country code" })
  .optional()
  .openapi({ example: "GB", description: "ISO 3166-1 country code; only together with country_code." });

const groupId = z
  .number()
  .int({ error: "groupid must be an integer" })
  .min(0, { error: "groupid must be 0 (no group) or a group id" })
  .max(Number.MAX_SAFE_INTEGER, { error: "groupid is too large" });

/** `country_code` and `iso` describe the same country: both or neither. */
function bothOrNeither(value: { country_code?: string; iso?: string }, ctx: z.RefinementCtx) {
  const hasCode = !!value.country_code;
  const hasIso = !!value.iso;
  if (hasCode !== hasIso) {
    ctx.addIssue({
      code: "custom",
      path: [hasCode ? "iso" : "country_code"],
      message: `${hasCode ? "iso" : "country_code"} is required when ${hasCode ? "country_code" : "iso"} is given (send both or neither)`,
    });
  }
}

export const CreateContactSchema = z
  .strictObject({
    first_name: requiredText("first_name", 100).openapi({ example: "Ada" }),
    last_name: requiredText("last_name", 100).openapi({ example: "Lovelace" }),
    email,
    deptid: idField("deptid")
      .optional()
      .openapi({ description: "Defaults to the group's department, else the company's default department." }),
    groupid: groupId.optional().openapi({ description: "Defaults to the department's default group; 0 for no group." }),
    country_code: countryCode,
    iso,
    mobile_code: optionalText("mobile_code", 8).openapi({ example: "+44" }),
    phone_number: optionalText("phone_number", 32).openapi({ example: "7700900123" }),
    ...preferenceFields,
  })
  .superRefine(bothOrNeither)
  .superRefine(weekdayFitsDigest)
  .openapi("CreateContact");

export const UpdateContactSchema = z
  .strictObject({
    first_name: requiredText("first_name", 100).optional(),
    last_name: requiredText("last_name", 100).optional(),
    email: email.optional(),
    groupid: groupId
      .optional()
      .openapi({ description: "Moves the contact to this group and its department; 0 removes it from its group." }),
    countryid: z
      .string()
      .trim()
      .refine((v) => isSupportedCountry(v.toUpperCase()), {
        error: "countryid must be an ISO 3166-1 alpha-2 country code, e.g. US",
      })
      .optional()
      .openapi({
        example: "GB",
        description:
          "ISO 3166-1 alpha-2 code; sets iso to it and country_code to its dialling code " + "(e.g. GB gives +44).",
      }),
    country_code: countryCode,
    iso,
    mobile_code: optionalText("mobile_code", 8),
    phone_number: optionalText("phone_number", 32),
    ...preferenceFields,
  })
  .superRefine((value, ctx) => {
    if (Object.values(value).every((v) => v === undefined)) {
      ctx.addIssue({ code: "custom", path: [], message: "No updatable fields provided" });
      return;
    }
    if (value.countryid !== undefined && (value.country_code !== undefined || value.iso !== undefined)) {
      ctx.addIssue({
        code: "custom",
        path: ["countryid"],
        message: "countryid cannot be combined with country_code or iso",
      });
      return;
    }
    bothOrNeither(value, ctx);
    weekdayFitsDigest(value, ctx);
  })
  .openapi("UpdateContact");

export const ListContactsQuery = z.object({
  ...paginationQuery(200, 50),
  groupid: integerString("groupid must be 0 (contacts in no group) or a group id", 0)
    .optional()
    .openapi({ param: { name: "groupid", in: "query" }, description: "A group id, or 0 for contacts in no group." }),
  deptid: idQuery("deptid"),
  q: searchQuery.openapi({
    description:
      "Word-prefix search over first name, last name, email and phone number; every " +
      "word must match (case- and accent-insensitive).",
  }),
});

export const ContactListEnvelope = searchPageEnvelope(ContactSchema, "ContactList");

export type ContactOutput = z.infer<typeof ContactSchema>;
export type CreateContactInput = z.infer<typeof CreateContactSchema>;
export type UpdateContactInput = z.infer<typeof UpdateContactSchema>;
export type ListContactsInput = z.infer<typeof ListContactsQuery>;
