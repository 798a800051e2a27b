// Who acts on an item and how: the one list of the ways in (`via`). The audit log, the webhook
// payloads and the records' actions take it from this list.

/** The channel endpoints' types (the same list as CHANNEL_TYPES, src/channels/urls.ts): a channel message's link acts `via` its type. */
export const CHANNEL_VIAS = ["slack", "teams", "google_chat", "discord", "ntfy"] as const;
export type ChannelVia = (typeof CHANNEL_VIAS)[number];

/**
 * How an actor acted: `api`, a request with a bearer token; `link`, a recipient on a reminder
 * email's page; `slack`, `teams`, `google_chat`, `discord`, `ntfy`: someone in a channel, from the
 * links of the reminder posted there (docs/recipient-journey.md, "Links in a channel message").
 */
export const VIAS = ["api", "link", ...CHANNEL_VIAS] as const;
export type Via = (typeof VIAS)[number];

export const isChannelVia = (via: string | null | undefined): via is ChannelVia =>
  (CHANNEL_VIAS as readonly string[]).includes(via ?? "");

/** The platforms' own names, the same in every language: "#facilities (Slack)". */
export const PLATFORM_NAMES: Record<ChannelVia, string> = {
  slack: "Slack",
  teams: "Microsoft Teams",
  google_chat: "Google Chat",
  discord: "Discord",
  ntfy: "ntfy",
};

/**
 * Who acted: a recipient (a contact of the company, from a reminder email's page), a channel
 * endpoint of the company (from the links of a reminder posted to it: whoever in the channel opened
 * them), or an API client.
 */
export type ActionBy =
  | { type: "contact"; id: number }
  | { type: "channel"; id: number }
  | { type: "client"; id: string };
