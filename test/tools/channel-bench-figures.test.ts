// The figures the channel-deliveries bench and e2e test read off a receiver's record
// (test/e2e/support/receiver.ts pacingByPath, bench/channel-deliveries.ts roundFigures).
import { describe, expect, it } from "vitest";
import { roundFigures } from "../../bench/channel-deliveries.ts";
import { pacingByPath, type ReceivedRequest } from "../e2e/support/receiver.ts";

const T0 = 1_800_000_000_000;
let n = 0;
const request = (path: string, ms: number, item = "", status: number | null = 200): ReceivedRequest => ({
  n: ++n,
  at: T0 + ms,
  path,
  headers: {},
  body: item ? JSON.stringify({ text: `Reminder: Permit "Bench permit ${item}" expires in 200 days` }) : "",
  status,
});

describe("pacingByPath", () => {
  it("takes each path's smallest gap and its most requests within [t, t + 1 s), whatever the order of arrival", () => {
    const pacing = pacingByPath([
      request("/a", 2000),
      request("/b", 0),
      request("/a", 0),
      request("/a", 1000),
      request("/b", 999.5),
      request("/b", 1500),
      request("/c", 10),
    ]);
    expect(pacing).toEqual([
      { path: "/a", requests: 3, minGapMs: 1000, maxPerSecond: 1 },
      { path: "/b", requests: 3, minGapMs: 500.5, maxPerSecond: 2 },
      { path: "/c", requests: 1, minGapMs: Number.POSITIVE_INFINITY, maxPerSecond: 1 },
    ]);
  });
});

describe("roundFigures", () => {
  it("counts items answered 200 twice and never, the last 200, the implied time from the busiest endpoint, and foreign requests", () => {
    const expected = new Set(["r1-0000", "r1-0001", "r1-0002", "r1-0003"]);
    const { delivered, unknown, figures } = roundFigures(
      [
        request("/0", 500, "r1-0000"),
        request("/1", 600, "r1-0001", 429),
        request("/0", 1500, "r1-0002"),
        request("/1", 1700, "r1-0001"),
        request("/0", 2500, "r1-0000"),
        request("/1", 2800, "r9-0000"),
        request("/1", 3000, "", 200),
      ],
      expected,
      T0,
    );
    expect(delivered).toBe(3);
    expect(unknown).toBe(2);
    expect(figures).toMatchObject({
      lastOkSeconds: 2.5,
      firstSeconds: 0.5,
      requests: 7,
      throttled: 1,
      throttledMost: 1,
      throttledLeast: 0,
      maxRequests: 4,
      impliedSeconds: 4,
      ratio: 0.625,
      minGapMs: 200,
      maxPerSecond: 2,
      duplicates: 1,
      missing: 1,
    });
  });
});
