// Records made for a test: unique names, contacts, groups, departments, and counter checks.
import { env } from "cloudflare:workers";
import { nameKey } from "../../../src/lib/text-key";
import { call, type Json } from "./http";

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
].sort();

/** Output fields of a contact group, exactly. */
export const GROUP_FIELDS = ["groupid", "group_name", "deptid", "isdefault", "add_date", "contacts_count"].sort();

/** Creates a contact through the API (expects 201) and returns its output record. */
export async function createContact(token: string, body: Record<string, unknown> = {}): Promise<Json> {
  const res = await call("POST", "/v1/contacts", {
    token,
    body: { first_name: "Test", last_name: "Contact", email: uniqueEmail(), ...body },
  });
  if (res.status !== 201) throw new Error(`create contact: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Creates a contact group through the API (expects 201) and returns its output record. */
export async function createGroup(token: string, body: Record<string, unknown> = {}): Promise<Json> {
  const res = await call("POST", "/v1/contact-groups", { token, body: { group_name: uniqueWord("g"), ...body } });
  if (res.status !== 201) throw new Error(`create group: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data;
}

/** Inserts a (non-default) department directly in D1; returns its id. */
export async function createDepartment(companyId = 1, name = uniqueWord("dept")): Promise<number> {
  const row = await env.DB.prepare("INSERT INTO departments (company_id, name, name_key, is_default) VALUES (?, ?, ?, 0) RETURNING id")
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
