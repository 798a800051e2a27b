// package-lock.json as every npm a user may have reads it (npm 10, 11.13, 11.19) on every OS this
// runs on: npm 11.19 stops `npm ci` at an entry with no version ("Invalid Version:"), and a
// platform binary missing from the lockfile is never installed on that platform, so wrangler
// (workerd) or esbuild would not run there. Install scripts are decided in package.json
// `allowScripts` (README, "Set-up"): a package that gains one must be decided too, or npm warns.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

interface LockEntry {
  version?: string;
  integrity?: string;
  resolved?: string;
  link?: boolean;
  hasInstallScript?: boolean;
  optionalDependencies?: Record<string, string>;
}

const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as {
  lockfileVersion: number;
  packages: Record<string, LockEntry>;
};
const manifest = JSON.parse(readFileSync("package.json", "utf8")) as { allowScripts?: Record<string, boolean> };
const entries = Object.entries(lock.packages).filter(([path]) => path !== "");

/** The package a `require(name)` from the package at `from` finds (Node's lookup: nested node_modules first, then each parent's). */
function resolveFrom(from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base ? `${base}/` : ""}node_modules/${name}`;
    if (lock.packages[candidate]) return candidate;
    if (!base) return undefined;
    base = base.slice(0, base.lastIndexOf("node_modules/")).replace(/\/$/, "");
  }
}

const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
const installed = (name: string) => entries.filter(([path, entry]) => nameOf(path) === name && !entry.link);

describe("package-lock.json", () => {
  it("is lockfile version 3", () => {
    expect(lock.lockfileVersion).toBe(3);
  });

  it("gives every entry but a link a version and an integrity, and no download address", () => {
    const incomplete = entries.filter(([, e]) => !e.link && (!e.version || !e.integrity)).map(([path]) => path);
    expect(incomplete).toEqual([]);
    expect(entries.filter(([, e]) => e.resolved !== undefined && !e.link).map(([path]) => path)).toEqual([]);
  });

  it("carries workerd's binary for linux-x64, linux-arm64, darwin-x64, darwin-arm64 and windows-x64, for every workerd it installs", () => {
    const platforms = ["linux-64", "linux-arm64", "darwin-64", "darwin-arm64", "windows-64"];
    const workerds = installed("workerd");
    expect(workerds.length).toBeGreaterThan(0);
    for (const [path, workerd] of workerds) {
      for (const platform of platforms) {
        const found = resolveFrom(path, `@cloudflare/workerd-${platform}`);
        expect(found, `${path} (${workerd.version}) has no @cloudflare/workerd-${platform}`).toBeDefined();
        expect(lock.packages[found!]!.version, found).toBe(workerd.version);
      }
    }
  });

  it("carries every platform binary that workerd and esbuild list, at the version they ask for", () => {
    const missing: string[] = [];
    for (const [path, entry] of [...installed("workerd"), ...installed("esbuild")]) {
      const binaries = Object.entries(entry.optionalDependencies ?? {});
      expect(binaries.length, path).toBeGreaterThan(0);
      for (const [name, wanted] of binaries) {
        const found = resolveFrom(path, name);
        if (!found || lock.packages[found]!.version !== wanted)
          missing.push(`${path} -> ${name}@${wanted} (${found ? lock.packages[found]!.version : "absent"})`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("leaves no install script undecided in package.json allowScripts", () => {
    const decided = new Set(Object.keys(manifest.allowScripts ?? {}).map((key) => key.replace(/(.)@.*$/, "$1")));
    const undecided = entries
      .filter(([path, e]) => e.hasInstallScript && !decided.has(nameOf(path)))
      .map(([path]) => path);
    expect(undecided).toEqual([]);
  });
});
