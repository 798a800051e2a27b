import { beforeAll, describe, expect, it } from "vitest";
import { isRightToLeft, supportedLanguageTag, textDirection } from "../../src/lib/languages";
import {
  call,
  createAccount,
  createContact,
  demoTokens,
  env,
  expectShapeB,
  expectStatus,
  ok,
  uniqueEmail,
} from "./helpers";

// A contact's preferences and email status (issue 34): language, digest, digest_weekday, channels,
// email_status; and the company's reply_to, language and digest_hour.

let owner: string;

beforeAll(async () => {
  ({ owner } = await demoTokens());
});

const patch = (id: number, body: Record<string, unknown>) =>
  call("updateContact", `/v1/contacts/${id}`, { token: owner, body });

describe("languages (src/lib/languages.ts)", () => {
  it("keeps a supported tag in its canonical form, region included, and refuses the rest", () => {
    expect(supportedLanguageTag("de")).toBe("de");
    expect(supportedLanguageTag("PT-br")).toBe("pt-BR");
    expect(supportedLanguageTag("ar-EG")).toBe("ar-EG");
    expect(supportedLanguageTag("it")).toBeNull();
    expect(supportedLanguageTag("en_US")).toBeNull();
    expect(supportedLanguageTag("x")).toBeNull();
    expect(supportedLanguageTag("")).toBeNull();
    expect(supportedLanguageTag(`en-${"a".repeat(40)}`)).toBeNull();
  });
  it("knows Arabic is right-to-left", () => {
    expect(isRightToLeft("ar")).toBe(true);
    expect(textDirection("ar-EG")).toBe("rtl");
    expect(textDirection("de")).toBe("ltr");
  });
});

