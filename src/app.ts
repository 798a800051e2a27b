import type { Context } from "hono";
import type { AppBindings } from "./env";
import { COMPOSED_HANDLER } from "hono/utils/constants";
import { authenticate } from "./auth/middleware";
import { requestGuard } from "./lib/body";
import { rateLimits } from "./lib/rate-limit";
import { requestContext } from "./lib/request-context";
import { echo } from "./lib/echo";
import { apiError, renderError } from "./lib/errors";
import { createRouter } from "./lib/openapi";
import { buildOpenApiDocument } from "./openapi-document";
import { auditLogRouter } from "./routes/audit-log/routes";
import { calendarFeedsRouter } from "./routes/calendar-feeds/routes";
import { contactGroupsRouter } from "./routes/contact-groups/routes";
import { companiesRouter } from "./routes/companies/routes";
import { contactsRouter } from "./routes/contacts/routes";
import { departmentsRouter } from "./routes/departments/routes";
import { discoveryRouter } from "./routes/discovery";
import { DOCS_PATH, OPENAPI_PATH, docsPage } from "./routes/docs";
import { documentTypesRouter } from "./routes/document-types/routes";
import { driveRouter } from "./routes/drive/routes";
import { exportsRouter } from "./routes/exports/routes";
import { foldersRouter } from "./routes/folders/routes";
import { itemActionsRouter } from "./routes/items/actions";
import { itemsRouter } from "./routes/items/routes";
import { reminderSequencesRouter } from "./routes/reminder-sequences/routes";
import { reminderTemplatesRouter } from "./routes/reminder-templates/routes";
import { tagsRouter } from "./routes/tags/routes";
import { remindersRouter } from "./routes/reminders/routes";
import { deliveriesRouter } from "./routes/deliveries/routes";
import { digestsRouter } from "./routes/digests/routes";
import { tasksRouter } from "./routes/tasks/routes";
import { webhookDeliveriesRouter } from "./routes/webhooks/deliveries";
import { webhooksRouter } from "./routes/webhooks/routes";
import { importsRouter } from "./routes/imports/routes";
import { oauthRouter } from "./routes/oauth";
import { isRecipientPath, recipientErrorPage, recipientPagesRouter } from "./routes/recipient-pages/routes";
import { unsubscribeRouter } from "./routes/unsubscribe/routes";
import { systemRouter } from "./routes/system";

export const app = createRouter();

// Before every router: the request id and log line, the anonymous rate limit (bearer calls of
// authenticated operations are counted by their route, or as anonymous when the token fails), then
// URL and body limits, charset and strict UTF-8 (src/lib/body.ts).
app.use("*", requestContext());
app.use("*", rateLimits(authenticatesBearer));
app.use("*", requestGuard());

app.route("/", systemRouter);
app.route("/", oauthRouter);
app.route("/", discoveryRouter);
// Before the contacts and items routers: /v1/{contacts,items}/export must not reach /{id}.
app.route("/", exportsRouter);
app.route("/", contactsRouter);
app.route("/", contactGroupsRouter);
app.route("/", companiesRouter);
app.route("/", departmentsRouter);
app.route("/", documentTypesRouter);
app.route("/", itemsRouter);
app.route("/", itemActionsRouter);
app.route("/", reminderSequencesRouter);
app.route("/", reminderTemplatesRouter);
app.route("/", foldersRouter);
app.route("/", tagsRouter);
app.route("/", remindersRouter);
app.route("/", deliveriesRouter);
app.route("/", digestsRouter);
app.route("/", tasksRouter);
app.route("/", driveRouter);
app.route("/", webhooksRouter);
app.route("/", importsRouter);
app.route("/", auditLogRouter);
app.route("/", webhookDeliveriesRouter);
app.route("/", calendarFeedsRouter);
// The pages the links of reminder emails open (HTML for people, not operations of the document).
app.route("/", recipientPagesRouter);
// The unsubscribe link of every reminder email and the preferences page behind it (RFC 8058).
app.route("/", unsubscribeRouter);

let openApiDocument: ReturnType<typeof buildOpenApiDocument> | undefined;
app.get(OPENAPI_PATH, (c) => {
  openApiDocument ??= buildOpenApiDocument(app);
  return c.json(openApiDocument);
});
// The API reference page (HTML, not an operation of the document); its script is a static asset.
app.get(DOCS_PATH, docsPage);

// Path patterns of every registered route, for telling 405 from 404 (built on first miss).
let routeTable: Array<{ pattern: RegExp; method: string }> | undefined;
// `/v1/contacts/:contact_id` -> `^/v1/contacts/[^/]+$`: literal parts match exactly (`.` too), a
// regex parameter (`:token{[A-Za-z0-9_-]+\.ics}`) by its regex, and no optional trailing slash, since Hono
// routes strictly (`/v1/contacts/` is another path).
function routePattern(path: string): RegExp {
  const parts = path
    .split(/(:[^/]+)/)
    .map((part) =>
      part.startsWith(":")
        ? `(?:${/^:[^{]+\{(.+)\}$/.exec(part)?.[1] ?? "[^/]+"})`
        : part.replace(/[.*+?^$()|[\]{}\\]/g, "\\$&"),
    );
  return new RegExp(`^${parts.join("")}$`);
}
function methodsFor(path: string): string[] {
  routeTable ??= app.routes
    .filter((r) => r.method !== "ALL")
    .map((r) => ({ method: r.method, pattern: routePattern(r.path) }));
  const methods = new Set(routeTable.filter((r) => r.pattern.test(path)).map((r) => r.method));
  if (methods.has("GET")) methods.add("HEAD");
  return [...methods];
}

// Operations that authenticate a bearer token (their route runs `authenticate`): a bearer request to
// one of them is rate-limited once its token is judged, any other request as its address's.
let bearerTable: Array<{ pattern: RegExp; method: string }> | undefined;
export function authenticatesBearer(method: string, path: string): boolean {
  bearerTable ??= app.routes
    .filter(
      (r) =>
        r.handler === authenticate ||
        (r.handler as unknown as Record<string, unknown>)[COMPOSED_HANDLER] === authenticate,
    )
    .map((r) => ({ method: r.method, pattern: routePattern(r.path) }));
  const wanted = method === "HEAD" ? "GET" : method;
  return bearerTable.some((r) => r.method === wanted && r.pattern.test(path));
}

app.notFound((c: Context<AppBindings>) => {
  const allowed = methodsFor(c.req.path);
  if (allowed.length > 0) {
    throw apiError(
      405,
      `Method ${echo(c.req.method)} is not allowed on ${echo(c.req.path)}; allowed: ${allowed.join(", ")}`,
      {
        Allow: allowed.join(", "),
      },
    );
  }
  throw apiError(404, `No route for ${echo(c.req.method)} ${echo(c.req.path)}`);
});
// The recipient's pages answer every error as a page (a browser shows it), with the error's status and headers.
app.onError((err, c) => (isRecipientPath(c.req.path) ? recipientErrorPage(err, c) : renderError(err, c)));
