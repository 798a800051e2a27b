import { describe, expect, it } from "vitest";
import { type ReminderMessageInput, relativeDay, reminderMessage } from "../../src/company-clock/reminder-email";

const base: ReminderMessageInput = {
  companyName: "Acme Ltd",
  itemTitle: "Anna Smith",
  itemType: "exp",
  documentType: "Passport",
  expiryDate: "2026-12-03",
  today: "2026-11-19",
  dateFormat: "DD.MM.YYYY",
  recipientName: "Anna",
  itemId: 123,
};
const message = (overrides: Partial<ReminderMessageInput> = {}) => reminderMessage({ ...base, ...overrides });

describe("reminderMessage: full message", () => {
  it("builds subject, text and html for an expiring document", () => {
    const m = message({ notes: "Bring the old passport.\r\nPhotos: 2" });
    expect(m.subject).toBe('Reminder: Passport "Anna Smith" expires in 14 days (03.12.2026)');
    expect(m.text).toBe(
      [
        "Hello Anna,",
        "",
        'Passport "Anna Smith" expires in 14 days (03.12.2026).',
        "",
        "Item:      Anna Smith",
        "Type:      Passport",
        "Date:      03.12.2026 (in 14 days)",
        "Reference: Item #123",
        "Company:   Acme Ltd",
        "",
        "What to do: Renew it before it expires.",
        "",
        "Notes:",
        "Bring the old passport.",
        "Photos: 2",
        "",
        "This reminder was sent for Acme Ltd.",
        "",
      ].join("\n"),
    );
    expect(m.html.startsWith('<!doctype html>\n<html lang="en" dir="ltr">\n<head>\n<meta charset="utf-8">')).toBe(true);
    expect(m.html).toContain(
      "<title>Reminder: Passport &quot;Anna Smith&quot; expires in 14 days (03.12.2026)</title>",
    );
    expect(m.html).toContain('<p style="margin:0 0 16px;">Hello Anna,</p>');
    expect(m.html).toContain("<strong>Passport &quot;Anna Smith&quot;</strong> expires in 14 days (03.12.2026).</p>");
    expect(m.html).toContain(">Item #123</td>");
    expect(m.html).toContain(">Acme Ltd</td>");
    expect(m.html).toContain("<strong>What to do:</strong> Renew it before it expires.</p>");
    expect(m.html).toContain('white-space:pre-wrap;">Bring the old passport.\nPhotos: 2</div>');
    expect(m.html).toContain("This reminder was sent for Acme Ltd.</p>");
    expect(m.html.trimEnd().endsWith("</body>\n</html>")).toBe(true);
  });

  it("has no scripts, external resources or control characters other than LF", () => {
    const m = message({ notes: "a\tb\u0007c" });
    expect(m.html).not.toMatch(/<script|src=|href=|url\(|@import/i);
    expect(m.html).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(m.text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f]/);
    expect(m.text).toContain("\nNotes:\na bc\n");
  });

  it("omits the notes section when there are no notes", () => {
    for (const notes of [undefined, null, "", "  \r\n "]) {
      const m = message({ notes });
      expect(m.text).not.toContain("Notes:");
      expect(m.html).not.toContain("Notes:");
    }
  });
});

describe("reminderMessage: item kinds", () => {
  const noDoc = { documentType: null };

  it("expiration: kind word without document type, expired once passed", () => {
    expect(message({ ...noDoc }).subject).toBe('Reminder: Expiration "Anna Smith" expires in 14 days (03.12.2026)');
    const past = message({ today: "2026-12-06" });
    expect(past.subject).toBe('Reminder: Passport "Anna Smith" expired 3 days ago (03.12.2026)');
    expect(past.text).toContain("What to do: It has expired: renew it or mark it completed.\n");
    expect(past.text).toContain("Date:      03.12.2026 (3 days ago)\n");
  });

  it("due date", () => {
    const m = message({ ...noDoc, itemType: "due", itemTitle: "VAT return" });
    expect(m.subject).toBe('Reminder: Due date "VAT return" is due in 14 days (03.12.2026)');
    expect(m.text).toContain("Type:      Due date\n");
    expect(m.text).toContain("What to do: Complete it before it is due.\n");
    const past = message({ ...noDoc, itemType: "due", itemTitle: "VAT return", today: "2026-12-04" });
    expect(past.subject).toBe('Reminder: Due date "VAT return" was due yesterday (03.12.2026)');
    expect(past.text).toContain("What to do: It is overdue: complete it as soon as possible and mark it\ncompleted.\n");
  });

  it("appointment", () => {
    const m = message({ ...noDoc, itemType: "apt", itemTitle: "Dentist", today: "2026-12-02" });
    expect(m.subject).toBe('Reminder: Appointment "Dentist" is tomorrow (03.12.2026)');
    expect(m.text).toContain("What to do: Make sure you are ready for it.\n");
    expect(m.html).toContain("<strong>Appointment &quot;Dentist&quot;</strong> is tomorrow (03.12.2026).</p>");
  });

  it("event", () => {
    const m = message({ ...noDoc, itemType: "evt", itemTitle: "Trade fair", today: "2026-12-03" });
    expect(m.subject).toBe('Reminder: Event "Trade fair" is today (03.12.2026)');
    expect(m.text).toContain("Type:      Event\n");
    const past = message({ ...noDoc, itemType: "evt", itemTitle: "Trade fair", today: "2026-12-10" });
    expect(past.subject).toBe('Reminder: Event "Trade fair" was 7 days ago (03.12.2026)');
    expect(past.text).toContain("What to do: It has passed: mark it completed if it is done.\n");
  });

  it("an empty document type falls back to the kind word", () => {
    expect(message({ documentType: "" }).subject).toBe(
      'Reminder: Expiration "Anna Smith" expires in 14 days (03.12.2026)',
    );
    expect(message({ documentType: " \n " }).subject).toBe(
      'Reminder: Expiration "Anna Smith" expires in 14 days (03.12.2026)',
    );
  });
});

