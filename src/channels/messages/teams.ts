// Microsoft Teams: the body a Workflows (Power Automate) "post to a channel when a webhook request
// is received" flow takes, a message with one Adaptive Card attachment (version 1.5, `rtl` for
// right-to-left languages) whose actions are Action.OpenUrl to the action pages. TextBlock and
// FactSet texts are Markdown in Teams: user text is backslash-escaped so it cannot link or format. Pure.
import { type ChannelContent, type ChannelPayload, clip, jsonPayload } from "./reminder";

/** The card version: 1.5 brings `rtl`; Teams renders cards up to 1.5 (docs/channels.md). */
export const ADAPTIVE_CARD_VERSION = "1.5";

export const TEAMS_LIMITS = {
  /** Teams refuses a message above about 28 KB; we keep the whole body well under it. */
  bodyBytes: 28_000,
  /** Teams shows at most 6 card actions. */
  actions: 6,
  /** Our own bound for one text block. */
  text: 3000,
  factValue: 1000,
} as const;

// The Markdown punctuation that could emphasise, strike, quote code or make a link anywhere in a line.
// (A leading "-" or "1." can still make a list item: harmless, and escaping every "-" would show
// backslashes in dates where a client ignores them.)
const MARKDOWN = /[\\*_[\]~`]/;
/** One code point as literal text in Teams' Markdown. */
export const teamsEscape = (point: string) => (MARKDOWN.test(point) ? `\\${point}` : point);

const md = (value: string, max: number) => clip(value, max, teamsEscape);
/** Lines of user text as Markdown paragraphs (a single newline is not a break in a TextBlock). */
const paragraphs = (value: string, max: number) =>
  md(value, max)
    .split("\n")
    .filter((line) => line.trim() !== "")
    .join("\n\n");

const text = (value: string, extra: Record<string, unknown> = {}) => ({
  type: "TextBlock",
  text: value,
  wrap: true,
  ...extra,
});

export function teamsMessage(c: ChannelContent): ChannelPayload {
  const L = TEAMS_LIMITS;
  const body: unknown[] = [
    text(md(c.heading, 300), { style: "heading", size: "Medium", weight: "Bolder" }),
    text(paragraphs(c.headline, L.text)),
    {
      type: "FactSet",
      facts: c.rows.map(([title, value]) => ({ title: md(title, 100), value: md(value, L.factValue) })),
    },
    text(`**${md(c.whatToDo, 100)}** ${md(c.todo, 500)}`),
  ];
  if (c.notes) body.push(text(`**${md(c.notesLabel, 100)}**`), text(paragraphs(c.notes, L.text)));
  if (c.linksNote) body.push(text(md(c.linksNote, 500), { size: "Small", isSubtle: true }));
  body.push(text(paragraphs(c.footer, L.text), { size: "Small", isSubtle: true, separator: true }));
  const card = {
    $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
    type: "AdaptiveCard",
    version: ADAPTIVE_CARD_VERSION,
    ...(c.rtl ? { rtl: true } : {}),
    msteams: { width: "Full" },
    body,
    ...(c.links.length > 0
      ? {
          actions: c.links.slice(0, L.actions).map((link, i) => ({
            type: "Action.OpenUrl",
            title: clip(link.label, 75),
            url: link.url,
            ...(i === 0 ? { style: "positive" } : {}),
          })),
        }
      : {}),
  };
  return jsonPayload({
    type: "message",
    attachments: [{ contentType: "application/vnd.microsoft.card.adaptive", contentUrl: null, content: card }],
  });
}
