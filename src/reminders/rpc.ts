// How the Worker reaches a company's reminder Durable Object. Kept apart from the class itself
// (which imports "cloudflare:workers") so that route modules load anywhere, e.g. in the Node-side
// OpenAPI checks.

import type { Env } from "../env";

/** A refusal the Durable Object returns (RPC keeps plain objects; thrown errors lose their status). */
export type Failure = { error: { status: 400 | 404 | 409; msg: string } };
export const isFailure = (value: unknown): value is Failure => typeof value === "object" && value !== null && "error" in value;

/** The company's reminder scheduler (one Durable Object per company). */
export function schedulerFor(env: Env, companyId: number) {
  return env.REMINDERS.get(env.REMINDERS.idFromName(`company:${companyId}`));
}

/** The most events (items) a calendar feed holds, and the most item ids `feedAlarms` reads reminders for. */
export const MAX_FEED_EVENTS = 5_000;
