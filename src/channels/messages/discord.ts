// Discord: an execute-webhook body with one embed (title linking to the item's page, a
// description with the headline, what to do and the action pages as Markdown links, the item's rows
// as fields, the footer). A webhook without an application cannot send link buttons, so the actions
// are links. User text is Markdown-escaped, and `allowed_mentions: { parse: [] }` means no text,
// whatever it holds, pings @everyone, a role or a user. Pure.
import { type ChannelContent, type ChannelPayload, clip, jsonPayload, nearness } from "./reminder";

/** The embed limits Discord documents (docs/channels.md, "The messages"). */
export const DISCORD_LIMITS = {
  title: 256,
  description: 4096,
  fields: 25,
  fieldName: 256,
  fieldValue: 1024,
  footer: 2048,
  /** title + description + field names and values + footer (+ author name) of all embeds. */
  total: 6000,
} as const;

// Discord's Markdown punctuation: emphasis, strike, spoiler, code, quote, heading, list, masked
// link, escape, and "<" (which starts user, role, channel and timestamp mentions).
const MARKDOWN = /[\\*_~`|>#\-[\]<]/;
/** One code point as literal text in Discord Markdown. */
export const discordEscape = (point: string) => (MARKDOWN.test(point) ? `\\${point}` : point);

const md = (value: string, max: number) => clip(value, max, discordEscape);

/** The embed's colour by how near the date is. */
const COLOURS = { overdue: 0xc62828, today: 0xc62828, soon: 0xef6c00, week: 0xf9a825, later: 0x1f5fbf } as const;

export function discordMessage(c: ChannelContent): ChannelPayload {
  const L = DISCORD_LIMITS;
  const title = md(c.heading, L.title);
  const fields = c.rows.slice(0, L.fields).map(([name, value]) => ({
    name: clip(name, L.fieldName),
    value: md(value, L.fieldValue),
    inline: true,
  }));
  // The footer shows no Markdown: plain text.
  const footer = clip(c.footer.replace(/\n+/g, " "), 500);
  const links = c.links
    .filter((link) => !/[()\s]/.test(link.url))
    .map((link) => `[${md(link.label, 75)}](${link.url})`)
    .join(" · ");
  const parts = [
    md(c.headline, 2000),
    `**${md(c.whatToDo, 100)}** ${md(c.todo, 500)}`,
    ...(links ? [`**${md(c.actOnIt, 100)}** ${links}`, `-# ${md(c.linksNote, 500)}`] : []),
    ...(c.notes ? [`**${md(c.notesLabel, 100)}**\n${md(c.notes, 1500)}`] : []),
  ];
  const used = title.length + footer.length + fields.reduce((n, f) => n + f.name.length + f.value.length, 0);
  // The notes come last, so whatever the total leaves out of the description is the notes' end.
  const description = clip(parts.join("\n\n"), Math.min(L.description, L.total - used));
  return jsonPayload({
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title,
        ...(c.links[0] ? { url: c.links[0].url } : {}),
        description,
        color: COLOURS[nearness(c.days)],
        fields,
        footer: { text: footer },
      },
    ],
  });
}
