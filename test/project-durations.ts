// A Vitest reporter (vitest.config.ts) that ends a run with the time each project took and a plain
// count line. The projects run in one `vitest run` and overlap, so a project's duration is its wall
// span, from its first file's start to its last file's end; "files" is the sum of its files' own time.
import type { Reporter, TestModule } from "vitest/node";

const seconds = (ms: number) => {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
};

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
    type Row = { files: number; passed: number; failed: number; skipped: number; first: number; last: number; own: number; slowest?: TestModule };
    const rows = new Map<string, Row>();
    const total = { passed: 0, failed: 0, skipped: 0 };
    for (const module of modules) {
      const name = module.project.name || "(root)";
      const row = rows.get(name) ?? { files: 0, passed: 0, failed: 0, skipped: 0, first: Infinity, last: -Infinity, own: 0 };
      rows.set(name, row);
      row.files++;
      const start = this.started.get(module.moduleId);
      const end = this.ended.get(module.moduleId);
      if (start !== undefined) row.first = Math.min(row.first, start);
      if (end !== undefined) row.last = Math.max(row.last, end);
      const own = module.diagnostic().duration;
      row.own += own;
      if (!row.slowest || own > row.slowest.diagnostic().duration) row.slowest = module;
      let failedTests = 0;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") row.passed++;
        else if (state === "failed") failedTests++;
        else if (state === "skipped") row.skipped++;
      }
      // A file that fails outside its tests (an import, a hook) counts as one failure.
      row.failed += failedTests + (failedTests === 0 && module.state() === "failed" ? 1 : 0);
    }
    if (rows.size === 0) return;
    const lines = [`Duration per project (wall time from its first file's start to its last file's end; the projects overlap):`];
    for (const [name, row] of [...rows].sort(([a], [b]) => a.localeCompare(b))) {
      total.passed += row.passed;
      total.failed += row.failed;
      total.skipped += row.skipped;
      const span = row.last >= row.first ? seconds(row.last - row.first) : "-";
      const slowest = row.slowest ? `; slowest ${row.slowest.relativeModuleId} ${seconds(row.slowest.diagnostic().duration)}` : "";
      lines.push(
        `  ${name.padEnd(7)} ${span.padStart(12)}   ${String(row.files).padStart(3)} files, ${row.passed} passed, ${row.failed} failed (files' own time ${seconds(row.own)}${slowest})`,
      );
    }
    lines.push(`  ${"all".padEnd(7)} ${seconds(Date.now() - this.runStarted).padStart(12)}`);
    // An error outside any test (Vitest's "Unhandled Errors") fails the run: each counts as a failure.
    total.failed += unhandledErrors.length;
    const skipped = total.skipped > 0 ? `, ${total.skipped} skipped` : "";
    lines.push(`tests: ${total.passed} passed, ${total.failed} failed${skipped}`);
    console.log(`\n${lines.join("\n")}`);
  }
}
