import { and, asc, count, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companyCountBelow, insertUnderLimit } from "../db/guarded";
import { companies, webhookEndpoints } from "../db/schema";
import { apiError, badRequest, notFound } from "../lib/errors";
import { encryptSecret, generateSecret } from "../webhooks/secrets";
import { checkWebhookUrl } from "../webhooks/urls";
import {
  MAX_ENDPOINTS,
  PREVIOUS_SECRET_TTL_MS,
  type CreateWebhookInput,
  type UpdateWebhookInput,
  type WebhookEndpointOutput,
} from "../schemas/webhooks";

/** disabled_reason of an endpoint disabled by a PATCH (the service's own is "failing for 5 days"). */
export const DISABLED_BY_OWNER = "disabled by the account owner";

const endpointColumns = {
  id: webhookEndpoints.id,
  url: webhookEndpoints.url,
  description: webhookEndpoints.description,
  events: webhookEndpoints.events,
  enabled: webhookEndpoints.enabled,
  failingSince: webhookEndpoints.failingSince,
  disabledReason: webhookEndpoints.disabledReason,
  createdAt: webhookEndpoints.createdAt,
  updatedAt: webhookEndpoints.updatedAt,
};

export type EndpointRow = {
  id: number;
  url: string;
  description: string;
  events: string;
  enabled: number;
  failingSince: number | null;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
};

function parseEvents(json: string): string[] {
  try {
    const value = JSON.parse(json) as unknown;
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
  } catch {
    return [];
  }
}