describe("reminderMessage: dates", () => {
  it("uses the company's date format", () => {
    expect(message({ dateFormat: "MMM D, YYYY" }).subject).toBe(
      'Reminder: Passport "Anna Smith" expires in 14 days (Dec 3, 2026)',
    );
    expect(message({ dateFormat: "D MMM YYYY" }).text).toContain("Date:      3 Dec 2026 (in 14 days)\n");
    expect(message({ dateFormat: "MM/DD/YYYY" }).subject).toContain("(12/03/2026)");
    expect(message({ dateFormat: "YYYY-MM-DD" }).html).toContain("expires in 14 days (2026-12-03).");
  });

  it("says how far away the date is", () => {
    expect(message({ today: "2026-12-03" }).subject).toBe('Reminder: Passport "Anna Smith" expires today (03.12.2026)');
    expect(message({ today: "2026-12-02" }).subject).toBe(
      'Reminder: Passport "Anna Smith" expires tomorrow (03.12.2026)',
    );
    expect(message({ today: "2026-12-01" }).subject).toBe(
      'Reminder: Passport "Anna Smith" expires in 2 days (03.12.2026)',
    );
    expect(message({ today: "2026-12-04" }).subject).toBe(
      'Reminder: Passport "Anna Smith" expired yesterday (03.12.2026)',
    );
    expect(message({ today: "2026-09-03" }).subject).toBe(
      'Reminder: Passport "Anna Smith" expires in 3 months (03.12.2026)',
    );
  });

  it("relativeDay: days up to 60, then months, then years, across month and year ends", () => {
    expect(relativeDay("2026-12-31", "2027-01-01")).toBe("tomorrow");
    expect(relativeDay("2027-01-01", "2026-12-31")).toBe("yesterday");
    expect(relativeDay("2028-02-28", "2028-03-01")).toBe("in 2 days");
    expect(relativeDay("2026-01-01", "2026-03-02")).toBe("in 60 days");
    expect(relativeDay("2026-01-01", "2026-03-03")).toBe("in 2 months");
    expect(relativeDay("2026-03-02", "2026-01-01")).toBe("60 days ago");
    expect(relativeDay("2026-06-01", "2026-01-01")).toBe("5 months ago");
    expect(relativeDay("2026-01-01", "2027-06-01")).toBe("in 17 months");
    expect(relativeDay("2026-01-01", "2029-01-01")).toBe("in 3 years");
  });
});

