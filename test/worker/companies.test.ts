import { beforeAll, describe, expect, it } from "vitest";
import {
  call,
  createAccount,
  createContact,
  demoTokens,
  env,
  expectShapeA,
  expectShapeB,
  tokenFor,
  type Fields,
  expectStatus,
  ok,
} from "./helpers";

const COMPANY_FIELDS = [
  "companyid",
  "name",
  "isdefault",
  "documents_limit",
  "documents_used",
  "contacts_limit",
  "contacts_used",
  "drive_space_mb",
  "drive_space_gb",
  "drive_space_used_kb",
  "add_date",
].sort();

let owner: string, member: string, other: string;

beforeAll(async () => {
  ({ owner, member, other } = await demoTokens());
});

const newCompany = (overrides: Fields = {}) => ({
  company_name: "Branch",
  documents_limit: 10,
  contacts_limit: 10,
  drive_space: 1,
  ...overrides,
});

async function create(token: string, body: Fields = newCompany()) {
  const res = await call("createCompany", "/v1/companies", { token, body });
  expectStatus(res, 201, JSON.stringify(res.body));
  return res.body.data;
}

describe("GET /v1/companies", () => {
  it("shows the owner every company of the account, with the account's limits and allocations", async () => {
    const account = await createAccount(
      { companies: 4, documents: 5000, contacts: 6000, driveMb: 8192 },
      { documents: 1000, contacts: 1000, driveMb: 1024 },
    );
    await create(account.ownerToken, newCompany({ documents_limit: 200, contacts_limit: 300, drive_space: 0.5 }));
    const res = await call("listCompanies", "/v1/companies", { token: account.ownerToken });
    expectStatus(res, 200);
    expect(res.body.data).toHaveLength(2);
    for (const company of res.body.data) expect(Object.keys(company).sort()).toEqual(COMPANY_FIELDS);
    expect(res.body.meta).toEqual({
      limits: { companies: 4, documents: 5000, contacts: 6000, drive_space_mb: 8192 },
      used: { companies: 2, documents_allocated: 1200, contacts_allocated: 1300, drive_space_allocated_mb: 1536 },
    });
    expect(res.body.data[1]).toMatchObject({
      isdefault: 0,
      drive_space_mb: 512,
      drive_space_gb: 0.5,
      documents_used: 0,
      contacts_used: 0,
    });
  });

  it("shows a non-owner only its own company (with the same account-wide meta)", async () => {
    const account = await createAccount();
    await create(account.ownerToken);
    const res = ok(await call("listCompanies", "/v1/companies", { token: account.memberToken }));
    expect(res.body.data.map((c) => c.companyid)).toEqual([account.companyId]);
    expect(res.body.meta.used.companies).toBe(2);
  });

  it("keeps accounts apart", async () => {
    const res = ok(await call("listCompanies", "/v1/companies", { token: other }));
    expect(res.body.data.every((c) => c.companyid !== 1)).toBe(true);
  });

  it("reports contacts_used exactly", async () => {
    const account = await createAccount();
    await createContact(account.ownerToken);
    await createContact(account.ownerToken);
    const res = ok(await call("getCompany", `/v1/companies/${account.companyId}`, { token: account.ownerToken }));
    expect(res.body.data.company.contacts_used).toBe(2);
  });

  it("needs companies:read (Shape A first)", async () => {
    const res = await call("listCompanies", "/v1/companies", { token: await tokenFor("demo-owner", "contacts:read") });
    expectShapeA(res, 403, "insufficient_scope");
    expect(res.body.required_scope).toBe("companies:read");
  });
});

