// Channel endpoints (docs/channels.md): the rows, their secrets encrypted with the webhook signing
// secrets' key (src/webhooks/secrets.ts), the per-company limit inside the INSERT, keyset pages.
import { and, asc, count, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companyCountBelow, insertUnderLimit } from "../db/guarded";
import { channelEndpoints, companies } from "../db/schema";
import { type ChannelType, checkChannelUrl, maskToken, maskUrl } from "../channels/urls";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { badRequest, notFound } from "../lib/errors";
import { decryptSecret, encryptSecret } from "../webhooks/secrets";
import { settingsOf } from "./companies";
import {
  MAX_CHANNELS,
  type ChannelOutput,
  type CreateChannelInput,
  type UpdateChannelInput,
} from "../schemas/channels";

/** disabled_reason of an endpoint disabled by a request (part 4 adds the platform's own). */
export const DISABLED_BY_OWNER = "disabled by the account owner";

const columns = {
  id: channelEndpoints.id,
  type: channelEndpoints.type,
  name: channelEndpoints.name,
  urlHint: channelEndpoints.urlHint,
  hasToken: sql<number>`${channelEndpoints.tokenCiphertext} IS NOT NULL`,
  language: channelEndpoints.language,
  disabled: channelEndpoints.disabled,
  disabledReason: channelEndpoints.disabledReason,
  createdAt: channelEndpoints.createdAt,
  updatedAt: channelEndpoints.updatedAt,
};

export type ChannelRow = {
  id: number;
  type: string;
  name: string;
  urlHint: string;
  hasToken: number;
  language: string | null;
  disabled: number;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
};

