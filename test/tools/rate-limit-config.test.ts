// The rate-limit policies the Worker announces (src/lib/rate-limit.ts) and the Rate Limiting bindings
// that enforce them across isolates (wrangler.toml) must agree: each binding counts reservations of
// RATE_LIMIT_CHUNK units, so its limit is the policy's quota divided by the chunk, per the same window.
import { experimental_readRawConfig } from "wrangler";
import { describe, expect, it } from "vitest";
import { POLICIES, RATE_LIMIT_CHUNK } from "../../src/lib/rate-limit";

describe("wrangler.toml [[ratelimits]]", () => {
  const { rawConfig } = experimental_readRawConfig({ config: "wrangler.toml" });
  const bindings = new Map((rawConfig.ratelimits ?? []).map((r) => [r.name, r]));

  it("declares one binding per policy, with limit = quota / chunk and period = window", () => {
    for (const policy of Object.values(POLICIES)) {
      const binding = bindings.get(policy.binding);
      expect(binding, policy.binding).toBeDefined();
      expect(binding!.simple, policy.name).toEqual({ limit: policy.quota / RATE_LIMIT_CHUNK, period: policy.window });
    }
    expect(new Set([...bindings.values()].map((b) => b.namespace_id)).size).toBe(bindings.size);
  });

  it("starts with the limits on", () => {
    expect(rawConfig.vars?.RATE_LIMITS).toBeUndefined();
  });
});
