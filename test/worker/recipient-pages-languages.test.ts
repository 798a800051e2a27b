// The recipient's pages in the recipient's language (docs/languages.md): the contact's `language`,
// else the company's `settings.language`, else English; right to left for Arabic; form problems
// and outcomes in that language too; the email's links lead to pages in the email's language.
import { describe, expect, it } from "vitest";
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
