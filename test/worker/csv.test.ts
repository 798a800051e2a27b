// The CSV writer of the exports (src/lib/csv.ts): RFC 4180 quoting, formula neutralisation and the
// in-cell list, each with its inverse so that round trips hold.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  csvCell,
  csvRecord,
  joinCsvList,
  neutraliseCsvFormula,
  quoteCsvField,
  restoreCsvFormula,
  splitCsvList,
} from "../../src/lib/csv";
import { parseCsv } from "./support/csv";

describe("quoteCsvField", () => {
  it("leaves plain text alone and quotes text with a quote, comma, CR or LF (quotes doubled)", () => {
    expect(quoteCsvField("plain text; with: other | punctuation")).toBe("plain text; with: other | punctuation");
    expect(quoteCsvField("")).toBe("");
    expect(quoteCsvField('say "hi"')).toBe('"say ""hi"""');
    expect(quoteCsvField("a,b")).toBe('"a,b"');
    expect(quoteCsvField("line\nbreak")).toBe('"line\nbreak"');
    expect(quoteCsvField("cr\rhere")).toBe('"cr\rhere"');
    expect(quoteCsvField("tab\there")).toBe("tab\there");
    expect(quoteCsvField("emoji 🧯 and accents é")).toBe("emoji 🧯 and accents é");
  });
});

describe("neutraliseCsvFormula", () => {
  it("puts one ' before a cell starting with =, +, -, @, tab or CR, and nothing before others", () => {
    for (const first of ["=", "+", "-", "@", "\t", "\r"])
      expect(neutraliseCsvFormula(`${first}1+1`)).toBe(`'${first}1+1`);
    for (const safe of ["1=1", "a-b", "'quoted", "", "'", "x@y.z", " a=1"])
      expect(neutraliseCsvFormula(safe)).toBe(safe);
    // White space before the character is looked past (some readers trim it): issue 31.5.
    expect(neutraliseCsvFormula(" =1")).toBe("' =1");
  });

  it("treats leading quotes followed by a formula character as a formula too, so they survive a round trip", () => {
    expect(neutraliseCsvFormula("'=1")).toBe("''=1");
    expect(neutraliseCsvFormula("''-2")).toBe("'''-2");
    expect(restoreCsvFormula("''=1")).toBe("'=1");
    expect(restoreCsvFormula("'=1")).toBe("=1");
    expect(restoreCsvFormula("'abc")).toBe("'abc");
    expect(restoreCsvFormula("'")).toBe("'");
  });

  it("round-trips every string", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("=", "+", "-", "@", "\t", "\r", "'", "a", " ", '"', ",") }),
        (s) => {
          expect(restoreCsvFormula(neutraliseCsvFormula(s))).toBe(s);
        },
      ),
      { numRuns: 500, seed: 4180 },
    );
  });
});

