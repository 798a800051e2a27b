// The message each channel platform expects for one reminder (docs/channels.md, "The messages"):
// `channelMessage(type, input)` is the request body and headers to send to the endpoint's URL.
// Every builder shows the same wording (reminder.ts); each module holds one platform's markup and
// limits. Pure, no I/O.
import { discordMessage } from "./discord";
import { googleChatMessage } from "./google-chat";
import { ntfyMessage } from "./ntfy";
import {
  type ChannelContent,
  type ChannelPayload,
  type ChannelReminder,
  type ChannelType,
  channelContent,
} from "./reminder";
import { slackMessage } from "./slack";
import { teamsMessage } from "./teams";

export { CHANNEL_TYPES, type ChannelPayload, type ChannelReminder, type ChannelType } from "./reminder";

const BUILDERS: Record<ChannelType, (content: ChannelContent) => ChannelPayload> = {
  slack: slackMessage,
  teams: teamsMessage,
  google_chat: googleChatMessage,
  discord: discordMessage,
  ntfy: ntfyMessage,
};

/** The request (headers and body) that posts `input`'s reminder to an endpoint of `type`. */
export function channelMessage(type: ChannelType, input: ChannelReminder): ChannelPayload {
  return BUILDERS[type](channelContent(input));
}
