// The unsubscribe and preferences pages in the contact's language (docs/languages.md): the
// contact's `language`, else the company's `settings.language`, else English; right to left for
// Arabic; outcomes and form problems in that language; every language in its own name on the list;
// after a new language is saved, the outcome speaks it.
import { describe, expect, it } from "vitest";
import { addDays, todayIn } from "../../src/lib/time";
import { call, createAccount, createContact, createItem, expectStatus } from "./helpers";
import { fireReminder, getPage, postForm, type PageResult } from "./support/recipient";

async function unsubscribeLink(contact: Record<string, unknown>, company: Record<string, unknown> = {}) {
  const { companyId, ownerToken: token } = await createAccount();
  if (Object.keys(company).length > 0)
    expectStatus(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, { token, body: company }),
      200,
    );
  const person = await createContact(token, { first_name: "Ada", last_name: "Lovelace", ...contact });
  const item = await createItem(token, {
    expiry_date: addDays(todayIn("UTC"), 40),
    seqid: 0,
    contact_id: person.contact_id,
  });
  const [email] = await fireReminder(companyId, token, item.item_id);
  const link = /^<(https:\/\/[^>]+)>$/.exec(email?.headers["List-Unsubscribe"] ?? "")?.[1];
  if (!link) throw new Error("no List-Unsubscribe link");
  return link;
}

const outcomeOf = (page: PageResult) =>
  /<div class="outcome (\w+)"[^>]*><strong>([^<]*)<\/strong>/.exec(page.html)?.slice(1, 3) ?? null;

describe("the unsubscribe and preferences pages speak the contact's language", () => {
  it("German for a contact in de: the page, its button, the preferences with Intl weekdays, a form problem, an outcome", async () => {
    const link = await unsubscribeLink({ language: "de" });
    const page = await getPage(link);
    expect(page.status).toBe(200);
    expect(page.html).toContain('<html lang="de">');
    expect(page.html).toContain("<h1>Erinnerungs-E-Mails von ");
    expect(page.html).toContain('<button type="submit">Abmelden</button>');
    expect(page.html).toContain("Einstellungen verwalten");

    const preferences = await getPage(`${link}/preferences`);
    expect(preferences.html).toContain('<html lang="de">');
    expect(preferences.html).toContain("<h1>Ihre Einstellungen</h1>");
    expect(preferences.html).toContain('<option value="friday">Freitag</option>');
    expect(preferences.html).toContain('<button type="submit">Einstellungen speichern</button>');
    // Each language in its own name, whatever the page's language.
    expect(preferences.html).toContain('<option value="fr" lang="fr">Français</option>');
    expect(preferences.html).toContain('<option value="ar" lang="ar">العربية</option>');

    const noChannel = await postForm(`${link}/preferences`, { language: "de", digest: "off" });
    expect(noChannel.status).toBe(422);
    expect(outcomeOf(noChannel)).toEqual([
      "error",
      "Wählen Sie mindestens einen Weg, Erinnerungen zu erhalten (oder melden Sie sich stattdessen ab).",
    ]);

    const done = await postForm(link, { action: "unsubscribe" });
    expect(done.status).toBe(200);
    expect(outcomeOf(done)).toEqual(["applied", "Sie sind abgemeldet."]);
    expect(done.html).toContain('<button type="submit">Wieder anmelden</button>');
  });

  it("Arabic, right to left, for a contact in ar", async () => {
    const link = await unsubscribeLink({ language: "ar" });
    const page = await getPage(link);
    expect(page.html).toContain('<html lang="ar" dir="rtl">');
    expect(page.html).toContain('<button type="submit">إلغاء الاشتراك</button>');
    const preferences = await getPage(`${link}/preferences`);
    expect(preferences.html).toContain('<html lang="ar" dir="rtl">');
    expect(preferences.html).toContain("<h1>تفضيلاتك</h1>");
    expect(preferences.html).toContain('<option value="monday" selected>الاثنين</option>');
    expect(preferences.html).toContain('<option value="de" lang="de">Deutsch</option>');
  });

  it("the company's language for a contact without one; the outcome speaks the language just saved", async () => {
    const link = await unsubscribeLink({}, { language: "fr" });
    const preferences = await getPage(`${link}/preferences`);
    expect(preferences.html).toContain('<html lang="fr">');
    expect(preferences.html).toContain("La langue de l’entreprise (Français)");

    const saved = await postForm(`${link}/preferences`, { language: "es", digest: "off", channels: "email" });
    expect(saved.status).toBe(200);
    expect(saved.html).toContain('<html lang="es">');
    expect(outcomeOf(saved)).toEqual(["applied", "Sus preferencias se han guardado."]);
    expect(saved.html).toContain('<option value="es" lang="es" selected>Español</option>');
  });
});
