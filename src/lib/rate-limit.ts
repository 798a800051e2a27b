// Rate limits (docs/rate-limits.md): Cloudflare's Rate Limiting binding is the shared counter; each
// isolate counts request units itself and reserves them from the binding a twentieth of the quota
// at a time, so a key costs a binding call only once per RESERVATIONS_PER_WINDOW-th of its quota.
import type { Context, MiddlewareHandler } from "hono";
import type { AppBindings, Env } from "../env";
import { bodyRuleFor } from "./body";
import { apiError, oauthError } from "./errors";
import type { Policy, PolicyName, PolicyState } from "./rate-limit-policy";
import { noteOnLog, setResponseHeader } from "./request-context";

/**
 * Reservations a binding-backed policy's binding allows per window: its `limit` in wrangler.toml.
 * One reservation is quota / RESERVATIONS_PER_WINDOW units (60 of a client's 1,200), so an isolate
 * may run ahead of the shared count by at most that much.
 */
export const RESERVATIONS_PER_WINDOW = 20;

/**
 * The documented defaults. Changing a binding-backed quota needs nothing in wrangler.toml (its
 * bindings count reservations, RESERVATIONS_PER_WINDOW per window; test/tools checks them), but
 * keep each quota a multiple of RESERVATIONS_PER_WINDOW. The burst is counted per isolate: it
 * smooths one client's spikes, and a binding call per 15 units would cost more than it protects;
 * the minute policies bound the total across isolates.
 */
export const POLICIES: Record<PolicyName, Policy> = {
  client: { name: "client", quota: 1200, window: 60, binding: "RATE_LIMIT_CLIENT", partition: "API client" },
  "client-burst": { name: "client-burst", quota: 300, window: 10, binding: null, partition: "API client" },
  company: {
    name: "company",
    quota: 3000,
    window: 60,
    binding: "RATE_LIMIT_COMPANY",
    partition: "company (all its clients)",
  },
  anonymous: {
    name: "anonymous",
    quota: 300,
    window: 60,
    binding: "RATE_LIMIT_ANONYMOUS",
    partition: "IP address (requests without a valid bearer token)",
  },
};

/** Request units a request costs: a search (a GET with `q`) 5, a write 2, any other read 1. */
export const COSTS = { read: 1, search: 5, write: 2 } as const;

export function requestCost(c: Context): number {
  if (c.req.method !== "GET" && c.req.method !== "HEAD") return COSTS.write;
  return c.req.query("q")?.trim() ? COSTS.search : COSTS.read;
}

/** On unless RATE_LIMITS is "off" (no environment at all: the OpenAPI document built in Node, say). */
export const rateLimitsOn = (env: Pick<Env, "RATE_LIMITS"> | undefined) =>
  env !== undefined && env.RATE_LIMITS?.trim().toLowerCase() !== "off";

// ---- per-isolate counting ----

interface Counter {
  /** Index of the window (epoch seconds / window), aligned to the clock like the binding's. */
  window: number;
  used: number;
  /** Units reserved from the binding in this window. */
  reserved: number;
  /** The binding refused a reservation: the key is over its quota until the window ends. */
  refused: boolean;
}

const MAX_COUNTERS = 20_000;
const counters = new Map<string, Counter>();

function counterFor(key: string, windowIndex: number): Counter {
  let counter = counters.get(key);
  if (!counter || counter.window !== windowIndex) {
    if (!counter && counters.size >= MAX_COUNTERS) counters.delete(counters.keys().next().value!);
    counter = { window: windowIndex, used: 0, reserved: 0, refused: false };
    counters.set(key, counter);
  }
  return counter;
}

interface Charge {
  policy: Policy;
  key: string;
  counter: Counter;
  reset: number;
}

/** Reserves from the binding what the isolate's count will pass; false when the binding refuses (the key is then over). */
async function reserve(env: Env, charge: Charge, cost: number): Promise<boolean> {
  const { policy, counter } = charge;
  const binding = policy.binding ? env[policy.binding] : undefined;
  while (binding && counter.used + cost > counter.reserved) {
    // Reserved before the call, so concurrent requests of the isolate do not reserve the same units twice.
    counter.reserved += policy.quota / RESERVATIONS_PER_WINDOW;
    try {
      if (!(await binding.limit({ key: `${policy.name}:${charge.key}` })).success) {
        counter.refused = true;
        return false;
      }
    } catch (error) {
      // The limiter itself failing must not take the API down: this isolate's count still applies.
      console.error(
        JSON.stringify({ level: "error", msg: "rate limit binding failed", policy: policy.name, error: String(error) }),
      );
      return true;
    }
  }
  return true;
}

/**
 * Counts a request of `cost` units against each policy (with its partition key). All or nothing: a
 * request one policy refuses spends nothing of the others (a client over its burst does not use up
 * its company's quota with refused requests).
 */
async function charge(env: Env, limits: Array<[Policy, string]>, cost: number, now: number): Promise<PolicyState[]> {
  const charges: Charge[] = limits.map(([policy, key]) => {
    const windowIndex = Math.floor(now / 1000 / policy.window);
    const reset = Math.max(1, Math.ceil((windowIndex + 1) * policy.window - now / 1000));
    return { policy, key, counter: counterFor(`${policy.name}:${key}`, windowIndex), reset };
  });
  const exceeded = (ch: Charge) => ch.counter.refused || ch.counter.used + cost > ch.policy.quota;
  let over = charges.find(exceeded);
  if (!over) {
    const reserved = await Promise.all(charges.map((ch) => reserve(env, ch, cost)));
    // Checked again after the await, and spent with no await in between: requests of the isolate
    // that arrive together must not all pass the first check before any of them is counted.
    over = charges.find((ch, i) => !reserved[i] || exceeded(ch));
  }
  if (!over) for (const ch of charges) ch.counter.used += cost;
  return charges.map((ch) => ({
    policy: ch.policy,
    remaining: ch.counter.refused ? 0 : Math.max(0, ch.policy.quota - ch.counter.used),
    reset: ch.reset,
    allowed: ch !== over,
  }));
}

