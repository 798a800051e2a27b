// Company reminder templates (docs/languages.md, "Company templates"): the operations, their
// rules (placeholders, braces, lengths, languages, scopes, tenancy, audit), the preview, and the
// clock sending a reminder in the recipient's language with the company's template for it.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clockFor } from "../../src/company-clock/handoff/worker";
import type { CompanyClock } from "../../src/company-clock/object";
import { addDays, todayIn } from "../../src/lib/time";
import {
  call,
  createAccount,
  createContact,
  createItem,
  demoTokens,
  env,
  expectShapeB,
  expectStatus,
  ok,
  type TestAccount,
} from "./helpers";

const put = (token: string, language: string, body: Record<string, unknown>) =>
  call("putReminderTemplate", `/v1/reminder-templates/${language}`, { token, body });
const preview = (token: string, body: Record<string, unknown>) =>
  call("previewReminderTemplate", "/v1/reminder-templates/preview", { token, body });

const GERMAN = {
  subject: "Frist: {item.title} {item.when} ({item.date})",
  intro:
    "Guten Tag {contact.first_name} {contact.last_name},\n\nbitte kümmern Sie sich um {item.title}: noch {days} Tage.",
  footer: "Ihr Team von {company.name}",
};

describe("PUT, GET, list and DELETE /v1/reminder-templates/{language}", () => {
  it("creates (201), reads, replaces (200), lists and deletes a template; none is 404", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    const first = await put(token, "de", GERMAN);
    expectStatus(first, 201);
    expect(first.body.data).toMatchObject({ language: "de", ...GERMAN });
    const read = ok(await call("getReminderTemplate", "/v1/reminder-templates/de", { token })).body.data;
    expect(read).toMatchObject({ language: "de", ...GERMAN });

    const second = await put(token, "de", { subject: "Nur der Betreff: {item.title}" });
    expectStatus(second, 200);
    expect(second.body.data).toMatchObject({ subject: "Nur der Betreff: {item.title}", intro: null, footer: null });
    expect(second.body.data.created_at).toBe(first.body.data.created_at);

    expectStatus(await put(token, "ar", { footer: "فريق {company.name}" }), 201);
    const list = ok(await call("listReminderTemplates", "/v1/reminder-templates", { token })).body;
    expect(list.data.map((t) => t.language)).toEqual(["ar", "de"]);
    expect(list.meta).toEqual({ total: 2, languages: ["en", "de", "fr", "es", "pt", "ar"] });

    expectStatus(await call("deleteReminderTemplate", "/v1/reminder-templates/de", { token }), 200);
    expectShapeB(await call("getReminderTemplate", "/v1/reminder-templates/de", { token }), 404, /template not found/);
    expectShapeB(await call("deleteReminderTemplate", "/v1/reminder-templates/de", { token }), 404);
  });

  it("refuses an unknown placeholder, a stray brace, a language it does not speak and texts too long, naming the field", async () => {
    const { ownerToken: token } = await createAccount();
    expectShapeB(
      await put(token, "fr", { subject: "Hello {item.name}" }),
      400,
      /^subject has an unknown placeholder \{item\.name\}/,
    );
    expectShapeB(await put(token, "fr", { intro: "Bonjour {contact.first_name" }), 400, /^intro has an unclosed "\{"/);
    expectShapeB(await put(token, "fr", { footer: "a } b" }), 400, /^footer has a "\}" without its "\{"/);
    expectStatus(await put(token, "fr", { footer: "{{literal}} braces {company.name}" }), 201);
    expectShapeB(await put(token, "xx", { subject: "x" }), 400, /^language must be one of en, de, fr, es, pt, ar/);
    expectShapeB(await put(token, "pt-BR", { subject: "x" }), 400, /^language must be one of/);
    expectShapeB(await put(token, "es", { subject: "x".repeat(201) }), 400, /^subject must be at most 200 characters/);
    expectShapeB(await put(token, "es", { subject: "a\nb" }), 400, /^subject must not contain control characters/);
    expectShapeB(await put(token, "es", {}), 400, /at least one of subject, intro and footer/);
    expectShapeB(await put(token, "es", { subject: "x", colour: "red" }), 400, /Unknown field: colour/);
    // Nothing was saved by the refused writes.
    const list = ok(await call("listReminderTemplates", "/v1/reminder-templates", { token })).body.data;
    expect(list.map((t) => t.language)).toEqual(["fr"]);
  });

  it("concurrent PUTs of one language: one creates (201), the others replace (200), one row is left whole", async () => {
    const { ownerToken: token } = await createAccount();
    const subjects = Array.from({ length: 8 }, (_, i) => `Variante ${i}: {item.title}`);
    const answers = await Promise.all(subjects.map((subject) => put(token, "de", { subject, footer: subject })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201]);
    const list = ok(await call("listReminderTemplates", "/v1/reminder-templates", { token })).body.data;
    expect(list).toHaveLength(1);
    // Never half of one PUT and half of another.
    expect(list[0]!.footer).toBe(list[0]!.subject);
    expect(subjects).toContain(list[0]!.subject);
  });

  it("reads with items:read, writes with items:write; another company's templates are not seen", async () => {
    const { readonly, other, owner } = await demoTokens();
    expectStatus(await call("listReminderTemplates", "/v1/reminder-templates", { token: readonly }), 200);
    const refused = await put(readonly, "de", { subject: "x" });
    expect(refused.status).toBe(403);
    const account = await createAccount();
    expectStatus(await put(account.ownerToken, "es", { subject: "Aviso: {item.title}" }), 201);
    for (const token of [other, owner]) {
      expect(
        (await call("getReminderTemplate", "/v1/reminder-templates/es", { token })).status,
        "another company's template",
      ).toBe(404);
    }
  });

  it("writes an audit entry per change, the language as its id", async () => {
    const account = await createAccount();
    expectStatus(await put(account.ownerToken, "pt", { footer: "Equipa {company.name}" }), 201);
    expectStatus(await put(account.ownerToken, "pt", { footer: "A equipa {company.name}" }), 200);
    const entries = ok(
      await call("listAuditLog", "/v1/audit-log?resource_type=reminder_template&resource_id=pt", {
        token: account.ownerToken,
      }),
    ).body.data;
    expect(entries.map((e) => [e.action, e.before, e.after])).toEqual([
      ["updated", { footer: "Equipa {company.name}" }, { footer: "A equipa {company.name}" }],
      ["created", null, { subject: null, intro: null, footer: "Equipa {company.name}" }],
    ]);
  });
});

