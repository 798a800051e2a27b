// Reading an import body into rows (docs/imports.md): CSV (RFC 4180, header row, UTF-8 with or
// without a BOM), a JSON array of objects, or NDJSON. Row numbers count from 1, the first data row.
import { restoreCsvFormula } from "../lib/csv";

export const MAX_IMPORT_ROWS = 100_000;
export const MAX_IMPORT_BYTES = 20 * 1024 * 1024;
export const MAX_COLUMNS = 200;

export const IMPORT_FORMATS = {
  "text/csv": "csv",
  "application/json": "json",
  "application/x-ndjson": "ndjson",
} as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[keyof typeof IMPORT_FORMATS];

/** One data row: its number and its cells by column name (CSV: strings; JSON: any JSON value). */
export interface RawRow {
  row: number;
  cells: Map<string, unknown>;
  /** The columns the row carries, empty or not: CSV, the header; JSON, the object's keys (a `null` one too). */
  columns: ReadonlySet<string>;
  /** Set when the row could not be read at all (an NDJSON line that is not a JSON object). */
  unreadable?: string;
}

/** The body is not a file of its format at all: the job fails with this message. */
export class UnreadableFile extends Error {}

/** The records of an RFC 4180 text (CRLF or LF line ends). Throws UnreadableFile on a quote left open. */
export function* csvRecords(text: string): Generator<string[]> {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = text.length;
  let line = 1;
  while (i < n) {
    const record: string[] = [];
    for (;;) {
      let value = "";
      if (text[i] === '"') {
        const start = line;
        i++;
        for (;;) {
          const quote = text.indexOf('"', i);
          if (quote < 0) throw new UnreadableFile(`CSV: the quoted field opened on line ${start} is never closed`);
          const part = text.slice(i, quote);
          line += countNewlines(part);
          value += part;
          if (text[quote + 1] === '"') {
            value += '"';
            i = quote + 2;
          } else {
            i = quote + 1;
            break;
          }
        }
        // Text after the closing quote up to the delimiter is kept, as lenient readers do.
        const end = fieldEnd(text, i);
        value += text.slice(i, end);
        i = end;
      } else {
        const end = fieldEnd(text, i);
        value = text.slice(i, end);
        i = end;
      }
      record.push(value);
      if (text[i] === ",") {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === "\r") i++;
    if (text[i] === "\n") i++;
    line++;
    // A blank line is no record.
    if (record.length === 1 && record[0] === "") continue;
    yield record;
  }
}

function fieldEnd(text: string, from: number): number {
  let i = from;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (
      c === 44 /* , */ ||
      c === 10 ||
      (c === 13 && text.charCodeAt(i + 1) === 10) ||
      (c === 13 && i + 1 === text.length)
    )
      break;
    i++;
  }
  return i;
}

function countNewlines(text: string): number {
  let count = 0;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) count++;
  return count;
}

/** The rows of an import body. Throws UnreadableFile when it is not a file of `format`, or holds too many rows. */
export function parseRows(text: string, format: ImportFormat): RawRow[] {
  const rows = format === "csv" ? csvRows(text) : format === "json" ? jsonRows(text) : ndjsonRows(text);
  if (rows.length > MAX_IMPORT_ROWS)
    throw new UnreadableFile(`The file holds ${rows.length} rows; an import takes at most ${MAX_IMPORT_ROWS}`);
  if (rows.length === 0) throw new UnreadableFile("The file holds no data rows");
  return rows;
}

function csvRows(text: string): RawRow[] {
  const records = csvRecords(text);
  const first = records.next();
  if (first.done) throw new UnreadableFile("CSV: the file is empty; it needs a header row");
  const header = first.value.map((name) => restoreCsvFormula(name.trim()));
  if (header.length > MAX_COLUMNS) throw new UnreadableFile(`CSV: at most ${MAX_COLUMNS} columns`);
  const seen = new Set<string>();
  for (const name of header) {
    if (name === "") throw new UnreadableFile("CSV: every column of the header row needs a name");
    if (seen.has(name.toLowerCase()))
      throw new UnreadableFile(`CSV: the header names column "${name.slice(0, 100)}" twice`);
    seen.add(name.toLowerCase());
  }
  const columns: ReadonlySet<string> = new Set(header);
  const rows: RawRow[] = [];
  for (const record of records) {
    const row = rows.length + 1;
    if (row > MAX_IMPORT_ROWS) {
      rows.length = MAX_IMPORT_ROWS + 1;
      break;
    }
    const cells = new Map<string, unknown>();
    header.forEach((name, k) => {
      const value = record[k];
      if (value !== undefined && value !== "") cells.set(name, restoreCsvFormula(value));
    });
    rows.push(
      record.length > header.length
        ? { row, cells, columns, unreadable: `the row has ${record.length} fields; the header has ${header.length}` }
        : { row, cells, columns },
    );
  }
  return rows;
}

function objectRow(row: number, value: unknown): RawRow {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { row, cells: new Map(), columns: new Set(), unreadable: "the row must be a JSON object" };
  const cells = new Map<string, unknown>();
  for (const [key, cell] of Object.entries(value)) {
    if (cell === null || cell === "") continue;
    if (key === "fields" && typeof cell === "object" && !Array.isArray(cell)) {
      for (const [name, v] of Object.entries(cell as Record<string, unknown>))
        if (v !== null && v !== "") cells.set(`field:${name}`, v);
    } else cells.set(key, cell);
  }
  if (cells.size > MAX_COLUMNS)
    return { row, cells: new Map(), columns: new Set(), unreadable: `a row may have at most ${MAX_COLUMNS} keys` };
  return { row, cells, columns: new Set(Object.keys(value)) };
}

function jsonRows(text: string): RawRow[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    throw new UnreadableFile(
      `JSON: the body is not valid JSON (${err instanceof Error ? err.message.slice(0, 200) : "parse error"})`,
    );
  }
  if (!Array.isArray(parsed)) throw new UnreadableFile("JSON: the body must be an array of objects, one per row");
  if (parsed.length > MAX_IMPORT_ROWS)
    throw new UnreadableFile(`The file holds ${parsed.length} rows; an import takes at most ${MAX_IMPORT_ROWS}`);
  return parsed.map((value, k) => objectRow(k + 1, value));
}

function ndjsonRows(text: string): RawRow[] {
  const rows: RawRow[] = [];
  for (const line of (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text).split("\n")) {
    if (line.trim() === "") continue;
    const row = rows.length + 1;
    if (row > MAX_IMPORT_ROWS) {
      rows.length = MAX_IMPORT_ROWS + 1;
      break;
    }
    try {
      rows.push(objectRow(row, JSON.parse(line)));
    } catch {
      rows.push({ row, cells: new Map(), columns: new Set(), unreadable: "the line is not valid JSON" });
    }
  }
  return rows;
}