describe("contact preferences through /v1/contacts", () => {
  it("a new contact: active, no change yet, the company's language, no digest, every channel", async () => {
    const contact = await createContact(owner);
    expect(contact).toMatchObject({
      email_status: "active",
      email_status_changed_at: null,
      language: null,
      digest: "off",
      digest_weekday: null,
      channels: null,
    });
  });

  it("creates and updates language, digest, digest_weekday and channels", async () => {
    const contact = await createContact(owner, {
      language: "pt-br",
      digest: "weekly",
      digest_weekday: "friday",
      channels: ["email"],
    });
    expect(contact).toMatchObject({
      language: "pt-BR",
      digest: "weekly",
      digest_weekday: "friday",
      channels: ["email"],
    });
    const daily = ok(await patch(contact.contact_id, { digest: "daily", language: null, channels: null }));
    expect(daily.body.data).toMatchObject({ digest: "daily", digest_weekday: null, language: null, channels: null });
    const weekly = ok(await patch(contact.contact_id, { digest: "weekly", digest_weekday: "monday" }));
    expect(weekly.body.data).toMatchObject({ digest: "weekly", digest_weekday: "monday" });
    const moved = ok(await patch(contact.contact_id, { digest_weekday: "sunday" }));
    expect(moved.body.data).toMatchObject({ digest: "weekly", digest_weekday: "sunday" });
    const read = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: owner }));
    expect(read.body.data).toMatchObject({ digest: "weekly", digest_weekday: "sunday" });
  });

  it("refuses unknown values with a 400 naming the field", async () => {
    const contact = await createContact(owner);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ language: "it" }, /^language /],
      [{ language: "not a tag!" }, /^language /],
      [{ language: 7 }, /language/],
      [{ digest: "hourly" }, /^digest must be one of/],
      [{ digest: "weekly" }, /^digest_weekday is required/],
      [{ digest: "daily", digest_weekday: "monday" }, /^digest_weekday is only allowed/],
      [{ digest: "weekly", digest_weekday: "someday" }, /^digest_weekday must be one of/],
      [{ digest_weekday: "monday" }, /^digest_weekday is only allowed while digest is weekly/],
      [{ channels: ["pigeon"] }, /^channels/],
      [{ channels: [] }, /^channels must name at least one/],
      [{ channels: ["email", "email"] }, /^channels must not repeat/],
      [{ channels: ["sms"] }, /^channels: channel sms is not available/],
      [{ channels: "email" }, /channels/],
      [{ email_status: "active" }, /email_status/],
    ];
    for (const [body, message] of cases) {
      expectShapeB(await patch(contact.contact_id, body), 400, message);
    }
    expectShapeB(
      await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email: uniqueEmail(), digest: "weekly" },
      }),
      400,
      /^digest_weekday is required/,
    );
    expectShapeB(
      await call("createContact", "/v1/contacts", {
        token: owner,
        body: { first_name: "A", last_name: "B", email: uniqueEmail(), email_status: "unsubscribed" },
      }),
      400,
      /email_status/,
    );
    const unchanged = ok(await call("getContact", `/v1/contacts/${contact.contact_id}`, { token: owner }));
    expect(unchanged.body.data).toMatchObject({ language: null, digest: "off", digest_weekday: null, channels: null });
  });

  it("PATCH cannot re-subscribe: email_status is read-only, and a new address keeps unsubscribed", async () => {
    const contact = await createContact(owner);
    await env.DB.prepare(
      "UPDATE contacts SET email_status = 'unsubscribed', email_status_changed_at = '2026-01-01T00:00:00.000Z' WHERE id = ?",
    )
      .bind(contact.contact_id)
      .run();
    expectShapeB(await patch(contact.contact_id, { email_status: "active" }), 400, /email_status/);
    const renamed = ok(await patch(contact.contact_id, { email: uniqueEmail() }));
    expect(renamed.body.data).toMatchObject({
      email_status: "unsubscribed",
      email_status_changed_at: "2026-01-01T00:00:00.000Z",
    });
  });

  it("a new address resets bounced and complained to active (they belong to the old address)", async () => {
    for (const status of ["bounced", "complained"]) {
      const contact = await createContact(owner);
      await env.DB.prepare("UPDATE contacts SET email_status = ? WHERE id = ?").bind(status, contact.contact_id).run();
      const renamed = ok(await patch(contact.contact_id, { first_name: "Same address" }));
      expect(renamed.body.data.email_status).toBe(status);
      const moved = ok(await patch(contact.contact_id, { email: uniqueEmail() }));
      expect(moved.body.data.email_status).toBe("active");
      expect(moved.body.data.email_status_changed_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });
});

describe("company settings: reply_to, language, digest_hour", () => {
  it("are set, shown and validated", async () => {
    const { ownerToken, companyId } = await createAccount();
    const path = `/v1/companies/${companyId}/settings`;
    const res = ok(
      await call("updateCompanySettings", path, {
        token: ownerToken,
        body: { reply_to: "Office@Demo.example", language: "DE", digest_hour: "07:30" },
      }),
    );
    expect(res.body.data.settings).toMatchObject({
      reply_to: "Office@Demo.example",
      language: "de",
      digest_hour: "07:30",
    });
    const cleared = ok(await call("updateCompanySettings", path, { token: ownerToken, body: { reply_to: null } }));
    expect(cleared.body.data.settings.reply_to).toBeNull();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ reply_to: "not an address" }, /^reply_to must be a valid email address/],
      [{ reply_to: "a@b.example\r\nBcc: x@y.example" }, /^reply_to /],
      [{ language: "xx" }, /^language /],
      [{ digest_hour: "8:00" }, /^digest_hour /],
      [{ digest_hour: "24:00" }, /^digest_hour /],
    ];
    for (const [body, message] of cases) {
      expectShapeB(await call("updateCompanySettings", path, { token: ownerToken, body }), 400, message);
    }
    const read = ok(await call("getCompany", `/v1/companies/${companyId}`, { token: ownerToken }));
    expectStatus(read, 200);
    expect(read.body.data.settings).toMatchObject({ reply_to: null, language: "de", digest_hour: "07:30" });
  });
});