describe("a deleted company", () => {
  it("takes its templates with it", async () => {
    const account = await createAccount();
    const made = await call("createCompany", "/v1/companies", {
      token: account.ownerToken,
      body: {
        company_name: `Templates ${crypto.randomUUID().slice(0, 8)}`,
        documents_limit: 10,
        contacts_limit: 10,
        drive_space: 1,
      },
    });
    expectStatus(made, 201);
    const id = made.body.data.company.companyid;
    await env.DB.prepare(
      "INSERT INTO reminder_templates (company_id, language, subject, created_at, updated_at) VALUES (?, 'de', '{item.title}', 1, 1)",
    )
      .bind(id)
      .run();
    expectStatus(await call("deleteCompany", `/v1/companies/${id}`, { token: account.ownerToken }), 200);
    const left = await env.DB.prepare("SELECT count(*) AS n FROM reminder_templates WHERE company_id = ?")
      .bind(id)
      .first<{ n: number }>();
    expect(left!.n).toBe(0);
  });
});

describe("POST /v1/reminder-templates/preview", () => {
  it("renders the sample in the company's language by default, with the saved template, escaped", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    expectStatus(
      await call("updateCompanySettings", `/v1/companies/${account.companyId}/settings`, {
        token,
        body: { language: "de", date_format: "DD.MM.YYYY" },
      }),
      200,
    );
    const plain = ok(await preview(token, {})).body.data;
    expect(plain).toMatchObject({ language: "de", locale: "de", template: "default" });
    const date = addDays(todayIn("UTC"), 14).split("-").reverse().join(".");
    expect(plain.subject).toBe(`Erinnerung: Passport „Ada Lovelace“ läuft in 14 Tagen ab (${date})`);
    expect(plain.text).toContain("Guten Tag Ada Lovelace,");
    expect(plain.html).toContain('<html lang="de" dir="ltr">');

    expectStatus(await put(token, "de", GERMAN), 201);
    const saved = ok(await preview(token, {})).body.data;
    expect(saved.template).toBe("saved");
    expect(saved.subject).toBe(`Frist: Ada Lovelace in 14 Tagen (${date})`);
    expect(
      saved.text.startsWith("Guten Tag Ada Lovelace,\n\nbitte kümmern Sie sich um Ada Lovelace: noch 14 Tage.\n"),
    ).toBe(true);
    expect(saved.text.trimEnd().endsWith(`Ihr Team von ${await companyName(account)}`)).toBe(true);
    // The item's block and the links stay.
    expect(saved.text).toContain("Eintrag öffnen:");
    expect(saved.html).toContain('<p style="margin:0 0 16px;">Guten Tag Ada Lovelace,</p>');

    // A hostile item: its values are data, escaped in HTML, one line in subject and text.
    const item = await createItem(token, {
      title: '<script>alert("x")</script> {days}',
      expiry_date: addDays(todayIn("UTC"), 3),
    });
    const hostile = ok(await preview(token, { item_id: item.item_id })).body.data;
    expect(hostile.subject).toBe(
      `Frist: <script>alert("x")</script> {days} in 3 Tagen (${addDays(todayIn("UTC"), 3).split("-").reverse().join(".")})`,
    );
    expect(hostile.html).not.toContain("<script>");
    expect(hostile.html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; {days}");
  });

  it("renders given texts in a given language (Arabic: right to left; pt-BR: Brazilian dates, Portuguese texts)", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    const arabic = ok(
      await preview(token, { language: "ar", intro: "مرحبًا {contact.first_name}،", footer: "فريق {company.name}" }),
    ).body.data;
    expect(arabic).toMatchObject({ language: "ar", template: "given" });
    expect(arabic.html).toContain('<html lang="ar" dir="rtl">');
    expect(arabic.html).toContain("text-align:right");
    expect(arabic.text.startsWith("مرحبًا Ada،\n")).toBe(true);
    expect(arabic.subject).toContain("ينتهي خلال 14 يومًا");

    const brazil = ok(await preview(token, { language: "pt-BR" })).body.data;
    expect(brazil).toMatchObject({ language: "pt", locale: "pt-BR" });
    expect(brazil.subject).toMatch(/^Lembrete: Passport “Ada Lovelace” vence em 14 dias/);
  });

  it("refuses what PUT refuses, a language it does not speak, and another company's item", async () => {
    const { owner, other } = await demoTokens();
    expectShapeB(await preview(owner, { subject: "{nope}" }), 400, /^subject has an unknown placeholder \{nope\}/);
    expectShapeB(
      await preview(owner, { language: "ja" }),
      400,
      /^language must be a BCP 47 tag of a supported language/,
    );
    expectShapeB(await preview(owner, { language: "not a tag" }), 400, /^language must be/);
    const theirs = await createItem(other, { title: "Theirs", expiry_date: addDays(todayIn("UTC"), 5) });
    expectShapeB(await preview(owner, { item_id: theirs.item_id }), 404, /Item not found/);
  });
});

