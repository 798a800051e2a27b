import type { Db } from "./db/client";
import type { ImportParams } from "./imports/params";
import type { RequestSession } from "./db/request-session";
import type { WriteContext } from "./db/commit";
import type { PolicyState } from "./lib/rate-limit-policy";
import type { CompanyClockRpc } from "./company-clock/api";

/** Bindings declared in wrangler.toml plus the secrets from .dev.vars / `wrangler secret put`. */
export interface Env {
  /** Shard 0, the home database (it holds the directory too). Reach it through src/db/shards.ts, never by name. */
  DB: D1Database;
  /** The D1 bindings of the shards, in shard order, space-separated ("DB DB_1"); unset: DB alone (docs/scale.md). */
  D1_SHARDS?: string;
  /** "on" adds each request's D1 work (queries, rows read and written, duration) to its log line (docs/scale.md). */
  D1_STATS?: string;
  FILES: R2Bucket;
  /** The company clocks (src/company-clock/): one Durable Object per company, typed by its RPC methods. */
  COMPANY_CLOCK: DurableObjectNamespace<CompanyClockRpc>;
  /** Space-separated `kid:secret` pairs; the first one signs. */
  JWT_SIGNING_KEYS?: string;
  CLIENT_STATUS_TTL_SECONDS?: string;
  /** Space-separated `kid:secret` pairs signing the links in reminder emails (src/lib/recipient-links.ts); the first one signs. */
  LINK_SIGNING_KEYS?: string;
  /** The service's public origin, e.g. https://reminders.example.com: the links in reminder emails are absolute URLs on it. */
  PUBLIC_BASE_URL?: string;
  /** How long an isolate trusts a directory answer (default 60; docs/scale.md). `account move` waits longer before deleting the old copy. */
  DIRECTORY_TTL_SECONDS?: string;
  /** Cloudflare Email Service binding for reminder emails; without it (or EMAIL_FROM) email is not offered. */
  EMAIL?: SendEmail;
  EMAIL_FROM?: string;
  /** Optional HTTP SMS provider (POST JSON {to, text}, Bearer SMS_API_KEY); both or the sms channel is refused. */
  SMS_API_URL?: string;
  SMS_API_KEY?: string;
  /** Encrypts webhook signing secrets at rest (>= 32 characters; a secret). */
  WEBHOOK_SECRETS_KEY?: string;
  /** "true" allows webhook URLs on http, loopback hosts (127.0.0.0/8, ::1, localhost) and other ports (local development only). */
  WEBHOOKS_ALLOW_PRIVATE_URLS?: string;
  /** "off" turns rate limiting off (benchmarks); anything else, or unset, keeps the documented limits on. */
  RATE_LIMITS?: string;
  /** "off" drops the one-line-per-request log (the test suites); anything else, or unset, keeps it. */
  REQUEST_LOGS?: string;
  /** Rate Limiting bindings (src/lib/rate-limit.ts): each counts reservations of 1/20 of its policy's quota. */
  RATE_LIMIT_CLIENT?: RateLimit;
  RATE_LIMIT_COMPANY?: RateLimit;
  RATE_LIMIT_ANONYMOUS?: RateLimit;
  /** Import jobs (src/imports/workflow.ts): one Workflow instance per job, named `import-<id>`. */
  IMPORTS: Workflow<ImportParams>;
}

/** What the authentication middleware learns from a verified token. */
export interface AuthContext {
  clientId: string;
  companyId: number;
  userId: number;
  accountId: number;
  isOwner: boolean;
  scopes: ReadonlySet<string>;
  scope: string;
  /** The shard that holds the account's rows (the token's, or where the account moved since). */
  shard: number;
  iat: number;
  exp: number;
}

export interface AppBindings {
  Bindings: Env;
  Variables: {
    /** Set first for every request (src/lib/request-context.ts). */
    requestId: string;
    /** The operation's operationId, set by the route (for the log line). */
    operationId: string;
    /** Fields the request adds to its log line (idempotent replay, rate limiting, ...). */
    logNotes: Record<string, string | number | boolean>;
    /** The rate-limit policies the request was counted against (src/lib/rate-limit.ts). */
    rateLimits: PolicyState[];
    auth: AuthContext;
    /**
     * The request's one database handle (src/db/client.ts), set at authentication: reads, and
     * `commit`, every write of the request with what travels with it (src/db/commit.ts).
     */
    db: Db;
    /** The request's D1 session on its account's shard (src/db/session.ts): its bookmark, and the request's own bookkeeping. */
    session: RequestSession;
    /** The caller's company (src/lib/context.ts). */
    companyId: number;
    /** What the commits of a write request carry (src/lib/context.ts): its actor, Idempotency-Key and If-Match. */
    writes: WriteContext;
    /** The key a keyed request's Durable Object change is recorded under (client and key hash). */
    idempotencyKey: string;
  };
}
