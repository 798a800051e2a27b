// CSV as the exports write it (RFC 4180) and as the imports will read it. Pure functions, no I/O.
//
// - Records end with CRLF; a field is quoted when it contains `"`, `,`, CR or LF, and quotes inside
//   it are doubled. Text is UTF-8 without a byte-order mark (the route encodes it).
// - Formula injection (OWASP "CSV Injection"): every line of a cell (its start, and each start
//   after a CR, LF or CRLF inside it) that a spreadsheet could read as a formula gets a single quote
//   `'` in front. A line reads as one when, past characters a reader may skip or drop (white space
//   but line breaks, controls, zero-width and other invisible format characters, and `'`), it starts
//   with `=`, `+`, `-`, `@`, or a form spreadsheets fold to one of them (fullwidth `＝＋－＠`, small
//   forms, super- and subscript `⁼⁺⁻₌₊₋`, the minus sign `−`); the cell's first line also when it
//   starts with tab or CR (after any `'`). Because `'` is itself skipped, a line that starts with
//   quotes and then such a character is neutralised too, so that reading strips exactly one leading
//   `'` from each line that matches the same rule (`restoreCsvFormula`): `=1` is written `'=1`,
//   `'=1` is written `''=1`, `a\n=1` is written `a\n'=1`; `'abc` stays.
// - A list in one cell (an item's tags) is joined with `|`; a `\` or `|` inside a value is escaped
//   with `\` (`a|b` -> `a\|b`), so any value survives (`splitCsvList` reads it back).

// ---- writing ----

/** A character a spreadsheet reads as the start of a formula: `= + - @` and the forms it folds to them. */
const FORMULA_CHAR =
  /[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE66\uFE62\uFE63\uFE6B\u207C\u208C\u207A\u208A\u207B\u208B\u2212]/u;
/** A character that may stand before it unseen, or be dropped or skipped by a reader (and `'`, see above); not CR or LF. */
const SKIPPED_CHAR = /['\s\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;
/** OWASP's other two: a cell starting with tab or CR (after any quotes). */
const CELL_START_CONTROL = /^'*[\t\r]/;
const ANY_FORMULA_CHAR = new RegExp(FORMULA_CHAR.source, "u");
const LINE_BREAK = /\r\n|\r|\n/g;
const NEEDS_QUOTES = /[",\r\n]/;

/** Whether the line starting at index `at` of `text` reads as a formula (its look ends at the line's end). */
function lineReadsAsFormula(text: string, at: number): boolean {
  for (let i = at; i < text.length; ) {
    const code = text.codePointAt(i)!;
    if (code === 0x0a || code === 0x0d) return false;
    // Letters, digits and most punctuation of ASCII decide at once, without a regex.
    if (code > 0x20 && code < 0x7f && code !== 0x27)
      return code === 0x3d || code === 0x2b || code === 0x2d || code === 0x40;
    const ch = String.fromCodePoint(code);
    if (FORMULA_CHAR.test(ch)) return true;
    if (!SKIPPED_CHAR.test(ch)) return false;
    i += ch.length;
  }
  return false;
}

/** The indexes where the lines of `text` start (0, and after each LF, CRLF or lone CR) that read as a formula. */
function formulaLineStarts(text: string): number[] {
  const found = CELL_START_CONTROL.test(text) || lineReadsAsFormula(text, 0) ? [0] : [];
  // Most cells hold no formula character at all: then no later line can read as one.
  if (!ANY_FORMULA_CHAR.test(text)) return found;
  LINE_BREAK.lastIndex = 0;
  for (let m = LINE_BREAK.exec(text); m; m = LINE_BREAK.exec(text)) {
    const start = m.index + m[0].length;
    if (start < text.length && lineReadsAsFormula(text, start)) found.push(start);
  }
  return found;
}

/** `value` with a `'` before each of its lines a spreadsheet would read as a formula (see the rule above). */
export function neutraliseCsvFormula(value: string): string {
  if (value === "") return value;
  let out = "";
  let last = 0;
  for (const start of formulaLineStarts(value)) {
    out += `${value.slice(last, start)}'`;
    last = start;
  }
  return out + value.slice(last);
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
  return `${values.map(csvCell).join(",")}\r\n`;
}

/** Several values in one cell, joined with `|`; `\` and `|` inside a value are escaped with `\`. */
export function joinCsvList(values: readonly string[]): string {
  return values.map((v) => v.replace(/[\\|]/g, (ch) => `\\${ch}`)).join("|");
}

// ---- reading back: the inverses of the encodings above (the importer's parser builds on them) ----

/** Undoes `neutraliseCsvFormula`: each line that is `'` followed by what reads as a formula loses that one `'`. */
export function restoreCsvFormula(cell: string): string {
  if (!cell.includes("'")) return cell;
  let out = "";
  let last = 0;
  // A line read as a formula whose first character is `'`: what follows it reads as one too (`'` is skipped).
  for (const start of formulaLineStarts(cell)) {
    if (cell[start] !== "'") continue;
    out += cell.slice(last, start);
    last = start + 1;
  }
  return out + cell.slice(last);
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