/** `"client";q=1200;w=60, …` (draft-ietf-httpapi-ratelimit-headers: one quota policy per list item). */
function policyHeader(policies: Policy[]): string {
  return policies.map((p) => `"${p.name}";q=${p.quota};w=${p.window}`).join(", ");
}

/**
 * Spends the request's units on each policy (with its partition key) and sets the RateLimit-Policy
 * and RateLimit headers; a policy over its quota answers 429 with Retry-After.
 */
export async function enforce(c: Context<AppBindings>, limits: Array<[Policy, string]>): Promise<void> {
  const states = await charge(c.env, limits, requestCost(c), Date.now());
  c.set("rateLimits", states);
  const over = states.find((s) => !s.allowed);
  if (over) {
    noteOnLog(c, { rate_limited: over.policy.name });
    const p = over.policy;
    const msg =
      `Rate limit exceeded: the ${p.name} limit allows ${p.quota} request units per ${p.window} s per ${p.partition} ` +
      `(a read costs ${COSTS.read}, a search ${COSTS.search}, a write ${COSTS.write}); retry after ${over.reset} s`;
    const headers = { "Retry-After": String(over.reset), ...rateLimitHeaders(states) };
    // The token endpoint answers every error in Shape A.
    if (bodyRuleFor(c.req.method, c.req.path).shape === "oauth")
      throw oauthError(429, "too_many_requests", msg, { headers });
    throw apiError(429, msg, headers);
  }
}

/** The two headers for the policies a request was counted against; RateLimit names the one closest to its quota. */
export function rateLimitHeaders(states: PolicyState[]): Record<string, string> {
  if (states.length === 0) return {};
  const tightest = states.reduce((a, b) =>
    b.remaining / b.policy.quota < a.remaining / a.policy.quota || (!b.allowed && a.allowed) ? b : a,
  );
  const reset = tightest.allowed ? tightest.reset : Math.max(...states.filter((s) => !s.allowed).map((s) => s.reset));
  return {
    "RateLimit-Policy": policyHeader(states.map((s) => s.policy)),
    RateLimit: `"${tightest.policy.name}";r=${tightest.remaining};t=${reset}`,
  };
}

/** The caller's policies once it is authenticated: its client (per minute and per 10 s) and its company. */
export function authenticatedLimits(c: Context<AppBindings>): Array<[Policy, string]> {
  const { clientId, companyId } = c.var.auth;
  return [
    [POLICIES.client, clientId],
    [POLICIES["client-burst"], clientId],
    [POLICIES.company, String(companyId)],
  ];
}

/** Route middleware, after authentication: the client's and the company's limits. */
export const limitAuthenticated: MiddlewareHandler<AppBindings> = async (c, next) => {
  if (rateLimitsOn(c.env)) await enforce(c, authenticatedLimits(c));
  await next();
};

/**
 * The caller's address: `CF-Connecting-IP`, which Cloudflare sets on every request it passes to
 * the Worker (a client's own value is replaced). Nothing else is read (not `X-Real-IP` nor
 * `X-Forwarded-For`, which any client can send). Under `wrangler dev` there is no Cloudflare in
 * front: Miniflare sets the header from the socket only when the request has none, so locally a
 * client that sends it picks its own anonymous bucket (docs/rate-limits.md, "Local development").
 */
export const clientAddress = (c: Context) => c.req.header("CF-Connecting-IP") ?? "unknown";

const anonymousLimits = (c: Context): Array<[Policy, string]> => [[POLICIES.anonymous, clientAddress(c)]];

/**
 * A bearer token that did not authenticate (called by `authenticate` before its 401): the request
 * is the address's, counted against the anonymous policy, and refused with 429 once the address
 * has spent its units. A valid token is never held to its address's quota.
 */
export async function limitUnauthenticated(c: Context<AppBindings>): Promise<void> {
  if (rateLimitsOn(c.env) && !c.get("rateLimits")) await enforce(c, anonymousLimits(c));
}

const BEARER = /^Bearer\s/i;

/**
 * App-wide, first after the request context: every request counts against the anonymous policy of
 * its address before anything else runs (health, the token endpoint, discovery, the OpenAPI
 * document, unknown paths, calls without a token), a bearer header or not, except a bearer request
 * to an operation that authenticates bearer tokens (`authenticates(method, path)`): that one is
 * counted by its route once authenticated, or, when its token does not authenticate, against the
 * anonymous policy by `authenticate` (`limitUnauthenticated`), refused with 429 once the address is
 * over. Every response gets the RateLimit headers.
 */
export function rateLimits(authenticates: (method: string, path: string) => boolean): MiddlewareHandler<AppBindings> {
  return async (c, next) => {
    if (!rateLimitsOn(c.env)) return next();
    const deferred = BEARER.test(c.req.header("Authorization") ?? "") && authenticates(c.req.method, c.req.path);
    try {
      if (!deferred) await enforce(c, anonymousLimits(c));
      await next();
    } finally {
      let states = c.get("rateLimits");
      if (!states) {
        // Deferred, and neither authenticated nor refused as anonymous (a 500 or 503 before the token
        // was judged): counted now.
        states = await charge(c.env, anonymousLimits(c), requestCost(c), Date.now());
      }
      for (const [name, value] of Object.entries(rateLimitHeaders(states))) setResponseHeader(c, name, value);
    }
  };
}
