// The message catalogue at work (src/i18n/, docs/languages.md): choosing a language, dates in the
// company's format and the reader's locale, relative days and plurals through Intl, template
// placeholders, and the reminder email in each language.
import { describe, expect, it } from "vitest";
import { type ReminderMessageInput, reminderMessage } from "../../src/company-clock/reminder-email";
import { localDate, relativeDays } from "../../src/i18n/format";
import { speechFor } from "../../src/i18n/language";
import { t } from "../../src/i18n/messages";
import { fillTemplate, templateProblem, type TemplateValues } from "../../src/i18n/template";
import { LANGUAGES } from "../../src/lib/languages";

const base: ReminderMessageInput = {
  companyName: "Acme GmbH",
  itemTitle: "Reisepass",
  itemType: "exp",
  documentType: null,
  expiryDate: "2027-03-14",
  today: "2027-03-11",
  dateFormat: "DD.MM.YYYY",
  recipientName: "Jana Weber",
  recipientFirstName: "Jana",
  recipientLastName: "Weber",
  itemId: 7,
};

describe("speechFor: which language a message speaks", () => {
  it("the first supported tag of contact, company; else English; a region keeps its Intl formats", () => {
    expect(speechFor("de-AT", "fr")).toMatchObject({ language: "de", tag: "de-AT", dir: "ltr" });
    expect(speechFor(null, "fr")).toMatchObject({ language: "fr", tag: "fr" });
    expect(speechFor("ja", "es")).toMatchObject({ language: "es" });
    expect(speechFor(undefined, null)).toMatchObject({ language: "en", tag: "en" });
    expect(speechFor("PT-br")).toMatchObject({ language: "pt", tag: "pt-BR", locale: "pt-BR-u-nu-latn" });
    expect(speechFor("ar-EG")).toMatchObject({ language: "ar", dir: "rtl" });
    expect(speechFor("not a tag", "ar")).toMatchObject({ language: "ar" });
  });
});

describe("dates and relative days", () => {
  it("numeric formats stay the company's in every language; month names come from the locale", () => {
    for (const language of LANGUAGES)
      expect(localDate("2027-03-14", "DD.MM.YYYY", speechFor(language).locale)).toBe("14.03.2027");
    expect(localDate("2027-03-14", "D MMM YYYY", speechFor("en").locale)).toBe("14 Mar 2027");
    expect(localDate("2027-03-14", "MMM D, YYYY", speechFor("en").locale)).toBe("Mar 14, 2027");
    expect(localDate("2027-03-14", "D MMM YYYY", speechFor("de").locale)).toBe("14. März 2027");
    expect(localDate("2027-03-14", "D MMM YYYY", speechFor("fr").locale)).toBe("14 mars 2027");
    // Latin digits in Arabic too, so the date agrees with the numeric formats.
    expect(localDate("2027-03-14", "D MMM YYYY", speechFor("ar").locale)).toMatch(/^14 مارس 2027$/);
  });

  it("relative days say today, tomorrow, in n days, n days ago in the locale, then months and years", () => {
    const de = speechFor("de").locale;
    expect(relativeDays("2027-03-14", "2027-03-14", de)).toBe("heute");
    expect(relativeDays("2027-03-14", "2027-03-15", de)).toBe("morgen");
    expect(relativeDays("2027-03-14", "2027-03-17", de)).toBe("in 3 Tagen");
    expect(relativeDays("2027-03-14", "2027-03-11", de)).toBe("vor 3 Tagen");
    expect(relativeDays("2027-03-14", "2027-03-15", speechFor("es").locale)).toBe("mañana");
    expect(relativeDays("2027-03-14", "2027-03-17", speechFor("ar").locale)).toBe("خلال 3 أيام");
    expect(relativeDays("2026-01-01", "2026-03-03", speechFor("fr").locale)).toBe("dans 2 mois");
    expect(relativeDays("2026-01-01", "2029-01-01", speechFor("pt").locale)).toBe("em 3 anos");
    // Leap day and year end.
    expect(relativeDays("2028-02-28", "2028-03-01", speechFor("en").locale)).toBe("in 2 days");
    expect(relativeDays("2026-12-31", "2027-01-01", speechFor("en").locale)).toBe("tomorrow");
  });

  it("plurals follow Intl.PluralRules, Arabic's six forms included", () => {
    expect(t("en", "page.recurs.year", { n: 1 })).toBe("every year");
    expect(t("en", "page.recurs.year", { n: 2 })).toBe("every 2 years");
    expect(t("de", "page.recurs.month", { n: 3 })).toBe("alle 3 Monate");
    expect(t("ar", "page.recurs.year", { n: 1 }, "ar")).toBe("كل سنة");
    expect(t("ar", "page.recurs.year", { n: 2 }, "ar")).toBe("كل سنتين");
    expect(t("ar", "page.recurs.year", { n: 3 }, "ar")).toBe("كل 3 سنوات");
    expect(t("ar", "page.recurs.year", { n: 11 }, "ar")).toBe("كل 11 سنة");
  });

  it("fills placeholders once: a value holding a placeholder or $& stays as it is", () => {
    expect(t("en", "email.greeting.named", { name: "{name} $& $1" })).toBe("Hello {name} $& $1,");
  });
});

