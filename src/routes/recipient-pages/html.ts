// The recipient's pages as HTML (docs/recipient-journey.md): the item with its state and its
// actions, an action's one-button confirmation, what a POST did, and the error pages. Plain forms
// (method="post") that need no script; one inline style, allowed by its hash; nothing loaded from
// anywhere. Pure: the routes (routes.ts) decide which page, with which status.
import { relativeDay } from "../../company-clock/reminder-email";
import { escapeHtml as e } from "../../lib/html";
import { toBase64 } from "../../lib/bytes";
import type { RecipientAction } from "../../lib/recipient-links";
import { LINK_LIFETIME_DAYS, RECIPIENT_PREFIX } from "../../lib/recipient-links";
import { addDays, addYears, formatDate, instantToLocal } from "../../lib/time";
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

const KIND_LABEL = { exp: "Expiration", due: "Due date", apt: "Appointment", evt: "Event" } as const;

/** The words each action goes by, on its button and in what the page says it did. */
export const ACTION_LABEL: Record<RecipientAction, string> = {
  acknowledge: "I'm on it",
  complete: "Mark completed",
  renew: "Renew",
  snooze: "Snooze reminders",
};

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

/** The instant of a timestamp as D1 (`YYYY-MM-DD HH:MM:SS`, UTC) or ISO writes it, in the company's zone and format. */
function localTime(at: string, view: RecipientView): string {
  const instant = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(at) ? at : `${at.replace(" ", "T")}Z`);
  if (!Number.isFinite(instant)) return at;
  const local = instantToLocal(instant, view.timeZone);
  return `${formatDate(local.date, view.dateFormat)} ${local.hour} (${view.timeZone})`;
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

function stateRows(input: PageInput): Array<[string, string]> {
  const { view, today } = input;
  const { item } = view;
  const date = formatDate(item.expiryDate, view.dateFormat);
  const rows: Array<[string, string]> = [
    ["Date", `${date} (${relativeDay(today, item.expiryDate)})`],
    ["Status", item.archived ? "Archived" : item.status === "completed" ? "Completed" : "Pending"],
  ];
  const ack = view.acknowledgement;
  if (ack) {
    const who = ack.by.type === "client" ? "through the API" : ack.byName ? `by ${ack.byName}` : "by another recipient";
    rows.push(["Acknowledged", `${who}, ${localTime(ack.at, view)}${ack.note ? ` — “${ack.note}”` : ""}`]);
  } else if (item.status === "pending" && !item.archived) {
    rows.push(["Acknowledged", "Not yet"]);
  }
  if (view.snoozedUntil) rows.push(["Snoozed until", formatDate(view.snoozedUntil, view.dateFormat)]);
  if (item.rule) {
    const unit = item.rule.every === 1 ? item.rule.unit : `${item.rule.every} ${item.rule.unit}s`;
    rows.push([
      "Recurs",
      `every ${unit}, renewed ${item.rule.renewOn === "completed" ? "when completed" : "when it expires"}`,
    ]);
  }
  rows.push(["Company", view.companyName], ["Reference", `Item #${item.id}`]);
  return rows;
}

