// The message catalogue (src/i18n/, docs/languages.md): every supported language has exactly the
// English keys, each with the same placeholders and well-formed plural forms, and no text is left
// empty or in English by mistake where the languages must differ.
import { describe, expect, it } from "vitest";
import { LANGUAGES } from "../../src/lib/languages";
import { CATALOGUES, placeholders } from "../../src/i18n/messages";
import { en } from "../../src/i18n/en";
import { catalogueProblems } from "./support/catalogue";

describe("message catalogue", () => {
  it("has one catalogue per supported language, and no other", () => {
    expect(Object.keys(CATALOGUES).sort()).toEqual([...LANGUAGES].sort());
  });

  for (const language of LANGUAGES) {
    it(`${language}: the English keys, no other, each with the English placeholders`, () => {
      expect(catalogueProblems(en, CATALOGUES[language])).toEqual([]);
    });
  }

  it("finds a missing key, an extra key, a changed placeholder and a malformed plural", () => {
    const reference = { a: "Hello {name}", b: "{n, plural, one {# day} other {# days}}", c: "x" };
    expect(
      catalogueProblems(reference, { a: "Hallo {name}", b: "{n, plural, one {# Tag} other {# Tage}}", c: "y" }),
    ).toEqual([]);
    expect(catalogueProblems(reference, { a: "Hallo {name}", c: "y" })).toEqual(["missing key b"]);
    expect(
      catalogueProblems(reference, { a: "Hallo", b: "{n, plural, one {# Tag} other {# Tage}}", c: "y", d: "z" }),
    ).toEqual(["a: placeholders {} instead of {name}", "extra key d"]);
    expect(catalogueProblems(reference, { a: "Hallo {nam}", b: "{n, plural, one {# Tag}}", c: "" })).toEqual([
      "a: placeholders {nam} instead of {name}",
      "b: plural without an other form",
      "c: empty",
    ]);
  });

  it("keeps plural selectors among the placeholders", () => {
    expect(placeholders(en["page.recurs.year"])).toEqual(["n"]);
    expect(placeholders(en["page.footer"])).toEqual(["company", "date", "name"]);
  });
});
