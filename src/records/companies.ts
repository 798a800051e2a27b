import { and, asc, eq, ne, sql, type SQL } from "drizzle-orm";
import { DEFAULT_LANGUAGE } from "../lib/languages";
import type { Db } from "../db/client";
import { MAX_ATTEMPTS, lostRace } from "../db/guarded";
import { DEFAULT_DEPARTMENT_NAME, DEFAULT_GROUP_NAME } from "../db/departments";
import {
  accounts,
  apiClients,
  calendarFeeds,
  reminderTemplates,
  companies,
  companyRevisions,
  contactGroups,
  departments,
  imports,
  reminderSequences,
  webhookEndpoints,
  channelEndpoints,
  webhookEvents,
  type CompanyRow,
} from "../db/schema";
import { nameKey } from "../lib/text-key";
import { badRequest, notFound } from "../lib/errors";
import { toFlag } from "../lib/schemas";
import { DEFAULT_DATE_FORMAT, DEFAULT_TIME_ZONE, DATE_FORMATS, type DateFormat } from "../lib/time";
import type {
  CompanyDetail,
  CompanyInfo,
  CompanyOutput,
  CompanySettings,
  CreateCompanyInput,
  UpdateCompanyInfoInput,
  UpdateCompanyInput,
  UpdateCompanySettingsInput,
} from "../schemas/companies";

/** Who is asking: the account owner sees and manages every company of the account, others only their own. */
export interface Caller {
  accountId: number;
  companyId: number;
  isOwner: boolean;
}

const gb = (mb: number) => Math.round((mb / 1024) * 1000) / 1000;
export const mbOf = (gigabytes: number) => Math.round(gigabytes * 1024);

export function companyOutput(row: CompanyRow): CompanyOutput {
  return {
    companyid: row.id,
    name: row.name,
    isdefault: toFlag(row.isDefault),
    documents_limit: row.documentsLimit,
    documents_used: row.documentsUsed,
    contacts_limit: row.contactsLimit,
    contacts_used: row.contactsUsed,
    drive_space_mb: row.driveSpaceMb,
    drive_space_gb: gb(row.driveSpaceMb),
    drive_space_used_kb: row.driveSpaceUsedKb,
    add_date: row.createdAt,
  };
}