describe("POST /v1/companies", () => {
  it("creates a usable company: default department and group, default settings, empty profile", async () => {
    const account = await createAccount();
    const res = await call("createCompany", "/v1/companies", {
      token: account.ownerToken,
      body: newCompany({ company_name: "Nord GmbH", drive_space: 2.5 }),
    });
    expectStatus(res, 201);
    expect(res.body.msg).toBeTruthy();
    const { company, info, settings } = res.body.data;
    expect(company).toMatchObject({
      name: "Nord GmbH",
      isdefault: 0,
      documents_limit: 10,
      contacts_limit: 10,
      drive_space_mb: 2560,
      drive_space_gb: 2.5,
    });
    expect(info).toEqual({});
    expect(settings).toEqual({
      timezone: "UTC",
      date_format: "YYYY-MM-DD",
      reply_to: null,
      language: "en",
      digest_hour: "08:00",
    });
    const dept = await env.DB.prepare("SELECT id, name FROM departments WHERE company_id = ? AND is_default = 1")
      .bind(company.companyid)
      .all();
    expect(dept.results).toHaveLength(1);
    const group = await env.DB.prepare("SELECT dept_id FROM contact_groups WHERE company_id = ? AND is_default = 1")
      .bind(company.companyid)
      .all();
    expect(group.results).toEqual([{ dept_id: (dept.results[0] as Fields).id }]);
  });

  it("takes timezone and date_format as an extension, and refuses unknown ones", async () => {
    const account = await createAccount();
    const made = await create(
      account.ownerToken,
      newCompany({ timezone: "america/new_york", date_format: "MM/DD/YYYY" }),
    );
    expect(made.settings).toEqual({
      timezone: "America/New_York",
      date_format: "MM/DD/YYYY",
      reply_to: null,
      language: "en",
      digest_hour: "08:00",
    });
    expectShapeB(
      await call("createCompany", "/v1/companies", {
        token: account.ownerToken,
        body: newCompany({ timezone: "Mars/Base" }),
      }),
      400,
      /timezone/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", {
        token: account.ownerToken,
        body: newCompany({ date_format: "YY" }),
      }),
      400,
      /date_format must be one of/,
    );
  });

  it("requires the four fields and validates them", async () => {
    const { ownerToken } = await createAccount();
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: {} }),
      400,
      /company_name is required/,
    );
    for (const field of ["documents_limit", "contacts_limit", "drive_space"]) {
      const body: Fields = newCompany();
      delete body[field];
      expectShapeB(
        await call("createCompany", "/v1/companies", { token: ownerToken, body }),
        400,
        new RegExp(`${field} is required`),
      );
    }
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ documents_limit: -1 }) }),
      400,
      /documents_limit/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ contacts_limit: 1.5 }) }),
      400,
      /contacts_limit/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ drive_space: "1" }) }),
      400,
      /drive_space/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ nope: 1 }) }),
      400,
      /Unknown field: nope/,
    );
  });

  it("refuses an allocation past the account's ceilings, naming what remains", async () => {
    const { ownerToken } = await createAccount(
      { companies: 5, documents: 1350, contacts: 1100, driveMb: 2048 },
      { documents: 1000, contacts: 1000, driveMb: 1024 },
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ documents_limit: 351 }) }),
      400,
      /Only 350 documents remain to allocate/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ contacts_limit: 101 }) }),
      400,
      /Only 100 contacts remain to allocate/,
    );
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany({ drive_space: 1.5 }) }),
      400,
      /Only 1 GB \(1024 MB\) of drive space remain/,
    );
    await create(ownerToken, newCompany({ documents_limit: 350, contacts_limit: 100, drive_space: 1 }));
    expectShapeB(
      await call("createCompany", "/v1/companies", {
        token: ownerToken,
        body: newCompany({ documents_limit: 1, contacts_limit: 0, drive_space: 0 }),
      }),
      400,
      /Only 0 documents/,
    );
  });

  it("refuses a company past the account's number of companies", async () => {
    const { ownerToken } = await createAccount({ companies: 2 });
    await create(ownerToken);
    expectShapeB(
      await call("createCompany", "/v1/companies", { token: ownerToken, body: newCompany() }),
      400,
      /at most 2 companies/,
    );
  });

  it("lets concurrent creates take exactly what fits", async () => {
    const { ownerToken } = await createAccount({ companies: 20, documents: 1000 + 5 * 100 }, { documents: 1000 });
    const results = await Promise.all(
      Array.from({ length: 9 }, () =>
        call("createCompany", "/v1/companies", {
          token: ownerToken,
          body: newCompany({ documents_limit: 100, contacts_limit: 0, drive_space: 0 }),
        }),
      ),
    );
    for (const res of results) expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
    expect(results.filter((r) => r.status === 201)).toHaveLength(5);
    const list = ok(await call("listCompanies", "/v1/companies", { token: ownerToken }));
    expect(list.body.meta.used.documents_allocated).toBe(1500);
  });

  it("is for the account owner only (403 Shape B), after the scope check (Shape A)", async () => {
    expectShapeB(await call("createCompany", "/v1/companies", { token: member, body: newCompany() }), 403, /owner/);
    expectShapeA(
      await call("createCompany", "/v1/companies", {
        token: await tokenFor("demo-owner", "companies:read"),
        body: newCompany(),
      }),
      403,
      "insufficient_scope",
    );
    expectShapeA(
      await call("createCompany", "/v1/companies", {
        token: await tokenFor("demo-member", "companies:read"),
        body: newCompany(),
      }),
      403,
      "insufficient_scope",
    );
  });
});

