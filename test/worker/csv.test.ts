// The CSV writer of the exports (src/lib/csv.ts): RFC 4180 quoting, formula neutralisation and the
// in-cell list, each with its inverse so that round trips hold.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvCell, csvRecord, joinCsvList, neutraliseCsvFormula, quoteCsvField, restoreCsvFormula, splitCsvList } from "../../src/lib/csv";
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
    for (const first of ["=", "+", "-", "@", "\t", "\r"]) expect(neutraliseCsvFormula(`${first}1+1`)).toBe(`'${first}1+1`);
    for (const safe of ["1=1", " =1", "a-b", "'quoted", "", "'", "x@y.z"]) expect(neutraliseCsvFormula(safe)).toBe(safe);
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
      fc.property(fc.string({ unit: fc.constantFrom("=", "+", "-", "@", "\t", "\r", "'", "a", " ", '"', ",") }), (s) => {
        expect(restoreCsvFormula(neutraliseCsvFormula(s))).toBe(s);
      }),
      { numRuns: 500, seed: 4180 },
    );
  });
});

describe("csvCell and csvRecord", () => {
  it("neutralises, then quotes", () => {
    expect(csvCell("=HYPERLINK(\"http://x\")")).toBe("\"'=HYPERLINK(\"\"http://x\"\")\"");
    expect(csvCell("-5")).toBe("'-5");
    expect(csvCell("\rx")).toBe("\"'\rx\"");
    expect(csvCell("@a,b")).toBe("\"'@a,b\"");
  });

  it("joins the cells with commas and ends the record with CRLF", () => {
    expect(csvRecord(["1", "a,b", "", "x"])).toBe('1,"a,b",,x\r\n');
    expect(csvRecord([])).toBe("\r\n");
  });

  it("reads back with an RFC 4180 parser, whatever the cells hold", () => {
    const cell = fc.string({ unit: fc.constantFrom("a", "é", "🧯", '"', ",", "\r", "\n", "\r\n", "=", "-", "'", " ", "\t", "|", "\\") });
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
