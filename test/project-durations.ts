// A Vitest reporter (vitest.config.ts) that ends a run with the time each project took and a plain
// count line. The projects run in one `vitest run` and overlap, so a project's duration is its wall
// span, from its first file's start to its last file's end. The time inside its files, summed over
// files running side by side, is split as Vitest reports it: the tests and their hooks, the set-up
// (environment, runner, setupFiles) and the import of the test file.
import type { Reporter, TestModule } from "vitest/node";

const seconds = (ms: number) => {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
};

interface Row {
  files: number;
  passed: number;
  failed: number;
  skipped: number;
  first: number;
  last: number;
  tests: number;
  setup: number;
  imports: number;
  slowest?: { id: string; ms: number };
}

export class ProjectDurations implements Reporter {
  private readonly started = new Map<string, number>();
  private readonly ended = new Map<string, number>();
  private runStarted = Date.now();

  onTestRunStart() {
    this.runStarted = Date.now();
  }

  onTestModuleStart(module: TestModule) {
    this.started.set(module.moduleId, Date.now());
  }

  onTestModuleEnd(module: TestModule) {
    this.ended.set(module.moduleId, Date.now());
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>) {
    const rows = new Map<string, Row>();
    for (const module of modules) {
      const name = module.project.name || "(root)";
      const row = rows.get(name) ?? {
        files: 0,
        passed: 0,
        failed: 0,
        skipped: 0,
        first: Infinity,
        last: -Infinity,
        tests: 0,
        setup: 0,
        imports: 0,
      };
      rows.set(name, row);
      row.files++;
      row.first = Math.min(row.first, this.started.get(module.moduleId) ?? Infinity);
      row.last = Math.max(row.last, this.ended.get(module.moduleId) ?? -Infinity);
      const d = module.diagnostic();
      row.tests += d.duration;
      row.setup += d.environmentSetupDuration + d.prepareDuration + d.setupDuration;
      row.imports += d.collectDuration;
      const ms = d.environmentSetupDuration + d.prepareDuration + d.setupDuration + d.collectDuration + d.duration;
      if (!row.slowest || ms > row.slowest.ms) row.slowest = { id: module.relativeModuleId, ms };
      let failed = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") row.passed++;
        else if (state === "failed") failed++;
        else if (state === "skipped") row.skipped++;
      }
      // A file that fails outside its tests (an import, a hook) counts as one failure.
      row.failed += failed === 0 && module.state() === "failed" ? 1 : failed;
    }
    if (rows.size === 0) return;

    const lines = [
      "Duration per project (wall time from its first file's start to its last file's end; the projects overlap):",
    ];
    const total = { passed: 0, failed: unhandledErrors.length, skipped: 0 }; // an error outside any test fails the run
    for (const [name, row] of [...rows].sort(([a], [b]) => a.localeCompare(b))) {
      total.passed += row.passed;
      total.failed += row.failed;
      total.skipped += row.skipped;
      const span = row.last >= row.first ? seconds(row.last - row.first) : "-";
      const slowest = row.slowest ? `; slowest file ${row.slowest.id} ${seconds(row.slowest.ms)}` : "";
      lines.push(
        `  ${name.padEnd(7)} ${span.padStart(12)}   ${row.files} files, ${row.passed} passed, ${row.failed} failed; ` +
          `in files: tests ${seconds(row.tests)}, set-up ${seconds(row.setup)}, import ${seconds(row.imports)}${slowest}`,
      );
    }
    lines.push(`  ${"all".padEnd(7)} ${seconds(Date.now() - this.runStarted).padStart(12)}`);
    lines.push(
      `tests: ${total.passed} passed, ${total.failed} failed${total.skipped > 0 ? `, ${total.skipped} skipped` : ""}`,
    );
    console.log(`\n${lines.join("\n")}`);
  }
}