describe("GET /v1/companies/{company_id}", () => {
  it("returns company, info and settings", async () => {
    const res = await call("getCompany", "/v1/companies/1", { token: owner });
    expectStatus(res, 200);
    expect(Object.keys(res.body.data).sort()).toEqual(["company", "info", "settings"]);
    expect(res.body.data.company.companyid).toBe(1);
  });

  it("is 404 for another account's company and, for a non-owner, for another company of the account", async () => {
    const account = await createAccount();
    const second = await create(account.ownerToken);
    expectStatus(
      await call("getCompany", `/v1/companies/${second.company.companyid}`, { token: account.ownerToken }),
      200,
    );
    expectShapeB(
      await call("getCompany", `/v1/companies/${second.company.companyid}`, { token: account.memberToken }),
      404,
    );
    expectStatus(await call("getCompany", `/v1/companies/${account.companyId}`, { token: account.memberToken }), 200);
    expectShapeB(await call("getCompany", `/v1/companies/${account.companyId}`, { token: owner }), 404);
    expectShapeB(await call("getCompany", "/v1/companies/99999999", { token: owner }), 404);
    expectShapeB(await call("getCompany", "/v1/companies/abc", { token: owner }), 400);
  });
});

describe("PATCH /v1/companies/{company_id}", () => {
  it("updates name and quotas (all four fields required)", async () => {
    const { ownerToken } = await createAccount();
    const made = await create(ownerToken);
    const id = made.company.companyid;
    const res = await call("updateCompany", `/v1/companies/${id}`, {
      token: ownerToken,
      body: newCompany({ company_name: "Renamed", documents_limit: 20, drive_space: 0.25 }),
    });
    expectStatus(res, 200);
    expect(res.body.data.company).toMatchObject({ name: "Renamed", documents_limit: 20, drive_space_mb: 256 });
    expectShapeB(
      await call("updateCompany", `/v1/companies/${id}`, { token: ownerToken, body: { company_name: "x" } }),
      400,
      /is required/,
    );
  });

  it("refuses a limit below what the company holds, and an allocation past the ceilings", async () => {
    const account = await createAccount({ contacts: 2000 }, { contacts: 1000 });
    await createContact(account.ownerToken);
    await createContact(account.ownerToken);
    const base = { company_name: "Same", documents_limit: 1000, drive_space: 1 };
    expectShapeB(
      await call("updateCompany", `/v1/companies/${account.companyId}`, {
        token: account.ownerToken,
        body: { ...base, contacts_limit: 1 },
      }),
      400,
      /below the 2 contacts/,
    );
    expectShapeB(
      await call("updateCompany", `/v1/companies/${account.companyId}`, {
        token: account.ownerToken,
        body: { ...base, contacts_limit: 2001 },
      }),
      400,
      /Only 2000 contacts remain/,
    );
    expectStatus(
      await call("updateCompany", `/v1/companies/${account.companyId}`, {
        token: account.ownerToken,
        body: { ...base, contacts_limit: 2 },
      }),
      200,
    );
  });

  it("is owner-only and 404 outside the account", async () => {
    expectShapeB(await call("updateCompany", "/v1/companies/1", { token: member, body: newCompany() }), 403);
    expectShapeB(await call("updateCompany", "/v1/companies/1", { token: other, body: newCompany() }), 404);
  });
});

