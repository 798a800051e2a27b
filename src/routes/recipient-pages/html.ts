// The recipient's pages as HTML (docs/recipient-journey.md): the item with its state and its
// actions, an action's one-button confirmation, what a POST did, and the error pages. The item's
// pages speak the recipient's language (docs/languages.md); the error pages, which know no
// recipient, are English. Plain forms
// (method="post") that need no script; one inline style, allowed by its hash; nothing loaded from
// anywhere. Pure: the routes (routes.ts) decide which page, with which status.
import { isolated, localDate, relativeDays } from "../../i18n/format";
import { type Speech, speechFor, speechOfRequest } from "../../i18n/language";
import { type MessageKey, t } from "../../i18n/messages";
import { PLATFORM_NAMES, type ChannelVia } from "../../lib/actors";
import { escapeHtml as e } from "../../lib/html";
import { toBase64 } from "../../lib/bytes";
import type { RecipientAction } from "../../lib/recipient-links";
import { LINK_LIFETIME_DAYS, RECIPIENT_PREFIX } from "../../lib/recipient-links";
import { addDays, addYears, instantToLocal } from "../../lib/time";
import type { LinkOutcome, RecipientView } from "../../records/items/recipient-page";

const STYLE = `
:root { color-scheme: light dark; --muted: #52606d; --rule: #d5d9de; --panel: #f4f5f7; --accent: #1f5fbf; --accent-ink: #ffffff; --ok: #e6f4ea; --warn: #fdf3e1; --bad: #fdecea; }
@media (prefers-color-scheme: dark) { :root { --muted: #a3acb7; --rule: #3a4048; --panel: #22272e; --accent: #6ea2f5; --accent-ink: #0d1117; --ok: #17301f; --warn: #3a2f16; --bad: #3d1d1b; } }
* { box-sizing: border-box; }
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 40rem; padding: 1rem 1rem 3rem; }
header { color: var(--muted); font-size: .9rem; margin-bottom: .25rem; }
h1 { font-size: 1.5rem; line-height: 1.25; margin: 0 0 .25rem; overflow-wrap: anywhere; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
.kind { color: var(--muted); margin: 0 0 1rem; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .35rem 1rem; margin: 0 0 1rem; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.notes { white-space: pre-wrap; background: var(--panel); border-radius: 6px; padding: .5rem .75rem; margin: 0 0 1rem; overflow-wrap: anywhere; }
.outcome { border-radius: 6px; padding: .75rem 1rem; margin: 0 0 1rem; }
.outcome.applied { background: var(--ok); }
.outcome.unchanged { background: var(--panel); }
.outcome.moved_on, .outcome.invalid { background: var(--warn); }
.outcome.error { background: var(--bad); }
.outcome strong { display: block; }
form { border-top: 1px solid var(--rule); padding: 1rem 0; margin: 0; }
form p { margin: 0 0 .5rem; color: var(--muted); font-size: .95rem; }
label { display: block; margin: 0 0 .5rem; }
input[type=date], textarea { display: block; width: 100%; max-width: 20rem; font: inherit; padding: .5rem; margin-top: .25rem; border: 1px solid var(--rule); border-radius: 6px; background: transparent; color: inherit; }
textarea { max-width: 100%; }
button { font: inherit; font-weight: 600; padding: .7rem 1.2rem; border-radius: 6px; border: 1px solid var(--accent); background: var(--accent); color: var(--accent-ink); cursor: pointer; min-height: 2.75rem; }
.field-error { color: inherit; background: var(--bad); border-radius: 4px; padding: .25rem .5rem; display: inline-block; margin: 0 0 .5rem; }
footer { color: var(--muted); font-size: .85rem; border-top: 1px solid var(--rule); padding-top: 1rem; margin-top: 1rem; }
a { color: var(--accent); }
select { display: block; width: 100%; max-width: 20rem; font: inherit; padding: .5rem; margin-top: .25rem; border: 1px solid var(--rule); border-radius: 6px; background: transparent; color: inherit; }
fieldset { border: 0; padding: 0; margin: 0 0 1rem; }
legend { font-weight: 600; padding: 0; margin: 0 0 .35rem; }
label.choice { display: flex; gap: .5rem; align-items: center; margin: 0 0 .35rem; }
button.secondary { background: transparent; color: var(--accent); }
@media (max-width: 30rem) { dl { grid-template-columns: 1fr; gap: 0; } dd { margin-bottom: .5rem; } button { width: 100%; } }
`;

