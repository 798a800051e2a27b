// The rate-limit policies the Worker announces (src/lib/rate-limit.ts) and the Rate Limiting bindings
// that enforce them across isolates (wrangler.toml) must agree: each binding counts reservations of
// a twentieth of its policy's quota, so its limit is RESERVATIONS_PER_WINDOW per the policy's window.
import { experimental_readRawConfig } from "wrangler";
import { describe, expect, it } from "vitest";
import { POLICIES, RESERVATIONS_PER_WINDOW } from "../../src/lib/rate-limit";

describe("wrangler.toml [[ratelimits]]", () => {
  const { rawConfig } = experimental_readRawConfig({ config: "wrangler.toml" });
  const bindings = new Map((rawConfig.ratelimits ?? []).map((r) => [r.name, r]));

  it("declares one binding per binding-backed policy, with limit = RESERVATIONS_PER_WINDOW and period = window, and no other", () => {
    const backed = Object.values(POLICIES).filter((p) => p.binding !== null);
    for (const policy of backed) {
      const binding = bindings.get(policy.binding!);
      expect(binding, policy.binding!).toBeDefined();
      expect(binding!.simple, policy.name).toEqual({ limit: RESERVATIONS_PER_WINDOW, period: policy.window });
      // A reservation is a whole number of units.
      expect(policy.quota % RESERVATIONS_PER_WINDOW, policy.name).toBe(0);
    }
    expect([...bindings.keys()].sort()).toEqual(backed.map((p) => p.binding).sort());
    expect(new Set([...bindings.values()].map((b) => b.namespace_id)).size).toBe(bindings.size);
  });

  it("starts with the limits on", () => {
    expect(rawConfig.vars?.RATE_LIMITS).toBeUndefined();
  });
});
