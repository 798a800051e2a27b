// The unsubscribe link of every reminder email (RFC 8058) and the preferences page behind it
// (docs/recipient-journey.md, "Unsubscribe and preferences"):
//
//   GET  /u/{token}               the contact's status, a button to unsubscribe or to subscribe again, a preferences link
//   POST /u/{token}               `List-Unsubscribe=One-Click` (a mail client's one-click) or `action=unsubscribe`:
//                                 unsubscribes; `action=resubscribe`: subscribes again. 200 with the page, never a redirect.
//   GET  /u/{token}/preferences   language, digest, channels (plain form)
//   POST /u/{token}/preferences   saves them
//
// The token (src/lib/unsubscribe-links.ts) is the credential: no cookie, no authorization, no other
// header needed; the body is read as a form whatever its Content-Type says. GET never changes
// anything. The recipient pages' conventions: the same headers and error pages, and every link
// that does not work gets the same page, status and headers (../recipient-pages/).
import type { Context } from "hono";
import { availableChannels } from "../../company-clock/channels";
import { nudgeWebhooks, refreshDigests } from "../../company-clock/handoff/worker";
import type { AuditActor } from "../../db/commit";
import { database } from "../../db/client";
import { primarySession } from "../../db/session";
import type { AppBindings } from "../../env";
import { CONTACT_CHANNELS, DIGESTS, WEEKDAYS, type ContactChannel } from "../../lib/contact-preferences";
import { supportedLanguageTag } from "../../lib/languages";
import { createRouter, named } from "../../lib/openapi";
import { noteOnLog } from "../../lib/request-context";
import { PREFERENCES_SUFFIX, UNSUBSCRIBE_PREFIX, verifyUnsubscribeToken } from "../../lib/unsubscribe-links";
import {
  readSubscriptionView,
  resubscribeContact,
  setPreferences,
  unsubscribeContact,
  type PreferencesInput,
  type SubscriptionView,
} from "../../records/contact-subscription";
import { browserSpeech, invalidLinkPage, pageHeaders } from "../recipient-pages/html";
import { type OpenedPage, openTokenPage } from "../recipient-pages/open-token";
import { preferencesPage, subscriptionPage, type Notice, type ProblemField, type PreferencesForm } from "./html";

export const UNSUBSCRIBE_OPERATION = {
  page: "getUnsubscribePage",
  act: "actOnUnsubscribePage",
  preferences: "getPreferencesPage",
  save: "savePreferences",
} as const;

export const unsubscribeRouter = createRouter();

type Opened = OpenedPage<SubscriptionView>;

const open = (c: Context<AppBindings>, write: boolean) =>
  openTokenPage(c, write, verifyUnsubscribeToken, readSubscriptionView);

async function send(c: Context<AppBindings>, status: 200 | 400 | 404 | 422 | 503, html: string) {
  return c.html(html, status, {
    ...(await pageHeaders()),
    ...(status === 503 ? { "Retry-After": "60" } : {}),
  });
}

const invalid = (c: Context<AppBindings>) => send(c, 404, invalidLinkPage(browserSpeech(c)));

/** The posted form, whatever the Content-Type (a one-click POST may send none): url-encoded fields. */
async function formOf(c: Context<AppBindings>): Promise<URLSearchParams> {
  try {
    return new URLSearchParams(new TextDecoder().decode(await c.req.arrayBuffer()));
  } catch {
    return new URLSearchParams();
  }
}

/** The contact as the actor of its own change (docs/audit-log.md): by link, no client, no user. */
function contactDb(c: Context<AppBindings>, opened: Opened, operationId: string) {
  const actor = {
    accountId: opened.view.accountId,
    companyId: opened.view.companyId,
    clientId: null,
    userId: null,
    requestId: c.get("requestId") ?? null,
    operationId,
    contactId: opened.view.contactId,
    via: "link",
  } as AuditActor;
  const { session } = opened;
  return database(session.d1, { actor, committed: 0 }, () => primarySession(c.env, session.shard));
}

unsubscribeRouter.get(`${UNSUBSCRIBE_PREFIX}:token`, named(UNSUBSCRIBE_OPERATION.page), async (c) => {
  const opened = await open(c, false);
  if (!opened) return invalid(c);
  return send(c, 200, subscriptionPage(opened.view, opened.token));
});