let styleHash: Promise<string> | undefined;
/** The style's CSP source (`'sha256-…'`), computed once per isolate. */
const styleSource = () =>
  (styleHash ??= crypto.subtle
    .digest("SHA-256", new TextEncoder().encode(STYLE))
    .then((d) => `'sha256-${toBase64(new Uint8Array(d))}'`));

/**
 * The headers of every recipient page: a strict Content-Security-Policy (nothing but the page's own
 * inline style; forms post only to this origin; never framed), no indexing, no referrer (the token
 * is in the URL), never cached.
 */
export async function pageHeaders(): Promise<Record<string, string>> {
  return {
    "Content-Security-Policy": [
      "default-src 'none'",
      `style-src ${await styleSource()}`,
      "img-src data:",
      "base-uri 'none'",
      "form-action 'self'",
      "frame-ancestors 'none'",
    ].join("; "),
    "X-Robots-Tag": "noindex, nofollow",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
  };
}

/** A whole page around `body`: the shared head, style and layout of every page on a token link. */
export function pageDocument(title: string, body: string, lang = "en", dir: "ltr" | "rtl" = "ltr"): string {
  return `<!doctype html>
<html lang="${e(lang)}"${dir === "rtl" ? ' dir="rtl"' : ""}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${e(title)}</title>
<link rel="icon" href="data:,">
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

// ---- the item ----

const ACTION_KEY: Record<RecipientAction, MessageKey> = {
  acknowledge: "page.action.acknowledge",
  complete: "page.action.complete",
  renew: "page.action.renew",
  snooze: "page.action.snooze",
};

/** The words each action goes by, on its button and in what the page says it did, in the page's language. */
export const actionLabel = (speech: Speech, action: RecipientAction) => t(speech.language, ACTION_KEY[action]);

/** The English words of each action (the default language's). */
export const ACTION_LABEL: Record<RecipientAction, string> = {
  acknowledge: actionLabel(speechFor(null), "acknowledge"),
  complete: actionLabel(speechFor(null), "complete"),
  renew: actionLabel(speechFor(null), "renew"),
  snooze: actionLabel(speechFor(null), "snooze"),
};

/** The language a recipient's page speaks: the contact's (or the channel's), else the company's, else English (docs/languages.md). */
export const pageSpeech = (view: RecipientView): Speech => speechFor(view.recipientLanguage, view.companyLanguage);

/** A channel as the page names it: "#facilities (Slack)" (each part isolated in a right-to-left page). */
const channelName = (speech: Speech, name: string, type: ChannelVia) =>
  t(speech.language, "links35.channel", {
    name: isolated(name, speech.dir),
    platform: isolated(PLATFORM_NAMES[type], speech.dir),
  });

/** A form's value and message to show again after a failed POST. */
export interface FormProblem {
  action: RecipientAction;
  field: string;
  message: string;
  value: string;
}

/** What a page shows beside the item: the outcome of a POST, or a form's problem. */
export interface PageNotice {
  action?: RecipientAction;
  outcome?: LinkOutcome["outcome"];
  renewedTo?: string | null;
  problem?: FormProblem;
  /** The account is moving: nothing can be changed for a few minutes. */
  readOnly?: boolean;
}

export interface PageInput {
  view: RecipientView;
  /** The token's path, `/r/{token}`: where every form posts. */
  path: string;
  /** The link's last day (UTC). */
  expiresOn: string;
  /** The company's today. */
  today: string;
  /** Whether the link's occurrence is the item's current one. */
  current: boolean;
  /** An action's confirmation page: only its form. */
  only?: RecipientAction;
  notice?: PageNotice;
}

/** A date of the page: the company's format, the reader's locale (src/i18n/format.ts). */
const dateOf = (view: RecipientView, speech: Speech, date: string) =>
  isolated(localDate(date, view.dateFormat, speech.locale), speech.dir);

/** The instant of a timestamp as D1 (`YYYY-MM-DD HH:MM:SS`, UTC) or ISO writes it, in the company's zone and format. */
function localTime(at: string, view: RecipientView, speech: Speech): string {
  const instant = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(at) ? at : `${at.replace(" ", "T")}Z`);
  if (!Number.isFinite(instant)) return at;
  const local = instantToLocal(instant, view.timeZone);
  return t(speech.language, "page.local_time", {
    date: dateOf(view, speech, local.date),
    hour: local.hour,
    zone: view.timeZone,
  });
}

/** The actions the item offers in its state: none once it has moved on or is archived. */
export function availableActions(view: RecipientView, current: boolean): RecipientAction[] {
  if (!current || view.item.archived) return [];
  if (view.item.status === "completed") return view.item.itemType === "exp" ? ["renew"] : [];
  return [
    ...(view.acknowledgement ? [] : (["acknowledge"] as const)),
    "complete",
    ...(view.item.itemType === "exp" ? (["renew"] as const) : []),
    "snooze",
  ];
}

function stateRows(input: PageInput, speech: Speech): Array<[string, string]> {
  const { view, today } = input;
  const { item } = view;
  const lang = speech.language;
  const date = dateOf(view, speech, item.expiryDate);
  const when = relativeDays(today, item.expiryDate, speech.locale);
  const rows: Array<[string, string]> = [
    [t(lang, "page.row.date"), t(lang, "email.date_when", { date, when })],
    [
      t(lang, "page.row.status"),
      t(
        lang,
        item.archived
          ? "page.status.archived"
          : item.status === "completed"
            ? "page.status.completed"
            : "page.status.pending",
      ),
    ],
  ];
  const ack = view.acknowledgement;
  if (ack) {
    const who =
      ack.by.type === "client"
        ? t(lang, "page.ack.by_api")
        : ack.byName
          ? t(lang, "page.ack.by_name", {
              name: ack.byPlatform ? channelName(speech, ack.byName, ack.byPlatform) : ack.byName,
            })
          : t(lang, "page.ack.by_other");
    const at = localTime(ack.at, view, speech);
    rows.push([
      t(lang, "page.row.acknowledged"),
      ack.note ? t(lang, "page.ack.value_note", { who, at, note: ack.note }) : t(lang, "page.ack.value", { who, at }),
    ]);
  } else if (item.status === "pending" && !item.archived) {
    rows.push([t(lang, "page.row.acknowledged"), t(lang, "page.ack.not_yet")]);
  }
  if (view.snoozedUntil) rows.push([t(lang, "page.row.snoozed_until"), dateOf(view, speech, view.snoozedUntil)]);
  if (item.rule) {
    const every = t(lang, `page.recurs.${item.rule.unit}`, { n: item.rule.every }, speech.locale);
    rows.push([
      t(lang, "page.row.recurs"),
      t(lang, item.rule.renewOn === "completed" ? "page.recurs.on_completed" : "page.recurs.on_expired", { every }),
    ]);
  }
  rows.push(
    [t(lang, "page.row.company"), view.companyName],
    [t(lang, "page.row.reference"), t(lang, "item.reference", { id: item.id })],
  );
  return rows;
}

function outcomeText(input: PageInput, speech: Speech): { tone: string; title: string; detail: string } | null {
  const notice = input.notice;
  const { view } = input;
  const lang = speech.language;
  const date = (d: string) => dateOf(view, speech, d);
  const nothing = t(lang, "page.nothing_changed");
  const nothingDetail = t(lang, "page.nothing_changed.detail");
  if (notice?.readOnly) return { tone: "error", title: nothing, detail: t(lang, "page.read_only") };
  if (notice?.problem) return { tone: "error", title: nothing, detail: notice.problem.message };
  if (!input.current && (!notice?.outcome || notice.outcome === "moved_on")) {
    return {
      tone: "moved_on",
      title: notice?.outcome ? nothing : t(lang, "page.earlier_link.title"),
      detail: view.item.archived
        ? t(lang, "page.earlier_link.archived")
        : t(lang, "page.earlier_link.dated", { date: date(view.item.expiryDate) }),
    };
  }
  if (!notice?.outcome || !notice.action) {
    return view.item.archived
      ? { tone: "moved_on", title: t(lang, "page.archived.title"), detail: t(lang, "page.archived.detail") }
      : null;
  }
  const { action, outcome } = notice;
  if (outcome === "moved_on" && input.current) {
    return {
      tone: "moved_on",
      title: nothing,
      detail: t(lang, view.item.archived ? "page.archived_meanwhile" : "page.changed_meanwhile"),
    };
  }
  const applied = outcome === "applied";
  const unchanged = (title: string) => ({ tone: "unchanged", title, detail: nothingDetail });
  switch (action) {
    case "acknowledge":
      return applied
        ? { tone: "applied", title: t(lang, "page.acknowledged.title"), detail: t(lang, "page.acknowledged.detail") }
        : unchanged(t(lang, "page.already_acknowledged"));
    case "complete":
      if (!applied) return unchanged(t(lang, "page.already_completed"));
      return notice.renewedTo
        ? {
            tone: "applied",
            title: t(lang, "page.completed_renewed.title"),
            detail: t(lang, "page.completed_renewed.detail", { date: date(notice.renewedTo) }),
          }
        : { tone: "applied", title: t(lang, "page.completed.title"), detail: t(lang, "page.completed.detail") };
    case "renew":
      return applied
        ? {
            tone: "applied",
            title: t(lang, "page.renewed.title", { date: date(notice.renewedTo ?? view.item.expiryDate) }),
            detail: t(lang, "page.renewed.detail"),
          }
        : unchanged(t(lang, "page.already_renewed", { date: date(view.item.expiryDate) }));
    case "snooze":
      return applied
        ? {
            tone: "applied",
            title: t(lang, "page.snoozed.title", { date: date(view.snoozedUntil ?? input.today) }),
            detail: t(lang, "page.snoozed.detail"),
          }
        : unchanged(t(lang, "page.already_snoozed", { date: date(view.snoozedUntil ?? input.today) }));
  }
}

function actionForm(input: PageInput, action: RecipientAction, speech: Speech): string {
  const { view, path, today } = input;
  const { item } = view;
  const lang = speech.language;
  const problem = input.notice?.problem?.action === action ? input.notice.problem : undefined;
  const error = problem ? `<p class="field-error" role="alert">${e(problem.message)}</p>` : "";
  const hidden = `<input type="hidden" name="action" value="${action}">`;
  const button = `<button type="submit">${e(actionLabel(speech, action))}</button>`;
  const open = `<form method="post" action="${e(path)}">`;
  switch (action) {
    case "acknowledge":
      return `${open}${hidden}
<p>${e(t(lang, "page.form.acknowledge"))}</p>
<label>${e(t(lang, "page.form.note"))}<textarea name="note" rows="2" maxlength="500">${e(problem?.field === "note" ? problem.value : "")}</textarea></label>
${error}${button}</form>`;
    case "complete":
      return `${open}${hidden}
<p>${e(item.completionRenewsTo ? t(lang, "page.form.complete_renews", { date: dateOf(view, speech, item.completionRenewsTo) }) : t(lang, "page.form.complete"))}</p>
${error}${button}</form>`;
    case "renew": {
      const value = problem?.field === "date" ? problem.value : addYears(item.expiryDate, 1);
      return `${open}${hidden}
<p>${e(t(lang, "page.form.renew"))}</p>
<label>${e(t(lang, "page.form.new_date"))}<input type="date" name="date" required min="${addDays(item.expiryDate, 1)}" value="${e(value)}"></label>
${error}${button}</form>`;
    }
    case "snooze": {
      const value = problem?.field === "until" ? problem.value : addDays(today, 7);
      return `${open}${hidden}
<p>${e(t(lang, "page.form.snooze"))}</p>
<label>${e(t(lang, "page.form.snooze_until"))}<input type="date" name="until" required min="${addDays(today, 1)}" value="${e(value)}"></label>
${error}${button}</form>`;
    }
  }
}

/** The item's page: what it is, its state, what a POST did, and the forms its state offers (or only one, to confirm). */
export function itemPage(input: PageInput): string {
  const { view } = input;
  const { item } = view;
  const speech = pageSpeech(view);
  const lang = speech.language;
  const kind = [t(lang, `kind.${item.itemType}`), item.documentType].filter(Boolean).join(" · ");
  const outcome = outcomeText(input, speech);
  const available = input.notice?.readOnly ? [] : availableActions(view, input.current);
  const shown = input.only ? available.filter((a) => a === input.only) : available;
  const rows = stateRows(input, speech)
    .map(([key, value]) => `<dt>${e(key)}</dt><dd>${e(value)}</dd>`)
    .join("\n");
  let actions: string;
  if (shown.length > 0) {
    const heading = input.only
      ? t(lang, "page.confirm", { action: actionLabel(speech, input.only) })
      : t(lang, "page.what_to_do");
    actions = `<h2>${e(heading)}</h2>\n${shown.map((a) => actionForm(input, a, speech)).join("\n")}`;
    if (input.only) actions += `\n<p><a href="${e(input.path)}">${e(t(lang, "page.all_actions"))}</a></p>`;
  } else if (input.only && available.length > 0) {
    actions = `<p>${e(t(lang, "page.not_open", { action: actionLabel(speech, input.only) }))} <a href="${e(input.path)}">${e(t(lang, "page.see_what_is"))}</a>.</p>`;
  } else {
    actions = "";
  }
  const footer = view.channel
    ? t(lang, "links35.page.footer", {
        channel: channelName(speech, view.channel.name, view.channel.type),
        company: view.companyName,
        date: dateOf(view, speech, input.expiresOn),
      })
    : t(lang, "page.footer", {
        name: view.contactName || t(lang, "page.you"),
        company: view.companyName,
        date: dateOf(view, speech, input.expiresOn),
      });
  const body = `<header>${e(view.companyName)}</header>
<h1>${e(item.title || t(lang, "untitled"))}</h1>
<p class="kind">${e(kind)}</p>
${outcome ? `<div class="outcome ${outcome.tone}" role="status"><strong>${e(outcome.title)}</strong>${e(outcome.detail)}</div>` : ""}
<dl>
${rows}
</dl>
${item.notes ? `<h2>${e(t(lang, "page.notes"))}</h2>\n<div class="notes">${e(item.notes)}</div>` : ""}
${actions}
<footer>${e(footer)}</footer>`;
  return pageDocument(`${item.title || t(lang, "page.item")} · ${view.companyName}`, body, speech.tag, speech.dir);
}

// ---- pages without an item ----

/** The one page of every link that does not work: unknown, altered, expired, or its item or contact deleted. Always the same bytes. */
/** The language of a page that knows no contact: the browser's (Accept-Language). */
export const browserSpeech = (c: { req: { header(name: string): string | undefined } }): Speech =>
  speechOfRequest(c.req.header("Accept-Language"));

/** The page of a link that does not work (whatever the reason: nothing tells a guess from an expired link), in `speech`. */
export function invalidLinkPage(speech: Speech): string {
  const lang = speech.language;
  return pageDocument(
    t(lang, "page.invalid.title"),
    `<h1>${e(t(lang, "page.invalid.heading"))}</h1>
<div class="outcome invalid" role="status"><strong>${e(t(lang, "page.invalid.lead"))}</strong>${e(t(lang, "page.invalid.detail", { days: LINK_LIFETIME_DAYS }, speech.locale))}</div>`,
    speech.tag,
    speech.dir,
  );
}

/** An error page for the pages' paths (rate limited, malformed request, server error), by status, in `speech`. */
export function errorPage(status: number, speech: Speech, retryAfter?: string): string {
  const lang = speech.language;
  const kind = status === 429 || status === 503 ? status : status >= 500 ? 500 : status === 404 ? 404 : 400;
  const seconds = Math.min(Math.max(Number.parseInt(retryAfter ?? "", 10) || 60, 1), 86_400);
  const title = t(lang, `page.error.${kind}.title`);
  const detail = t(lang, `page.error.${kind}.detail`, { n: seconds }, speech.locale);
  return pageDocument(
    title,
    `<h1>${e(title)}</h1>\n<div class="outcome error" role="status"><strong>${e(t(lang, "page.error.unchanged"))}</strong>${e(detail)}</div>`,
    speech.tag,
    speech.dir,
  );
}

/** The path every form of a token's pages posts to. */
export const tokenPath = (token: string) => `${RECIPIENT_PREFIX}${token}`;
