// Google Chat: an incoming-webhook message with one card in `cardsV2` (header, sections of
// textParagraph / decoratedText widgets, a buttonList whose buttons openLink the action pages) and
// a `text` fallback for notifications. Card texts take Chat's HTML subset, so user text is
// HTML-escaped there; the fallback takes Chat's own markup, where "<users/all>" mentions
// everyone, so its angle brackets become look-alikes (‹ ›). Pure.
import { escapeHtml } from "../../lib/html";
import { type ChannelContent, type ChannelPayload, clip, jsonPayload } from "./reminder";

export const GOOGLE_CHAT_LIMITS = {
  /** A message's documented maximum size; we keep the whole body under it. */
  bodyBytes: 32_000,
  /** Widgets per card: those beyond are ignored. */
  widgets: 100,
  /** Our own bounds for one text. */
  header: 200,
  text: 3000,
  button: 75,
} as const;

const html = (value: string, max: number) => clip(value, max, escapeHtml);
const lines = (value: string, max: number) => html(value, max).replace(/\n/g, "<br>");
const FALLBACK: Record<string, string> = { "<": "‹", ">": "›" };
/** One code point of the plain `text` fallback: no mention, no link markup. */
export const chatFallbackEscape = (point: string) => FALLBACK[point] ?? point;

const paragraph = (text: string) => ({ textParagraph: { text } });

export function googleChatMessage(c: ChannelContent): ChannelPayload {
  const L = GOOGLE_CHAT_LIMITS;
  const sections: unknown[] = [
    { widgets: [paragraph(lines(c.headline, L.text))] },
    {
      widgets: c.rows.map(([label, value]) => ({
        decoratedText: { topLabel: html(label, 100), text: html(value, 1000), wrapText: true },
      })),
    },
    { widgets: [paragraph(`<b>${html(c.whatToDo, 100)}</b> ${html(c.todo, 500)}`)] },
  ];
  if (c.notes) sections.push({ header: html(c.notesLabel, 100), widgets: [paragraph(lines(c.notes, L.text))] });
  if (c.links.length > 0) {
    sections.push({
      widgets: [
        {
          buttonList: {
            buttons: c.links.map((link) => ({
              text: clip(link.label, L.button),
              onClick: { openLink: { url: link.url } },
            })),
          },
        },
        paragraph(`<font color="#5f6368">${html(c.linksNote, 500)}</font>`),
      ],
    });
  }
  sections.push({ widgets: [paragraph(`<font color="#5f6368">${lines(c.footer, L.text)}</font>`)] });
  return jsonPayload({
    text: clip(c.title, L.text, chatFallbackEscape),
    // The header: the item, then its date and how far it is.
    cardsV2: [
      {
        cardId: "reminder",
        card: {
          header: { title: clip(c.heading, L.header), subtitle: clip(c.rows[2]?.[1] ?? "", L.header) },
          sections,
        },
      },
    ],
  });
}