function outcomeText(input: PageInput): { tone: string; title: string; detail: string } | null {
  const notice = input.notice;
  const { view } = input;
  const date = (d: string) => formatDate(d, view.dateFormat);
  if (notice?.readOnly) {
    return {
      tone: "error",
      title: "Nothing was changed",
      detail: "This account is being moved and is read-only for a few minutes. Try again " + "shortly.",
    };
  }
  if (notice?.problem) return { tone: "error", title: "Nothing was changed", detail: notice.problem.message };
  if (!input.current && (!notice?.outcome || notice.outcome === "moved_on")) {
    const now = view.item.archived ? " and is now archived" : ` and is now dated ${date(view.item.expiryDate)}`;
    return {
      tone: "moved_on",
      title: notice?.outcome ? "Nothing was changed" : "This link is for an earlier date of the item",
      detail: `The item was renewed (or completed and renewed) since this link was sent${now}. Links in the next reminder email act on it.`,
    };
  }
  if (!notice?.outcome || !notice.action) {
    return view.item.archived
      ? { tone: "moved_on", title: "This item is archived", detail: "Nothing is expected of you for it." }
      : null;
  }
  const { action, outcome } = notice;
  if (outcome === "moved_on" && input.current) {
    return view.item.archived
      ? { tone: "moved_on", title: "Nothing was changed", detail: "The item was archived meanwhile." }
      : {
          tone: "moved_on",
          title: "Nothing was changed",
          detail:
            "The item changed while you acted on it (completed, renewed or rescheduled by " +
            "someone else). Here it is as it is now.",
        };
  }
  const applied = outcome === "applied";
  switch (action) {
    case "acknowledge":
      return applied
        ? {
            tone: "applied",
            title: "Thank you: you are on it",
            detail: "Everyone can now see that you took it on; the remaining reminders for this date " + "are held.",
          }
        : { tone: "unchanged", title: "It was already acknowledged", detail: "Nothing was changed." };
    case "complete":
      if (!applied) return { tone: "unchanged", title: "It was already completed", detail: "Nothing was changed." };
      return notice.renewedTo
        ? {
            tone: "applied",
            title: "Marked completed and renewed",
            detail: `Its next date is ${date(notice.renewedTo)}; the next reminder emails, with new links, come for that date.`,
          }
        : { tone: "applied", title: "Marked completed", detail: "No more reminders will be sent for it." };
    case "renew":
      return applied
        ? {
            tone: "applied",
            title: `Renewed until ${date(notice.renewedTo ?? view.item.expiryDate)}`,
            detail: "The next reminder emails, with new links, come for the new date.",
          }
        : {
            tone: "unchanged",
            title: `It was already renewed until ${date(view.item.expiryDate)}`,
            detail: "Nothing was changed.",
          };
    case "snooze":
      return applied
        ? {
            tone: "applied",
            title: `Snoozed until ${date(view.snoozedUntil ?? input.today)}`,
            detail: "No reminder will be sent before then; on that day one comes, then the usual " + "ones.",
          }
        : {
            tone: "unchanged",
            title: `It was already snoozed until ${date(view.snoozedUntil ?? input.today)}`,
            detail: "Nothing was changed.",
          };
  }
}

function actionForm(input: PageInput, action: RecipientAction): string {
  const { view, path, today } = input;
  const { item } = view;
  const problem = input.notice?.problem?.action === action ? input.notice.problem : undefined;
  const error = problem ? `<p class="field-error" role="alert">${e(problem.message)}</p>` : "";
  const hidden = `<input type="hidden" name="action" value="${action}">`;
  const button = `<button type="submit">${e(ACTION_LABEL[action])}</button>`;
  const open = `<form method="post" action="${e(path)}">`;
  switch (action) {
    case "acknowledge":
      return `${open}${hidden}
<p>Tell everyone you are taking care of it. The remaining reminders for this date are then held.</p>
<label>Note (optional)<textarea name="note" rows="2" maxlength="500">${e(problem?.field === "note" ? problem.value : "")}</textarea></label>
${error}${button}</form>`;
    case "complete":
      return `${open}${hidden}
<p>${item.completionRenewsTo ? `It is done. The item then renews itself: its next date is ${e(formatDate(item.completionRenewsTo, view.dateFormat))}.` : "It is done: no more reminders for it."}</p>
${error}${button}</form>`;
    case "renew": {
      const value = problem?.field === "date" ? problem.value : addYears(item.expiryDate, 1);
      return `${open}${hidden}
<p>It was renewed: give its new expiry date.</p>
<label>New date<input type="date" name="date" required min="${addDays(item.expiryDate, 1)}" value="${e(value)}"></label>
${error}${button}</form>`;
    }
    case "snooze": {
      const value = problem?.field === "until" ? problem.value : addDays(today, 7);
      return `${open}${hidden}
<p>No reminder until the day you choose; that day one comes, then the usual ones.</p>
<label>Snooze until<input type="date" name="until" required min="${addDays(today, 1)}" value="${e(value)}"></label>
${error}${button}</form>`;
    }
  }
}

