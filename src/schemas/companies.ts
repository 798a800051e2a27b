import { z } from "@hono/zod-openapi";
import { DATE_FORMATS, canonicalTimeZone } from "../lib/time";
import { Flag, Timestamp, cleanText, optionalText, requiredText } from "../lib/schemas";
import { LANGUAGES, MAX_LANGUAGE_TAG, supportedLanguageTag } from "../lib/languages";

export const CompanySchema = z
  .object({
    companyid: z.number().int().openapi({ example: 1 }),
    name: z.string().openapi({ example: "Demo Company" }),
    isdefault: Flag.openapi({
      example: 1,
      description: "1 for the account's default company (exactly one per account)",
    }),
    documents_limit: z.number().int().openapi({ example: 10000 }),
    documents_used: z.number().int().openapi({ example: 120, description: "Items the company holds now" }),
    contacts_limit: z.number().int().openapi({ example: 10000 }),
    contacts_used: z.number().int().openapi({ example: 348, description: "Contacts the company holds now" }),
    drive_space_mb: z.number().int().openapi({ example: 10240, description: "Allocated drive space in MB" }),
    drive_space_gb: z
      .number()
      .openapi({ example: 10, description: "The same allocation in GB (MB / 1024, 3 decimals)" }),
    drive_space_used_kb: z
      .number()
      .int()
      .openapi({ example: 5120, description: "Bytes of stored files, in KB (rounded up per file)" }),
    add_date: Timestamp,
  })
  .openapi("Company");

const countryCode = z.number().int().min(0).max(999);

export const CompanyInfoSchema = z
  .object({
    business_name: z.string().optional().openapi({ example: "Demo Company Ltd" }),
    address1: z.string().optional().openapi({ example: "1 Main Street" }),
    address2: z.string().optional().openapi({ example: "Suite 4" }),
    city: z.string().optional().openapi({ example: "Berlin" }),
    state: z.string().optional().openapi({ example: "BE" }),
    zipcode: z.string().optional().openapi({ example: "10115" }),
    id_country: countryCode
      .optional()
      .openapi({ example: 276, description: "ISO 3166-1 numeric country code (276 = Germany); 0 = not set" }),
    id_industry: z.number().int().optional().openapi({
      example: 7,
      description: "Industry code, see the Company profile codes in docs/api-notes.md; 0 = not set",
    }),
    id_size: z
      .number()
      .int()
      .optional()
      .openapi({ example: 2, description: "Company size band (1: 1-10 … 7: 5001+ employees); 0 = not set" }),
    phone: z.string().optional().openapi({ example: "+49 30 1234567" }),
    email: z.string().optional().openapi({ example: "office@demo.example" }),
    website: z.string().optional().openapi({ example: "https://demo.example" }),
  })
  .openapi("CompanyInfo", { description: "Profile fields that have been set; an empty object for a new company" });

export const CompanySettingsSchema = z
  .object({
    timezone: z.string().openapi({ example: "Europe/Berlin", description: "IANA time zone; reminders fire in it" }),
    date_format: z.enum(DATE_FORMATS).openapi({ example: "DD.MM.YYYY" }),
    reply_to: z.string().nullable().openapi({
      example: "office@demo.example",
      description: "The Reply-To of the company's reminder emails; null: none (replies go nowhere useful)",
    }),
    language: z.string().openapi({
      example: "en",
      description: "BCP 47 language of emails and pages for contacts without their own (default en)",
    }),
    digest_hour: z.string().openapi({
      example: "08:00",
      description:
        "HH:MM in the company's time zone at which contacts' daily and weekly digests are sent (default 08:00; GET /v1/digests)",
    }),
  })
  .openapi("CompanySettings");

export const CompanyDetailSchema = z
  .object({ company: CompanySchema, info: CompanyInfoSchema, settings: CompanySettingsSchema })
  .openapi("CompanyDetail");

export const CompanyListEnvelope = z
  .object({
    success: z.literal(true),
    data: z.array(CompanySchema),
    meta: z.object({
      limits: z
        .object({
          companies: z.number().int().openapi({ example: 10 }),
          documents: z.number().int().openapi({ example: 100000 }),
          contacts: z.number().int().openapi({ example: 100000 }),
          drive_space_mb: z.number().int().openapi({ example: 102400 }),
        })
        .openapi({ description: "The account's ceilings" }),
      used: z
        .object({
          companies: z.number().int().openapi({ example: 2 }),
          documents_allocated: z.number().int().openapi({ example: 11000 }),
          contacts_allocated: z.number().int().openapi({ example: 11000 }),
          drive_space_allocated_mb: z.number().int().openapi({ example: 11264 }),
        })
        .openapi({ description: "What the account's companies have been allocated (sums of their limits)" }),
    }),
  })
  .openapi("CompanyList");

/** "x is required" for a missing field, `message` for a value of the wrong type. */
const typeError = (field: string, message: string) => (issue: { input?: unknown }) =>
  issue.input === undefined ? `${field} is required` : message;

/** Counts a company may be given: whole numbers from 0 to 100 million. */
const quota = (field: string) =>
  z
    .number({ error: typeError(field, `${field} must be a number`) })
    .int({ error: `${field} must be an integer` })
    .min(0, { error: `${field} must be at least 0` })
    .max(100_000_000, { error: `${field} must be at most 100000000` });

export const MAX_DRIVE_SPACE_GB = 1_000_000;

