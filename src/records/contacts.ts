import { and, asc, count, eq, inArray, isNull, sql, type SQL } from "drizzle-orm";
import { getCountryCallingCode, type CountryCode } from "libphonenumber-js/min";
import { isForeignKeyViolation, isUniqueViolation, type Db } from "../db/client";
import { jsonField, jsonRowsInsert, rowOf, type ColumnsMade } from "../db/json-rows";
import { selectDepartment } from "../db/departments";
import { cappedListPage, countUpTo, listPage } from "../db/pages";
import { companies, contactGroups, contacts, tasks, type ContactRow } from "../db/schema";
import { channelProblem } from "../company-clock/channels";
import type { Env } from "../env";
import { parseChannels, type ContactChannel } from "../lib/contact-preferences";
import { badRequest, conflict, notFound } from "../lib/errors";
import { MAX_EXACT_SEARCH_TOTAL, matchExpression, searchWords } from "../lib/search";
import { nameKey } from "../lib/text-key";
import type { ContactOutput, CreateContactInput, ListContactsInput, UpdateContactInput } from "../schemas/contacts";

export function contactOutput(row: ContactRow): ContactOutput {
  return {
    contact_id: row.id,
    firstname: row.firstName,
    lastname: row.lastName,
    email: row.email,
    groupid: row.groupId ?? 0,
    deptid: row.deptId,
    country_code: row.countryCode,
    mobile_code: row.mobileCode,
    phone_number: row.phoneNumber,
    iso: row.iso,
    add_date: row.createdAt,
    email_status: row.emailStatus,
    email_status_changed_at: row.emailStatusChangedAt,
    language: row.language,
    digest: row.digest,
    digest_weekday: row.digestWeekday,
    channels: parseChannels(row.channels),
  };
}

/** 400 naming `channels` when one of them is not delivered by this deployment (`chat` always is: channel endpoints are per company). */
export function checkContactChannels(env: Env, channels: ContactChannel[] | null | undefined): void {
  for (const channel of channels ?? []) {
    if (channel === "chat") continue;
    const problem = channelProblem(env, channel);
    if (problem) throw badRequest(`channels: ${problem}`);
  }
}

/** The CHECK of digest_weekday (migration 0027): a write that leaves it inconsistent with digest. */
const isWeekdayMismatch = (err: unknown) => String((err as Error)?.message ?? err).includes("contacts_digest_weekday");

/** The 400 of a PATCH that leaves digest_weekday inconsistent with the stored digest. */
function weekdayMismatch(input: UpdateContactInput) {
  return input.digest_weekday !== undefined
    ? badRequest("digest_weekday is only allowed while digest is weekly: send digest weekly with it")
    : badRequest("digest_weekday is required when digest is weekly");
}

const EMAIL_UNIQUE = "contacts.email_key";
/** Now as email_status_changed_at holds it: RFC 3339, UTC, milliseconds. */
export const NOW_ISO = sql.raw("strftime('%Y-%m-%dT%H:%M:%fZ', 'now')");
const duplicateEmail = (email: string) => conflict(`A contact with email ${email} already exists`);

/** The list's filters, without its window: what the export takes too. */
export type ContactFilterInput = Omit<ListContactsInput, "limit" | "offset">;

/**
 * The conditions of the contact list and the contact export: the company and every filter. Null
 * when `q` has no searchable word (nothing matches).
 */
export function contactFilter(companyId: number, query: ContactFilterInput): SQL[] | null {
  const conditions: SQL[] = [eq(contacts.companyId, companyId)];
  if (query.deptid !== undefined) conditions.push(eq(contacts.deptId, query.deptid));
  if (query.groupid !== undefined) {
    conditions.push(query.groupid === 0 ? isNull(contacts.groupId) : eq(contacts.groupId, query.groupid));
  }
  if (query.q) {
    const match = matchExpression(companyId, query.q);
    if (!match) return null;
    conditions.push(sql`${contacts.id} IN (SELECT rowid FROM contacts_search WHERE contacts_search MATCH ${match})`);
  }
  return conditions;
}

