// Company reminder templates (docs/languages.md, "Company templates"; docs/api-notes.md): the
// reminder email's subject, intro and footer per language, and a preview of the email they make.
import { reminderMessage, type ReminderTemplateTexts } from "../../company-clock/reminder-email";
import { speechFor } from "../../i18n/language";
import { LANGUAGES, type Language, primaryLanguage } from "../../lib/languages";
import {
  MessageEnvelope,
  createRouter,
  dataEnvelope,
  jsonBody,
  jsonResponse,
  resultEnvelope,
  scopedRoute,
} from "../../lib/openapi";
import { echo } from "../../lib/echo";
import { apiError } from "../../lib/errors";
import { created, done, ok, updated } from "../../lib/respond";
import { addDays, todayIn } from "../../lib/time";
import {
  deleteTemplate,
  getTemplate,
  listTemplates,
  previewFacts,
  putTemplate,
  templateOutput,
} from "../../records/reminder-templates";
import {
  LanguageParams,
  PLACEHOLDER_NOTE,
  PreviewTemplateSchema,
  PutTemplateSchema,
  ReminderTemplateListEnvelope,
  ReminderTemplatePreviewSchema,
  ReminderTemplateSchema,
} from "../../schemas/reminder-templates";

const tags = ["Reminder templates"];
const TemplateResult = resultEnvelope(ReminderTemplateSchema, "ReminderTemplateResult");

const SCOPE_NOTE =
  "Reading needs `items:read`, writing `items:write`: the same scopes as the reminder sequences, the " +
  "other half of how a company's reminders go out.";
const APPLIES =
  "A reminder email uses the template of its recipient's language (the contact's `language`, else the company's " +
  "`settings.language`, else en; a tag with a region uses its base language's template): the subject replaces the " +
  "subject, the intro the greeting and first sentence, the footer the closing line; the item's details, what to do, " +
  "the recipient's links and the notes always stay. A text left null keeps the default wording. The clock reads the " +
  "templates once per batch of deliveries, so a change applies to emails sent from then on.";

export const reminderTemplatesRouter = createRouter();

// `preview` is no language: its other methods are 405, not the {language} routes' 400 for "preview".
reminderTemplatesRouter.use("/v1/reminder-templates/preview", async (c, next) => {
  if (c.req.method === "POST") return next();
  throw apiError(405, `Method ${echo(c.req.method)} is not allowed on /v1/reminder-templates/preview; allowed: POST`, {
    Allow: "POST",
  });
});

reminderTemplatesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/reminder-templates",
    operationId: "listReminderTemplates",
    scope: "items:read",
    tags,
    summary: "List reminder templates",
    description: `Extension. The company's templates, by language: at most one per supported language (${LANGUAGES.join(", ")}), so there is no pagination. ${SCOPE_NOTE}`,
    responses: { 200: jsonResponse(ReminderTemplateListEnvelope, "The company's reminder templates") },
  }),
  async (c) => {
    const rows = await listTemplates(c.var.db, c.var.companyId);
    return c.json(
      {
        success: true as const,
        data: rows.map(templateOutput),
        meta: { total: rows.length, languages: [...LANGUAGES] },
      },
      200,
    );
  },
);

reminderTemplatesRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/reminder-templates/preview",
    operationId: "previewReminderTemplate",
    scope: "items:read",
    tags,
    summary: "Preview a reminder email",
    description:
      "Extension. Renders the reminder email (subject, text and HTML) as a recipient of `language` would get it, " +
      "without sending or saving anything. The wording: `subject`, `intro` and `footer` when the body gives any " +
      "(checked as PUT checks them), else the company's saved template for the language, else the default. The item: " +
      "`item_id` (another company's is 404), else a sample: a passport of Ada Lovelace expiring 14 days after the " +
      "company's today. The links are examples on this origin (`/r/preview…`), not working links. " +
      `${PLACEHOLDER_NOTE} Needs \`items:read\` (it reads and changes nothing).`,
    request: { body: jsonBody(PreviewTemplateSchema) },
    responses: {
      200: jsonResponse(resultEnvelope(ReminderTemplatePreviewSchema, "ReminderTemplatePreviewResult"), "The email"),
    },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const facts = await previewFacts(c.var.db, c.var.companyId, body.item_id);
    const speech = speechFor(body.language, facts.company.language);
    const given = body.subject !== undefined || body.intro !== undefined || body.footer !== undefined;
    const saved = facts.templates.find((t) => t.language === speech.language);
    const template: ReminderTemplateTexts | null = given
      ? { subject: body.subject ?? null, intro: body.intro ?? null, footer: body.footer ?? null }
      : saved
        ? { subject: saved.subject, intro: saved.intro, footer: saved.footer }
        : null;
    const today = todayIn(facts.company.timeZone);
    const item = facts.item ?? {
      id: 1,
      title: "Ada Lovelace",
      itemType: "exp" as const,
      expiryDate: addDays(today, 14),
      notes: null,
      documentType: "Passport",
      firstName: "Ada",
      lastName: "Lovelace",
    };
    const origin = new URL(c.req.url).origin;
    const link = (path: string) => `${origin}/r/preview${path}`;
    const message = reminderMessage({
      companyName: facts.company.name,
      itemTitle: item.title,
      itemType: item.itemType,
      documentType: item.documentType,
      expiryDate: item.expiryDate,
      today,
      dateFormat: facts.company.dateFormat,
      recipientName: [item.firstName, item.lastName].filter(Boolean).join(" ") || null,
      recipientFirstName: item.firstName,
      recipientLastName: item.lastName,
      itemId: item.id,
      notes: item.notes,
      links: {
        page: link(""),
        acknowledge: link("/acknowledge"),
        complete: link("/complete"),
        renew: link("/renew"),
        snooze: link("/snooze"),
      },
      speech,
      template,
    });
    return updated(c, "Reminder email rendered (nothing was sent or saved)", {
      language: speech.language,
      locale: speech.tag,
      template: given ? ("given" as const) : saved ? ("saved" as const) : ("default" as const),
      ...message,
    });
  },
);

reminderTemplatesRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/reminder-templates/{language}",
    operationId: "getReminderTemplate",
    scope: "items:read",
    tags,
    summary: "Get a reminder template",
    description: `Extension. The company's template for one language; none is 404. ${SCOPE_NOTE}`,
    request: { params: LanguageParams },
    responses: { 200: jsonResponse(dataEnvelope(ReminderTemplateSchema, "ReminderTemplateEnvelope"), "The template") },
  }),
  async (c) => {
    const row = await getTemplate(c.var.db, c.var.companyId, language(c.req.valid("param").language));
    return ok(c, templateOutput(row));
  },
);

reminderTemplatesRouter.openapi(
  scopedRoute({
    method: "put",
    path: "/v1/reminder-templates/{language}",
    operationId: "putReminderTemplate",
    scope: "items:write",
    tags,
    summary: "Create or replace a reminder template",
    description:
      "Extension. Sets the company's subject, intro and footer for one language, replacing the whole template " +
      "(a text absent or null keeps the default wording; at least one is needed). 201 when the language had none, " +
      `200 when it replaced one. ${PLACEHOLDER_NOTE} ${APPLIES} ${SCOPE_NOTE}`,
    request: { params: LanguageParams, body: jsonBody(PutTemplateSchema) },
    responses: {
      200: jsonResponse(TemplateResult, "Template replaced"),
      201: jsonResponse(TemplateResult, "Template created"),
    },
  }),
  async (c) => {
    const { row, created: isNew } = await putTemplate(
      c.var.db,
      c.var.companyId,
      language(c.req.valid("param").language),
      c.req.valid("json"),
    );
    return isNew
      ? created(c, "Reminder template created", templateOutput(row))
      : updated(c, "Reminder template updated", templateOutput(row));
  },
);

reminderTemplatesRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/reminder-templates/{language}",
    operationId: "deleteReminderTemplate",
    scope: "items:write",
    tags,
    summary: "Delete a reminder template",
    description: `Extension. Emails in that language go back to the default wording. None is 404. ${SCOPE_NOTE}`,
    request: { params: LanguageParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Template deleted") },
  }),
  async (c) => {
    await deleteTemplate(c.var.db, c.var.companyId, language(c.req.valid("param").language));
    return done(c, "Reminder template deleted");
  },
);

/** The path's language, checked by its schema. */
function language(value: string): Language {
  if (primaryLanguage(value) !== value) throw new Error(`unsupported language ${value}`);
  return value as Language;
}