const timezone = cleanText("timezone")
  .max(64, { error: "timezone must be at most 64 characters" })
  .transform((value, ctx) => {
    const zone = canonicalTimeZone(value);
    if (zone) return zone;
    ctx.addIssue({
      code: "custom",
      message: `timezone must be an IANA time zone name such as Europe/Berlin (got an unknown zone)`,
    });
    return z.NEVER;
  })
  .openapi({
    type: "string",
    example: "Europe/Berlin",
    description: "An IANA time zone the runtime knows (e.g. America/New_York, UTC); UTC offsets " + "are refused",
  });

const dateFormat = z.enum(DATE_FORMATS, { error: `date_format must be one of: ${DATE_FORMATS.join(", ")}` });

const companyFields = {
  company_name: requiredText("company_name", 100).openapi({ example: "Demo Branch" }),
  documents_limit: quota("documents_limit").openapi({ example: 1000, description: "Most items the company may hold" }),
  contacts_limit: quota("contacts_limit").openapi({ example: 1000, description: "Most contacts the company may hold" }),
  drive_space: z
    .number({ error: typeError("drive_space", "drive_space must be a number (GB)") })
    .min(0, { error: "drive_space must be at least 0" })
    .max(MAX_DRIVE_SPACE_GB, { error: `drive_space must be at most ${MAX_DRIVE_SPACE_GB} GB` })
    .openapi({ example: 1.5, description: "Drive space in GB; stored in whole MB (GB × 1024, rounded)" }),
};

export const CreateCompanySchema = z
  .strictObject({
    ...companyFields,
    timezone: timezone.optional().openapi({ description: "Extension: the company's time zone (default UTC)" }),
    date_format: dateFormat
      .optional()
      .openapi({ description: "Extension: the company's date format (default YYYY-MM-DD)" }),
  })
  .openapi("CreateCompany");

export const UpdateCompanySchema = z.strictObject(companyFields).openapi("UpdateCompany");

const profileText = (field: string, max = 200) => optionalText(field, max);
const code = (field: string, max: number) =>
  z
    .number({ error: typeError(field, `${field} must be an integer`) })
    .int({ error: `${field} must be an integer` })
    .min(0, { error: `${field} must be from 0 (not set) to ${max}` })
    .max(max, { error: `${field} must be from 0 (not set) to ${max}` });

export const INDUSTRY_CODES = 20;
export const SIZE_BANDS = 7;

export const UpdateCompanyInfoSchema = z
  .strictObject({
    business_name: profileText("business_name"),
    address1: profileText("address1"),
    address2: profileText("address2"),
    city: profileText("city", 100),
    state: profileText("state", 100),
    zipcode: profileText("zipcode", 20),
    id_country: code("id_country", 999)
      .optional()
      .openapi({ description: "ISO 3166-1 numeric country code; 0 = not set" }),
    id_industry: code("id_industry", INDUSTRY_CODES)
      .optional()
      .openapi({ description: "Industry code 1-20 (docs/api-notes.md); 0 = not set" }),
    id_size: code("id_size", SIZE_BANDS)
      .optional()
      .openapi({ description: "Size band 1-7 (docs/api-notes.md); 0 = not set" }),
    phone: profileText("phone", 40),
    email: profileText("email", 254).refine((v) => !v || /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v), {
      error: "email must be a valid email address",
    }),
    website: profileText("website", 255).refine((v) => !v || /^https?:\/\/[^\s]+$/i.test(v), {
      error: "website must be an http(s) URL",
    }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateCompanyInfo");

export const CompanyInfoResultSchema = z
  .object({
    companyid: z.number().int(),
    business_name: z.string(),
    city: z.string(),
    id_country: z.number().int(),
    id_industry: z.number().int(),
    id_size: z.number().int(),
  })
  .openapi("CompanyInfoResult");

const replyTo = cleanText("reply_to")
  .max(254, { error: "reply_to must be at most 254 characters" })
  .email({ error: "reply_to must be a valid email address" })
  .nullable()
  .openapi({
    type: "string",
    example: "office@demo.example",
    description: "The Reply-To of the company's reminder emails; null removes it",
  });
const settingsLanguage = cleanText("language")
  .max(MAX_LANGUAGE_TAG, { error: `language must be at most ${MAX_LANGUAGE_TAG} characters` })
  .transform((value, ctx) => {
    const tag = supportedLanguageTag(value);
    if (tag) return tag;
    ctx.addIssue({
      code: "custom",
      message: `language must be a BCP 47 tag in one of the supported languages: ${LANGUAGES.join(", ")}`,
    });
    return z.NEVER;
  })
  .openapi({ type: "string", example: "de", description: `One of ${LANGUAGES.join(", ")}, region allowed (pt-BR)` });
const digestHour = z
  .string({ error: "digest_hour must be a time HH:MM" })
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "digest_hour must be a time HH:MM from 00:00 to 23:59" })
  .openapi({ example: "08:00", description: "HH:MM, 24-hour, in the company's time zone" });

export const UpdateCompanySettingsSchema = z
  .strictObject({
    timezone: timezone.optional(),
    date_format: dateFormat.optional(),
    reply_to: replyTo.optional(),
    language: settingsLanguage.optional(),
    digest_hour: digestHour.optional(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateCompanySettings");

export type CompanyOutput = z.infer<typeof CompanySchema>;
export type CompanyInfo = z.infer<typeof CompanyInfoSchema>;
export type CompanySettings = z.infer<typeof CompanySettingsSchema>;
export type CompanyDetail = z.infer<typeof CompanyDetailSchema>;
export type CreateCompanyInput = z.infer<typeof CreateCompanySchema>;
export type UpdateCompanyInput = z.infer<typeof UpdateCompanySchema>;
export type UpdateCompanyInfoInput = z.infer<typeof UpdateCompanyInfoSchema>;
export type UpdateCompanySettingsInput = z.infer<typeof UpdateCompanySettingsSchema>;