export function channelOutput(row: ChannelRow): ChannelOutput {
  return {
    channel_id: row.id,
    type: row.type as ChannelType,
    name: row.name,
    url: row.urlHint,
    has_access_token: Boolean(row.hasToken),
    language: row.language,
    disabled: row.disabled === 1,
    disabled_reason: row.disabled === 1 ? row.disabledReason : null,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/** The URL to store (the parser's normalised form); 400 naming the shape expected when `type` may not have it. */
export function checkChannelUrlInput(type: ChannelType, url: string, allowPrivate: boolean): string {
  const result = checkChannelUrl(type, url, allowPrivate);
  if (!result.ok) throw badRequest(result.msg);
  return result.url.href;
}

/** 400 when an access token is given for a type that has none (only ntfy sends one). */
export function checkAccessToken(type: ChannelType, token: string | null | undefined): void {
  if (token !== undefined && token !== null && type !== "ntfy")
    throw badRequest(`access_token is only for ntfy channels, not ${type}`);
}

const inCompany = (companyId: number, id: number) =>
  and(eq(channelEndpoints.id, id), eq(channelEndpoints.companyId, companyId));

export async function getChannel(db: Db, companyId: number, id: number): Promise<ChannelRow> {
  const row = await db.select(columns).from(channelEndpoints).where(inCompany(companyId, id)).get();
  if (!row) throw notFound("Channel");
  return row;
}

/** The company's channels by channel_id, a keyset page (channel_endpoints_company_idx). */
export async function listChannels(db: Db, companyId: number, query: { limit: number; cursor?: string }) {
  const after = query.cursor === undefined ? 0 : Number(decodeCursor(query.cursor, /^(\d{1,16})$/)[1]);
  const rows = await db
    .select(columns)
    .from(channelEndpoints)
    .where(and(eq(channelEndpoints.companyId, companyId), gt(channelEndpoints.id, after)))
    .orderBy(asc(channelEndpoints.id))
    .limit(query.limit + 1);
  const pageRows = rows.slice(0, query.limit);
  const last = pageRows[pageRows.length - 1];
  return {
    rows: pageRows.map(channelOutput),
    meta: {
      limit: query.limit,
      next_cursor: rows.length > query.limit && last ? encodeCursor(last.id) : null,
      max_allowed: MAX_CHANNELS,
    },
  };
}

const limitReached = () =>
  badRequest(`Channel limit reached: a company may have at most ${MAX_CHANNELS} channel endpoints`);

/** `input.url` already checked and normalised. Inserts while the company has fewer than MAX_CHANNELS (counted inside the INSERT). */
export async function createChannel(
  db: Db,
  companyId: number,
  userId: number,
  input: CreateChannelInput,
  key: string,
): Promise<ChannelRow> {
  const urlCiphertext = await encryptSecret(input.url, key);
  const token = input.access_token ?? null;
  const tokenCiphertext = token === null ? null : await encryptSecret(token, key);
  const underLimit = companyCountBelow("channel_endpoints", companyId, MAX_CHANNELS);
  return insertUnderLimit({
    what: "channel",
    limit: MAX_CHANNELS,
    limitReached,
    insert: async () => {
      const [[inserted]] = await db.commit([
        db
          .insert(channelEndpoints)
          .select(
            (qb) =>
              qb
                .select({
                  id: sql`NULL`,
                  companyId: sql`${companyId}`,
                  type: sql`${input.type}`,
                  name: sql`${input.name}`,
                  urlCiphertext: sql`${urlCiphertext}`,
                  urlHint: sql`${maskUrl(input.url)}`,
                  tokenCiphertext: sql`${tokenCiphertext}`,
                  tokenHint: sql`${token === null ? null : maskToken(token)}`,
                  language: sql`${input.language ?? null}`,
                  disabled: sql`${input.disabled === true ? 1 : 0}`,
                  disabledReason: sql`${input.disabled === true ? DISABLED_BY_OWNER : null}`,
                  createdBy: sql`${userId}`,
                  createdAt: sql`CURRENT_TIMESTAMP`,
                  updatedAt: sql`CURRENT_TIMESTAMP`,
                  version: sql`1`,
                })
                .from(companies)
                .where(and(eq(companies.id, companyId), underLimit)) as never,
          )
          .returning(columns),
      ]);
      return inserted;
    },
    used: async () =>
      (await db.select({ n: count() }).from(channelEndpoints).where(eq(channelEndpoints.companyId, companyId)).get())
        ?.n ?? 0,
  });
}

/**
 * One UPDATE, guarded by the company; `input.url` already checked for the channel's type (which
 * never changes). disabled: true records DISABLED_BY_OWNER (an endpoint already disabled keeps its
 * reason); false re-enables and clears the reason. access_token null removes the token.
 */
export async function updateChannel(
  db: Db,
  companyId: number,
  id: number,
  input: UpdateChannelInput,
  key: string | null,
): Promise<ChannelRow> {
  const changes: Partial<Record<keyof typeof channelEndpoints.$inferInsert, unknown>> = {};
  if (input.name !== undefined) changes.name = input.name;
  if (input.language !== undefined) changes.language = input.language;
  if (input.url !== undefined) {
    changes.urlCiphertext = await encryptSecret(input.url, key!);
    changes.urlHint = maskUrl(input.url);
  }
  if (input.access_token === null) {
    changes.tokenCiphertext = null;
    changes.tokenHint = null;
  } else if (input.access_token !== undefined) {
    changes.tokenCiphertext = await encryptSecret(input.access_token, key!);
    changes.tokenHint = maskToken(input.access_token);
  }
  if (input.disabled === false) {
    changes.disabled = 0;
    changes.disabledReason = null;
  } else if (input.disabled === true) {
    changes.disabled = 1;
    changes.disabledReason = sql`CASE WHEN ${channelEndpoints.disabled} = 0 THEN ${DISABLED_BY_OWNER} ELSE ${channelEndpoints.disabledReason} END`;
  }
  const [[row]] = await db.commit([
    db
      .update(channelEndpoints)
      .set({ ...(changes as typeof channelEndpoints.$inferInsert), updatedAt: sql`CURRENT_TIMESTAMP` })
      .where(inCompany(companyId, id))
      .returning(columns),
  ]);
  if (!row) throw notFound("Channel");
  return row;
}

export async function deleteChannel(db: Db, companyId: number, id: number): Promise<void> {
  const [deleted] = await db.commit([
    db.delete(channelEndpoints).where(inCompany(companyId, id)).returning({ id: channelEndpoints.id }),
  ]);
  if (deleted.length === 0) throw notFound("Channel");
}

/** Where a channel's messages go, its URL and token decrypted (only the sender holds them), and the company's name and language. */
export async function channelTarget(
  db: Db,
  companyId: number,
  id: number,
  key: string,
): Promise<{
  row: ChannelRow;
  /** null: they could not be decrypted (WEBHOOK_SECRETS_KEY changed since they were stored). */
  secrets: { url: string; token: string | null } | null;
  companyName: string;
  companyLanguage: string;
}> {
  const found = await db
    .select({
      ...columns,
      urlCiphertext: channelEndpoints.urlCiphertext,
      tokenCiphertext: channelEndpoints.tokenCiphertext,
      companyName: companies.name,
      settings: companies.settings,
    })
    .from(channelEndpoints)
    .innerJoin(companies, eq(companies.id, channelEndpoints.companyId))
    .where(inCompany(companyId, id))
    .get();
  if (!found) throw notFound("Channel");
  const { urlCiphertext, tokenCiphertext, companyName, settings, ...row } = found;
  let secrets: { url: string; token: string | null } | null = null;
  try {
    secrets = {
      url: await decryptSecret(urlCiphertext, key),
      token: tokenCiphertext === null ? null : await decryptSecret(tokenCiphertext, key),
    };
  } catch {
    // Encrypted with another key (WEBHOOK_SECRETS_KEY changed): the caller says so; the values are never logged.
  }
  return { row, secrets, companyName, companyLanguage: settingsOf({ settings }).language };
}
