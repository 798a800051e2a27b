// The recipient's pages (docs/recipient-journey.md): where the links of a reminder email lead.
//
//   GET  /r/{token}            the item, its state and its actions (plain forms)
//   GET  /r/{token}/{action}   the same page with one action's form: a one-button confirmation
//   POST /r/{token}            form field `action` = acknowledge | complete | renew (+ date) | snooze (+ until)
//   POST /r/{token}/{action}   the same, the path naming the action when the form does not
//
// The token in the URL is the credential (src/lib/recipient-links.ts). GET never changes anything:
// mail scanners and link previews fetch every link. HTML for people, not operations of the OpenAPI
// document. Every answer, errors included, is a page with the same strict headers (html.ts); every
// token costs the same work, and every link that does not work gets the same page, status and headers.
import type { Context } from "hono";
import type { AppBindings } from "../../env";
import { syncReminders } from "../../company-clock/handoff/worker";
import type { AuditActor } from "../../db/commit";
import { database } from "../../db/client";
import { primarySession } from "../../db/session";
import { noteOnLog } from "../../lib/request-context";
import { type OpenedPage, openTokenPage } from "./open-token";
import { redactSecrets } from "../../lib/secret-paths";
import { ApiError } from "../../lib/errors";
import { createRouter, named } from "../../lib/openapi";
import { isRecipientAction, RECIPIENT_PREFIX, verifyLinkToken, type RecipientAction } from "../../lib/recipient-links";
import { isCalendarDate, parseDate, todayIn } from "../../lib/time";
import { t } from "../../i18n/messages";
import { UNSUBSCRIBE_PREFIX } from "../../lib/unsubscribe-links";
import {
  actFromLink,
  linkActor,
  readRecipientView,
  type LinkRequest,
  type RecipientView,
} from "../../records/items/recipient-page";
import {
  errorPage,
  browserSpeech,
  invalidLinkPage,
  itemPage,
  pageHeaders,
  pageSpeech,
  tokenPath,
  type FormProblem,
  type PageNotice,
} from "./html";

export const RECIPIENT_OPERATION = { page: "getRecipientPage", act: "actOnRecipientPage" } as const;
/** Longest note an acknowledgement keeps from the page's form. */
export const NOTE_MAX = 500;

export const recipientPagesRouter = createRouter();

/** Whether a path is one of the recipient's pages (the app renders their errors as pages too). */
export const isRecipientPath = (path: string) =>
  path.startsWith(RECIPIENT_PREFIX) || path.startsWith(UNSUBSCRIBE_PREFIX);

type Opened = OpenedPage<RecipientView>;

const open = (c: Context<AppBindings>, write: boolean) => openTokenPage(c, write, verifyLinkToken, readRecipientView);

async function send(
  c: Context<AppBindings>,
  status: 200 | 400 | 404 | 409 | 422 | 503,
  html: string,
  extra: Record<string, string> = {},
) {
  return c.html(html, status, { ...(await pageHeaders()), ...extra });
}

const invalid = (c: Context<AppBindings>) => send(c, 404, invalidLinkPage(browserSpeech(c)));

function render(opened: Opened, options: { only?: RecipientAction; notice?: PageNotice } = {}): string {
  const { view, claims, token } = opened;
  return itemPage({
    view,
    path: tokenPath(token),
    expiresOn: claims.expiresOn,
    today: todayIn(view.timeZone),
    current: view.item.epoch === claims.epoch,
    ...options,
  });
}

/** The action a path names (`/r/{token}/{action}`); undefined without one; null for a name that is no action. */
function pathAction(c: Context<AppBindings>): RecipientAction | undefined | null {
  const named = c.req.param("action");
  if (named === undefined) return undefined;
  return isRecipientAction(named) ? named : null;
}

async function showPage(c: Context<AppBindings>) {
  const only = pathAction(c);
  if (only === null) return invalid(c);
  const opened = await open(c, false);
  if (!opened) return invalid(c);
  return send(c, 200, render(opened, { only }));
}

recipientPagesRouter.get(`${RECIPIENT_PREFIX}:token`, named(RECIPIENT_OPERATION.page), showPage);
recipientPagesRouter.get(`${RECIPIENT_PREFIX}:token/:action`, named(RECIPIENT_OPERATION.page), showPage);

// ---- POST: the forms ----

/** A form's date: the HTML date input's YYYY-MM-DD, or the company's own format typed by hand. */
function formDate(text: string, view: RecipientView): string | null {
  const value = text.trim();
  if (isCalendarDate(value)) return value;
  return parseDate(value, view.dateFormat);
}

/** The request a form asks for, or the problem to show on the page (422). */
function readForm(
  form: Record<string, unknown>,
  action: RecipientAction,
  view: RecipientView,
  today: string,
): LinkRequest | FormProblem {
  const text = (name: string) => (typeof form[name] === "string" ? (form[name] as string) : "");
  const lang = pageSpeech(view).language;
  switch (action) {
    case "acknowledge": {
      const note = text("note").trim();
      if (Array.from(note).length > NOTE_MAX)
        return {
          action,
          field: "note",
          value: note.slice(0, NOTE_MAX * 2),
          message: t(lang, "page.problem.note_too_long", { max: NOTE_MAX }),
        };
      return { action, note: note || null };
    }
    case "complete":
      return { action };
    case "renew": {
      const raw = text("date");
      const date = formDate(raw, view);
      if (!date)
        return {
          action,
          field: "date",
          value: raw.slice(0, 40),
          message: t(lang, "page.problem.date"),
        };
      if (date <= view.item.expiryDate)
        return { action, field: "date", value: date, message: t(lang, "page.problem.date_not_later") };
      return { action, date };
    }
    case "snooze": {
      const raw = text("until");
      const until = formDate(raw, view);
      if (!until)
        return {
          action,
          field: "until",
          value: raw.slice(0, 40),
          message: t(lang, "page.problem.until"),
        };
      if (until <= today)
        return { action, field: "until", value: until, message: t(lang, "page.problem.until_not_later") };
      return { action, until };
    }
  }
}

