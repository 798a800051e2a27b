// The delivery channels of reminders, and which of them this deployment can deliver.
import type { Env } from "../env";
import type { Channel } from "./store";

export const CHANNELS = ["email", "sms", "webhook"] as const;
/** A channel a reminder's `channels` may list (a channel endpoint is named by `channel_id` instead). */
export type ReminderChannel = (typeof CHANNELS)[number];

/** The channels this deployment can deliver: email with the send_email binding and a sender, sms with a provider. */
export function availableChannels(env: Env): Channel[] {
  const channels: Channel[] = [];
  if (env.EMAIL && env.EMAIL_FROM) channels.push("email");
  if (env.SMS_API_URL && env.SMS_API_KEY) channels.push("sms");
  return channels;
}

/** Channels a reminder gets when none are given: those this deployment can deliver (email). */
export function defaultChannels(env: Env): Channel[] {
  return availableChannels(env).includes("email") ? ["email"] : [];
}

/** The webhook channel is checked per company (src/records/reminders.ts `checkChannels`). */
export const WEBHOOK_CHANNEL_PROBLEM =
  "channel webhook is not available: the company has no enabled webhook endpoint " +
  "subscribed to reminder.sent (POST /v1/webhooks)";

/** Why a channel cannot be used here, or null when it can. */
export function channelProblem(env: Env, channel: ReminderChannel): string | null {
  if (availableChannels(env).includes(channel)) return null;
  switch (channel) {
    case "email":
      return (
        "channel email is not available: this deployment has no email sender configured " +
        "(send_email binding and EMAIL_FROM)"
      );
    case "sms":
      return (
        "channel sms is not available: this deployment has no SMS provider configured " +
        "(SMS_API_URL and the SMS_API_KEY secret)"
      );
    case "webhook":
      return WEBHOOK_CHANNEL_PROBLEM;
  }
}
