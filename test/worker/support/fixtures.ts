// Records made for a test: unique names, contacts, groups, departments, and counter checks.
import { env } from "cloudflare:workers";
import { hashClientSecret } from "../../../src/auth/secret-hash";
import { nameKey } from "../../../src/lib/text-key";
import { call, expectStatus, type DataOf } from "./http";

/** A random lowercase word (letters only), unique enough that no other test's word shares its prefix. */
export function uniqueWord(prefix = "w"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return prefix + Array.from(bytes, (b) => String.fromCharCode(97 + (b % 26))).join("");
}

/** A unique email address, optionally built around `word`. */
export function uniqueEmail(word = uniqueWord("e")): string {
  return `${word}@example.test`;
}

/** Output fields of a contact, exactly. */
export const CONTACT_FIELDS = [
  "contact_id",
  "firstname",
  "lastname",
  "email",
  "groupid",
  "deptid",
  "country_code",
  "mobile_code",
  "phone_number",
  "iso",
  "add_date",
  "email_status",
  "email_status_changed_at",
  "language",
  "digest",
  "digest_weekday",
  "channels",
].sort();

/** Output fields of a contact group, exactly. */
export const GROUP_FIELDS = ["groupid", "group_name", "deptid", "isdefault", "add_date", "contacts_count"].sort();

