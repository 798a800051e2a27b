// The unsubscribe page and the preferences page as HTML (docs/recipient-journey.md, "Unsubscribe
// and preferences"), in the recipient pages' layout (../recipient-pages/html.ts: the same head,
// style, headers and error pages). Plain forms that need no script. Pure: the routes decide which
// page, with which status. Every word a person reads is in TEXT (English), one place to translate.
import { escapeHtml as e } from "../../lib/html";
import { DIGESTS, WEEKDAYS, type ContactChannel, type Digest, type Weekday } from "../../lib/contact-preferences";
import { LANGUAGE_NAMES, LANGUAGES, primaryLanguage } from "../../lib/languages";
import { PREFERENCES_SUFFIX, UNSUBSCRIBE_PREFIX } from "../../lib/unsubscribe-links";
import type { SubscriptionOutcome, SubscriptionView } from "../../records/contact-subscription";
import { pageDocument } from "../recipient-pages/html";

export const TEXT = {
  heading: (company: string) => `Reminder emails from ${company}`,
  status: {
    active: (email: string) => `Reminder emails are sent to ${email}.`,
    unsubscribed: (email: string) => `You are unsubscribed: no reminder emails are sent to ${email}.`,
    bounced: (email: string) =>
      `Emails to ${email} bounced, so none are sent. If your address changed, tell the company.`,
    complained: (email: string) => `You reported these emails as spam, so none are sent to ${email}.`,
  },
  since: (when: string) => `Since ${when} (UTC).`,
  unsubscribeButton: "Unsubscribe",
  unsubscribeHelp: "Stop all reminder emails from this company to this address.",
  resubscribeButton: "Subscribe again",
  resubscribeHelp: "Receive this company's reminder emails again.",
  preferencesLink: "Manage your preferences",
  backLink: "Back to your subscription",
  done: {
    unsubscribed: ["You are unsubscribed.", "No more reminder emails from this company will be sent to you."],
    alreadyUnsubscribed: ["You were already unsubscribed.", "Nothing changed."],
    resubscribed: ["You are subscribed again.", "Reminder emails from this company will reach you again."],
    alreadyActive: ["You are already subscribed.", "Nothing changed."],
    saved: ["Your preferences are saved.", ""],
    readOnly: ["Not available just now.", "Nothing was changed: try again in a few minutes."],
  } as Record<string, [string, string]>,
  footer: (name: string, company: string) =>
    `This page is for ${name || "you"}, from a reminder email of ${company}. Its link acts without signing in: do not share it.`,
  preferences: {
    title: "Your preferences",
    language: "Language of emails and pages",
    languageDefault: (name: string) => `The company's language (${name})`,
    digest: "Summary email",
    digestOptions: {
      off: "No summary: one email per reminder",
      daily: "A daily summary",
      weekly: "A weekly summary",
    } as Record<Digest, string>,
    weekday: "Day of the weekly summary",
    digestNote: "Summaries are not sent yet: your choice is kept for when they are.",
    weekdays: {
      monday: "Monday",
      tuesday: "Tuesday",
      wednesday: "Wednesday",
      thursday: "Thursday",
      friday: "Friday",
      saturday: "Saturday",
      sunday: "Sunday",
    } as Record<Weekday, string>,
    channels: "How reminders reach you",
    channelNames: { email: "Email", sms: "Text message (SMS)" } as Record<ContactChannel, string>,
    noChannels: "This service delivers no channel you can choose here.",
    save: "Save preferences",
  },
  problems: {
    channels: "Choose at least one way to receive reminders (or unsubscribe instead).",
    language: "Choose a language from the list.",
    digest: "Choose one of the summary options.",
    weekday: "Choose the day of the weekly summary.",
  },
} as const;

/** The path the unsubscribe forms post to, and the preferences page's. */
export const unsubscribePath = (token: string) => `${UNSUBSCRIBE_PREFIX}${token}`;
export const preferencesPath = (token: string) => `${unsubscribePath(token)}${PREFERENCES_SUFFIX}`;

/** What a POST did, shown above the page. */
export type Notice =
  | { kind: "unsubscribe" | "resubscribe"; outcome: SubscriptionOutcome }
  | { kind: "saved" }
  | { kind: "readOnly" }
  | { kind: "problem"; field: keyof typeof TEXT.problems };

function noticeHtml(notice: Notice | undefined): string {
  if (!notice) return "";
  if (notice.kind === "problem")
    return `<div class="outcome error" role="alert"><strong>${e(TEXT.problems[notice.field])}</strong></div>`;
  let key: string;
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
  const [title, detail] = TEXT.done[key]!;
  return `<div class="outcome ${tone}" role="status"><strong>${e(title)}</strong>${e(detail)}</div>`;
}

