// The test message of POST /v1/channels/{channel_id}/test: the smallest payload each platform
// accepts, in the channel's language. Pure. The reminder messages (src/channels/messages/) are
// built per platform elsewhere.
import { speechFor } from "../i18n/language";
import { t } from "../i18n/messages";
import type { ChannelType } from "./urls";

export interface ChannelMessage {
  headers: Record<string, string>;
  body: string;
}

const json = (payload: unknown): ChannelMessage => ({
  headers: { "content-type": "application/json" },
  body: JSON.stringify(payload),
});

/**
 * `{headers, body}` of a test message to a `type` channel in `language` (a BCP 47 tag; the
 * catalogue's English when it speaks none), naming `companyName`. ntfy's `Title` header is
 * RFC 2047-encoded (headers are Latin-1; ntfy decodes it).
 */
export function testMessage(type: ChannelType, language: string, companyName: string): ChannelMessage {
  const { language: lang } = speechFor(language);
  const title = t(lang, "channel_test.title", { company: companyName });
  const text = t(lang, "channel_test.text", { company: companyName });
  switch (type) {
    case "slack":
      // Slack reads &, < and > as markup (<!channel> pings everyone): escaped as its docs ask.
      return json({ text: `*${slackEscape(title)}*\n${slackEscape(text)}` });
    case "google_chat":
      return json({ text: `*${title}*\n${text}` });
    case "discord":
      // No mentions of @everyone or roles, whatever the company's name says.
      return json({ content: `**${title}**\n${text}`, allowed_mentions: { parse: [] } });
    case "teams":
      return json({
        type: "message",
        attachments: [
          {
            contentType: "application/vnd.microsoft.card.adaptive",
            contentUrl: null,
            content: {
              $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
              type: "AdaptiveCard",
              version: "1.4",
              body: [
                { type: "TextBlock", text: title, weight: "Bolder", size: "Medium", wrap: true },
                { type: "TextBlock", text, wrap: true },
              ],
            },
          },
        ],
      });
    case "ntfy":
      return {
        headers: { "content-type": "text/plain; charset=utf-8", title: encodedWord(title), tags: "white_check_mark" },
        body: text,
      };
  }
}

const slackEscape = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");

/** RFC 2047 `=?UTF-8?B?…?=` when the text is not plain printable ASCII (a header value must be Latin-1). */
function encodedWord(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  const bytes = new TextEncoder().encode(text);
  return `=?UTF-8?B?${btoa(String.fromCharCode(...bytes))}?=`;
}