export async function listContacts(db: Db, companyId: number, query: ListContactsInput) {
  const none = { rows: [], meta: { total: 0, limit: query.limit, offset: query.offset, total_exact: true } };
  if (query.q) {
    const queries = contactSearchQueries(db, companyId, query);
    if (!queries) return none;
    return cappedListPage(db, query, queries);
  }
  const conditions = contactFilter(companyId, query)!;
  const where = and(...conditions);
  const result = await listPage(
    db,
    query,
    db.select().from(contacts).where(where).orderBy(asc(contacts.id)).limit(query.limit).offset(query.offset),
    // Unfiltered, the total is the company's trigger-maintained counter instead of a COUNT(*).
    conditions.length > 1
      ? db.select({ n: count() }).from(contacts).where(where)
      : db.select({ n: companies.contactsUsed }).from(companies).where(eq(companies.id, companyId)),
  );
  return { rows: result.rows, meta: { ...result.meta, total_exact: true } };
}

/**
 * A list with `q`: the company's matches stream from contacts_search in contact_id order (its
 * rowid), and only the other filters read the contact row. A page stops after its `limit` hits
 * and the total after the cap + 1 matches, whatever the term (docs/search.md).
 */
export function contactSearchQueries(db: Db, companyId: number, query: ListContactsInput) {
  const match = matchExpression(companyId, query.q!);
  if (!match) return null;
  const rest = contactFilter(companyId, { ...query, q: undefined })!;
  const matching = sql`contacts_search MATCH ${match}`;
  const onContact = sql`${contacts.id} = contacts_search.rowid`;
  const firstMatches =
    rest.length > 1
      ? db
          .select({ one: sql`1` })
          .from(sql`contacts_search`)
          .innerJoin(contacts, onContact)
          .where(and(matching, ...rest))
      : db.select({ one: sql`1` }).from(sql`contacts_search`).where(matching);
  // Without other filters the page's ids come from the postings alone: an offset skips postings, not rows.
  const ids =
    rest.length > 1
      ? db
          .select({ id: contacts.id })
          .from(sql`contacts_search`)
          .innerJoin(contacts, onContact)
          .where(and(matching, ...rest))
          .orderBy(sql`contacts_search.rowid`)
          .limit(query.limit)
          .offset(query.offset)
      : db
          .select({ id: sql<number>`contacts_search.rowid` })
          .from(sql`contacts_search`)
          .where(matching)
          .orderBy(sql`contacts_search.rowid`)
          .limit(query.limit)
          .offset(query.offset);
  return {
    ids,
    page: db
      .select()
      .from(contacts)
      .where(and(eq(contacts.companyId, companyId), inArray(contacts.id, ids)))
      .orderBy(asc(contacts.id)),
    total: countUpTo(db, firstMatches, MAX_EXACT_SEARCH_TOTAL),
    cap: MAX_EXACT_SEARCH_TOTAL,
  };
}

export async function getContact(db: Db, companyId: number, contactId: number): Promise<ContactRow> {
  const row = await db
    .select()
    .from(contacts)
    .where(and(eq(contacts.id, contactId), eq(contacts.companyId, companyId)))
    .get();
  if (!row) throw notFound("Contact");
  return row;
}

function groupInCompany(db: Db, companyId: number, groupId: number) {
  return db
    .select({ id: contactGroups.id, deptId: contactGroups.deptId })
    .from(contactGroups)
    .where(and(eq(contactGroups.id, groupId), eq(contactGroups.companyId, companyId)));
}

/** Resolves the department and group a new contact lands in, in one round trip. */
async function placeNewContact(db: Db, companyId: number, input: CreateContactInput) {
  const deptQuery = selectDepartment(db, companyId, input.deptid);
  // The named group, or else the default group of the target department.
  const groupQuery = input.groupid
    ? groupInCompany(db, companyId, input.groupid)
    : db
        .select({ id: contactGroups.id, deptId: contactGroups.deptId })
        .from(contactGroups)
        .where(
          and(
            eq(contactGroups.companyId, companyId),
            eq(contactGroups.isDefault, 1),
            sql`${contactGroups.deptId} = (${deptQuery})`,
          ),
        );
  const [[dept], [group]] = await db.batch([deptQuery, groupQuery]);

  if (input.deptid !== undefined && !dept) throw badRequest(`deptid ${input.deptid} does not exist`);
  if (input.groupid) {
    if (!group) throw badRequest(`groupid ${input.groupid} does not exist`);
    if (input.deptid !== undefined && group.deptId !== input.deptid) {
      throw badRequest(`groupid ${input.groupid} does not belong to deptid ${input.deptid}`);
    }
    return { deptId: group.deptId, groupId: group.id };
  }
  if (!dept) throw badRequest("The company has no default department; send deptid");
  return { deptId: dept.id, groupId: input.groupid === 0 ? null : (group?.id ?? null) };
}

