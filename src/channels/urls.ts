// Which URLs a channel endpoint may have (docs/channels.md "URL rules"). Every type goes through the
// webhook filter first (src/webhooks/urls.ts: https, default port, no credentials, no private,
// loopback, link-local or metadata target in any encoding), then each platform's hosts and paths;
// ntfy, which is self-hostable, takes any URL the webhook filter allows with a topic path. With
// WEBHOOKS_ALLOW_PRIVATE_URLS="true" (local development) a loopback URL of any path stands in for
// any platform (a local receiver). The same check runs when a URL is saved and before every send.

import { checkWebhookUrl, type UrlCheck } from "../webhooks/urls";

export const CHANNEL_TYPES = ["slack", "teams", "google_chat", "discord", "ntfy"] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

interface Platform {
  /** What the 400 says is expected. */
  shape: string;
  hosts: (host: string) => boolean;
  path: (path: string) => boolean;
  /** The query string (without `?`, "" when none) the platform's URL has. */
  query: (params: URLSearchParams, search: string) => boolean;
}

const exactly =
  (...names: string[]) =>
  (host: string) =>
    names.includes(host);
const noQuery = (_: URLSearchParams, search: string) => search === "";
/** Query keys only from `allowed`, each once, with `required` among them. */
const queryKeys =
  (allowed: readonly string[], required: readonly string[]) =>
  (params: URLSearchParams): boolean => {
    const keys = [...params.keys()];
    return (
      keys.every((k) => allowed.includes(k)) &&
      new Set(keys).size === keys.length &&
      required.every((k) => (params.get(k) ?? "") !== "")
    );
  };
const TOKEN = "[A-Za-z0-9_-]+";

const PLATFORMS: Record<ChannelType, Platform> = {
  slack: {
    // Incoming webhooks of a Slack app. Workflow Builder's /triggers/ URLs take the workflow's own
    // variables, not a message with blocks, so they are refused.
    shape: "a Slack incoming webhook URL: https://hooks.slack.com/services/T…/B…/…",
    hosts: exactly("hooks.slack.com"),
    path: (p) => new RegExp(`^/services/${TOKEN}/${TOKEN}/${TOKEN}$`).test(p),
    query: noQuery,
  },
  teams: {
    // The Workflows app's "when a webhook request is received" trigger (Power Automate) or a Logic
    // Apps request trigger: both signed with `sig` in the query (no other authentication is sent).
    shape:
      "a Teams Workflows (Power Automate or Logic Apps) webhook URL with its sig: " +
      "https://….environment.api.powerplatform.com/powerautomate/automations/direct/workflows/…/triggers/manual/paths/invoke?api-version=1&sp=…&sv=1.0&sig=… " +
      "or https://prod-….logic.azure.com/workflows/…/triggers/manual/paths/invoke?api-version=…&sp=…&sv=1.0&sig=…",
    hosts: (h) =>
      /^[a-z0-9-]+(\.[a-z0-9-]+)*\.environment\.api\.powerplatform\.com$/.test(h) ||
      /^[a-z0-9-]+\.[a-z0-9-]+\.logic\.azure\.com$/.test(h),
    path: (p) =>
      new RegExp(`^(/powerautomate/automations/direct)?/workflows/[A-Za-z0-9]+/triggers/${TOKEN}/paths/invoke$`).test(
        p,
      ),
    query: queryKeys(["api-version", "sp", "sv", "sig"], ["api-version", "sig"]),
  },
  google_chat: {
    shape: "a Google Chat space webhook URL: https://chat.googleapis.com/v1/spaces/…/messages?key=…&token=…",
    hosts: exactly("chat.googleapis.com"),
    path: (p) => new RegExp(`^/v1/spaces/${TOKEN}/messages$`).test(p),
    query: queryKeys(["key", "token", "threadKey", "messageReplyOption"], ["key", "token"]),
  },
  discord: {
    shape: "a Discord channel webhook URL: https://discord.com/api/webhooks/{id}/{token}",
    hosts: exactly("discord.com", "discordapp.com", "ptb.discord.com", "canary.discord.com"),
    path: (p) => new RegExp(`^/api(/v\\d{1,2})?/webhooks/\\d{1,20}/${TOKEN}$`).test(p),
    query: queryKeys(["thread_id", "wait"], []),
  },
  ntfy: {
    shape: "an ntfy topic URL: https://ntfy.sh/{topic} or your own server's https://host/{topic}",
    hosts: () => true,
    // A topic: the last segment, letters, digits, _ and - (ntfy's own rule), under any base path.
    path: (p) => /^(\/[^/]+)*\/[A-Za-z0-9_-]{1,64}$/.test(p),
    query: noQuery,
  },
};

/** The expected shape of `type`'s URL, as the 400 and the docs say it. */
export const expectedShape = (type: ChannelType) => PLATFORMS[type].shape;

const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|localhost|.+\.localhost)\.?$/;

/**
 * Checks a channel endpoint's URL for its type; `msg` names the field and the rule broken (or the
 * shape expected). The URL to store and call is `url.href` (the parser's normalised form).
 */
export function checkChannelUrl(type: ChannelType, raw: string, allowPrivate: boolean): UrlCheck {
  const result = checkWebhookUrl(raw, allowPrivate);
  if (!result.ok) return result;
  const { url } = result;
  // Local development: a loopback receiver stands in for every platform (the webhook filter allowed it).
  if (allowPrivate && LOOPBACK_HOST.test(url.hostname)) return result;
  const platform = PLATFORMS[type];
  const search = url.search.replace(/^\?/, "");
  if (
    !platform.hosts(url.hostname) ||
    !platform.path(url.pathname) ||
    url.hash !== "" ||
    !platform.query(url.searchParams, search)
  )
    return { ok: false, msg: `url of a ${type} channel must be ${platform.shape}` };
  return result;
}

/** How much of a secret's end a hint shows, and the shortest secret that shows any. */
const HINT_TAIL = 4;
const HINT_MIN = 16;

/** The end of a secret, only when it is long enough that 4 characters give little away. */
const tail = (secret: string) => (secret.length >= HINT_MIN ? secret.slice(-HINT_TAIL) : "");

/**
 * A channel URL as reads and the audit log show it: scheme and host, then `…` and the last 4
 * characters of the rest (path and query, where the secret is) when that rest has at least 16:
 * `https://hooks.slack.com/…Xk9Q`.
 */
export function maskUrl(href: string): string {
  const url = new URL(href);
  const rest = href.slice(url.origin.length);
  return `${url.origin}/…${tail(rest)}`;
}

/** An access token as reads and the audit log show it: `…` and its last 4 characters (16 or more). */
export const maskToken = (token: string) => `…${tail(token)}`;