async function companyName(account: TestAccount): Promise<string> {
  const row = await env.DB.prepare("SELECT name FROM companies WHERE id = ?")
    .bind(account.companyId)
    .first<{ name: string }>();
  return row!.name;
}

describe("the clock's reminder emails", () => {
  it("speak the contact's language, else the company's, with the company's template for that language", async () => {
    const account = await createAccount();
    const token = account.ownerToken;
    expectStatus(
      await call("updateCompanySettings", `/v1/companies/${account.companyId}/settings`, {
        token,
        body: { language: "fr" },
      }),
      200,
    );
    expectStatus(await put(token, "de", GERMAN), 201);
    const german = await createContact(token, { first_name: "Jana", last_name: "Weber", language: "de-AT" });
    const arabic = await createContact(token, { first_name: "ليلى", last_name: "حداد", language: "ar" });
    const unset = await createContact(token, { first_name: "Luc", last_name: "Martin" });
    const date = addDays(todayIn("UTC"), 10);
    const items: Array<Awaited<ReturnType<typeof createItem>>> = [];
    for (const contact of [german, arabic, unset])
      items.push(await createItem(token, { title: "Reisepass", expiry_date: date, contact_id: contact.contact_id }));

    const stub = clockFor(env, account.companyId);
    const emails: Array<{ to: string; subject: string; text: string; html: string }> = [];
    await runInDurableObject(stub, (instance: CompanyClock, state) => {
      const send = instance.transports.email;
      instance.transports = { ...instance.transports, email: (m, delivery) => (emails.push(m), send(m, delivery)) };
      for (const item of items) {
        const id = item.reminders.queued[0]!.reminder_id;
        state.storage.sql.exec("UPDATE reminders SET due_at = ? WHERE reminder_id = ?", Date.now() - 1000 - id, id);
      }
    });
    await runDurableObjectAlarm(stub);
    const byTo = new Map(emails.map((m) => [m.to, m]));
    expect(byTo.size).toBe(3);
    const de = byTo.get(german.email)!;
    expect(de.subject).toMatch(/^Frist: Reisepass in \d+ Tagen/);
    expect(de.text.startsWith("Guten Tag Jana Weber,\n\nbitte kümmern Sie sich um Reisepass")).toBe(true);
    expect(de.html).toContain('<html lang="de-AT" dir="ltr">');
    const ar = byTo.get(arabic.email)!;
    expect(ar.subject.startsWith("تذكير: انتهاء صلاحية «Reisepass» ينتهي خلال")).toBe(true);
    expect(ar.html).toContain('<html lang="ar" dir="rtl">');
    expect(ar.text).toContain("مرحبًا ليلى حداد،");
    const fr = byTo.get(unset.email)!;
    expect(fr.subject.startsWith("Rappel : Expiration « Reisepass » expire dans")).toBe(true);
    expect(fr.text).toContain("Bonjour Luc Martin,");
  });
});
