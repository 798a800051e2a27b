// The order test files start in. Vitest starts the files it has no timing for largest first, and on a
// clean clone (CI) it has none: the walk-through, a short file that waits for the README's minutes
// (about 5 minutes), started last and the e2e project ran 3 minutes past its other files. These e2e
// files start first, longest first (their durations in CI, 2026-11-27); the rest follow as Vitest orders them.
import { BaseSequencer, type TestSpecification } from "vitest/node";

const LONGEST_FIRST = [
  "walkthrough",
  "bounces",
  "class-rename",
  "recipient-journey",
  "unsubscribe",
  "channel-deliveries",
  "smoke",
  "digest-crash",
  "acknowledge-crash",
];

const rank = (spec: TestSpecification) => {
  const i = LONGEST_FIRST.findIndex((name) => spec.moduleId.endsWith(`/test/e2e/${name}.test.ts`));
  return i < 0 ? LONGEST_FIRST.length : i;
};

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Within each project (in the order Vitest gives them), the listed files first; a stable sort.
    const projects = [...new Set(sorted.map((spec) => spec.project.name))];
    return projects.flatMap((name) =>
      sorted.filter((spec) => spec.project.name === name).sort((a, b) => rank(a) - rank(b)),
    );
  }
}