/** A placement is still valid when its group (if any) is in the company and in its department. */
function placementHolds(companyId: number, placement: { deptId: number; groupId: number | null }) {
  if (placement.groupId === null) return sql`1`;
  return sql`EXISTS (SELECT 1 FROM ${contactGroups} WHERE ${contactGroups.id} = ${placement.groupId}
    AND ${contactGroups.companyId} = ${companyId} AND ${contactGroups.deptId} = ${placement.deptId})`;
}

// ---- the one writer of new contact rows: POST /v1/contacts and the importer (src/imports/contacts.ts) ----

/** A new contact as a writer describes it (checked already: CreateContactSchema). */
export interface NewContact {
  companyId: number;
  deptId: number;
  groupId: number | null;
  firstName: string;
  lastName: string;
  email: string;
  /** The email's key as the writer compared it (default: nameKey of the email). */
  emailKey?: string;
  countryCode?: string;
  iso?: string;
  mobileCode?: string;
  phoneNumber?: string;
  language?: string | null;
  digest?: string;
  digestWeekday?: string | null;
  channels?: ContactChannel[] | null;
  /** The importer's place of the row among its chunk's creations (its room check). */
  nth?: number;
}

/** The values of a new contact row as the statement reads them from its JSON (`$.<column name>`). */
export function newContactRow(c: NewContact): Record<string, unknown> {
  const phoneNumber = c.phoneNumber ?? "";
  return {
    company_id: c.companyId,
    dept_id: c.deptId,
    group_id: c.groupId,
    first_name: c.firstName,
    last_name: c.lastName,
    email: c.email,
    email_key: c.emailKey ?? nameKey(c.email),
    country_code: c.countryCode ?? "",
    iso: c.iso ?? "",
    mobile_code: c.mobileCode ?? "",
    phone_number: phoneNumber,
    search_words: contactWords({ firstName: c.firstName, lastName: c.lastName, email: c.email, phoneNumber }),
    language: c.language ?? null,
    digest: c.digest ?? "off",
    digest_weekday: c.digest === "weekly" ? (c.digestWeekday ?? null) : null,
    channels: c.channels ? JSON.stringify(c.channels) : null,
    nth: c.nth ?? null,
  };
}

/** How each column of a new contact is made, over `r` (the row's JSON `r.v`). */
const NEW_CONTACT: ColumnsMade<typeof contacts> = {
  id: null,
  companyId: jsonField("company_id"),
  deptId: jsonField("dept_id"),
  groupId: jsonField("group_id"),
  firstName: jsonField("first_name"),
  lastName: jsonField("last_name"),
  email: jsonField("email"),
  emailKey: jsonField("email_key"),
  countryCode: jsonField("country_code"),
  iso: jsonField("iso"),
  mobileCode: jsonField("mobile_code"),
  phoneNumber: jsonField("phone_number"),
  searchWords: jsonField("search_words"),
  createdAt: "CURRENT_TIMESTAMP",
  updatedAt: "CURRENT_TIMESTAMP",
  version: "1",
  emailStatus: "'active'",
  emailStatusChangedAt: "NULL",
  language: jsonField("language"),
  digest: jsonField("digest"),
  digestWeekday: jsonField("digest_weekday"),
  channels: jsonField("channels"),
};

/**
 * Which rows a statement writes: `placement`, POST's (the company under its contacts_limit, and the
 * group, if any, still in the company and in the contact's department); `room`, the importer's (a
 * row creates only while the company has room for its `nth` place among the chunk's creations).
 */
const CONTACT_GUARDS = {
  placement: `EXISTS (SELECT 1 FROM companies AS c WHERE c.id = n.company_id AND c.contacts_used < c.contacts_limit)
      AND (n.group_id IS NULL OR EXISTS (SELECT 1 FROM contact_groups AS g WHERE g.id = n.group_id AND g.company_id = n.company_id AND g.dept_id = n.dept_id))`,
  room: "n.nth <= (SELECT max(0, c.contacts_limit - c.contacts_used) FROM companies AS c WHERE c.id = n.company_id)",
};
const contactTexts = new Map<string, string>();

