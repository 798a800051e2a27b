// CSV as the exports write it (RFC 4180) and as the imports will read it. Pure functions, no I/O.
//
// - Records end with CRLF; a field is quoted when it contains `"`, `,`, CR or LF, and quotes inside
//   it are doubled. Text is UTF-8 without a byte-order mark (the route encodes it).
// - Formula injection (OWASP "CSV Injection"): a cell that a spreadsheet would read as a formula,
//   one starting with `=`, `+`, `-`, `@`, tab or carriage return, gets a single quote `'` in front.
//   So that a value which itself starts with quotes and then such a character survives a round
//   trip, the rule is "any run of leading `'` followed by one of those characters": `=1` is written
//   `'=1`, `'=1` is written `''=1`, and reading strips exactly one leading `'` from a cell that
//   matches the same pattern (`restoreCsvFormula`). A value like `'abc` is written as it is.
// - A list in one cell (an item's tags) is joined with `|`; a `\` or `|` inside a value is escaped
//   with `\` (`a|b` -> `a\|b`), so any value survives (`splitCsvList` reads it back).

// ---- writing ----

/** A cell a spreadsheet would evaluate: optional leading quotes, then `=`, `+`, `-`, `@`, tab or CR. */
const FORMULA = /^'*[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** `value` with a `'` in front when a spreadsheet would read it as a formula (see the rule above). */
export function neutraliseCsvFormula(value: string): string {
  return FORMULA.test(value) ? `'${value}` : value;
}

/** `value` as an RFC 4180 field: in double quotes (inner quotes doubled) when it holds `"`, `,`, CR or LF. */
export function quoteCsvField(value: string): string {
  return NEEDS_QUOTES.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** One cell of an export: neutralised, then quoted as needed. */
export function csvCell(value: string): string {
  return quoteCsvField(neutraliseCsvFormula(value));
}

/** One record: the cells, joined with commas and ended with CRLF. */
export function csvRecord(values: readonly string[]): string {
  return values.map(csvCell).join(",") + "\r\n";
}

/** Several values in one cell, joined with `|`; `\` and `|` inside a value are escaped with `\`. */
export function joinCsvList(values: readonly string[]): string {
  return values.map((v) => v.replace(/[\\|]/g, (ch) => `\\${ch}`)).join("|");
}

// ---- reading back: the inverses of the encodings above (the importer's parser builds on them) ----

/** Undoes `neutraliseCsvFormula`: one leading `'` goes when the cell matches `'+` then a formula character. */
export function restoreCsvFormula(cell: string): string {
  return cell.startsWith("'") && FORMULA.test(cell.slice(1)) ? cell.slice(1) : cell;
}

/** Undoes `joinCsvList`: `""` is no value; `\x` is `x`. */
export function splitCsvList(cell: string): string[] {
  if (cell === "") return [];
  const values: string[] = [];
  let current = "";
  for (let i = 0; i < cell.length; i++) {
    const ch = cell[i]!;
    if (ch === "\\" && i + 1 < cell.length) current += cell[++i];
    else if (ch === "|") {
      values.push(current);
      current = "";
    } else current += ch;
  }
  values.push(current);
  return values;
}