export function endpointOutput(row: EndpointRow): WebhookEndpointOutput {
  const enabled = row.enabled === 1;
  return {
    webhook_id: row.id,
    url: row.url,
    description: row.description,
    events: parseEvents(row.events),
    enabled,
    status: !enabled ? "disabled" : row.failingSince !== null ? "failing" : "active",
    disabled_reason: enabled ? null : row.disabledReason,
    failing_since: row.failingSince === null ? null : new Date(row.failingSince).toISOString(),
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

/** The deployment's key for secrets at rest (webhook secrets, channel URLs); 503 (Shape B) when it is not configured. */
export function secretsKey(env: { WEBHOOK_SECRETS_KEY?: string }, what: "webhooks" | "channels" = "webhooks"): string {
  const key = env.WEBHOOK_SECRETS_KEY;
  if (!key || key.length < 32) throw apiError(503, `${what} are not configured on this deployment`);
  return key;
}

/** The URL to store (the parser's normalised form of `url`); 400 naming the rule when it may not be an endpoint. */
export function checkUrl(url: string, allowPrivate: boolean): string {
  const result = checkWebhookUrl(url, allowPrivate);
  if (!result.ok) throw badRequest(result.msg);
  return result.url.href;
}

const inCompany = (companyId: number, endpointId: number) =>
  and(eq(webhookEndpoints.id, endpointId), eq(webhookEndpoints.companyId, companyId));

const limitReached = () =>
  badRequest(`Webhook endpoint limit reached: a company may have at most ${MAX_ENDPOINTS} webhook endpoints`);

/** All the company's endpoints (at most MAX_ENDPOINTS), by webhook_id. */
export async function listEndpoints(db: Db, companyId: number) {
  const rows = await db
    .select(endpointColumns)
    .from(webhookEndpoints)
    .where(eq(webhookEndpoints.companyId, companyId))
    .orderBy(asc(webhookEndpoints.id));
  return { rows, meta: { total: rows.length, max_allowed: MAX_ENDPOINTS } };
}

export async function getEndpoint(db: Db, companyId: number, endpointId: number): Promise<EndpointRow> {
  const row = await db.select(endpointColumns).from(webhookEndpoints).where(inCompany(companyId, endpointId)).get();
  if (!row) throw notFound("Webhook endpoint");
  return row;
}

/**
 * Inserts an endpoint with a new secret (stored encrypted) while the company has fewer than
 * MAX_ENDPOINTS (counted inside the INSERT, so concurrent creates cannot overshoot). Returns the
 * row and the secret in clear, which only this response shows.
 */
export async function createEndpoint(
  db: Db,
  companyId: number,
  userId: number,
  input: CreateWebhookInput,
  key: string,
): Promise<{ row: EndpointRow; secret: string }> {
  const secret = generateSecret();
  const ciphertext = await encryptSecret(secret, key);
  const underLimit = companyCountBelow("webhook_endpoints", companyId, MAX_ENDPOINTS);
  const row = await insertUnderLimit({
    what: "webhook endpoint",
    limit: MAX_ENDPOINTS,
    limitReached,
    insert: async () => {
      const [[inserted]] = await db.commit([
        db
          .insert(webhookEndpoints)
          .select(
            (qb) =>
              qb
                .select({
                  id: sql`NULL`,
                  companyId: sql`${companyId}`,
                  url: sql`${input.url}`,
                  description: sql`${input.description ?? ""}`,
                  events: sql`${JSON.stringify(input.events)}`,
                  enabled: sql`${input.enabled === false ? 0 : 1}`,
                  secretCiphertext: sql`${ciphertext}`,
                  previousSecretCiphertext: sql`NULL`,
                  previousSecretExpiresAt: sql`NULL`,
                  failingSince: sql`NULL`,
                  disabledReason: sql`${input.enabled === false ? DISABLED_BY_OWNER : null}`,
                  createdBy: sql`${userId}`,
                  createdAt: sql`CURRENT_TIMESTAMP`,
                  updatedAt: sql`CURRENT_TIMESTAMP`,
                  version: sql`1`,
                })
                .from(companies)
                .where(and(eq(companies.id, companyId), underLimit)) as never,
          )
          .returning(endpointColumns),
      ]);
      return inserted;
    },
    used: async () =>
      (await db.select({ n: count() }).from(webhookEndpoints).where(eq(webhookEndpoints.companyId, companyId)).get())
        ?.n ?? 0,
  });
  return { row, secret };
}

/**
 * One UPDATE, guarded by the company: url, events, description, enabled. Enabling a disabled
 * endpoint clears disabled_reason and failing_since; disabling an enabled one records
 * DISABLED_BY_OWNER (a disabled endpoint keeps its reason); a new url clears failing_since (the
 * failures were the old URL's).
 */
export async function updateEndpoint(
  db: Db,
  companyId: number,
  endpointId: number,
  input: UpdateWebhookInput,
): Promise<EndpointRow> {
  const changes: Partial<Record<keyof typeof webhookEndpoints.$inferInsert, unknown>> = {};
  if (input.url !== undefined) {
    changes.url = input.url;
    changes.failingSince = null;
  }
  if (input.events !== undefined) changes.events = JSON.stringify(input.events);
  if (input.description !== undefined) changes.description = input.description;
  if (input.enabled === true) {
    changes.enabled = 1;
    changes.disabledReason = null;
    changes.failingSince = sql`CASE WHEN ${webhookEndpoints.enabled} = 0 THEN NULL ELSE ${webhookEndpoints.failingSince} END`;
    if (input.url !== undefined) changes.failingSince = null;
  } else if (input.enabled === false) {
    changes.enabled = 0;
    changes.disabledReason = sql`CASE WHEN ${webhookEndpoints.enabled} = 1 THEN ${DISABLED_BY_OWNER} ELSE ${webhookEndpoints.disabledReason} END`;
  }
  const [[row]] = await db.commit([
    db
      .update(webhookEndpoints)
      .set({ ...(changes as typeof webhookEndpoints.$inferInsert), updatedAt: sql`CURRENT_TIMESTAMP` })
      .where(inCompany(companyId, endpointId))
      .returning(endpointColumns),
  ]);
  if (!row) throw notFound("Webhook endpoint");
  return row;
}

export async function deleteEndpoint(db: Db, companyId: number, endpointId: number): Promise<void> {
  const [deleted] = await db.commit([
    db.delete(webhookEndpoints).where(inCompany(companyId, endpointId)).returning({ id: webhookEndpoints.id }),
  ]);
  if (deleted.length === 0) throw notFound("Webhook endpoint");
}

/**
 * A new secret signs from now on; the one it replaces keeps signing alongside until 24 h later.
 * One UPDATE (SQLite reads the old secret_ciphertext on the right-hand side), so two concurrent
 * rotations each keep the secret they replaced as the previous one, and none is lost unseen: the
 * last to commit wins, its previous being the other's new secret. Rotating again within 24 h makes
 * the secret just replaced the previous one (the older one stops signing at once).
 */
export async function rotateSecret(
  db: Db,
  companyId: number,
  endpointId: number,
  key: string,
  now = Date.now(),
): Promise<{ row: EndpointRow; secret: string }> {
  const secret = generateSecret();
  const ciphertext = await encryptSecret(secret, key);
  const [[row]] = await db.commit([
    db
      .update(webhookEndpoints)
      .set({
        previousSecretCiphertext: sql`${webhookEndpoints.secretCiphertext}`,
        previousSecretExpiresAt: now + PREVIOUS_SECRET_TTL_MS,
        secretCiphertext: ciphertext,
        updatedAt: sql`CURRENT_TIMESTAMP`,
      })
      .where(inCompany(companyId, endpointId))
      .returning(endpointColumns),
  ]);
  if (!row) throw notFound("Webhook endpoint");
  return { row, secret };
}