/** The statement that inserts `rows` (from `newContactRow`) as `guard` allows; `returning`: answer them (`rowOf`). */
export function insertContacts(
  d1: D1Database,
  rows: Array<Record<string, unknown>>,
  guard: keyof typeof CONTACT_GUARDS,
  returning: boolean,
): D1PreparedStatement {
  const key = `${guard}:${returning}`;
  let text = contactTexts.get(key);
  if (!text)
    contactTexts.set(
      key,
      (text = jsonRowsInsert(contacts, NEW_CONTACT, {
        guard: CONTACT_GUARDS[guard],
        returning,
        more: { nth: jsonField("nth") },
      })),
    );
  return d1.prepare(text).bind(JSON.stringify(rows));
}

/**
 * One guarded INSERT: it writes only while the company is under its contacts_limit and the
 * placement read a moment ago still holds. Returns undefined when either check failed (or the
 * group or department vanished in between: a foreign-key failure).
 */
async function insertContact(
  db: Db,
  companyId: number,
  input: CreateContactInput,
  placement: { deptId: number; groupId: number | null },
) {
  const row = newContactRow({
    companyId,
    deptId: placement.deptId,
    groupId: placement.groupId,
    firstName: input.first_name,
    lastName: input.last_name,
    email: input.email,
    countryCode: input.country_code,
    iso: input.iso,
    mobileCode: input.mobile_code,
    phoneNumber: input.phone_number,
    language: input.language,
    digest: input.digest,
    digestWeekday: input.digest_weekday,
    channels: input.channels,
  });
  try {
    const [inserted] = await db.commit([insertContacts(db.d1, [row], "placement", true)]);
    const raw = inserted.results[0];
    return raw && rowOf(contacts, raw);
  } catch (err) {
    if (isUniqueViolation(err, EMAIL_UNIQUE)) throw duplicateEmail(input.email);
    if (isForeignKeyViolation(err)) return undefined;
    throw err;
  }
}

export async function createContact(db: Db, companyId: number, input: CreateContactInput): Promise<ContactRow> {
  for (let attempt = 1; ; attempt++) {
    const placement = await placeNewContact(db, companyId, input);
    const row = await insertContact(db, companyId, input, placement);
    if (row) return row;
    const company = await db
      .select({ used: companies.contactsUsed, limit: companies.contactsLimit })
      .from(companies)
      .where(eq(companies.id, companyId))
      .get();
    if (!company || company.used >= company.limit) {
      throw badRequest(`Contact limit reached: the company may hold at most ${company?.limit ?? 0} contacts`);
    }
    // The group moved or vanished after it was read: place the contact again (the next read
    // reports a vanished group as a 400), and give up with a 409 when it keeps changing.
    if (attempt === 2)
      throw conflict("The contact's group changed while the contact was being saved; retry the request");
  }
}

/** The fields search reads. */
const SEARCHED = ["firstName", "lastName", "email", "phoneNumber"] as const;

/** `search_words` of a contact: the words of its names, email and phone number. */
export const contactWords = (c: Pick<ContactRow, (typeof SEARCHED)[number]>) =>
  searchWords(c.firstName, c.lastName, c.email, c.phoneNumber);