unsubscribeRouter.post(`${UNSUBSCRIBE_PREFIX}:token`, named(UNSUBSCRIBE_OPERATION.act), async (c) => {
  const opened = await open(c, true);
  if (!opened) return invalid(c);
  const form = await formOf(c);
  const action = form.get("action");
  const kind =
    action === "resubscribe"
      ? "resubscribe"
      : action === "unsubscribe" || (action === null && form.get("List-Unsubscribe") === "One-Click")
        ? "unsubscribe"
        : null;
  if (!kind) return send(c, 400, subscriptionPage(opened.view, opened.token));
  noteOnLog(c, { page_action: kind });
  if (opened.view.readOnly) return send(c, 503, subscriptionPage(opened.view, opened.token, { kind: "readOnly" }));
  const db = contactDb(c, opened, UNSUBSCRIBE_OPERATION.act);
  const outcome =
    kind === "unsubscribe" ? await unsubscribeContact(db, opened.view) : await resubscribeContact(db, opened.view);
  noteOnLog(c, { page_outcome: outcome });
  if (kind === "unsubscribe" && outcome === "applied") await nudgeWebhooks(c.env, opened.view.companyId);
  const now = (await readSubscriptionView(opened.session.d1, opened.claims)) ?? opened.view;
  return send(c, 200, subscriptionPage(now, opened.token, { kind, outcome }));
});

const preferencesPathPattern = `${UNSUBSCRIBE_PREFIX}:token${PREFERENCES_SUFFIX}`;

/** The channels a contact can choose here: those this deployment delivers, and the team chats (channel endpoints are per company). */
const choosable = (c: Context<AppBindings>): ContactChannel[] =>
  CONTACT_CHANNELS.filter((ch) => ch === "chat" || availableChannels(c.env).includes(ch));

const storedForm = (view: SubscriptionView): PreferencesForm => ({
  language: view.language,
  digest: view.digest,
  digestWeekday: view.digestWeekday,
  channels: view.channels,
});

unsubscribeRouter.get(preferencesPathPattern, named(UNSUBSCRIBE_OPERATION.preferences), async (c) => {
  const opened = await open(c, false);
  if (!opened) return invalid(c);
  return send(c, 200, preferencesPage(opened.view, opened.token, choosable(c), storedForm(opened.view)));
});

/** The preferences a posted form asks for, or the field it got wrong (with what it posted, to show again). */
function readPreferences(
  form: URLSearchParams,
  available: ContactChannel[],
): { input: PreferencesInput } | { problem: ProblemField; shown: PreferencesForm } {
  const languageText = (form.get("language") ?? "").trim();
  const language = languageText === "" ? null : supportedLanguageTag(languageText);
  const digest = (DIGESTS as readonly string[]).includes(form.get("digest") ?? "")
    ? (form.get("digest") as PreferencesInput["digest"])
    : null;
  const weekdayText = form.get("digest_weekday") ?? "";
  const weekday = (WEEKDAYS as readonly string[]).includes(weekdayText)
    ? (weekdayText as PreferencesInput["digestWeekday"])
    : null;
  const picked = form.getAll("channels").filter((ch): ch is ContactChannel => available.includes(ch as ContactChannel));
  const channels = picked.length === available.length ? null : [...new Set(picked)];
  const shown: PreferencesForm = {
    language: language ?? null,
    digest: digest ?? "off",
    digestWeekday: weekday,
    channels,
  };
  if (languageText !== "" && !language) return { problem: "language", shown };
  if (!digest) return { problem: "digest", shown };
  if (digest === "weekly" && !weekday) return { problem: "weekday", shown };
  if (available.length > 0 && channels !== null && channels.length === 0) return { problem: "channels", shown };
  return { input: { language, digest, digestWeekday: digest === "weekly" ? weekday : null, channels } };
}

unsubscribeRouter.post(preferencesPathPattern, named(UNSUBSCRIBE_OPERATION.save), async (c) => {
  const opened = await open(c, true);
  if (!opened) return invalid(c);
  const available = choosable(c);
  if (opened.view.readOnly)
    return send(
      c,
      503,
      preferencesPage(opened.view, opened.token, available, storedForm(opened.view), { kind: "readOnly" }),
    );
  const read = readPreferences(await formOf(c), available);
  if ("problem" in read) {
    const notice: Notice = { kind: "problem", field: read.problem };
    return send(c, 422, preferencesPage(opened.view, opened.token, available, read.shown, notice));
  }
  await setPreferences(contactDb(c, opened, UNSUBSCRIBE_OPERATION.save), opened.view, read.input);
  if (read.input.digest !== opened.view.digest || read.input.digestWeekday !== opened.view.digestWeekday)
    await refreshDigests(c.env, opened.claims.companyId);
  const now = (await readSubscriptionView(opened.session.d1, opened.claims)) ?? opened.view;
  return send(c, 200, preferencesPage(now, opened.token, available, storedForm(now), { kind: "saved" }));
});
