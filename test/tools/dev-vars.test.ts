// `npm start` completes .dev.vars from .dev.vars.example (scripts/lib/local.ts ensureDevVars): a
// variable the developer set keeps its value, so WEBHOOKS_ALLOW_PRIVATE_URLS="false" runs the
// service locally with the deployment's URL rules (README, "Local URLs").
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ensureDevVars, ROOT } from "../../scripts/lib/local.ts";

function project(devVars?: string): string {
  const dir = mkdtempSync(join(tmpdir(), "dev-vars-"));
  copyFileSync(join(ROOT, ".dev.vars.example"), join(dir, ".dev.vars.example"));
  if (devVars !== undefined) writeFileSync(join(dir, ".dev.vars"), devVars);
  return dir;
}
const switchLines = (dir: string) =>
  readFileSync(join(dir, ".dev.vars"), "utf8")
    .split("\n")
    .filter((line) => /^\s*(export\s+)?WEBHOOKS_ALLOW_PRIVATE_URLS\s*=/.test(line));

describe(".dev.vars and WEBHOOKS_ALLOW_PRIVATE_URLS", () => {
  it("creates .dev.vars from the example with the switch on (local receivers work)", () => {
    const dir = project();
    ensureDevVars(dir);
    expect(switchLines(dir)).toEqual(['WEBHOOKS_ALLOW_PRIVATE_URLS="true"']);
  });

  it.each([
    'WEBHOOKS_ALLOW_PRIVATE_URLS="false"',
    "WEBHOOKS_ALLOW_PRIVATE_URLS=false",
    "export WEBHOOKS_ALLOW_PRIVATE_URLS=false",
  ])("keeps %s as it is, adding only what else is missing", (line) => {
    const dir = project(`${line}\n`);
    ensureDevVars(dir);
    expect(switchLines(dir)).toEqual([line]);
    expect(readFileSync(join(dir, ".dev.vars"), "utf8")).toContain("WEBHOOK_SECRETS_KEY=");
  });

  it("brings a removed or commented-out switch back from the example (on): set it to false instead", () => {
    const dir = project('# WEBHOOKS_ALLOW_PRIVATE_URLS="true"\n');
    ensureDevVars(dir);
    expect(switchLines(dir)).toEqual(['WEBHOOKS_ALLOW_PRIVATE_URLS="true"']);
  });
});