export async function updateContact(
  db: Db,
  companyId: number,
  contactId: number,
  input: UpdateContactInput,
): Promise<ContactRow> {
  const changes: Partial<typeof contacts.$inferInsert> = {};
  const statusReset: { emailStatus?: SQL; emailStatusChangedAt?: SQL } = {};
  if (input.first_name !== undefined) changes.firstName = input.first_name;
  if (input.last_name !== undefined) changes.lastName = input.last_name;
  if (input.email !== undefined) {
    changes.email = input.email;
    changes.emailKey = nameKey(input.email);
    // bounced and complained belong to the old address: a new address starts active; unsubscribed
    // is the person's choice and stays (docs/api-notes.md, "Unsubscribe and re-subscription").
    const reset = sql`${contacts.emailStatus} IN ('bounced', 'complained') AND ${contacts.emailKey} IS NOT ${changes.emailKey}`;
    statusReset.emailStatus = sql`CASE WHEN ${reset} THEN 'active' ELSE ${contacts.emailStatus} END`;
    statusReset.emailStatusChangedAt = sql`CASE WHEN ${reset} THEN ${NOW_ISO} ELSE ${contacts.emailStatusChangedAt} END`;
  }
  if (input.language !== undefined) changes.language = input.language;
  if (input.digest !== undefined) {
    changes.digest = input.digest;
    if (input.digest !== "weekly") changes.digestWeekday = null;
  }
  if (input.digest_weekday !== undefined) changes.digestWeekday = input.digest_weekday;
  if (input.channels !== undefined) changes.channels = input.channels ? JSON.stringify(input.channels) : null;
  if (input.mobile_code !== undefined) changes.mobileCode = input.mobile_code;
  if (input.phone_number !== undefined) changes.phoneNumber = input.phone_number;
  if (input.country_code !== undefined || input.iso !== undefined) {
    changes.countryCode = input.country_code ?? "";
    changes.iso = input.iso ?? "";
  }
  if (input.countryid !== undefined) {
    const iso = input.countryid.toUpperCase() as CountryCode;
    changes.iso = iso;
    changes.countryCode = `+${getCountryCallingCode(iso)}`;
  }
  if (input.groupid === 0) changes.groupId = null;
  // The words come from all four searchable fields: those not changed must still be the ones read.
  const wordsHold: SQL[] = [];
  if (SEARCHED.some((field) => changes[field] !== undefined)) {
    const current = await getContact(db, companyId, contactId);
    changes.searchWords = contactWords({ ...current, ...changes });
    for (const field of SEARCHED) if (changes[field] === undefined) wordsHold.push(eq(contacts[field], current[field]));
  }
  for (let attempt = 1; ; attempt++) {
    let placement: { deptId: number; groupId: number | null } = { deptId: 0, groupId: null };
    if (input.groupid) {
      const group = await groupInCompany(db, companyId, input.groupid).get();
      if (!group) throw badRequest(`groupid ${input.groupid} does not exist`);
      placement = { deptId: group.deptId, groupId: group.id };
      changes.groupId = group.id;
      changes.deptId = group.deptId;
    }
    let updated: ContactRow | undefined;
    try {
      [[updated]] = await db.commit([
        db
          .update(contacts)
          .set({ ...changes, ...statusReset, updatedAt: sql`CURRENT_TIMESTAMP` })
          .where(
            and(
              eq(contacts.id, contactId),
              eq(contacts.companyId, companyId),
              ...wordsHold,
              placementHolds(companyId, placement),
            ),
          )
          .returning(),
      ]);
    } catch (err) {
      if (isUniqueViolation(err, EMAIL_UNIQUE)) throw duplicateEmail(input.email ?? "");
      if (isWeekdayMismatch(err)) throw weekdayMismatch(input);
      if (!isForeignKeyViolation(err)) throw err;
    }
    if (updated) return updated;
    await getContact(db, companyId, contactId); // 404 when the contact itself is gone
    if (attempt === 2)
      throw conflict("The contact's group changed while the contact was being saved; retry the request");
  }
}

/**
 * Unassigns the company's tasks assigned to the contact once it no longer exists (assignee_id is no
 * foreign key: it names a user or a contact). Sent in the contact's DELETE batch (docs/triggers.md,
 * "Business rules: SQL or TypeScript").
 */
export function unassignTasksOf(db: Db, companyId: number, contactId: number) {
  return db
    .update(tasks)
    .set({ assigneeType: null, assigneeId: null, updatedAt: sql`CURRENT_TIMESTAMP` })
    .where(
      and(
        eq(tasks.companyId, companyId),
        eq(tasks.assigneeId, contactId),
        eq(tasks.assigneeType, "contact"),
        sql`NOT EXISTS (SELECT 1 FROM ${contacts} WHERE ${contacts.id} = ${contactId})`,
      ),
    );
}

export async function deleteContact(db: Db, companyId: number, contactId: number): Promise<void> {
  const [deleted] = await db.commit([
    db
      .delete(contacts)
      .where(and(eq(contacts.id, contactId), eq(contacts.companyId, companyId)))
      .returning({ id: contacts.id }),
    unassignTasksOf(db, companyId, contactId),
  ]);
  if (deleted.length === 0) throw notFound("Contact");
}