function parseObject(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** A company's settings by id (the defaults when it is gone). */
export async function companySettings(db: Db, companyId: number): Promise<CompanySettings> {
  const row = await db.select().from(companies).where(eq(companies.id, companyId)).get();
  return row ? settingsOf(row) : settingsOfStored({});
}

export const DEFAULT_DIGEST_HOUR = "08:00";

export const settingsOf = (row: Pick<CompanyRow, "settings">): CompanySettings =>
  settingsOfStored(parseObject(row.settings));

/** The settings with every default filled in (stored JSON predating a setting lacks it). */
function settingsOfStored(stored: Record<string, unknown>): CompanySettings {
  const format = DATE_FORMATS.includes(stored.date_format as DateFormat)
    ? (stored.date_format as DateFormat)
    : DEFAULT_DATE_FORMAT;
  const text = (key: string) => (typeof stored[key] === "string" ? (stored[key] as string) : null);
  return {
    timezone: text("timezone") ?? DEFAULT_TIME_ZONE,
    date_format: format,
    reply_to: text("reply_to"),
    language: text("language") ?? DEFAULT_LANGUAGE,
    digest_hour: text("digest_hour") ?? DEFAULT_DIGEST_HOUR,
  };
}

const INFO_TEXT = [
  "business_name",
  "address1",
  "address2",
  "city",
  "state",
  "zipcode",
  "phone",
  "email",
  "website",
] as const;
const INFO_CODES = ["id_country", "id_industry", "id_size"] as const;

export function infoOf(row: CompanyRow): CompanyInfo {
  const stored = parseObject(row.info);
  const info: CompanyInfo = {};
  for (const key of INFO_TEXT) if (typeof stored[key] === "string") info[key] = stored[key];
  for (const key of INFO_CODES) if (Number.isSafeInteger(stored[key])) info[key] = stored[key] as number;
  return info;
}

export const detailOutput = (row: CompanyRow): CompanyDetail => ({
  company: companyOutput(row),
  info: infoOf(row),
  settings: settingsOf(row),
});

/** The companies a caller may see: the account's for its owner, its own company for anyone else. */
function visible(caller: Caller): SQL {
  return caller.isOwner
    ? eq(companies.accountId, caller.accountId)
    : and(eq(companies.accountId, caller.accountId), eq(companies.id, caller.companyId))!;
}

const inAccount = (caller: Caller, companyId: number) =>
  and(eq(companies.id, companyId), eq(companies.accountId, caller.accountId));

/** Sums over the account's companies, optionally leaving one out (the one being updated). */
function allocated(accountId: number, except = 0) {
  const others = sql`FROM companies AS o WHERE o.account_id = ${accountId} AND o.id <> ${except}`;
  return {
    companies: sql<number>`(SELECT count(*) ${others})`,
    documents: sql<number>`(SELECT coalesce(sum(o.documents_limit), 0) ${others})`,
    contacts: sql<number>`(SELECT coalesce(sum(o.contacts_limit), 0) ${others})`,
    driveMb: sql<number>`(SELECT coalesce(sum(o.drive_space_mb), 0) ${others})`,
  };
}

/** The account's ceilings next to what its companies (but `except`) have been allocated. */
function accountAllocation(db: Db, accountId: number, except = 0) {
  const used = allocated(accountId, except);
  return db
    .select({
      maxCompanies: accounts.maxCompanies,
      maxDocuments: accounts.maxDocuments,
      maxContacts: accounts.maxContacts,
      maxDriveSpaceMb: accounts.maxDriveSpaceMb,
      companies: used.companies,
      documents: used.documents,
      contacts: used.contacts,
      driveMb: used.driveMb,
    })
    .from(accounts)
    .where(eq(accounts.id, accountId));
}

export async function listCompanies(db: Db, caller: Caller) {
  const [rows, [account]] = await db.batch([
    db.select().from(companies).where(visible(caller)).orderBy(asc(companies.id)),
    accountAllocation(db, caller.accountId),
  ]);
  if (!account) throw notFound("Account");
  return {
    rows,
    meta: {
      limits: {
        companies: account.maxCompanies,
        documents: account.maxDocuments,
        contacts: account.maxContacts,
        drive_space_mb: account.maxDriveSpaceMb,
      },
      used: {
        companies: account.companies,
        documents_allocated: account.documents,
        contacts_allocated: account.contacts,
        drive_space_allocated_mb: account.driveMb,
      },
    },
  };
}

export async function getCompany(db: Db, caller: Caller, companyId: number): Promise<CompanyRow> {
  const row = await db
    .select()
    .from(companies)
    .where(and(visible(caller), eq(companies.id, companyId)))
    .get();
  if (!row) throw notFound("Company");
  return row;
}

interface Allocation {
  documents: number;
  contacts: number;
  driveMb: number;
}

/**
 * Explains why an allocation did not fit: the first ceiling it passes, naming what remains, or
 * the first usage it would fall below. Null when it fits now (a concurrent change freed room).
 */
async function allocationProblem(
  db: Db,
  accountId: number,
  want: Allocation,
  current?: CompanyRow,
): Promise<string | null> {
  const account = await accountAllocation(db, accountId, current?.id ?? 0).get();
  if (!account) return "The account no longer exists";
  if (!current && account.companies >= account.maxCompanies) {
    return `The account may hold at most ${account.maxCompanies} companies; delete one or raise the plan`;
  }
  const remaining = {
    documents: Math.max(0, account.maxDocuments - account.documents),
    contacts: Math.max(0, account.maxContacts - account.contacts),
    driveMb: Math.max(0, account.maxDriveSpaceMb - account.driveMb),
  };
  if (want.documents > remaining.documents)
    return `Only ${remaining.documents} documents remain to allocate (documents_limit ${want.documents} requested)`;
  if (want.contacts > remaining.contacts)
    return `Only ${remaining.contacts} contacts remain to allocate (contacts_limit ${want.contacts} requested)`;
  if (want.driveMb > remaining.driveMb) {
    return `Only ${gb(remaining.driveMb)} GB (${remaining.driveMb} MB) of drive space remain to allocate (drive_space ${gb(want.driveMb)} GB requested)`;
  }
  if (current) {
    if (want.documents < current.documentsUsed)
      return `documents_limit cannot be below the ${current.documentsUsed} documents the company holds`;
    if (want.contacts < current.contactsUsed)
      return `contacts_limit cannot be below the ${current.contactsUsed} contacts the company holds`;
    if (want.driveMb * 1024 < current.driveSpaceUsedKb) {
      return `drive_space cannot be below the ${Math.ceil(current.driveSpaceUsedKb / 1024)} MB of files the company holds`;
    }
  }
  return null;
}

/** The allocation fits under the account's ceilings, next to every other company's. */
function fitsCeilings(accountId: number, want: Allocation, except = 0): SQL {
  const used = allocated(accountId, except);
  return sql`${used.documents} + ${want.documents} <= ${accounts.maxDocuments}
    AND ${used.contacts} + ${want.contacts} <= ${accounts.maxContacts}
    AND ${used.driveMb} + ${want.driveMb} <= ${accounts.maxDriveSpaceMb}`;
}

const lostCompanyRace = () => lostRace("account's companies");

export async function createCompany(db: Db, caller: Caller, input: CreateCompanyInput): Promise<CompanyRow> {
  const want = { documents: input.documents_limit, contacts: input.contacts_limit, driveMb: mbOf(input.drive_space) };
  const settings = JSON.stringify({
    timezone: input.timezone ?? DEFAULT_TIME_ZONE,
    date_format: input.date_format ?? DEFAULT_DATE_FORMAT,
  });
  const used = allocated(caller.accountId);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    // One batch: the company (only while every ceiling holds, checked inside the INSERT), then
    // its default department and that department's default group, each written only when the
    // statement before it wrote its row (changes() = 1) and attached to it (last_insert_rowid()).
    const [inserted] = await db.commit([
      db
        .insert(companies)
        .select(
          (qb) =>
            qb
              .select({
                id: sql`NULL`,
                accountId: sql`${caller.accountId}`,
                name: sql`${input.company_name}`,
                isDefault: sql`0`,
                documentsLimit: sql`${want.documents}`,
                documentsUsed: sql`0`,
                contactsLimit: sql`${want.contacts}`,
                contactsUsed: sql`0`,
                driveSpaceMb: sql`${want.driveMb}`,
                driveSpaceUsedKb: sql`0`,
                itemsArchived: sql`0`,
                info: sql`'{}'`,
                settings: sql`${settings}`,
                createdAt: sql`CURRENT_TIMESTAMP`,
                version: sql`1`,
              })
              .from(accounts)
              // drizzle types insert-select fields as columns; these are bound values in column order.
              .where(
                and(
                  eq(accounts.id, caller.accountId),
                  sql`${used.companies} < ${accounts.maxCompanies}`,
                  fitsCeilings(caller.accountId, want),
                ),
              ) as never,
        )
        .returning(),
      db.insert(departments).select(
        (qb) =>
          qb
            .select({
              id: sql`NULL`,
              companyId: sql`last_insert_rowid()`,
              name: sql`${DEFAULT_DEPARTMENT_NAME}`,
              nameKey: sql`${nameKey(DEFAULT_DEPARTMENT_NAME)}`,
              isDefault: sql`1`,
              contactsUsed: sql`0`,
              docsUsed: sql`0`,
              storageUsedKb: sql`0`,
              createdAt: sql`CURRENT_TIMESTAMP`,
              version: sql`1`,
            })
            .from(accounts)
            .where(and(eq(accounts.id, caller.accountId), sql`changes() = 1`)) as never,
      ),
      db.insert(contactGroups).select(
        (qb) =>
          qb
            .select({
              id: sql`NULL`,
              companyId: departments.companyId,
              deptId: departments.id,
              name: sql`${DEFAULT_GROUP_NAME}`,
              nameKey: sql`${nameKey(DEFAULT_GROUP_NAME)}`,
              isDefault: sql`1`,
              createdAt: sql`CURRENT_TIMESTAMP`,
              version: sql`1`,
            })
            .from(departments)
            .where(sql`${departments.id} = last_insert_rowid() AND changes() = 1`) as never,
      ),
    ]);
    const row = (inserted as CompanyRow[])[0];
    if (row) return row;
    const problem = await allocationProblem(db, caller.accountId, want);
    if (problem) throw badRequest(problem);
  }
  throw lostCompanyRace();
}

