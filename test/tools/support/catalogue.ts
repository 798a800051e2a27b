// Compares a language's catalogue with the reference one (English): the problems, in words, sorted by key.
import { placeholders } from "../../../src/i18n/messages";

const PLURAL = /\{(\w+), plural,/g;

export function catalogueProblems(reference: Record<string, string>, catalogue: Record<string, string>): string[] {
  const problems: string[] = [];
  const keys = new Set([...Object.keys(reference), ...Object.keys(catalogue)]);
  for (const key of [...keys].sort()) {
    const want = reference[key];
    const got = catalogue[key];
    if (want === undefined) {
      problems.push(`extra key ${key}`);
      continue;
    }
    if (got === undefined) {
      problems.push(`missing key ${key}`);
      continue;
    }
    if (got.trim() === "") {
      problems.push(`${key}: empty`);
      continue;
    }
    const a = placeholders(want).join(", ");
    const b = placeholders(got).join(", ");
    if (a !== b) problems.push(`${key}: placeholders {${b}} instead of {${a}}`);
    // A plural the selector could not parse would print its raw text: each must have an other form.
    for (const [, name] of got.matchAll(PLURAL)) {
      if (!new RegExp(`\\{${name}, plural,[^]*\\bother\\s*\\{`).test(got))
        problems.push(`${key}: plural without an other form`);
    }
  }
  return problems;
}
