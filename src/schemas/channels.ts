// Channel endpoints (docs/channels.md): Slack, Teams, Google Chat, Discord and ntfy incoming webhooks.
import { z } from "@hono/zod-openapi";
import { CHANNEL_TYPES, expectedShape } from "../channels/urls";
import { Timestamp, cleanText, keysetPageQuery, requiredText } from "../lib/schemas";
import { MAX_URL_CHARS } from "../webhooks/urls";
import { languageInput } from "./contacts";

/** Most channel endpoints per company (checked inside the INSERT). */
export const MAX_CHANNELS = 50;
export const MAX_CHANNEL_NAME = 100;
export const MAX_ACCESS_TOKEN = 256;
export const MAX_CHANNEL_PAGE = 100;
/** The longest excerpt of a platform's answer a test shows, in characters. */
export const MAX_TEST_EXCERPT = 1_000;

const TypeSchema = z.enum(CHANNEL_TYPES, { error: `type must be one of: ${CHANNEL_TYPES.join(", ")}` }).openapi({
  example: "slack",
  description: "The platform: slack, teams (a Workflows webhook), google_chat, discord or ntfy",
});

// ---- output ----

export const ChannelSchema = z
  .object({
    channel_id: z.number().int().openapi({ example: 4 }),
    type: TypeSchema,
    name: z.string().openapi({ example: "#facilities" }),
    url: z.string().openapi({
      example: "https://hooks.slack.com/…Xk9Q",
      description:
        "Masked: the scheme and host, then `…` and the last 4 characters of the rest when it has " +
        "at least 16 (the rest of the URL is a credential). The full URL is shown only in the " +
        "answer of POST /v1/channels and of a PATCH that sets a new url.",
    }),
    has_access_token: z.boolean().openapi({
      example: false,
      description: "ntfy: whether an access token is set (sent as Authorization: Bearer); never shown",
    }),
    language: z.string().nullable().openapi({
      example: null,
      description: "BCP 47 language of the messages; null: the company's settings.language at send time",
    }),
    disabled: z.boolean().openapi({ example: false, description: "A disabled endpoint is sent nothing" }),
    disabled_reason: z
      .string()
      .nullable()
      .openapi({
        example: null,
        description:
          '"disabled by the account owner" after disabled: true; null while enabled (PATCH disabled: ' +
          "false re-enables and clears it)",
      }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi("Channel");

export const ChannelWithUrlSchema = ChannelSchema.extend({
  url: z.string().openapi({
    example: "https://hooks.slack.com/services/T0001/B0001/Xk9QXk9QXk9QXk9QXk9QXk9Q",
    description:
      "The full URL, as the URL parser normalises it (what was checked and what messages go to): " +
      "shown only in this answer",
  }),
}).openapi("ChannelWithUrl");

export const ChannelPage = z
  .object({
    success: z.literal(true),
    data: z.array(ChannelSchema),
    meta: z.object({
      limit: z.number().int().openapi({ example: 50 }),
      next_cursor: z
        .string()
        .nullable()
        .openapi({ description: "Pass as `cursor` for the next page; null on the last page" }),
      max_allowed: z
        .number()
        .int()
        .openapi({ example: MAX_CHANNELS, description: "Most channel endpoints a company may have" }),
    }),
  })
  .openapi("ChannelPage");

export const ChannelTestResultSchema = z
  .object({
    delivered: z.boolean().openapi({ description: "Whether the platform answered 2xx" }),
    status: z.number().int().nullable().openapi({
      example: 200,
      description: "The platform's HTTP status; null when no answer came (refused URL, network error, timeout)",
    }),
    body: z.string().openapi({
      example: "ok",
      description: `The start of the platform's answer, at most ${MAX_TEST_EXCERPT} characters (UTF-8, as received); "" when none`,
    }),
    truncated: z.boolean().openapi({ description: "Whether the answer was longer than body shows" }),
    error: z.string().nullable().openapi({
      example: null,
      description:
        "Why it was not delivered, in words (the platform's status, the refused URL rule, the timeout); null when delivered",
    }),
    duration_ms: z.number().int().openapi({ example: 182, description: "From sending to the end of the read" }),
  })
  .openapi("ChannelTestResult");

// ---- input ----

const urlField = cleanText("url")
  .min(1, { error: "url must not be empty", abort: true })
  .max(MAX_URL_CHARS, { error: `url must be at most ${MAX_URL_CHARS} characters` })
  .openapi({
    example: "https://hooks.slack.com/services/T0001/B0001/Xk9QXk9QXk9QXk9QXk9QXk9Q",
    description:
      `The platform's incoming webhook URL (400 naming the shape expected otherwise): slack ${expectedShape("slack")}; ` +
      `teams ${expectedShape("teams")}; google_chat ${expectedShape("google_chat")}; discord ${expectedShape("discord")}; ` +
      `ntfy ${expectedShape("ntfy")}. Every type also follows the webhook URL rules (https, default port, no ` +
      "credentials, no private, loopback, link-local or metadata host in any encoding: docs/webhooks.md). A " +
      'deployment with WEBHOOKS_ALLOW_PRIVATE_URLS="true" (local development) also accepts a loopback URL ' +
      "(http://127.0.0.1:PORT/any/path) for any type.",
  });

const nameField = requiredText("name", MAX_CHANNEL_NAME).openapi({
  example: "#facilities",
  description: `1 to ${MAX_CHANNEL_NAME} characters`,
});

const accessTokenField = cleanText("access_token")
  .min(1, { error: "access_token must not be empty (null removes it)", abort: true })
  .max(MAX_ACCESS_TOKEN, { error: `access_token must be at most ${MAX_ACCESS_TOKEN} characters` })
  .regex(/^[\x21-\x7e]+$/, { error: "access_token must be printable ASCII without spaces" })
  .nullable()
  .openapi({
    type: "string",
    example: "tk_AgQdq7mVBoFD37zQVN29RhuMzNIz2",
    description:
      "ntfy only (400 for another type): the access token sent as Authorization: Bearer. Write-only " +
      "(has_access_token says whether one is set); null removes it.",
  });

const languageField = languageInput.optional().openapi({
  type: "string",
  example: "de",
  description:
    "BCP 47 tag in a supported language (canonical form kept); null or absent: the company's " +
    "settings.language at send time",
});

export const CreateChannelSchema = z
  .strictObject({
    type: TypeSchema,
    name: nameField,
    url: urlField,
    access_token: accessTokenField.optional(),
    language: languageField,
    disabled: z
      .boolean({ error: "disabled must be true or false" })
      .optional()
      .openapi({ description: "Default false" }),
  })
  .openapi("CreateChannel");

export const UpdateChannelSchema = z
  .strictObject({
    name: nameField.optional(),
    url: urlField.optional(),
    access_token: accessTokenField.optional(),
    language: languageField,
    disabled: z
      .boolean({ error: "disabled must be true or false" })
      .optional()
      .openapi({ description: "false re-enables and clears disabled_reason; true disables" }),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), { error: "No updatable fields provided" })
  .openapi("UpdateChannel");

export const ListChannelsQuery = z.object({ ...keysetPageQuery(MAX_CHANNEL_PAGE) });

export type ChannelOutput = z.infer<typeof ChannelSchema>;
export type CreateChannelInput = z.infer<typeof CreateChannelSchema>;
export type UpdateChannelInput = z.infer<typeof UpdateChannelSchema>;
export type ChannelTestResult = z.infer<typeof ChannelTestResultSchema>;
