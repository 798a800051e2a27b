import { expect, it } from "vitest";
import type { TestSpecification, Vitest } from "vitest/node";
import { LongestFirst } from "../e2e-order.ts";

it("starts the long-waiting e2e files first, longest first, and keeps the projects apart", async () => {
  const spec = (project: string, file: string) =>
    ({
      moduleId: `/repo/test/${project}/${file}.test.ts`,
      project: { name: project, config: { sequence: { groupOrder: 0 }, isolate: true } },
    }) as unknown as TestSpecification;
  // Every file with a timing of the same length: Vitest's own order is then the given one.
  const ctx = { cache: { getTestSpecificationResult: () => ({ duration: 1, failed: false }) } } as unknown as Vitest;
  const files = [
    spec("e2e", "channels"),
    spec("e2e", "smoke"),
    spec("worker", "items"),
    spec("e2e", "walkthrough"),
    spec("e2e", "bounces"),
  ];
  const sorted = await new LongestFirst(ctx).sort(files);
  expect(sorted.map((s) => `${s.project.name}/${s.moduleId.split("/").pop()}`)).toEqual([
    "e2e/walkthrough.test.ts",
    "e2e/bounces.test.ts",
    "e2e/smoke.test.ts",
    "e2e/channels.test.ts",
    "worker/items.test.ts",
  ]);
});