describe("PATCH /v1/companies/{company_id}/info", () => {
  it("merges profile fields and answers the spec's summary", async () => {
    const { ownerToken, companyId } = await createAccount();
    const first = await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, {
      token: ownerToken,
      body: { business_name: "Acme Ltd", city: "Berlin", id_country: 276 },
    });
    expectStatus(first, 200);
    expect(first.body.data).toEqual({
      companyid: companyId,
      business_name: "Acme Ltd",
      city: "Berlin",
      id_country: 276,
      id_industry: 0,
      id_size: 0,
    });
    await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, {
      token: ownerToken,
      body: { id_size: 2, website: "https://acme.example" },
    });
    const detail = ok(await call("getCompany", `/v1/companies/${companyId}`, { token: ownerToken }));
    expect(detail.body.data.info).toEqual({
      business_name: "Acme Ltd",
      city: "Berlin",
      id_country: 276,
      id_size: 2,
      website: "https://acme.example",
    });
  });

  it("validates the fields and refuses an empty body", async () => {
    const { ownerToken, companyId } = await createAccount();
    expectShapeB(
      await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, { token: ownerToken, body: {} }),
      400,
      /No updatable fields/,
    );
    expectShapeB(
      await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, { token: ownerToken, body: { id_size: 9 } }),
      400,
      /id_size/,
    );
    expectShapeB(
      await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, {
        token: ownerToken,
        body: { id_country: "DE" },
      }),
      400,
      /id_country/,
    );
    expectShapeB(
      await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, {
        token: ownerToken,
        body: { email: "nope" },
      }),
      400,
      /email/,
    );
    expectShapeB(
      await call("updateCompanyInfo", `/v1/companies/${companyId}/info`, {
        token: ownerToken,
        body: { website: "ftp://x" },
      }),
      400,
      /website/,
    );
  });
});

describe("PATCH /v1/companies/{company_id}/settings (extension)", () => {
  it("changes timezone and date_format, validated", async () => {
    const { ownerToken, companyId } = await createAccount();
    const res = await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
      token: ownerToken,
      body: { timezone: "Asia/Kathmandu" },
    });
    expectStatus(res, 200);
    expect(res.body.data.settings).toEqual({
      timezone: "Asia/Kathmandu",
      date_format: "YYYY-MM-DD",
      reply_to: null,
      language: "en",
      digest_hour: "08:00",
    });
    const again = ok(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
        token: ownerToken,
        body: { date_format: "DD.MM.YYYY" },
      }),
    );
    expect(again.body.data.settings).toEqual({
      timezone: "Asia/Kathmandu",
      date_format: "DD.MM.YYYY",
      reply_to: null,
      language: "en",
      digest_hour: "08:00",
    });
    expectShapeB(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
        token: ownerToken,
        body: { timezone: "+02:00" },
      }),
      400,
      /timezone/,
    );
    expectShapeB(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, { token: ownerToken, body: {} }),
      400,
      /No updatable fields/,
    );
  });

  it("is owner-only", async () => {
    const { memberToken, companyId } = await createAccount();
    expectShapeB(
      await call("updateCompanySettings", `/v1/companies/${companyId}/settings`, {
        token: memberToken,
        body: { timezone: "UTC" },
      }),
      403,
    );
  });
});