/** The item's page: what it is, its state, what a POST did, and the forms its state offers (or only one, to confirm). */
export function itemPage(input: PageInput): string {
  const { view } = input;
  const { item } = view;
  const kind = [KIND_LABEL[item.itemType], item.documentType].filter(Boolean).join(" · ");
  const outcome = outcomeText(input);
  const available = input.notice?.readOnly ? [] : availableActions(view, input.current);
  const shown = input.only ? available.filter((a) => a === input.only) : available;
  const rows = stateRows(input)
    .map(([key, value]) => `<dt>${e(key)}</dt><dd>${e(value)}</dd>`)
    .join("\n");
  let actions: string;
  if (shown.length > 0) {
    actions = `<h2>${input.only ? `Confirm: ${e(ACTION_LABEL[input.only])}` : "What would you like to do?"}</h2>\n${shown.map((a) => actionForm(input, a)).join("\n")}`;
    if (input.only) actions += `\n<p><a href="${e(input.path)}">All actions for this item</a></p>`;
  } else if (input.only && available.length > 0) {
    actions = `<p>${e(ACTION_LABEL[input.only])} is not open for this item now. <a href="${e(input.path)}">See what is</a>.</p>`;
  } else {
    actions = "";
  }
  const body = `<header>${e(view.companyName)}</header>
<h1>${e(item.title || "(untitled)")}</h1>
<p class="kind">${e(kind)}</p>
${outcome ? `<div class="outcome ${outcome.tone}" role="status"><strong>${e(outcome.title)}</strong>${e(outcome.detail)}</div>` : ""}
<dl>
${rows}
</dl>
${item.notes ? `<h2>Notes</h2>\n<div class="notes">${e(item.notes)}</div>` : ""}
${actions}
<footer>This page is for ${e(view.contactName || "you")}, from a reminder email of ${e(view.companyName)}. Its link works until ${e(formatDate(input.expiresOn, view.dateFormat))} and acts without signing in: do not share it.</footer>`;
  return pageDocument(`${item.title || "Item"} · ${view.companyName}`, body);
}

// ---- pages without an item ----

/** The one page of every link that does not work: unknown, altered, expired, or its item or contact deleted. Always the same bytes. */
export const INVALID_LINK_PAGE = pageDocument(
  "Link not valid",
  `<h1>This link does not work</h1>
<div class="outcome invalid" role="status"><strong>It may have expired, or what it was for was removed.</strong>Links in reminder emails work for ${LINK_LIFETIME_DAYS} days after the item's date. The next reminder email brings new ones.</div>`,
);

/** An error page for the pages' paths (rate limited, malformed request, server error), by status. */
export function errorPage(status: number, retryAfter?: string): string {
  const [title, detail] =
    status === 429
      ? [
          "Too many requests",
          `Too many requests came from your address. Wait ${retryAfter ? `${retryAfter} seconds` : "a minute"} and try again.`,
        ]
      : status === 503
        ? [
            "Not available just now",
            `The service is busy with this account. Try again${retryAfter ? ` in ${retryAfter} seconds` : " shortly"}.`,
          ]
        : status >= 500
          ? ["Something went wrong", "Nothing was changed. Try again in a moment."]
          : status === 404
            ? ["This link does not work", "Check that the whole link was copied."]
            : ["This request could not be handled", "Nothing was changed. Go back to the page and use its buttons."];
  return pageDocument(
    title,
    `<h1>${e(title)}</h1>\n<div class="outcome error" role="status"><strong>Nothing was changed.</strong>${e(detail)}</div>`,
  );
}

/** The path every form of a token's pages posts to. */
export const tokenPath = (token: string) => `${RECIPIENT_PREFIX}${token}`;