/** Creates a contact through the API (expects 201) and returns its output record. */
export async function createContact(
  token: string,
  body: Record<string, unknown> = {},
): Promise<DataOf<"createContact">> {
  const res = await call("createContact", "/v1/contacts", {
    token,
    body: { first_name: "Test", last_name: "Contact", email: uniqueEmail(), ...body },
  });
  if (res.status !== 201) throw new Error(`create contact: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Creates a contact group through the API (expects 201) and returns its output record. */
export async function createGroup(
  token: string,
  body: Record<string, unknown> = {},
): Promise<DataOf<"createContactGroup">> {
  const res = await call("createContactGroup", "/v1/contact-groups", {
    token,
    body: { group_name: uniqueWord("g"), ...body },
  });
  if (res.status !== 201) throw new Error(`create group: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Inserts a (non-default) department directly in D1; returns its id. */
export async function createDepartment(companyId = 1, name = uniqueWord("dept")): Promise<number> {
  const row = await env.DB.prepare(
    "INSERT INTO departments (company_id, name, name_key, is_default) VALUES (?, ?, ?, 0) RETURNING id",
  )
    .bind(companyId, name, nameKey(name))
    .first<{ id: number }>();
  if (!row) throw new Error("department insert returned no row");
  return row.id;
}

/** A company's trigger-maintained contacts_used counter and its real number of contacts. */
export async function contactCounts(companyId: number): Promise<{ used: number; actual: number }> {
  const row = await env.DB.prepare(
    "SELECT contacts_used AS used, (SELECT count(*) FROM contacts WHERE company_id = companies.id) AS actual FROM companies WHERE id = ?",
  )
    .bind(companyId)
    .first<{ used: number; actual: number }>();
  if (!row) throw new Error(`company ${companyId} not found`);
  return row;
}

export interface TestAccount {
  accountId: number;
  companyId: number;
  deptId: number;
  ownerToken: string;
  memberToken: string;
}

/**
 * A fresh account made directly in D1 (as `bash scripts/dev.sh account create` would): an owner
 * and a member user, a default company with a default department, and a `*` client for each user.
 */
export async function createAccount(
  ceilings: {
    companies?: number;
    documents?: number;
    contacts?: number;
    driveMb?: number;
    documentTypes?: number;
  } = {},
  company: { documents?: number; contacts?: number; driveMb?: number } = {},
  where: { shard?: 0 | 1 } = {},
): Promise<TestAccount> {
  const word = uniqueWord("acct");
  const shard = where.shard ?? 0;
  const db = shard === 1 ? env.DB_1 : env.DB;
  const account = await db
    .prepare(
      `INSERT INTO accounts (name, max_companies, max_documents, max_contacts, max_drive_space_mb, max_document_types)
     VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
    )
    .bind(
      word,
      ceilings.companies ?? 5,
      ceilings.documents ?? 10000,
      ceilings.contacts ?? 10000,
      ceilings.driveMb ?? 10240,
      ceilings.documentTypes ?? 20,
    )
    .first<{ id: number }>();
  const accountId = account!.id;
  const users = await db.batch([
    db
      .prepare("INSERT INTO users (account_id, email, name) VALUES (?, ?, 'Owner') RETURNING id")
      .bind(accountId, `${word}-owner@example.test`),
    db
      .prepare("INSERT INTO users (account_id, email, name) VALUES (?, ?, 'Member') RETURNING id")
      .bind(accountId, `${word}-member@example.test`),
  ]);
  const ownerId = (users[0]!.results[0] as { id: number }).id;
  const memberId = (users[1]!.results[0] as { id: number }).id;
  const companyRow = await db
    .prepare(
      `INSERT INTO companies (account_id, name, is_default, documents_limit, contacts_limit, drive_space_mb) VALUES (?, ?, 1, ?, ?, ?) RETURNING id`,
    )
    .bind(accountId, `${word} Co`, company.documents ?? 1000, company.contacts ?? 1000, company.driveMb ?? 1024)
    .first<{ id: number }>();
  const companyId = companyRow!.id;
  const dept = await db
    .prepare(
      "INSERT INTO departments (company_id, name, name_key, is_default) VALUES (?, 'General', 'general', 1) RETURNING id",
    )
    .bind(companyId)
    .first<{ id: number }>();
  await db.prepare("UPDATE accounts SET owner_user_id = ? WHERE id = ?").bind(ownerId, accountId).run();
  const token = async (userId: number, role: string) => {
    const clientId = `${word}-${role}`;
    const secret = `${clientId}-secret`;
    await db
      .prepare(
        `INSERT INTO api_clients (client_id, secret_hash, secret_salt, account_id, company_id, user_id, scopes) VALUES (?, ?, 'salt', ?, ?, ?, '*')`,
      )
      .bind(clientId, await hashClientSecret(secret, "salt"), accountId, companyId, userId)
      .run();
    // Off shard 0, the directory (home database) says where the client is, as the operator CLI writes it.
    if (shard !== 0) {
      await env.DB.prepare("INSERT INTO directory_clients (client_id, account_id, shard) VALUES (?, ?, ?)")
        .bind(clientId, accountId, shard)
        .run();
    }
    const res = await call("issueToken", "/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret },
    });
    if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.access_token;
  };
  return {
    accountId,
    companyId,
    deptId: dept!.id,
    ownerToken: await token(ownerId, "owner"),
    memberToken: await token(memberId, "member"),
  };
}

/**
 * A new `*` API client of the account owner in `companyId`, inserted in D1 (as `client create`
 * would); its secret is `<client_id>-secret`.
 */
export async function createOwnerClient(
  accountId: number,
  companyId: number,
  prefix = "client",
): Promise<{ clientId: string; secret: string }> {
  const clientId = uniqueWord(prefix);
  const secret = `${clientId}-secret`;
  await env.DB.prepare(
    `INSERT INTO api_clients (client_id, secret_hash, secret_salt, account_id, company_id, user_id, scopes)
     VALUES (?, ?, 'salt', ?, ?, (SELECT owner_user_id FROM accounts WHERE id = ?), '*')`,
  )
    .bind(clientId, await hashClientSecret(secret, "salt"), accountId, companyId, accountId)
    .run();
  return { clientId, secret };
}

/**
 * A fresh account (its owner's and a member's `*` tokens), plus `token(scope)`: a token of the
 * owner in that company with exactly `scope` (through a client of the owner's).
 */
export async function createOwnerWithScopes(prefix = "scoped") {
  const account = await createAccount();
  const { clientId, secret } = await createOwnerClient(account.accountId, account.companyId, prefix);
  const token = async (scope: string): Promise<string> => {
    const res = await call("issueToken", "/v1/oauth/token", {
      body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret, scope },
    });
    expectStatus(res, 200, JSON.stringify(res.body));
    return res.body.access_token as string;
  };
  return { ...account, token };
}

/** Another company of `account`, created through the API by its owner, and a `*` token of the owner in it. */
export async function createExtraCompany(
  account: { accountId: number; ownerToken: string },
  prefix = "extra",
): Promise<{ companyId: number; token: string }> {
  const made = await call("createCompany", "/v1/companies", {
    token: account.ownerToken,
    body: { company_name: uniqueWord("Co "), documents_limit: 10, contacts_limit: 10, drive_space: 1 },
  });
  expectStatus(made, 201, JSON.stringify(made.body));
  const companyId = made.body.data.company.companyid as number;
  const { clientId, secret } = await createOwnerClient(account.accountId, companyId, prefix);
  const issued = await call("issueToken", "/v1/oauth/token", {
    body: { grant_type: "client_credentials", client_id: clientId, client_secret: secret },
  });
  expectStatus(issued, 200, JSON.stringify(issued.body));
  return { companyId, token: issued.body.access_token as string };
}

/** Creates an item through the API (expects 201) and returns its detail. */
export async function createItem(token: string, body: Record<string, unknown> = {}): Promise<DataOf<"getItem">> {
  const res = await call("createItem", "/v1/items", {
    token,
    body: { title: uniqueWord("Item "), expiry_date: "2030-01-15", ...body },
  });
  if (res.status !== 201) throw new Error(`create item: ${res.status} ${JSON.stringify(res.body)}`);
  const detail = await call("getItem", `/v1/items/${res.body.data.item_id}`, { token });
  expectStatus(detail, 200);
  return detail.body.data;
}

/** Creates a document type through the API (expects 201; the owner's token) and returns it. */
export async function createDocumentType(
  token: string,
  body: Record<string, unknown> = {},
): Promise<DataOf<"createDocumentType">> {
  const res = await call("createDocumentType", "/v1/document-types", {
    token,
    body: { doctype_name: uniqueWord("Type"), ...body },
  });
  if (res.status !== 201) throw new Error(`create document type: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}
