// Slack: an incoming-webhook body in Block Kit (header, sections, actions with URL buttons,
// context) with a top-level `text` for notifications and clients without blocks. User text is
// mrkdwn-escaped (&, <, >), so it can neither link nor mention (<!channel>, <@U…>). Pure.
import { type ChannelContent, type ChannelPayload, clip, jsonPayload } from "./reminder";

/** Block Kit's documented limits (docs/channels.md, "The messages"). */
export const SLACK_LIMITS = {
  blocks: 50,
  /** A section's or context element's text, and the top-level fallback we send. */
  text: 3000,
  /** A section field's text. */
  field: 2000,
  fields: 10,
  header: 150,
  buttonText: 75,
  buttonUrl: 3000,
  actionElements: 25,
  contextElements: 10,
} as const;

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;" };
/** One code point as Slack mrkdwn text. */
export const slackEscape = (point: string) => ESCAPES[point] ?? point;

const mrkdwn = (text: string) => ({ type: "mrkdwn", text });
const esc = (value: string, max: number) => clip(value, max, slackEscape);

export function slackMessage(c: ChannelContent): ChannelPayload {
  const L = SLACK_LIMITS;
  const blocks: unknown[] = [
    { type: "header", text: { type: "plain_text", text: clip(c.heading, L.header), emoji: false } },
    { type: "section", text: mrkdwn(esc(c.headline, L.text)) },
    {
      type: "section",
      fields: c.rows.slice(0, L.fields).map(([label, value]) => {
        const head = `*${esc(label, 100)}*\n`;
        return mrkdwn(head + esc(value, L.field - head.length));
      }),
    },
    { type: "section", text: mrkdwn(`*${esc(c.whatToDo, 100)}* ${esc(c.todo, L.text - 110)}`) },
  ];
  if (c.notes) {
    const head = `*${esc(c.notesLabel, 100)}*\n`;
    blocks.push({ type: "section", text: mrkdwn(head + esc(c.notes, L.text - head.length)) });
  }
  const buttons = c.links.filter((link) => link.url.length <= L.buttonUrl).slice(0, L.actionElements);
  if (buttons.length > 0) {
    blocks.push({
      type: "actions",
      elements: buttons.map((link, i) => ({
        type: "button",
        action_id: link.action,
        text: { type: "plain_text", text: clip(link.label, L.buttonText), emoji: false },
        url: link.url,
        ...(i === 0 ? { style: "primary" } : {}),
      })),
    });
  }
  blocks.push({
    type: "context",
    elements: [...(c.linksNote ? [c.linksNote] : []), c.footer].map((text) => mrkdwn(esc(text, L.text))),
  });
  const text = esc(c.title, L.text);
  return jsonPayload({ text, blocks });
}