export async function updateCompany(
  db: Db,
  caller: Caller,
  companyId: number,
  input: UpdateCompanyInput,
): Promise<CompanyRow> {
  const want = { documents: input.documents_limit, contacts: input.contacts_limit, driveMb: mbOf(input.drive_space) };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    // Limits may not fall below what the company holds, nor pass the ceilings next to the
    // account's other companies: both checked by the UPDATE itself.
    const [[row]] = await db.commit([
      db
        .update(companies)
        .set({
          name: input.company_name,
          documentsLimit: want.documents,
          contactsLimit: want.contacts,
          driveSpaceMb: want.driveMb,
        })
        .where(
          and(
            inAccount(caller, companyId),
            sql`${want.documents} >= ${companies.documentsUsed} AND ${want.contacts} >= ${companies.contactsUsed}
              AND ${want.driveMb * 1024} >= ${companies.driveSpaceUsedKb}`,
            sql`EXISTS (SELECT 1 FROM ${accounts} WHERE ${accounts.id} = ${caller.accountId} AND ${fitsCeilings(caller.accountId, want, companyId)})`,
          ),
        )
        .returning(),
    ]);
    if (row) return row;
    const current = await getCompany(db, caller, companyId);
    const problem = await allocationProblem(db, caller.accountId, want, current);
    if (problem) throw badRequest(problem);
  }
  throw lostCompanyRace();
}

