// Channel endpoints (docs/channels.md): Slack, Teams, Google Chat, Discord and ntfy incoming
// webhooks of a company, their URL rules per platform, and a test message.
import { conditionalRecord, rowVersion } from "../../lib/conditional";
import {
  MessageEnvelope,
  OAuthErrorSchema,
  ApiErrorSchema,
  createRouter,
  dataEnvelope,
  idParam,
  jsonBody,
  jsonResponse,
  responseHeaders,
  resultEnvelope,
  scopedRoute,
  z,
} from "../../lib/openapi";
import { created, done, ok, page, updated } from "../../lib/respond";
import { allowsPrivateUrls } from "../../webhooks/urls";
import { secretsKey } from "../../records/webhooks";
import { sendToChannel } from "../../channels/send";
import { testMessage } from "../../channels/test-message";
import {
  channelOutput,
  channelTarget,
  checkAccessToken,
  checkChannelUrlInput,
  createChannel,
  deleteChannel,
  getChannel,
  listChannels,
  updateChannel,
} from "../../records/channels";
import type { ChannelType } from "../../channels/urls";
import {
  ChannelPage,
  ChannelSchema,
  ChannelTestResultSchema,
  ChannelWithUrlSchema,
  CreateChannelSchema,
  ListChannelsQuery,
  MAX_CHANNEL_NAME,
  MAX_CHANNEL_PAGE,
  MAX_CHANNELS,
  UpdateChannelSchema,
} from "../../schemas/channels";

const tags = ["Channels"];
const ChannelParams = idParam("channel_id");

const channelRecord = conditionalRecord({
  what: "Channel",
  table: "channel_endpoints",
  params: ChannelParams,
  load: async (c, { channel_id }) => {
    const version = await rowVersion(c, "channel_endpoints", channel_id);
    return { id: channel_id, version, data: channelOutput(await getChannel(c.var.db, c.var.companyId, channel_id)) };
  },
});

const ChannelEnvelope = dataEnvelope(ChannelSchema, "ChannelEnvelope");
const ChannelResult = resultEnvelope(ChannelSchema, "ChannelResult");
const ChannelCreatedResult = resultEnvelope(ChannelWithUrlSchema, "ChannelCreatedResult");
const ChannelTestEnvelope = resultEnvelope(ChannelTestResultSchema, "ChannelTestResultEnvelope");

/** 503 of the operations that encrypt or decrypt: Shape B when the secrets key is not configured. */
export const channelsNotConfigured = {
  ...jsonResponse(
    z.union([OAuthErrorSchema, ApiErrorSchema]),
    'Shape B "channels are not configured on this deployment" when WEBHOOK_SECRETS_KEY (which ' +
      "encrypts channel URLs and tokens too) is not set; Shape A service_unavailable when the " +
      "credential store could not be reached (retry after Retry-After seconds)",
  ),
  headers: responseHeaders.retryAfter,
};

const NOT_DELIVERED = "Test message not delivered: see data.error";

const WHO =
  "Account owner only (another user is 403 Shape B), scopes channels:read / channels:write (`*` grants both). " +
  "Another company's channel is 404.";

export const channelsRouter = createRouter();

channelsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/channels",
    operationId: "createChannel",
    scope: "channels:write",
    owner: true,
    tags,
    summary: "Create a channel endpoint",
    description:
      `Extension. An incoming webhook of a platform: type slack, teams, google_chat, discord or ntfy; name (1 to ${MAX_CHANNEL_NAME} characters); ` +
      "url, which must have its platform's host and path (400 naming the shape expected; docs/channels.md); " +
      "access_token (ntfy only); language (null: the company's settings.language); disabled. The answer is the " +
      "only one, with a PATCH setting a new url, that shows the url in full: every read masks it. The URL and " +
      "the token are stored encrypted and never written to the audit log or logs (which show their masked " +
      `forms). A company has at most ${MAX_CHANNELS} channels: one more is 400 (counted inside the insert, so ` +
      `concurrent creates cannot overshoot). ${WHO} 503 when the deployment has no WEBHOOK_SECRETS_KEY.`,
    request: { body: jsonBody(CreateChannelSchema) },
    responses: {
      201: jsonResponse(ChannelCreatedResult, "Channel created, its url in full"),
      503: channelsNotConfigured,
    },
  }),
  async (c) => {
    const input = c.req.valid("json");
    checkAccessToken(input.type, input.access_token);
    const url = checkChannelUrlInput(input.type, input.url, allowsPrivateUrls(c.env));
    const key = secretsKey(c.env, "channels");
    const row = await createChannel(c.var.db, c.var.companyId, c.var.auth.userId, { ...input, url }, key);
    return created(c, "Channel created", { ...channelOutput(row), url });
  },
);

channelsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/channels",
    operationId: "listChannels",
    scope: "channels:read",
    owner: true,
    tags,
    summary: "List channel endpoints",
    description:
      `Extension. The company's channels by channel_id, urls masked. Keyset pagination (\`limit\` 1 to ${MAX_CHANNEL_PAGE}, ` +
      `default 50): pass \`meta.next_cursor\` as \`cursor\`. ${WHO}`,
    request: { query: ListChannelsQuery },
    responses: { 200: jsonResponse(ChannelPage, "A page of channels") },
  }),
  async (c) => page(c, await listChannels(c.var.db, c.var.companyId, c.req.valid("query"))),
);

