import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { channelEndpoints, contactGroups, contacts, items, reminderSync } from "../db/schema";
import type { ChannelType } from "../channels/urls";
import type { Env } from "../env";
import { apiError, badRequest, notFound } from "../lib/errors";
import {
  channelProblem,
  defaultChannels,
  type ReminderChannel,
  WEBHOOK_CHANNEL_PROBLEM,
} from "../company-clock/channels";
import { hasSubscriber } from "../webhooks/outbox";
import { isFailure, type ReminderInput } from "../company-clock/api";
import { clockFor } from "../company-clock/handoff/worker";
import type { CreateReminderInput } from "../schemas/reminders";

/** The Durable Object's answer, or the error it names as a Shape B response. */
export function unwrap<R>(result: R): Exclude<R, { error: unknown }> {
  if (isFailure(result)) throw apiError(result.error.status, result.error.msg);
  return result as Exclude<R, { error: unknown }>;
}

/**
 * The item as D1 has it, before the Durable Object is asked: 404 when it is not in the company,
 * and whether the object has still to apply a change (then the call syncs it first).
 */
export async function itemForReminders(
  db: Db,
  companyId: number,
  itemId: number,
  refs: { contactId?: number | null; groupId?: number | null; channelId?: number | null } = {},
): Promise<{ syncFirst: boolean; channelType: ChannelType | null }> {
  const [[item], [contact], [group], [channel]] = await db.batch([
    db
      .select({
        pending: sql<number>`(${reminderSync.version} IS NULL OR ${reminderSync.version} > ${reminderSync.syncedVersion})`,
      })
      .from(items)
      .leftJoin(reminderSync, and(eq(reminderSync.companyId, items.companyId), eq(reminderSync.itemId, items.id)))
      .where(and(eq(items.id, itemId), eq(items.companyId, companyId))),
    db
      .select({ id: contacts.id })
      .from(contacts)
      .where(and(eq(contacts.id, refs.contactId ?? 0), eq(contacts.companyId, companyId))),
    db
      .select({ id: contactGroups.id })
      .from(contactGroups)
      .where(and(eq(contactGroups.id, refs.groupId ?? 0), eq(contactGroups.companyId, companyId))),
    db
      .select({ type: channelEndpoints.type })
      .from(channelEndpoints)
      .where(and(eq(channelEndpoints.id, refs.channelId ?? 0), eq(channelEndpoints.companyId, companyId))),
  ]);
  if (!item) throw notFound("Item");
  if (refs.contactId && !contact) throw badRequest(`contact_id ${refs.contactId} does not exist`);
  if (refs.groupId && !group) throw badRequest(`group_id ${refs.groupId} is not a contact group of the company`);
  if (refs.channelId && !channel) throw badRequest(`channel_id ${refs.channelId} is not a channel of the company`);
  return { syncFirst: item.pending === 1, channelType: (channel?.type as ChannelType | undefined) ?? null };
}

/**
 * 400 for a channel this deployment cannot deliver; `webhook` needs an enabled endpoint of the
 * company subscribed to reminder.sent (one D1 query, only when the webhook channel is asked for).
 */
export async function checkChannels(
  env: Env,
  db: Db,
  companyId: number,
  channels: ReminderChannel[] | undefined,
): Promise<void> {
  for (const channel of channels ?? []) {
    if (channel === "webhook") {
      if (!(await hasSubscriber(db.d1, companyId, "reminder.sent"))) throw badRequest(WEBHOOK_CHANNEL_PROBLEM);
      continue;
    }
    const problem = channelProblem(env, channel);
    if (problem) throw badRequest(problem);
  }
}

/**
 * The request body as the Durable Object takes it (contact_id 0: the item's contact). A channel
 * endpoint (`channelType`: its platform, read with the item) makes the reminder's channels its type
 * and clears a group; `channels` or `group_id` without channel_id make it a reminder to contacts again.
 */
export function reminderInput(
  env: Env,
  body: Partial<CreateReminderInput>,
  channelType: ChannelType | null = null,
): ReminderInput {
  const toChannel = body.channel_id && channelType ? { channelId: body.channel_id, channels: [channelType] } : null;
  const toContacts = body.channel_id === null || body.channels !== undefined || body.group_id !== undefined;
  return {
    date: body.date,
    hour: body.hour,
    period: body.period,
    unit: body.unit,
    rtype: body.rtype,
    contactId: body.contact_id === undefined ? undefined : body.contact_id || null,
    groupId: toChannel ? null : body.group_id === undefined ? undefined : body.group_id || null,
    always: body.always,
    unlessAck: body.unless_acknowledged,
    channelId: toChannel ? toChannel.channelId : toContacts ? null : undefined,
    channels: toChannel
      ? toChannel.channels
      : (body.channels ?? (body.channel_id === null ? defaultChannels(env) : undefined)),
  };
}

export const remindersOf = (env: Env, companyId: number) => clockFor(env, companyId);

/** The loader `getItem` uses for the item detail's `reminders` when its D1 view cannot be trusted (the object then writes it). */
export const itemRemindersLoader = (env: Env, companyId: number, itemId: number) => async (syncFirst: boolean) =>
  unwrap(await clockFor(env, companyId).itemReminders(companyId, itemId, syncFirst, true));
