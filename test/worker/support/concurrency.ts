// Helpers of the race tests: firing requests together and checking what they left behind.
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { CallResult } from "./http";

/** No response of a race is a 5xx: a lost race is a clean 4xx. */
export function noServerError(...results: CallResult[]) {
  for (const res of results) expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
}

/** Starts `request` after `steps` D1 round trips, to stagger it against another request. */
export async function after<T>(steps: number, request: () => Promise<T>): Promise<T> {
  for (let i = 0; i < steps; i++) await env.DB.prepare("SELECT 1").first();
  return request();
}

/** The default contact groups of a department, by id (exactly one when the invariant holds). */
export async function defaultGroupsOf(deptId: number): Promise<number[]> {
  const { results } = await env.DB.prepare(
    "SELECT id FROM contact_groups WHERE dept_id = ? AND is_default = 1 ORDER BY id",
  )
    .bind(deptId)
    .all<{ id: number }>();
  return results.map((r) => r.id);
}
