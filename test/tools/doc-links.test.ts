// The project's documentation (README.md, docs/, bench/) links only to files of the repository: no link to
// another site (written out or as a bare URL, which renderers turn into a link) and no relative
// link that leaves the repository or names a missing file. Code spans and blocks are not links.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../../scripts/lib/local.ts";

/** Markdown files under `dir`, recursively. */
function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? markdownFiles(join(dir, entry.name))
      : entry.name.endsWith(".md")
        ? [join(dir, entry.name)]
        : [],
  );
}

/** The text without fenced code blocks and code spans (their lines kept, blank, for line numbers). */
function prose(markdown: string): string {
  let fence: string | null = null;
  return markdown
    .split("\n")
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (fence === null && marker) {
        fence = marker;
        return "";
      }
      if (fence !== null) {
        if (marker?.startsWith(fence)) fence = null;
        return "";
      }
      return line.replace(/(`+)[\s\S]*?\1/g, "");
    })
    .join("\n");
}

const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** Each link in `file`'s prose that leaves the repository: "line: target (why)". */
function outsideLinks(file: string, markdown: string): string[] {
  const found: string[] = [];
  prose(markdown)
    .split("\n")
    .forEach((line, i) => {
      const targets = [
        ...[...line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!), // [text](target), ![alt](target)
        ...[...line.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/g)].map((m) => m[1]!), // [label]: target
        ...[...line.matchAll(/<([a-z][a-z0-9+.-]*:[^>\s]+)>/gi)].map((m) => m[1]!), // <https://...>
      ];
      const withoutLinks = line
        .replace(/\]\([^)]*\)/g, "]")
        .replace(/^\s*\[[^\]]+\]:\s*\S+/, "")
        .replace(/<[a-z][a-z0-9+.-]*:[^>\s]+>/gi, "");
      // Bare URLs, without the trailing punctuation that renderers leave out of the link.
      for (const m of withoutLinks.matchAll(/\b(?:https?:\/\/|www\.)[^\s<>()]+/gi))
        targets.push(m[0].replace(/[.,;:!?'"*_~]+$/, ""));
      for (const target of targets) {
        const where = `${relative(ROOT, file)}:${i + 1}: ${target}`;
        if (SCHEME.test(target) || target.toLowerCase().startsWith("www.")) {
          found.push(`${where} (another site)`);
          continue;
        }
        const path = decodeURIComponent(target.split("#")[0]!.split("?")[0]!);
        if (path === "") continue; // an anchor in the same file
        const resolved = isAbsolute(path) ? path : resolve(dirname(file), path);
        const inside = relative(ROOT, resolved);
        if (inside.startsWith("..") || isAbsolute(inside)) found.push(`${where} (outside the repository)`);
        else if (!existsSync(resolved)) found.push(`${where} (no such file)`);
      }
    });
  return found;
}

describe("links in README.md, docs/ and bench/", () => {
  it("stay inside the repository", () => {
    const files = [
      join(ROOT, "README.md"),
      ...markdownFiles(join(ROOT, "docs")),
      ...markdownFiles(join(ROOT, "bench")),
    ];
    expect(files.length).toBeGreaterThan(5);
    expect(files.flatMap((file) => outsideLinks(file, readFileSync(file, "utf8")))).toEqual([]);
  });

  it("are found in every form, outside code only", () => {
    const readme = join(ROOT, "README.md");
    const sample = [
      "The contract is [`../shared/spec/api-v1.md`](../shared/spec/api-v1.md).",
      "Built to [Standard Webhooks](https://example.com/spec) and ![logo](missing.png).",
      "[spec]: https://example.com/ref",
      "See <https://example.com/auto> or https://example.com/bare, www.example.com too.",
      "Fine: [notes](docs/api-notes.md#general), [here](#walk-through), `https://example.com/b` in code.",
      "```sh",
      "curl https://example.com/in-a-block",
      "```",
    ].join("\n");
    expect(outsideLinks(readme, sample)).toEqual([
      "README.md:1: ../shared/spec/api-v1.md (outside the repository)",
      "README.md:2: https://example.com/spec (another site)",
      "README.md:2: missing.png (no such file)",
      "README.md:3: https://example.com/ref (another site)",
      "README.md:4: https://example.com/auto (another site)",
      "README.md:4: https://example.com/bare (another site)",
      "README.md:4: www.example.com (another site)",
    ]);
  });
});
