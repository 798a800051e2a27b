// How the Worker reaches a company's reminder Durable Object. Kept apart from the class itself
// (which imports "cloudflare:workers") so that route modules load anywhere, e.g. in the Node-side
// OpenAPI checks.

import type { Env } from "../env";

/** A refusal the Durable Object returns (RPC keeps plain objects; thrown errors lose their status). */
export type Failure = { error: { status: 400 | 404 | 409; msg: string } };
export const isFailure = (value: unknown): value is Failure => typeof value === "object" && value !== null && "error" in value;

/** Object ids by company, per namespace binding, kept for the isolate's life (idFromName hashes the name each time). */
const ids = new WeakMap<object, Map<number, DurableObjectId>>();
const MAX_CACHED_IDS = 10_000;

/** The company's reminder scheduler (one Durable Object per company). */
export function schedulerFor(env: Env, companyId: number) {
  let known = ids.get(env.REMINDERS);
  if (!known) ids.set(env.REMINDERS, (known = new Map()));
  let id = known.get(companyId);
  if (!id) {
    if (known.size >= MAX_CACHED_IDS) known.clear();
    id = env.REMINDERS.idFromName(`company:${companyId}`);
    known.set(companyId, id);
  }
  // A stub is made per call: one that saw an exception fails every later call (and stubs are
  // not meant to outlive the request that made them); making one is cheap.
  return env.REMINDERS.get(id);
}

/** The most events (items) a calendar feed holds, and the most item ids `feedAlarms` reads reminders for. */
export const MAX_FEED_EVENTS = 5_000;