const header = (view: SubscriptionView) => `<header>${e(view.companyName)}</header>`;
const footer = (view: SubscriptionView) => `<footer>${e(TEXT.footer(view.contactName, view.companyName))}</footer>`;

/** The status a contact reads: the sentence and, once it changed, since when. */
function statusHtml(view: SubscriptionView): string {
  const since = view.emailStatusChangedAt
    ? ` ${TEXT.since(view.emailStatusChangedAt.slice(0, 16).replace("T", " "))}`
    : "";
  return `<p>${e(TEXT.status[view.emailStatus](view.email))}${e(since)}</p>`;
}

/** GET /u/{token} and the answer of its POSTs: the status, the button that changes it, the preferences link. */
export function subscriptionPage(view: SubscriptionView, token: string, notice?: Notice): string {
  const path = unsubscribePath(token);
  const forms: string[] = [];
  if (view.emailStatus !== "unsubscribed") {
    forms.push(`<form method="post" action="${e(path)}">
<p>${e(TEXT.unsubscribeHelp)}</p>
<input type="hidden" name="action" value="unsubscribe">
<button type="submit">${e(TEXT.unsubscribeButton)}</button>
</form>`);
  }
  if (view.emailStatus === "unsubscribed" || view.emailStatus === "complained") {
    forms.push(`<form method="post" action="${e(path)}">
<p>${e(TEXT.resubscribeHelp)}</p>
<input type="hidden" name="action" value="resubscribe">
<button type="submit"${view.emailStatus === "unsubscribed" ? "" : ' class="secondary"'}>${e(TEXT.resubscribeButton)}</button>
</form>`);
  }
  const body = `${header(view)}
<h1>${e(TEXT.heading(view.companyName))}</h1>
${noticeHtml(notice)}
${statusHtml(view)}
${notice?.kind === "readOnly" ? "" : forms.join("\n")}
<p><a href="${e(preferencesPath(token))}">${e(TEXT.preferencesLink)}</a></p>
${footer(view)}`;
  return pageDocument(TEXT.heading(view.companyName), body);
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
  const P = TEXT.preferences;
  const companyLanguage = primaryLanguage(view.companyLanguage) ?? "en";
  // A stored regional tag (pt-BR) is an option of its own, so saving the form keeps it.
  const extra = form.language && !(LANGUAGES as readonly string[]).includes(form.language) ? [form.language] : [];
  const languageOptions = [
    `<option value=""${selected(form.language === null)}>${e(P.languageDefault(LANGUAGE_NAMES[companyLanguage]))}</option>`,
    ...[...LANGUAGES, ...extra].map((tag) => {
      const name = LANGUAGE_NAMES[primaryLanguage(tag) ?? "en"];
      const label = extra.includes(tag) ? `${name} (${tag})` : name;
      return `<option value="${e(tag)}" lang="${e(tag)}"${selected(form.language === tag)}>${e(label)}</option>`;
    }),
  ];
  const digests = DIGESTS.map(
    (d) =>
      `<label class="choice"><input type="radio" name="digest" value="${d}"${checked(form.digest === d)}> ${e(P.digestOptions[d])}</label>`,
  );
  const weekdays = WEEKDAYS.map(
    (w) => `<option value="${w}"${selected((form.digestWeekday ?? "monday") === w)}>${e(P.weekdays[w])}</option>`,
  );
  const channels =
    available.length === 0
      ? `<p>${e(P.noChannels)}</p>`
      : available
          .map(
            (c) =>
              `<label class="choice"><input type="checkbox" name="channels" value="${c}"${checked(form.channels === null || form.channels.includes(c))}> ${e(P.channelNames[c])}</label>`,
          )
          .join("\n");
  const body = `${header(view)}
<h1>${e(P.title)}</h1>
${noticeHtml(notice)}
${statusHtml(view)}
<form method="post" action="${e(preferencesPath(token))}">
<label>${e(P.language)}
<select name="language">
${languageOptions.join("\n")}
</select></label>
<fieldset>
<legend>${e(P.digest)}</legend>
${digests.join("\n")}
<label>${e(P.weekday)}
<select name="digest_weekday">
${weekdays.join("\n")}
</select></label>
<p>${e(P.digestNote)}</p>
</fieldset>
<fieldset>
<legend>${e(P.channels)}</legend>
${channels}
</fieldset>
<button type="submit">${e(P.save)}</button>
</form>
<p><a href="${e(unsubscribePath(token))}">${e(TEXT.backLink)}</a></p>
${footer(view)}`;
  return pageDocument(`${P.title} · ${view.companyName}`, body);
}
