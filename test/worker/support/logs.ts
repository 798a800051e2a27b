// Error logs that a test provokes on purpose: captured instead of printed (a passing run shows no
// stack traces that look like failures), and available for assertions.
import { afterEach, beforeEach, vi } from "vitest";

/**
 * Inside a `describe`: every `console.error` of its tests is captured into the returned array
 * (one string per call) instead of being printed. The array is emptied before each test.
 */
export function captureErrorLogs(): string[] {
  const logged: string[] = [];
  let restore: (() => void) | undefined;
  beforeEach(() => {
    logged.length = 0;
    const spy = vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => {
      logged.push(args.map((a) => (typeof a === "string" ? a : String(a))).join(" "));
    });
    restore = () => spy.mockRestore();
  });
  afterEach(() => restore?.());
  return logged;
}