/** Profile fields are merged into the stored object by the UPDATE itself (json_patch), so concurrent patches of different fields both land. */
export async function updateCompanyInfo(
  db: Db,
  caller: Caller,
  companyId: number,
  input: UpdateCompanyInfoInput,
): Promise<CompanyRow> {
  const patch = JSON.stringify(Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
  const [[row]] = await db.commit([
    db
      .update(companies)
      .set({ info: sql`json_patch(${companies.info}, ${patch})` })
      .where(inAccount(caller, companyId))
      .returning(),
  ]);
  if (!row) throw notFound("Company");
  return row;
}

export async function updateCompanySettings(
  db: Db,
  caller: Caller,
  companyId: number,
  input: UpdateCompanySettingsInput,
): Promise<CompanyRow> {
  const patch = JSON.stringify(Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)));
  const [[row]] = await db.commit([
    db
      .update(companies)
      .set({ settings: sql`json_patch(${companies.settings}, ${patch})` })
      .where(inAccount(caller, companyId))
      .returning(),
  ]);
  if (!row) throw notFound("Company");
  return row;
}

export async function makeDefaultCompany(db: Db, caller: Caller, companyId: number): Promise<CompanyRow> {
  const exists = sql`EXISTS (SELECT 1 FROM companies AS c WHERE c.id = ${companyId} AND c.account_id = ${caller.accountId})`;
  const [, [row]] = await db.commit([
    db
      .update(companies)
      .set({ isDefault: 0 })
      .where(
        and(eq(companies.accountId, caller.accountId), eq(companies.isDefault, 1), ne(companies.id, companyId), exists),
      ),
    db.update(companies).set({ isDefault: 1 }).where(inAccount(caller, companyId)).returning(),
  ]);
  if (!row) throw notFound("Company");
  return row;
}

/**
 * What a company holds beyond what the service created for it (its default department and that
 * department's default group): while any of it exists, the company is not deleted. One SQL
 * condition, so the deleting statements re-check it; extend it as resources are added.
 */