describe("neutraliseCsvFormula: every line, and what spreadsheets fold or skip (issue 31.5)", () => {
  /** The lines of a cell. */
  const lines = (cell: string) => cell.split(/\r\n|\r|\n/);

  it("neutralises a formula character at the start of any line inside a cell", () => {
    expect(neutraliseCsvFormula("ok\n=1+1")).toBe("ok\n'=1+1");
    expect(neutraliseCsvFormula("ok\r\n+1")).toBe("ok\r\n'+1");
    expect(neutraliseCsvFormula("ok\r-1")).toBe("ok\r'-1");
    expect(neutraliseCsvFormula("=a\n@b\nc\n-d")).toBe("'=a\n'@b\nc\n'-d");
    expect(neutraliseCsvFormula("a=b\nc-d")).toBe("a=b\nc-d");
    expect(csvCell('note\n=HYPERLINK("http://x")')).toBe('"note\n\'=HYPERLINK(""http://x"")"');
  });

  it("neutralises the forms spreadsheets fold to = + - @ (fullwidth, small, super- and subscript, minus sign)", () => {
    for (const first of [
      "\uFF1D",
      "\uFF0B",
      "\uFF0D",
      "\uFF20",
      "\uFE66",
      "\uFE62",
      "\uFE63",
      "\uFE6B",
      "\u207C",
      "\u208C",
      "\u207A",
      "\u208A",
      "\u207B",
      "\u208B",
      "\u2212",
    ]) {
      expect(neutraliseCsvFormula(`${first}1+1`), first.codePointAt(0)!.toString(16)).toBe(`'${first}1+1`);
      expect(neutraliseCsvFormula(`x\n${first}1`)).toBe(`x\n'${first}1`);
    }
  });

  it("looks past invisible and white-space characters a reader may skip before the formula character", () => {
    for (const lead of [
      "\u200B",
      "\u200C",
      "\u200D",
      "\u2060",
      "\uFEFF",
      "\u00AD",
      "\u200E",
      "\u202E",
      "\u2066",
      "\u180E",
      "\u00A0",
      " ",
      "\u3000",
      "\u0000",
      "\u200B\u200B ",
      "\u{E0001}",
    ]) {
      expect(neutraliseCsvFormula(`${lead}=1`), JSON.stringify(lead)).toBe(`'${lead}=1`);
      expect(neutraliseCsvFormula(`${lead}\uFF1D1`), JSON.stringify(lead)).toBe(`'${lead}\uFF1D1`);
      expect(neutraliseCsvFormula(`a\n${lead}-1`), JSON.stringify(lead)).toBe(`a\n'${lead}-1`);
      expect(neutraliseCsvFormula(`${lead}abc`)).toBe(`${lead}abc`);
    }
    expect(neutraliseCsvFormula("'\u200B=1")).toBe("''\u200B=1");
    expect(restoreCsvFormula("''\u200B=1")).toBe("'\u200B=1");
  });

  it("leaves no line of any neutralised cell starting, past skipped characters, with a formula character", () => {
    const dangerous =
      /^[\s\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]*[=+\-@\uFF1D\uFF0B\uFF0D\uFF20\uFE62\uFE63\uFE66\uFE6B\u207A-\u207C\u208A-\u208C\u2212]/u;
    fc.assert(
      fc.property(fc.string({ unit: UNITS }), (s) => {
        for (const line of lines(neutraliseCsvFormula(s)))
          expect(dangerous.test(line), JSON.stringify(line)).toBe(false);
      }),
      { numRuns: 1000, seed: 31 },
    );
  });

  it("round-trips every string through neutralise and restore, and through a CSV record and its reader", () => {
    fc.assert(
      fc.property(fc.string({ unit: UNITS }), (s) => {
        expect(restoreCsvFormula(neutraliseCsvFormula(s))).toBe(s);
      }),
      { numRuns: 2000, seed: 31 },
    );
    fc.assert(
      fc.property(fc.array(fc.string({ unit: UNITS }), { minLength: 1, maxLength: 4 }), (cells) => {
        expect(parseCsv(csvRecord(cells))[0]!.map(restoreCsvFormula)).toEqual(cells);
      }),
      { numRuns: 500, seed: 31 },
    );
  });
});

/** Characters that matter to the formula guard and its inverse, and a few that do not. */
const UNITS = fc.constantFrom(
  "=",
  "+",
  "-",
  "@",
  "\t",
  "\r",
  "\n",
  "\r\n",
  "'",
  "a",
  " ",
  '"',
  ",",
  "\uFF1D",
  "\uFF0B",
  "\uFF0D",
  "\uFF20",
  "\uFE66",
  "\u2212",
  "\u200B",
  "\uFEFF",
  "\u00A0",
  "\u2060",
  "\u{E0001}",
  "🧯",
  "é",
);

describe("csvCell and csvRecord", () => {
  it("neutralises, then quotes", () => {
    expect(csvCell('=HYPERLINK("http://x")')).toBe('"\'=HYPERLINK(""http://x"")"');
    expect(csvCell("-5")).toBe("'-5");
    expect(csvCell("\rx")).toBe('"\'\rx"');
    expect(csvCell("@a,b")).toBe('"\'@a,b"');
  });

  it("joins the cells with commas and ends the record with CRLF", () => {
    expect(csvRecord(["1", "a,b", "", "x"])).toBe('1,"a,b",,x\r\n');
    expect(csvRecord([])).toBe("\r\n");
  });

  it("reads back with an RFC 4180 parser, whatever the cells hold", () => {
    const cell = fc.string({
      unit: fc.constantFrom("a", "é", "🧯", '"', ",", "\r", "\n", "\r\n", "=", "-", "'", " ", "\t", "|", "\\"),
    });
    fc.assert(
      fc.property(fc.array(fc.array(cell, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 5 }), (rows) => {
        const parsed = parseCsv(rows.map(csvRecord).join(""));
        expect(parsed.map((r) => r.map(restoreCsvFormula))).toEqual(rows);
      }),
      { numRuns: 300, seed: 4180 },
    );
  });
});

describe("joinCsvList and splitCsvList", () => {
  it("joins with | and escapes \\ and | inside a value", () => {
    expect(joinCsvList(["fire", "building A"])).toBe("fire|building A");
    expect(joinCsvList([])).toBe("");
    expect(joinCsvList(["a|b", "c\\d"])).toBe("a\\|b|c\\\\d");
    expect(splitCsvList("a\\|b|c\\\\d")).toEqual(["a|b", "c\\d"]);
    expect(splitCsvList("")).toEqual([]);
  });

  it("round-trips every list of non-empty values", () => {
    const value = fc.string({ unit: fc.constantFrom("a", "|", "\\", " ", "é"), minLength: 1 });
    fc.assert(
      fc.property(fc.array(value, { maxLength: 6 }), (values) => {
        expect(splitCsvList(joinCsvList(values))).toEqual(values);
      }),
      { numRuns: 500, seed: 4180 },
    );
  });
});
