/** Escapes `%`, `_` and `\` for a `LIKE ... ESCAPE '\'` pattern that matches `term` anywhere. */
export function containsPattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
}

/**
 * Turns free text into an FTS5 query in which every word must match as a word prefix:
 * `jo smi` -> `"jo"* AND "smi"*`. Returns null when the text has no searchable characters.
 */
export function prefixMatchQuery(text: string): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu);
  if (!words) return null;
  return words
    .slice(0, 8)
    .map((w) => `"${w}"*`)
    .join(" AND ");
}
