// The capacity model (bench/capacity-model.ts) over the committed measurements
// (bench/scale-measurements.json): how it grows with shards and where it stops.
import { describe, expect, it } from "vitest";
import { ASSUMPTIONS, directoryCrossover, loadMeasurements, shardTable } from "../../bench/capacity-model.ts";

const m = loadMeasurements();

describe("capacity model", () => {
  const rows = shardTable(m, ASSUMPTIONS);

  it("grows with shards, near-linearly while the shard primaries limit, and levels off at the home database", () => {
    expect(rows.map((r) => r.shards)).toEqual([1, 4, 16, 64]);
    for (let i = 1; i < rows.length; i++)
      expect(rows[i]!.requestsPerSecond).toBeGreaterThan(rows[i - 1]!.requestsPerSecond);
    const four = rows[1]!;
    expect(four.limit).toBe("the shard primaries");
    expect(four.efficiency).toBeGreaterThan(0.75);
    // With shard 0 holding only the directory, growth is linear in the data shards up to the ceiling.
    const perDataShard = rows[1]!.directoryOnlyHome / 3;
    const ceiling = rows[3]!.directoryOnlyHome;
    expect(ceiling).toBeLessThan(63 * perDataShard);
    expect(rows[2]!.directoryOnlyHome).toBeCloseTo(Math.min(15 * perDataShard, ceiling), 6);
    expect(rows[3]!.limit).toMatch(/home database/);
    expect(directoryCrossover(m, ASSUMPTIONS)).toBeGreaterThan(4);
  });
});