describe("reminderMessage: hostile and long values", () => {
  it("escapes markup and quotes in title, notes, company, document type and name", () => {
    const m = message({
      itemTitle: `<script>alert("x")</script>`,
      companyName: `Tom & Jerry's <b>Ltd</b>`,
      documentType: `<img src=x onerror=alert(1)>`,
      recipientName: `"Bob" <bob>`,
      notes: `</div><script>steal('a')</script>`,
    });
    expect(m.html).not.toContain("<script");
    expect(m.html).not.toContain("<img");
    expect(m.html).not.toContain("<b>");
    expect(m.html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
    expect(m.html).toContain(">Tom &amp; Jerry&#39;s &lt;b&gt;Ltd&lt;/b&gt;</td>");
    expect(m.html).toContain(">&lt;img src=x onerror=alert(1)&gt;</td>");
    expect(m.html).toContain(">Hello &quot;Bob&quot; &lt;bob&gt;,</p>");
    expect(m.html).toContain(">&lt;/div&gt;&lt;script&gt;steal(&#39;a&#39;)&lt;/script&gt;</div>");
    // The plain-text version is not HTML: values appear as typed.
    expect(m.text).toContain(`Item:      <script>alert("x")</script>\n`);
    expect(m.subject).toBe(
      `Reminder: <img src=x onerror=alert(1)> "<script>alert("x")</script>" expires in 14 days (03.12.2026)`,
    );
  });

  it("keeps CR/LF and other controls out of subject and single-line fields", () => {
    const m = message({
      itemTitle: "Anna\r\nBcc: evil@example.com\r\n\r\nSmith",
      companyName: "Acme\nLtd",
      recipientName: "An\u0000na\u2028",
      documentType: "Pass\u0085port",
    });
    expect(m.subject).toBe('Reminder: Pass port "Anna Bcc: evil@example.com Smith" expires in 14 days (03.12.2026)');
    expect(m.subject).not.toMatch(/[\r\n]/);
    expect(m.text).toContain('\nPass port "Anna Bcc: evil@example.com Smith" expires in 14 days (03.12.2026).\n');
    expect(m.text.startsWith("Hello An na,\n")).toBe(true);
    expect(m.text).toContain("Company:   Acme Ltd\n");
    expect(m.text).not.toMatch(/\r|[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/);
  });

  it("truncates a long title in the subject and caps the subject at 200 characters", () => {
    const title = "Very long title ".repeat(20).trim(); // 319 characters
    const m = message({ itemTitle: title });
    const cut = `${"Very long title ".repeat(6)}Ver…`; // 99 code points + "…"
    expect(m.subject).toBe(`Reminder: Passport "${cut}" expires in 14 days (03.12.2026)`);
    const huge = message({ itemTitle: "x".repeat(150), documentType: "D".repeat(200) });
    expect(Array.from(huge.subject)).toHaveLength(200);
    expect(huge.subject.endsWith("…")).toBe(true);
    expect(huge.subject.startsWith(`Reminder: ${"D".repeat(59)}… "${"x".repeat(99)}…"`)).toBe(true);
  });

  it("does not split a surrogate pair when truncating", () => {
    const m = message({ itemTitle: "😀".repeat(150) });
    expect(m.subject).toBe(`Reminder: Passport "${"😀".repeat(99)}…" expires in 14 days (03.12.2026)`);
  });

  it("truncates notes to 500 characters", () => {
    const m = message({ notes: "n".repeat(800) });
    expect(m.html).toContain(`pre-wrap;">${"n".repeat(499)}…</div>`);
    expect(m.text).toContain(`\nNotes:\n${"n".repeat(499)}…\n`);
  });

  it("wraps text lines at 78 characters where words allow", () => {
    const m = message({ itemTitle: "word ".repeat(40).trim(), notes: "note ".repeat(60).trim() });
    for (const line of m.text.split("\n")) expect(line.length, line).toBeLessThanOrEqual(78);
    expect(m.text).toContain("Item:      word word");
    expect(m.text).toMatch(/\n {11}word word/);
  });
});

describe("reminderMessage: greeting", () => {
  it("greets by name, or without one", () => {
    expect(message().text.startsWith("Hello Anna,\n\n")).toBe(true);
    for (const recipientName of [null, "", "  \r\n"]) {
      const m = message({ recipientName });
      expect(m.text.startsWith("Hello,\n\n")).toBe(true);
      expect(m.html).toContain('<p style="margin:0 0 16px;">Hello,</p>');
    }
  });
});

describe("reminderMessage: the recipient's links", () => {
  const page = "https://reminders.example.com/r/AQEBAQGtowEcNTSNajDWGDrRLks71scQZ4TnGfj7SnqaMXmLtubTxQ";
  const links = {
    page,
    acknowledge: `${page}/acknowledge`,
    complete: `${page}/complete`,
    renew: `${page}/renew`,
    snooze: `${page}/snooze`,
  };

  it("lists the page and each action in the text part, whole URLs on their own lines, after what to do", () => {
    const m = message({ links });
    expect(m.text).toContain(
      [
        "What to do: Renew it before it expires.",
        "",
        "Act on it:",
        `  Open the item:     ${page}`,
        `  I'm on it:         ${page}/acknowledge`,
        `  Mark it completed: ${page}/complete`,
        `  Renew it:          ${page}/renew`,
        `  Snooze reminders:  ${page}/snooze`,
        "",
        "These links are yours: they act without signing in, so do not forward this",
        "email.",
      ].join("\n"),
    );
  });

  it("links them in the HTML part, the page first as the main button", () => {
    const m = message({ links });
    const anchors = [...m.html.matchAll(/<a href="([^"]+)"[^>]*>([^<]+)<\/a>/g)].map((a) => [a[1], a[2]]);
    expect(anchors).toEqual([
      [page, "Open the item"],
      [`${page}/acknowledge`, "I&#39;m on it"],
      [`${page}/complete`, "Mark it completed"],
      [`${page}/renew`, "Renew it"],
      [`${page}/snooze`, "Snooze reminders"],
    ]);
    expect(m.html).not.toMatch(/<script|src=|url\(|@import/i);
  });

  it("offers renewal only for expirations, and no links without any", () => {
    for (const itemType of ["due", "apt", "evt"] as const) {
      const m = message({ links, itemType });
      expect(m.text, itemType).not.toContain("/renew");
      expect(m.html, itemType).not.toContain("/renew");
      expect(m.text).toContain(`${page}/complete`);
    }
    for (const none of [undefined, null]) {
      const m = message({ links: none });
      expect(m.text).not.toContain("Act on it");
      expect(m.html).not.toMatch(/href=/);
    }
  });

  it("escapes a link in the HTML part", () => {
    const odd = { ...links, page: 'https://x.example/r/a"><script>' };
    expect(message({ links: odd }).html).toContain('href="https://x.example/r/a&quot;&gt;&lt;script&gt;"');
  });
});
