// The unsubscribe page and the preferences page as HTML (docs/recipient-journey.md, "Unsubscribe
// and preferences"), in the recipient pages' layout (../recipient-pages/html.ts: the same head,
// style, headers and error pages). Plain forms that need no script. Pure: the routes decide which
// page, with which status. Every word a person reads comes from the message catalogue (src/i18n/,
// keys `unsub.*` and `prefs.*`) in the contact's language (docs/languages.md); weekdays by Intl.
import { isolated, weekdayName } from "../../i18n/format";
import { type Speech, speechFor } from "../../i18n/language";
import { type MessageKey, t } from "../../i18n/messages";
import { escapeHtml as e } from "../../lib/html";
import { DIGESTS, WEEKDAYS, type ContactChannel, type Digest, type Weekday } from "../../lib/contact-preferences";
import { LANGUAGE_NAMES, LANGUAGES, primaryLanguage } from "../../lib/languages";
import { PREFERENCES_SUFFIX, UNSUBSCRIBE_PREFIX } from "../../lib/unsubscribe-links";
import type { SubscriptionOutcome, SubscriptionView } from "../../records/contact-subscription";
import { pageDocument } from "../recipient-pages/html";

/** A preferences field a posted form can get wrong (its message: `prefs.problem.<field>`). */
export type ProblemField = "channels" | "language" | "digest" | "weekday";

/** The language of a contact's pages: the contact's, else the company's, else English (as the item's page). */
export const subscriptionSpeech = (view: SubscriptionView): Speech => speechFor(view.language, view.companyLanguage);

/** The path the unsubscribe forms post to, and the preferences page's. */
export const unsubscribePath = (token: string) => `${UNSUBSCRIBE_PREFIX}${token}`;
export const preferencesPath = (token: string) => `${unsubscribePath(token)}${PREFERENCES_SUFFIX}`;

/** What a POST did, shown above the page. */
export type Notice =
  | { kind: "unsubscribe" | "resubscribe"; outcome: SubscriptionOutcome }
  | { kind: "saved" }
  | { kind: "readOnly" }
  | { kind: "problem"; field: ProblemField };

/** Each outcome's title key; its detail, where it has one, is `<key>.detail` (else "Nothing changed."). */
const DONE_KEYS = {
  unsubscribed: "unsub.done.unsubscribed",
  alreadyUnsubscribed: "unsub.done.already_unsubscribed",
  resubscribed: "unsub.done.resubscribed",
  alreadyActive: "unsub.done.already_active",
  saved: "unsub.done.saved",
  readOnly: "unsub.done.read_only",
} as const;

const DONE_DETAILS: Partial<Record<keyof typeof DONE_KEYS, MessageKey>> = {
  unsubscribed: "unsub.done.unsubscribed.detail",
  alreadyUnsubscribed: "page.nothing_changed.detail",
  resubscribed: "unsub.done.resubscribed.detail",
  alreadyActive: "page.nothing_changed.detail",
  readOnly: "unsub.done.read_only.detail",
};

function noticeHtml(notice: Notice | undefined, speech: Speech): string {
  if (!notice) return "";
  const lang = speech.language;
  if (notice.kind === "problem")
    return `<div class="outcome error" role="alert"><strong>${e(t(lang, `prefs.problem.${notice.field}`))}</strong></div>`;
  let key: keyof typeof DONE_KEYS;
  let tone = "applied";
  if (notice.kind === "saved") key = "saved";
  else if (notice.kind === "readOnly") {
    key = "readOnly";
    tone = "moved_on";
  } else {
    const applied = notice.outcome === "applied";
    key =
      notice.kind === "unsubscribe"
        ? applied
          ? "unsubscribed"
          : "alreadyUnsubscribed"
        : applied
          ? "resubscribed"
          : "alreadyActive";
    tone = applied ? "applied" : "unchanged";
  }
  const title = t(lang, DONE_KEYS[key]);
  const detailKey = DONE_DETAILS[key];
  const detail = detailKey ? t(lang, detailKey) : "";
  return `<div class="outcome ${tone}" role="status"><strong>${e(title)}</strong>${e(detail)}</div>`;
}

const header = (view: SubscriptionView) => `<header>${e(view.companyName)}</header>`;
const footer = (view: SubscriptionView, speech: Speech) =>
  `<footer>${e(t(speech.language, "unsub.footer", { name: view.contactName || t(speech.language, "page.you"), company: view.companyName }))}</footer>`;

/** The status a contact reads: the sentence and, once it changed, since when. */
function statusHtml(view: SubscriptionView, speech: Speech): string {
  const lang = speech.language;
  const when = view.emailStatusChangedAt?.slice(0, 16).replace("T", " ");
  const since = when ? ` ${t(lang, "unsub.since", { when: isolated(when, speech.dir) })}` : "";
  return `<p>${e(t(lang, `unsub.status.${view.emailStatus}`, { email: isolated(view.email, speech.dir) }))}${e(since)}</p>`;
}

