// The recipient's pages in the recipient's language (docs/languages.md): the contact's `language`,
// else the company's `settings.language`, else English; right to left for Arabic; form problems
// and outcomes in that language too; the email's links lead to pages in the email's language.
import { describe, expect, it } from "vitest";
import { speechOfRequest } from "../../src/i18n/language";
import { addDays, todayIn } from "../../src/lib/time";
import { call, createAccount, createContact, createItem, expectStatus } from "./helpers";
import { fireReminder, getPage, linksOf, postForm } from "./support/recipient";

const futureDate = (days: number) => addDays(todayIn("UTC"), days);

async function linksFor(contact: Record<string, unknown>, company: Record<string, unknown> = {}) {
  const { companyId, ownerToken: token } = await createAccount();
  if (Object.keys(company).length > 0)
    expectStatus(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, { token, body: company }),
      200,
    );
  const person = await createContact(token, { first_name: "Ada", last_name: "Lovelace", ...contact });
  const item = await createItem(token, {
    title: "Reisepass",
    expiry_date: futureDate(40),
    seqid: 0,
    contact_id: person.contact_id,
  });
  const [email] = await fireReminder(companyId, token, item.item_id);
  return { email: email!, links: linksOf(email!) };
}

describe("the recipient's page speaks the recipient's language", () => {
  it("German for a contact in de-CH: the page, its forms, a form's problem and an outcome; the email's links are labelled in German", async () => {
    const { email, links } = await linksFor({ language: "de-CH" }, { date_format: "D MMM YYYY" });
    expect(email.text).toContain("Eintrag öffnen:");
    const page = await getPage(links.page);
    expect(page.status).toBe(200);
    expect(page.html).toContain('<html lang="de-CH">');
    expect(page.html).toContain("<h2>Was möchten Sie tun?</h2>");
    expect(page.html).toContain("<dt>Datum</dt><dd>");
    expect(page.html).toMatch(/in 40 Tagen/);
    expect(page.html).toContain('<button type="submit">Ich kümmere mich darum</button>');

    const tooEarly = await postForm(links.snooze, { action: "snooze", until: todayIn("UTC") });
    expect(tooEarly.status).toBe(422);
    expect(tooEarly.html).toContain("Wählen Sie einen Tag nach heute.");

    const done = await postForm(links.acknowledge, { action: "acknowledge", note: "Termin gebucht" });
    expect(done.status).toBe(200);
    expect(done.html).toContain("<strong>Danke, dass Sie sich darum kümmern</strong>");
    expect(done.html).toContain("„Termin gebucht“");
  });

  it("Arabic, right to left, for a contact in ar", async () => {
    const { email, links } = await linksFor({ language: "ar" });
    expect(email.html).toContain('<html lang="ar" dir="rtl">');
    const page = await getPage(links.page);
    expect(page.html).toContain('<html lang="ar" dir="rtl">');
    expect(page.html).toContain("<h2>ماذا تريد أن تفعل؟</h2>");
    expect(page.html).toContain("خلال 40 يومًا");
  });

  it("the company's language for a contact without one; English without either", async () => {
    const spanish = await linksFor({}, { language: "es" });
    expect((await getPage(spanish.links.page)).html).toContain("<h2>¿Qué desea hacer?</h2>");
    const english = await linksFor({});
    const page = await getPage(english.links.page);
    expect(page.html).toContain('<html lang="en">');
    expect(page.html).toContain("<h2>What would you like to do?</h2>");
  });
});

describe("pages that know no contact speak the browser's language", () => {
  it("a dead link, on /r/ and /u/, in the first supported language of Accept-Language; English otherwise", async () => {
    const de = await getPage("https://api.test/r/not-a-token", { "Accept-Language": "de-CH,de;q=0.9,en;q=0.5" });
    expect(de.status).toBe(404);
    expect(de.html).toContain('<html lang="de-CH">');
    expect(de.html).toContain("Dieser Link funktioniert nicht");
    expect(de.html).toContain("60 Tage");
    const ar = await getPage("https://api.test/u/not-a-token", { "Accept-Language": "ja, ar;q=0.8" });
    expect(ar.status).toBe(404);
    expect(ar.html).toContain('<html lang="ar" dir="rtl">');
    expect(ar.html).toContain("هذا الرابط لا يعمل");
    const none = await getPage("https://api.test/r/not-a-token", { "Accept-Language": "ja, zh;q=0.9" });
    expect(none.html).toContain('<html lang="en">');
    expect(none.html).toContain("This link does not work");
  });

  it("Accept-Language by weight, order breaking ties; q=0, *, junk and unsupported tags passed over", () => {
    expect(speechOfRequest("fr;q=0.4, es;q=0.9").language).toBe("es");
    expect(speechOfRequest("pt-BR, pt;q=0.9").tag).toBe("pt-BR");
    expect(speechOfRequest("de;q=0, fr;q=0.1").language).toBe("fr");
    expect(speechOfRequest("*, x-klingon, ;;;, ar;q=0.2").language).toBe("ar");
    expect(speechOfRequest(undefined).language).toBe("en");
    expect(speechOfRequest(`${"xx,".repeat(300)}de`).language).toBe("en");
  });
});
