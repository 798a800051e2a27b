// The digest email (src/company-clock/digest-email.ts, docs/languages.md "Digests"): its wording in
// English, German and Arabic, plurals, groups, the "and N more" line, hostile values, no links, no name.
import { describe, expect, it } from "vitest";
import {
  DIGEST_MAX_ITEMS,
  type DigestEntry,
  type DigestMessageInput,
  digestMessage,
} from "../../src/company-clock/digest-email";
import { speechFor } from "../../src/i18n/language";

const linksOf = (id: number) => {
  const page = `https://api.test/r/token-${id}`;
  return {
    page,
    acknowledge: `${page}/acknowledge`,
    complete: `${page}/complete`,
    renew: `${page}/renew`,
    snooze: `${page}/snooze`,
  };
};
const entry = (overrides: Partial<DigestEntry> = {}): DigestEntry => ({
  itemId: 1,
  title: "Anna Smith",
  itemType: "exp",
  documentType: "Passport",
  expiryDate: "2026-11-24",
  links: linksOf(1),
  ...overrides,
});
const entries: DigestEntry[] = [
  entry(),
  entry({
    itemId: 2,
    title: "VAT return",
    itemType: "due",
    documentType: null,
    expiryDate: "2026-11-27",
    links: linksOf(2),
  }),
  entry({ itemId: 3, title: "Dentist", itemType: "apt", documentType: null, expiryDate: "2026-12-10", links: null }),
];
const base: DigestMessageInput = {
  speech: speechFor("en"),
  kind: "weekly",
  today: "2026-11-27",
  dateFormat: "DD.MM.YYYY",
  companyName: "ACME",
  recipientFirstName: "Ada",
  recipientLastName: "Lovelace",
  entries,
  preferencesUrl: "https://api.test/u/prefs-token/preferences",
};
const digest = (overrides: Partial<DigestMessageInput> = {}) => digestMessage({ ...base, ...overrides });
const many = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    entry({ itemId: i + 1, title: `Item ${i + 1}`, expiryDate: "2026-12-01", links: linksOf(i + 1) }),
  );