channelsRouter.openapi(
  scopedRoute({
    method: "get",
    path: "/v1/channels/{channel_id}",
    operationId: "getChannel",
    etag: true,
    scope: "channels:read",
    owner: true,
    tags,
    summary: "Get a channel endpoint",
    description: `Extension. The url masked, the access token never shown (has_access_token). ${WHO}`,
    request: { params: ChannelParams },
    responses: { 200: jsonResponse(ChannelEnvelope, "The channel") },
  }),
  async (c) => ok(c, channelOutput(await getChannel(c.var.db, c.var.companyId, c.req.valid("param").channel_id))),
);

channelsRouter.openapi(
  scopedRoute({
    method: "patch",
    path: "/v1/channels/{channel_id}",
    operationId: "updateChannel",
    precondition: channelRecord,
    scope: "channels:write",
    owner: true,
    tags,
    summary: "Update a channel endpoint",
    description:
      "Extension. name, url (checked against the channel's type, which cannot change: create another " +
      "channel instead), access_token (ntfy only; null removes it), language (null: the company's), disabled " +
      "(false re-enables and clears disabled_reason). The answer shows the url in full when this PATCH set " +
      `one, masked otherwise. An empty body is 400. ${WHO} 503 when a new url or token cannot be encrypted ` +
      "(no WEBHOOK_SECRETS_KEY).",
    request: { params: ChannelParams, body: jsonBody(UpdateChannelSchema) },
    responses: { 200: jsonResponse(ChannelResult, "Channel updated"), 503: channelsNotConfigured },
  }),
  async (c) => {
    const input = c.req.valid("json");
    const id = c.req.valid("param").channel_id;
    const needsKey = input.url !== undefined || (input.access_token !== undefined && input.access_token !== null);
    let url: string | undefined;
    if (input.url !== undefined || input.access_token !== undefined) {
      const type = (await getChannel(c.var.db, c.var.companyId, id)).type as ChannelType;
      checkAccessToken(type, input.access_token);
      if (input.url !== undefined) url = checkChannelUrlInput(type, input.url, allowsPrivateUrls(c.env));
    }
    const key = needsKey ? secretsKey(c.env, "channels") : null;
    const row = await updateChannel(c.var.db, c.var.companyId, id, { ...input, url }, key);
    const output = channelOutput(row);
    return updated(c, "Channel updated", url === undefined ? output : { ...output, url });
  },
);

channelsRouter.openapi(
  scopedRoute({
    method: "delete",
    path: "/v1/channels/{channel_id}",
    operationId: "deleteChannel",
    precondition: channelRecord,
    scope: "channels:write",
    owner: true,
    tags,
    summary: "Delete a channel endpoint",
    description: `Extension. The channel and its encrypted URL and token are gone. ${WHO}`,
    request: { params: ChannelParams },
    responses: { 200: jsonResponse(MessageEnvelope, "Channel deleted") },
  }),
  async (c) => {
    await deleteChannel(c.var.db, c.var.companyId, c.req.valid("param").channel_id);
    return done(c, "Channel deleted");
  },
);

channelsRouter.openapi(
  scopedRoute({
    method: "post",
    path: "/v1/channels/{channel_id}/test",
    operationId: "testChannel",
    scope: "channels:write",
    owner: true,
    tags,
    summary: "Send a test message to a channel",
    description:
      "Extension. Sends one test message now (in the channel's language, naming the company: Slack `{text}`, " +
      "Teams an Adaptive Card 1.4 in a message attachment, Google Chat `{text}`, Discord `{content}`, ntfy a " +
      "text body with a Title header and the access token as Authorization: Bearer) and answers 200 with what " +
      'the platform said (msg "Test message delivered" or "Test message not delivered: see data.error"): delivered (a 2xx), status, the start of its answer (body, at most 1,000 characters; ' +
      "truncated), error and duration_ms. A platform's error (4xx, 5xx) is still 200 here: the test worked, the " +
      "channel did not. The URL rules are checked again first (a URL saved on loopback while " +
      "WEBHOOKS_ALLOW_PRIVATE_URLS was on is not called once it is off: status null and the rule in error); " +
      "redirects are not followed (3xx is the answer), the send has a 5 s timeout and at most 16 KiB of the " +
      "answer is read. Retried only by calling again (an Idempotency-Key replays the stored answer without " +
      "sending). A disabled channel can be tested (to check a new URL before enabling it). Nothing about the " +
      `channel changes. No body. ${WHO} 503 when the deployment has no WEBHOOK_SECRETS_KEY.`,
    request: { params: ChannelParams },
    responses: { 200: jsonResponse(ChannelTestEnvelope, "What the platform answered"), 503: channelsNotConfigured },
  }),
  async (c) => {
    const key = secretsKey(c.env, "channels");
    const target = await channelTarget(c.var.db, c.var.companyId, c.req.valid("param").channel_id, key);
    const type = target.row.type as ChannelType;
    if (target.secrets === null)
      return updated(c, NOT_DELIVERED, {
        delivered: false,
        status: null,
        body: "",
        truncated: false,
        error:
          "not sent: the channel's url cannot be read with this deployment's WEBHOOK_SECRETS_KEY: set it again (PATCH url)",
        duration_ms: 0,
      });
    const message = testMessage(type, target.row.language ?? target.companyLanguage, target.companyName);
    const { retry_after: _retryAfter, ...result } = await sendToChannel({ type, ...target.secrets }, message, {
      allowPrivate: allowsPrivateUrls(c.env),
    });
    return updated(c, result.delivered ? "Test message delivered" : NOT_DELIVERED, result);
  },
);