/** GET /u/{token} and the answer of its POSTs: the status, the button that changes it, the preferences link. */
export function subscriptionPage(view: SubscriptionView, token: string, notice?: Notice): string {
  const speech = subscriptionSpeech(view);
  const lang = speech.language;
  const heading = t(lang, "unsub.heading", { company: view.companyName });
  const path = unsubscribePath(token);
  const forms: string[] = [];
  if (view.emailStatus !== "unsubscribed") {
    forms.push(`<form method="post" action="${e(path)}">
<p>${e(t(lang, "unsub.unsubscribe.help"))}</p>
<input type="hidden" name="action" value="unsubscribe">
<button type="submit">${e(t(lang, "unsub.unsubscribe"))}</button>
</form>`);
  }
  if (view.emailStatus === "unsubscribed" || view.emailStatus === "complained") {
    forms.push(`<form method="post" action="${e(path)}">
<p>${e(t(lang, "unsub.resubscribe.help"))}</p>
<input type="hidden" name="action" value="resubscribe">
<button type="submit"${view.emailStatus === "unsubscribed" ? "" : ' class="secondary"'}>${e(t(lang, "unsub.resubscribe"))}</button>
</form>`);
  }
  const body = `${header(view)}
<h1>${e(heading)}</h1>
${noticeHtml(notice, speech)}
${statusHtml(view, speech)}
${notice?.kind === "readOnly" ? "" : forms.join("\n")}
<p><a href="${e(preferencesPath(token))}">${e(t(lang, "unsub.preferences_link"))}</a></p>
${footer(view, speech)}`;
  return pageDocument(heading, body, speech.tag, speech.dir);
}

/** The values the preferences form shows: the stored ones, or those just posted with a problem. */
export interface PreferencesForm {
  language: string | null;
  digest: Digest;
  digestWeekday: Weekday | null;
  channels: ContactChannel[] | null;
}

const selected = (on: boolean) => (on ? " selected" : "");
const checked = (on: boolean) => (on ? " checked" : "");

/** GET /u/{token}/preferences and the answer of its POST: language, digest and channels. */
export function preferencesPage(
  view: SubscriptionView,
  token: string,
  available: readonly ContactChannel[],
  form: PreferencesForm,
  notice?: Notice,
): string {
  const speech = subscriptionSpeech(view);
  const lang = speech.language;
  const companyLanguage = primaryLanguage(view.companyLanguage) ?? "en";
  // A stored regional tag (pt-BR) is an option of its own, so saving the form keeps it.
  const extra = form.language && !(LANGUAGES as readonly string[]).includes(form.language) ? [form.language] : [];
  const languageOptions = [
    `<option value=""${selected(form.language === null)}>${e(t(lang, "prefs.language.company", { name: LANGUAGE_NAMES[companyLanguage] }))}</option>`,
    ...[...LANGUAGES, ...extra].map((tag) => {
      const name = LANGUAGE_NAMES[primaryLanguage(tag) ?? "en"];
      const label = extra.includes(tag) ? `${name} (${tag})` : name;
      return `<option value="${e(tag)}" lang="${e(tag)}"${selected(form.language === tag)}>${e(label)}</option>`;
    }),
  ];
  const digests = DIGESTS.map(
    (d) =>
      `<label class="choice"><input type="radio" name="digest" value="${d}"${checked(form.digest === d)}> ${e(t(lang, `prefs.digest.${d}`))}</label>`,
  );
  const weekdays = WEEKDAYS.map(
    (w) =>
      `<option value="${w}"${selected((form.digestWeekday ?? "monday") === w)}>${e(weekdayName(w, speech.locale))}</option>`,
  );
  const channels =
    available.length === 0
      ? `<p>${e(t(lang, "prefs.no_channels"))}</p>`
      : available
          .map(
            (c) =>
              `<label class="choice"><input type="checkbox" name="channels" value="${c}"${checked(form.channels === null || form.channels.includes(c))}> ${e(t(lang, `prefs.channel.${c}`))}</label>`,
          )
          .join("\n");
  const body = `${header(view)}
<h1>${e(t(lang, "prefs.title"))}</h1>
${noticeHtml(notice, speech)}
${statusHtml(view, speech)}
<form method="post" action="${e(preferencesPath(token))}">
<label>${e(t(lang, "prefs.language"))}
<select name="language">
${languageOptions.join("\n")}
</select></label>
<fieldset>
<legend>${e(t(lang, "prefs.digest"))}</legend>
${digests.join("\n")}
<label>${e(t(lang, "prefs.weekday"))}
<select name="digest_weekday">
${weekdays.join("\n")}
</select></label>
<p>${e(t(lang, "prefs.digest_note"))}</p>
</fieldset>
<fieldset>
<legend>${e(t(lang, "prefs.channels"))}</legend>
${channels}
</fieldset>
<button type="submit">${e(t(lang, "prefs.save"))}</button>
</form>
<p><a href="${e(unsubscribePath(token))}">${e(t(lang, "unsub.back_link"))}</a></p>
${footer(view, speech)}`;
  return pageDocument(`${t(lang, "prefs.title")} · ${view.companyName}`, body, speech.tag, speech.dir);
}
