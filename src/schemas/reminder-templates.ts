// Company reminder templates (docs/languages.md, "Company templates"): per language, a subject, an
// intro and a footer that replace the reminder email's defaults, with placeholders from one set.
import { z } from "@hono/zod-openapi";
import { cleanText, idField, Timestamp } from "../lib/schemas";
import { LANGUAGES } from "../lib/languages";
import { speechOf } from "../i18n/language";
import { TEMPLATE_PLACEHOLDERS, templateProblem } from "../i18n/template";

export const SUBJECT_TEMPLATE_MAX = 200;
export const INTRO_TEMPLATE_MAX = 2000;
export const FOOTER_TEMPLATE_MAX = 1000;

const PLACEHOLDER_LIST = Object.entries(TEMPLATE_PLACEHOLDERS)
  .map(([name, means]) => `\`{${name}}\` ${means}`)
  .join("; ");

export const PLACEHOLDER_NOTE =
  `Placeholders: ${PLACEHOLDER_LIST}. \`{{\` and \`}}\` write a literal brace. ` +
  "An unknown placeholder or a brace without its pair is 400 naming the field and the placeholder. " +
  "Values are inserted as data: escaped in the HTML part, on one line without control characters in the subject and text.";

const LANGUAGE_LIST = LANGUAGES.join(", ");

/** A supported language as a path parameter: 400 naming `language` otherwise. */
export const LanguageParams = z.object({
  language: z
    .string()
    .refine((value) => (LANGUAGES as readonly string[]).includes(value), {
      error: `language must be one of ${LANGUAGE_LIST}`,
    })
    .openapi({
      param: { name: "language", in: "path" },
      example: "de",
      description: `A supported language (${LANGUAGE_LIST}); a template applies to every tag of that language (pt to pt-BR too)`,
    }),
});

/** A template text: null or absent keeps the default; "" is null. Checked for its placeholders. */
function templateText(field: string, max: number, multiline: boolean) {
  return cleanText(field, { multiline })
    .max(max, { error: `${field} must be at most ${max} characters` })
    .superRefine((value, ctx) => {
      const problem = templateProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: `${field} ${problem}` });
    })
    .nullable()
    .optional();
}

const TemplateFields = {
  subject: templateText("subject", SUBJECT_TEMPLATE_MAX, false).openapi({
    description: `The subject line (one line, at most ${SUBJECT_TEMPLATE_MAX} characters before its placeholders are filled; the filled subject is cut at 200). Null: the default subject.`,
    example: "{item.title}: {item.when} ({item.date})",
  }),
  intro: templateText("intro", INTRO_TEMPLATE_MAX, true).openapi({
    description: `Replaces the greeting and the first sentence (at most ${INTRO_TEMPLATE_MAX} characters; a blank line starts a paragraph). Null: the default greeting and sentence.`,
    example: "Guten Tag {contact.first_name},\n\n{item.title} läuft {item.when} ab.",
  }),
  footer: templateText("footer", FOOTER_TEMPLATE_MAX, true).openapi({
    description: `Replaces the closing line (at most ${FOOTER_TEMPLATE_MAX} characters). Null: the default footer.`,
    example: "Ihr Team von {company.name}",
  }),
};

export const PutTemplateSchema = z
  .strictObject(TemplateFields)
  .refine((t) => Boolean(t.subject || t.intro || t.footer), {
    error: "A template needs at least one of subject, intro and footer (DELETE removes it)",
  })
  .openapi("ReminderTemplateInput");
export type PutTemplateInput = z.infer<typeof PutTemplateSchema>;

export const ReminderTemplateSchema = z
  .object({
    language: z.enum(LANGUAGES).openapi({ example: "de" }),
    subject: z.string().nullable().openapi({ example: "{item.title}: {item.when} ({item.date})" }),
    intro: z.string().nullable().openapi({ example: "Guten Tag {contact.first_name}," }),
    footer: z.string().nullable().openapi({ example: "Ihr Team von {company.name}" }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("ReminderTemplate");
export type ReminderTemplateOutput = z.infer<typeof ReminderTemplateSchema>;

export const ReminderTemplateListEnvelope = z
  .object({
    success: z.literal(true),
    data: z.array(ReminderTemplateSchema),
    meta: z
      .object({
        total: z.number().int().openapi({ example: 1 }),
        languages: z.array(z.enum(LANGUAGES)).openapi({
          example: [...LANGUAGES],
          description: "The supported languages: at most one template each",
        }),
      })
      .openapi("ReminderTemplateListMeta"),
  })
  .openapi("ReminderTemplateList");

export const PreviewTemplateSchema = z
  .strictObject({
    language: z
      .string()
      .max(35, { error: "language must be at most 35 characters" })
      .refine((tag) => speechOf(tag) !== null, {
        error: `language must be a BCP 47 tag of a supported language (${LANGUAGE_LIST}, with or without a region)`,
      })
      .optional()
      .openapi({
        example: "de-AT",
        description:
          "The recipient's language, a BCP 47 tag of a supported language (default: the company's settings.language, else en); a region changes the date formats only",
      }),
    item_id: idField("item_id").optional().openapi({
      description: "An item of the company to render; default: a sample item (a passport, due in 14 days)",
    }),
    ...TemplateFields,
  })
  .openapi("ReminderTemplatePreviewInput");
export type PreviewTemplateInput = z.infer<typeof PreviewTemplateSchema>;

export const ReminderTemplatePreviewSchema = z
  .object({
    language: z.enum(LANGUAGES).openapi({ example: "de" }),
    locale: z.string().openapi({ example: "de-AT", description: "The tag whose Intl formats were used" }),
    template: z.enum(["given", "saved", "default"]).openapi({
      description:
        "Which wording was used: the texts in the request, the company's saved template for the language, or the default",
    }),
    subject: z.string(),
    text: z.string(),
    html: z.string(),
  })
  .openapi("ReminderTemplatePreview");