describe("digestMessage: English", () => {
  it("subject, text and HTML: greeting, intro, groups, entries with their links, footer", () => {
    const m = digest();
    expect(m.subject).toBe("Your weekly reminders from ACME: 3 items, 1 overdue");
    expect(m.text).toBe(
      [
        "Hello Ada Lovelace,",
        "",
        "Here is your weekly summary from ACME: the items you receive reminders for",
        "that are overdue or due within the next 30 days.",
        "",
        "",
        "Overdue (1)",
        "-----------",
        "",
        '* Passport "Anna Smith"',
        "  expired 3 days ago (24.11.2026)",
        "    Open the item:     https://api.test/r/token-1",
        "    I'm on it:         https://api.test/r/token-1/acknowledge",
        "    Mark it completed: https://api.test/r/token-1/complete",
        "    Snooze reminders:  https://api.test/r/token-1/snooze",
        "",
        "",
        "In the next 7 days (1)",
        "----------------------",
        "",
        '* Due date "VAT return"',
        "  is due today (27.11.2026)",
        "    Open the item:     https://api.test/r/token-2",
        "    I'm on it:         https://api.test/r/token-2/acknowledge",
        "    Mark it completed: https://api.test/r/token-2/complete",
        "    Snooze reminders:  https://api.test/r/token-2/snooze",
        "",
        "",
        "Later, within 30 days (1)",
        "-------------------------",
        "",
        '* Appointment "Dentist"',
        "  is in 13 days (10.12.2026)",
        "",
        "These links are yours: they act without signing in, so do not forward this",
        "email.",
        "",
        "ACME sends you this summary every week, in place of separate reminder emails.",
        "Would you like this summary at another frequency, as separate emails, or not",
        "at all?",
        "https://api.test/u/prefs-token/preferences",
        "",
      ].join("\n"),
    );
    expect(m.html.startsWith('<!doctype html>\n<html lang="en" dir="ltr">\n<head>\n<meta charset="utf-8">')).toBe(true);
    expect(m.html).toContain("<title>Your weekly reminders from ACME: 3 items, 1 overdue</title>");
    expect(m.html).toContain('Hello <span dir="auto">Ada Lovelace</span>,</p>');
    expect(m.html).toContain(">Overdue (1)</h2>");
    expect(m.html).toContain(">In the next 7 days (1)</h2>");
    expect(m.html).toContain('<span dir="auto">Passport</span> &quot;<span dir="auto">Anna Smith</span>&quot;</div>');
    expect(m.html).toContain(">expired 3 days ago (24.11.2026)</div>");
    expect(m.html).toContain(
      '<a href="https://api.test/r/token-1/acknowledge" style="color:#1f5fbf;">I&#39;m\u00a0on\u00a0it</a> · <a href="https://api.test/r/token-1/complete"',
    );
    // The four links of every kind: renewing is on the item's page.
    expect(m.text).not.toContain("/renew");
    expect(m.html).toContain(
      'Would you like this summary at another frequency, as separate emails, or not at all? <a href="https://api.test/u/prefs-token/preferences" style="color:#1f5fbf;">Manage your preferences</a></p>',
    );
    expect(m.html).not.toMatch(/<script|src=|url\(|@import/i);
    expect(m.html.trimEnd().endsWith("</body>\n</html>")).toBe(true);
  });

  it("daily: its own subject, intro and footer; one item in the singular; no overdue part when none is", () => {
    const m = digest({ kind: "daily", entries: [entries[1]!] });
    expect(m.subject).toBe("Your daily reminders from ACME: 1 item");
    expect(m.text).toContain("Here is your daily summary from ACME:");
    expect(m.text).toContain("ACME sends you this summary every day,");
    expect(m.text).not.toContain("Overdue");
  });

  it("groups by days from today: overdue below 0, the next 7 days 0 to 7, later 8 to 30, then beyond", () => {
    const at = (expiryDate: string) => entry({ expiryDate, links: null, title: expiryDate });
    const m = digest({
      entries: [
        at("2026-11-26"),
        at("2026-11-27"),
        at("2026-12-04"),
        at("2026-12-05"),
        at("2026-12-27"),
        at("2026-12-28"),
      ],
    });
    const section = (heading: string) => m.text.split(heading)[1]!.split("\n\n\n")[0]!;
    expect(section("Overdue (1)")).toContain("2026-11-26");
    expect(section("In the next 7 days (2)")).toContain("2026-11-27");
    expect(section("In the next 7 days (2)")).toContain("2026-12-04");
    expect(section("Later, within 30 days (2)")).toContain("2026-12-05");
    expect(section("Later, within 30 days (2)")).toContain("2026-12-27");
    // Past the horizon only when a folded reminder brought it in.
    expect(section("More than 30 days ahead (1)")).toContain("2026-12-28");
  });

  it("the subject counts the engine's total and overdue when it passes only the first entries", () => {
    expect(digest({ total: 40, overdue: 12 }).subject).toBe("Your weekly reminders from ACME: 40 items, 12 overdue");
    expect(digest({ total: 40 }).text).toContain("And 37 more items not listed here: a summary lists at most 200.");
    // A total below the entries given counts the entries.
    expect(digest({ total: 1 }).subject).toBe("Your weekly reminders from ACME: 3 items, 1 overdue");
  });
});

describe("digestMessage: more than DIGEST_MAX_ITEMS", () => {
  it("250 entries: the first 200 listed, the other 50 counted, the subject says 250", () => {
    const m = digest({ entries: many(250) });
    expect(m.subject).toBe("Your weekly reminders from ACME: 250 items");
    expect(m.text.match(/^\* /gm)).toHaveLength(DIGEST_MAX_ITEMS);
    expect(m.text).toContain('* Passport "Item 200"\n');
    expect(m.text).not.toContain('"Item 201"');
    expect(m.html).not.toContain("Item 201");
    expect(m.text).toContain("\nAnd 50 more items not listed here: a summary lists at most 200.\n");
    expect(m.html).toContain(">And 50 more items not listed here: a summary lists at most 200.</p>");
    expect(digest({ entries: many(201) }).text).toContain("\nAnd 1 more item not listed here:");
    expect(digest({ entries: many(200) }).text).not.toContain("more item");
  });

  it("in German and Arabic, with their plural forms", () => {
    expect(digest({ speech: speechFor("de"), entries: many(201) }).text).toContain(
      "Dazu kommt 1 weiterer Eintrag, der hier nicht aufgeführt ist: Eine Übersicht",
    );
    expect(digest({ speech: speechFor("de"), entries: many(250) }).text).toContain(
      "Dazu kommen 50 weitere Einträge, die hier nicht aufgeführt sind:",
    );
    expect(digest({ speech: speechFor("ar"), entries: many(202) }).text).toContain("وعنصران آخران غير مدرجين هنا");
    expect(digest({ speech: speechFor("ar"), entries: many(205) }).text).toContain("و5 عناصر أخرى غير مدرجة هنا");
  });
});

describe("digestMessage: German", () => {
  it("German words, plurals, dates and links", () => {
    const m = digest({ speech: speechFor("de-AT"), recipientFirstName: "Jana", recipientLastName: "Weber" });
    expect(m.subject).toBe("Ihre wöchentlichen Erinnerungen von ACME: 3 Einträge, davon 1 überfällig");
    expect(digest({ speech: speechFor("de"), entries: [entries[2]!] }).subject).toBe(
      "Ihre wöchentlichen Erinnerungen von ACME: 1 Eintrag",
    );
    expect(m.text.startsWith("Guten Tag Jana Weber,\n\nhier ist Ihre wöchentliche Übersicht von ACME:")).toBe(true);
    expect(m.text).toContain("\nÜberfällig (1)\n");
    expect(m.text).toContain("* Passport „Anna Smith“\n  ist vor 3 Tagen abgelaufen (24.11.2026)\n");
    expect(m.text).toContain("    Ich kümmere mich darum: https://api.test/r/token-1/acknowledge\n");
    expect(m.html).toContain('<html lang="de-AT" dir="ltr">');
    expect(m.html).toContain(">Einstellungen verwalten</a>");
  });
});

describe("digestMessage: Arabic", () => {
  it("right to left, Arabic plurals in the subject, dates and values isolated", () => {
    const m = digest({ speech: speechFor("ar") });
    expect(m.html).toContain('<html lang="ar" dir="rtl">');
    expect(m.html).toContain('<body dir="rtl"');
    expect(m.html).toContain("text-align:right;");
    expect(m.subject).toBe("تذكيراتك الأسبوعية من ACME: 3 عناصر، أحدها متأخر");
    const subject = (n: number, overdue = 0) =>
      digest({ speech: speechFor("ar"), entries: many(n), overdue }).subject.split(": ")[1];
    expect(subject(1)).toBe("عنصر واحد");
    expect(subject(2)).toBe("عنصران");
    expect(subject(3)).toBe("3 عناصر");
    expect(subject(11, 2)).toBe("11 عنصرًا، اثنان منها متأخران");
    expect(subject(100, 5)).toBe("100 عنصر، 5 منها متأخرة");
    // Dates in a left-to-right isolate, titles and labels in first-strong isolates.
    expect(m.text).toContain("(\u206624.11.2026\u2069)");
    expect(digest({ speech: speechFor("ar"), dateFormat: "D MMM YYYY" }).text).toContain(
      "(\u206824 نوفمبر 2026\u2069)",
    );
    // A link's label does not break inside on a phone.
    expect(m.html).toContain(">تأجيل\u00a0التذكيرات</a>");
    expect(m.text).toContain("* \u2068Passport\u2069 «\u2068Anna Smith\u2069»");
    expect(m.text).toContain("\nمتأخرة (1)\n");
    expect(m.html).toContain(">فتح\u00a0العنصر</a>");
  });
});

describe("digestMessage: hostile values", () => {
  const hostile = "<script>alert('x')</script> \"quoted\" & \u202Eevil\u202C \u2066iso\u2069 \u200Fmark";
  const m = digest({
    entries: [entry({ title: hostile, documentType: `<b>${hostile}` })],
    companyName: `Evil <Co>\r\nBcc: victim@example.com \u202E`,
    recipientFirstName: "<img src=x>",
    recipientLastName: "\u202EO'Brien",
  });

  it("escapes every value in the HTML", () => {
    expect(m.html).not.toMatch(/<script|<img|<b>|<Co>/i);
    expect(m.html).toContain("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &quot;quoted&quot; &amp; evil");
    expect(m.html).toContain("Evil &lt;Co&gt; Bcc: victim@example.com");
    expect(m.html).toContain('Hello <span dir="auto">&lt;img src=x&gt; O&#39;Brien</span>,');
  });

  it("drops bidirectional embeddings, overrides and isolates from values, keeps the marks", () => {
    for (const part of [m.subject, m.text, m.html]) expect(part).not.toMatch(/[\u202A-\u202E\u2066-\u2069]/);
    expect(m.text).toContain("evil iso \u200Fmark");
    // In Arabic only the service's own isolates remain, each one closed.
    const ar = digestMessage({ ...base, speech: speechFor("ar"), entries: [entry({ title: hostile })] });
    expect(ar.text).not.toMatch(/[\u202A-\u202E]/);
    const opened = ar.text.match(/[\u2066\u2068]/g)?.length ?? 0;
    expect(opened).toBeGreaterThan(0);
    expect(ar.text.match(/\u2069/g)?.length).toBe(opened);
  });

  it("keeps the subject on one line and bounded", () => {
    expect(m.subject).toBe("Your weekly reminders from Evil <Co> Bcc: victim@example.com: 1 item, 1 overdue");
    expect(m.subject).not.toMatch(/[\r\n]/);
    const long = digest({ companyName: "A".repeat(5000) }).subject;
    expect(Array.from(long).length).toBeLessThanOrEqual(200);
    expect(m.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
  });

  it("links only http(s) URLs", () => {
    const bad = digest({
      entries: [entry({ links: { ...linksOf(1), acknowledge: "javascript:alert(1)" } })],
      preferencesUrl: "javascript:alert(2)",
    });
    expect(bad.html).not.toContain("javascript:");
    expect(bad.text).not.toContain("javascript:");
    expect(bad.text).toContain("Open the item:");
    expect(bad.text).toContain("To get this summary at another frequency or to stop it, contact ACME.");
  });
});

describe("digestMessage: without links, name or preferences page", () => {
  it("entries without links: no link lines, no links note", () => {
    const m = digest({ entries: entries.map((e) => ({ ...e, links: null })) });
    expect(m.text).not.toContain("https://api.test/r/");
    expect(m.html).not.toContain("https://api.test/r/");
    expect(m.text).not.toContain("These links are yours");
    expect(m.html).not.toContain("These links are yours");
    expect(m.text).toContain('* Passport "Anna Smith"\n  expired 3 days ago (24.11.2026)\n\n\nIn the next');
  });

  it("no first name: the plain greeting, even with a last name", () => {
    for (const recipientFirstName of [null, "", "  ", "\u202E"]) {
      const m = digest({ recipientFirstName, recipientLastName: "Lovelace" });
      expect(m.text.startsWith("Hello,\n")).toBe(true);
      expect(m.html).toContain('<p style="margin:0 0 12px;">Hello,</p>');
      expect(m.html).not.toContain("Lovelace");
    }
    expect(digest({ speech: speechFor("ar"), recipientFirstName: null }).text.startsWith("مرحبًا،\n")).toBe(true);
  });

  it("no preferences page: whom to ask instead", () => {
    const m = digest({ preferencesUrl: null });
    expect(m.text).toContain("To get this summary at another frequency or to stop it, contact ACME.\n");
    expect(m.html).not.toContain("Manage your preferences");
  });

  it("no entries: says that nothing is due", () => {
    const m = digest({ entries: [] });
    expect(m.subject).toBe("Your weekly reminders from ACME: 0 items");
    expect(m.text).toContain("Nothing is overdue or due within the next 30 days.");
  });
});