describe("templates: placeholders", () => {
  const values = Object.fromEntries(
    [
      "item.title",
      "item.date",
      "item.when",
      "item.type",
      "item.reference",
      "days",
      "document_type",
      "contact.first_name",
      "contact.last_name",
      "contact.name",
      "company.name",
    ].map((k) => [k, `<${k}>`]),
  ) as TemplateValues;

  it("fills known placeholders, keeps {{ and }} as braces, and values as data", () => {
    expect(fillTemplate("{{x}} {item.title} – {days}", { ...values, "item.title": "{days}" })).toBe(
      "{x} {days} – <days>",
    );
    expect(fillTemplate("{ contact.first_name }", values)).toBe("<contact.first_name>");
  });

  it("names what is wrong: an unknown placeholder, an unclosed or stray brace", () => {
    expect(templateProblem("Hi {name}")).toMatch(/^has an unknown placeholder \{name\}; known: \{item\.title\}/);
    expect(templateProblem("Hi {item.title")).toMatch(/^has an unclosed "\{" at character 4/);
    expect(templateProblem("Hi {item.title {days}}")).toMatch(/^has an unclosed "\{" at character 4/);
    expect(templateProblem("Hi }")).toMatch(/^has a "\}" without its "\{" at character 4/);
    expect(templateProblem("{{ok}} {company.name}")).toBeNull();
    // A text that no longer parses is not used: the default wording is.
    expect(fillTemplate("{gone}", values)).toBeNull();
  });
});

describe("the reminder email in each language", () => {
  it("German: subject, text and HTML", () => {
    const m = reminderMessage({ ...base, speech: speechFor("de") });
    expect(m.subject).toBe("Erinnerung: Ablauf „Reisepass“ läuft in 3 Tagen ab (14.03.2027)");
    expect(m.text).toContain("Guten Tag Jana Weber,\n\nAblauf „Reisepass“ läuft in 3 Tagen ab (14.03.2027).\n");
    expect(m.text).toContain("Datum:    14.03.2027 (in 3 Tagen)");
    expect(m.text).toContain("Was zu tun ist: Bitte erneuern Sie es vor dem Ablauf.");
    expect(m.html).toContain('<html lang="de" dir="ltr">');
  });

  it("Arabic: right to left, the table and buttons mirrored", () => {
    const links = {
      page: "https://x/r/a",
      acknowledge: "https://x/r/a/acknowledge",
      complete: "https://x/r/a/complete",
      renew: "https://x/r/a/renew",
      snooze: "https://x/r/a/snooze",
    };
    const m = reminderMessage({ ...base, speech: speechFor("ar"), links });
    expect(m.subject).toBe("تذكير: انتهاء صلاحية «Reisepass» ينتهي خلال 3 أيام (\u206614.03.2027\u2069)");
    // A date with an Arabic month name is isolated by its first letter, so it reads right to left.
    expect(reminderMessage({ ...base, speech: speechFor("ar"), dateFormat: "D MMM YYYY" }).subject).toContain(
      "(\u206814 مارس 2027\u2069)",
    );
    expect(m.html).toContain('<html lang="ar" dir="rtl">');
    expect(m.html).toContain('<div dir="rtl"');
    expect(m.html).toContain("padding:4px 0 4px 16px;text-align:right;");
    expect(m.html).toContain("margin:0 0 8px 8px;");
    expect(m.html).not.toContain("text-align:left");
    expect(m.text).toContain("  فتح العنصر:");
  });

  it("every language: a subject that names the item and when, no English left in the body", () => {
    for (const language of LANGUAGES) {
      const m = reminderMessage({ ...base, speech: speechFor(language) });
      expect(m.subject, language).toContain("Reisepass");
      expect(m.subject, language).toContain("14.03.2027");
      if (language !== "en") expect(m.text, language).not.toMatch(/Hello|What to do|This reminder/);
    }
  });

  it("a template replaces subject, intro and footer; the item's rows stay; values are escaped in HTML", () => {
    const m = reminderMessage({
      ...base,
      itemTitle: "<b>Pass</b>",
      speech: speechFor("de"),
      template: {
        subject: "{item.title}: {item.when}",
        intro: "Hallo {contact.first_name},\n\nnoch {days} Tage.",
        footer: "Ihr {company.name}-Team",
      },
    });
    expect(m.subject).toBe("<b>Pass</b>: in 3 Tagen");
    expect(m.text.startsWith("Hallo Jana,\n\nnoch 3 Tage.\n\nEintrag:")).toBe(true);
    expect(m.text.trimEnd().endsWith("Ihr Acme GmbH-Team")).toBe(true);
    expect(m.html).toContain('<p style="margin:0 0 16px;">Hallo Jana,</p>');
    expect(m.html).toContain("&lt;b&gt;Pass&lt;/b&gt;");
    expect(m.html).not.toContain("<b>Pass</b>");
    expect(m.html).not.toContain("Guten Tag");
  });
});
