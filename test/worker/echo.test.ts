import { describe, expect, it } from "vitest";
import { MAX_ECHO_CHARS, echo } from "../../src/lib/echo";

describe("echo (bounded quoting of client input)", () => {
  it("returns short input unchanged", () => {
    expect(echo("scope:x")).toBe("scope:x");
    expect(echo("a".repeat(MAX_ECHO_CHARS))).toBe("a".repeat(MAX_ECHO_CHARS));
  });

  it("cuts long input and says how long it was", () => {
    const out = echo("a".repeat(100_000));
    expect(out.length).toBeLessThan(MAX_ECHO_CHARS + 40);
    expect(out).toMatch(/… \(100000 characters\)$/);
  });

  it("never splits a surrogate pair", () => {
    const out = echo("😀".repeat(200), 3);
    expect(out.startsWith("😀😀😀…")).toBe(true);
    expect(out.isWellFormed()).toBe(true);
  });
});