function holdsNothingMore(companyId: number): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM contacts WHERE company_id = ${companyId})
    AND NOT EXISTS (SELECT 1 FROM departments WHERE company_id = ${companyId} AND is_default = 0)
    AND NOT EXISTS (SELECT 1 FROM contact_groups AS g WHERE g.company_id = ${companyId}
      AND NOT (g.is_default = 1 AND g.dept_id IN (SELECT id FROM departments WHERE company_id = ${companyId} AND is_default = 1)))
    AND NOT EXISTS (SELECT 1 FROM document_types WHERE company_id = ${companyId})
    AND NOT EXISTS (SELECT 1 FROM folders WHERE company_id = ${companyId})
    AND NOT EXISTS (SELECT 1 FROM files WHERE company_id = ${companyId})
    AND NOT EXISTS (SELECT 1 FROM tasks WHERE company_id = ${companyId})
    AND NOT EXISTS (SELECT 1 FROM companies WHERE id = ${companyId} AND (documents_used > 0 OR drive_space_used_kb > 0))`;
}

/** A readable list of what a company still holds, for the refusal message. */
async function holdings(db: Db, companyId: number): Promise<string> {
  const counts = await db.get<{
    contacts: number;
    departments: number;
    groups: number;
    types: number;
    folders: number;
    tasks: number;
    documents: number;
    files: number;
  }>(sql`SELECT
      (SELECT count(*) FROM contacts WHERE company_id = ${companyId}) AS contacts,
      (SELECT count(*) FROM departments WHERE company_id = ${companyId} AND is_default = 0) AS departments,
      (SELECT count(*) FROM contact_groups AS g WHERE g.company_id = ${companyId}
        AND NOT (g.is_default = 1 AND g.dept_id IN (SELECT id FROM departments WHERE company_id = ${companyId} AND is_default = 1))) AS groups,
      (SELECT count(*) FROM document_types WHERE company_id = ${companyId}) AS types,
      (SELECT count(*) FROM folders WHERE company_id = ${companyId}) AS folders,
      (SELECT count(*) FROM tasks WHERE company_id = ${companyId}) AS tasks,
      (SELECT documents_used FROM companies WHERE id = ${companyId}) AS documents,
      (SELECT count(*) FROM files WHERE company_id = ${companyId}) AS files`);
  const parts: string[] = [];
  const add = (n: number | undefined, one: string, many: string) => {
    if (n) parts.push(`${n} ${n === 1 ? one : many}`);
  };
  add(counts?.contacts, "contact", "contacts");
  add(counts?.departments, "other department", "other departments");
  add(counts?.groups, "other contact group", "other contact groups");
  add(counts?.types, "document type", "document types");
  add(counts?.folders, "folder", "folders");
  add(counts?.tasks, "task", "tasks");
  add(counts?.documents, "item", "items");
  add(counts?.files, "file", "files");
  return parts.join(", ");
}

export async function deleteCompany(db: Db, caller: Caller, companyId: number): Promise<void> {
  const company = await getCompany(db, caller, companyId);
  if (company.isDefault === 1)
    throw badRequest("The default company cannot be deleted: make another company the default first");
  // Every statement re-checks that the company is still deletable (not the default, holding
  // nothing more), so a record created meanwhile leaves everything in place.
  const deletable = sql`EXISTS (SELECT 1 FROM companies AS c WHERE c.id = ${companyId} AND c.account_id = ${caller.accountId} AND c.is_default = 0)
    AND ${holdsNothingMore(companyId)}`;
  const statements = [
    // Its API clients go with it: no token of the company works afterwards.
    db.delete(apiClients).where(and(eq(apiClients.companyId, companyId), deletable)),
    db.delete(contactGroups).where(and(eq(contactGroups.companyId, companyId), deletable)),
    db.delete(departments).where(and(eq(departments.companyId, companyId), deletable)),
    // Its reminder sequences too (configuration, not records: they do not keep it from being deleted).
    db.delete(reminderSequences).where(and(eq(reminderSequences.companyId, companyId), deletable)),
    // Its webhook endpoints and any events still waiting in the outbox (configuration too).
    db.delete(webhookEndpoints).where(and(eq(webhookEndpoints.companyId, companyId), deletable)),
    db.delete(webhookEvents).where(and(eq(webhookEvents.companyId, companyId), deletable)),
    // Its channel endpoints (configuration).
    db.delete(channelEndpoints).where(and(eq(channelEndpoints.companyId, companyId), deletable)),
    // Its calendar feeds (their URLs answer 404 at once) and import jobs (their errors cascade).
    db.delete(calendarFeeds).where(and(eq(calendarFeeds.companyId, companyId), deletable)),
    // Its reminder templates (configuration).
    db.delete(reminderTemplates).where(and(eq(reminderTemplates.companyId, companyId), deletable)),
    db.delete(imports).where(and(eq(imports.companyId, companyId), deletable)),
    db.delete(companyRevisions).where(and(eq(companyRevisions.companyId, companyId), deletable)),
    db
      .delete(companies)
      .where(and(inAccount(caller, companyId), eq(companies.isDefault, 0), deletable))
      .returning({ id: companies.id }),
  ];
  const results = await db.commit(statements);
  if ((results[results.length - 1] as Array<{ id: number }>).length > 0) return;
  const now = await getCompany(db, caller, companyId);
  if (now.isDefault === 1)
    throw badRequest("The default company cannot be deleted: make another company the default first");
  const what = await holdings(db, companyId);
  if (what) throw badRequest(`Company ${companyId} still holds ${what}: delete or move them first`);
  throw lostCompanyRace();
}