describe("PATCH /v1/companies/{company_id}/default and DELETE", () => {
  it("moves the default: exactly one per account, also under concurrent calls", async () => {
    const { ownerToken, accountId } = await createAccount();
    const companies = await Promise.all([create(ownerToken), create(ownerToken), create(ownerToken)]);
    const results = await Promise.all(
      companies.map((c) =>
        call("setDefaultCompany", `/v1/companies/${c.company.companyid}/default`, { token: ownerToken }),
      ),
    );
    for (const res of results) expectStatus(res, 200);
    const defaults = await env.DB.prepare("SELECT id FROM companies WHERE account_id = ? AND is_default = 1")
      .bind(accountId)
      .all();
    expect(defaults.results).toHaveLength(1);
    expectShapeB(await call("setDefaultCompany", "/v1/companies/99999999/default", { token: ownerToken }), 404);
  });

  it("refuses to delete the default company", async () => {
    const { ownerToken, companyId } = await createAccount();
    expectShapeB(
      await call("deleteCompany", `/v1/companies/${companyId}`, { token: ownerToken }),
      400,
      /default company cannot be deleted/,
    );
  });

  it("deletes a company that holds only what the service made, with its API clients", async () => {
    const account = await createAccount();
    const made = await create(account.ownerToken);
    const id = made.company.companyid;
    await env.DB.prepare(
      "INSERT INTO api_clients (client_id, secret_hash, secret_salt, account_id, company_id, user_id, scopes) VALUES (?, 'x', 'y', ?, ?, (SELECT owner_user_id FROM accounts WHERE id = ?), '*')",
    )
      .bind(`deleted-${id}`, account.accountId, id, account.accountId)
      .run();
    const res = await call("deleteCompany", `/v1/companies/${id}`, { token: account.ownerToken });
    expectStatus(res, 200, JSON.stringify(res.body));
    for (const table of ["companies", "departments", "contact_groups", "api_clients"]) {
      const column = table === "companies" ? "id" : "company_id";
      const left = await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`)
        .bind(id)
        .first<{ n: number }>();
      expect(left?.n, table).toBe(0);
    }
    expectShapeB(await call("getCompany", `/v1/companies/${id}`, { token: account.ownerToken }), 404);
  });

  it("refuses a company that holds more, naming what is left, and changes nothing", async () => {
    const account = await createAccount();
    const made = await create(account.ownerToken);
    const id = made.company.companyid;
    await env.DB.prepare(
      "INSERT INTO contacts (company_id, dept_id, first_name, last_name, email, email_key) SELECT ?, id, 'A', 'B', 'a@b.test', 'a@b.test' FROM departments WHERE company_id = ? AND is_default = 1",
    )
      .bind(id, id)
      .run();
    await env.DB.prepare("INSERT INTO departments (company_id, name, name_key) VALUES (?, 'Extra', 'extra')")
      .bind(id)
      .run();
    expectShapeB(
      await call("deleteCompany", `/v1/companies/${id}`, { token: account.ownerToken }),
      400,
      /still holds 1 contact, 1 other department/,
    );
    expectStatus(await call("getCompany", `/v1/companies/${id}`, { token: account.ownerToken }), 200);
  });

  it("ends the tokens of the deleted company", async () => {
    const account = await createAccount();
    const made = await create(account.ownerToken);
    const id = made.company.companyid;
    const ownerUser = await env.DB.prepare("SELECT owner_user_id AS u FROM accounts WHERE id = ?")
      .bind(account.accountId)
      .first<{ u: number }>();
    const { hashClientSecret } = await import("../../src/auth/secret-hash");
    await env.DB.prepare(
      "INSERT INTO api_clients (client_id, secret_hash, secret_salt, account_id, company_id, user_id, scopes) VALUES (?, ?, 's', ?, ?, ?, '*')",
    )
      .bind(`gone-${id}`, await hashClientSecret("gone-secret", "s"), account.accountId, id, ownerUser!.u)
      .run();
    const issued = await call("issueToken", "/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: `gone-${id}`, client_secret: "gone-secret" },
    });
    expectStatus(issued, 200);
    expectStatus(await call("deleteCompany", `/v1/companies/${id}`, { token: account.ownerToken }), 200);
    expectShapeA(await call("listContacts", "/v1/contacts", { token: issued.body.access_token }), 401, "invalid_token");
  });

  it("refuses deletion by a non-owner", async () => {
    const account = await createAccount();
    const made = await create(account.ownerToken);
    expectShapeB(
      await call("deleteCompany", `/v1/companies/${made.company.companyid}`, { token: account.memberToken }),
      403,
    );
  });
});