async function act(c: Context<AppBindings>) {
  const fromPath = pathAction(c);
  if (fromPath === null) return invalid(c);
  const opened = await open(c, true);
  if (!opened) return invalid(c);
  let form: Record<string, unknown>;
  try {
    form = await c.req.parseBody();
  } catch {
    form = {};
  }
  const field = typeof form.action === "string" ? form.action : undefined;
  const action =
    field === undefined
      ? fromPath
      : isRecipientAction(field) && (fromPath === undefined || fromPath === field)
        ? field
        : null;
  if (!action) return send(c, 400, errorPage(400, browserSpeech(c)));
  noteOnLog(c, { page_action: action });
  const { view, claims } = opened;
  if (view.readOnly) return send(c, 503, render(opened, { notice: { readOnly: true } }), { "Retry-After": "60" });
  if (view.item.epoch !== claims.epoch || view.item.archived) {
    // The link's occurrence is over (renewed since, or archived): nothing to validate or do. A
    // renewal repeated with the date the item now has was this one, or one just like it.
    const repeat =
      action === "renew" &&
      typeof form.date === "string" &&
      formDate(form.date, view) === view.item.expiryDate &&
      !view.item.archived;
    noteOnLog(c, { page_outcome: repeat ? "unchanged" : "moved_on" });
    return send(
      c,
      repeat ? 200 : 409,
      render(opened, {
        notice: { action, outcome: repeat ? "unchanged" : "moved_on", renewedTo: view.item.expiryDate },
      }),
    );
  }
  const today = todayIn(view.timeZone);
  const request = readForm(form, action, view, today);
  if ("field" in request) return send(c, 422, render(opened, { notice: { problem: request } }));

  // The recipient is the actor of every write (docs/audit-log.md): the contact, by link, or the
  // channel, via its type.
  const { by, via } = linkActor(view, claims);
  const actor = {
    accountId: view.accountId,
    companyId: view.companyId,
    clientId: null,
    userId: null,
    requestId: c.get("requestId") ?? null,
    operationId: RECIPIENT_OPERATION.act,
    contactId: by.type === "contact" ? by.id : null,
    channelId: by.type === "channel" ? by.id : null,
    via,
  } satisfies AuditActor;
  const { session } = opened;
  const db = database(session.d1, { actor, committed: 0 }, () => primarySession(c.env, session.shard));
  let outcome: Awaited<ReturnType<typeof actFromLink>>;
  try {
    outcome = await actFromLink(db, view, claims, request);
  } catch (error) {
    if (error instanceof ApiError && error.status === 400) {
      const message = "msg" in error.body ? error.body.msg : error.message;
      const problem: FormProblem = {
        action,
        field: action === "renew" ? "date" : action === "snooze" ? "until" : "action",
        value: "",
        message,
      };
      return send(c, 422, render(opened, { notice: { problem } }));
    }
    throw error;
  }
  noteOnLog(c, { page_outcome: outcome.outcome });
  if (outcome.outcome === "applied") await syncReminders(c.env, view.companyId, [view.item.id], outcome.snapshot);
  // The page as it is now, with what this request did.
  const now = outcome.view ?? (await readRecipientView(session.d1, claims)) ?? view;
  const after: Opened = { ...opened, view: now };
  const notice: PageNotice = { action, outcome: outcome.outcome, renewedTo: outcome.renewedTo };
  return send(c, outcome.outcome === "moved_on" ? 409 : 200, render(after, { notice }));
}

recipientPagesRouter.post(`${RECIPIENT_PREFIX}:token`, named(RECIPIENT_OPERATION.act), act);
recipientPagesRouter.post(`${RECIPIENT_PREFIX}:token/:action`, named(RECIPIENT_OPERATION.act), act);

/** The app's error handler for the pages' paths: the error's status and headers (Retry-After, Allow), as a page. */
export async function recipientErrorPage(err: Error, c: Context<AppBindings>): Promise<Response> {
  const known = err instanceof ApiError ? err : err.cause instanceof ApiError ? err.cause : null;
  if (!known) {
    console.error(
      JSON.stringify({
        level: "error",
        request_id: c.get("requestId") ?? "",
        path: redactSecrets(c.req.path),
        method: c.req.method,
        error: String(err?.stack ?? err),
      }),
    );
  }
  const status = known?.status ?? 500;
  const headers = { ...(known?.headers ?? {}), ...(await pageHeaders()) };
  const speech = browserSpeech(c);
  return c.html(
    status === 404 ? invalidLinkPage(speech) : errorPage(status, speech, headers["Retry-After"]),
    status,
    headers,
  );
}
