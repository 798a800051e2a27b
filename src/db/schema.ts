import { sql } from "drizzle-orm";
import { check, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { DIGESTS, EMAIL_STATUSES, WEEKDAYS } from "../lib/contact-preferences";

// Keep in step with migrations/*.sql; test/worker/schema.test.ts compares the two.
// Integer ids use AUTOINCREMENT so that an id is never handed out again after a delete.

const createdAt = () => text("created_at").notNull().default(sql`CURRENT_TIMESTAMP`);
// Bumped by a trigger on every UPDATE of the row (docs/triggers.md, version): guards If-Match writes, whose
// ETag was checked against the version read with it (src/db/commit.ts).
const version = () => integer("version").notNull().default(1);
// Tenancy columns: every row of company data carries its company (and account) id.
const companyId = () =>
  integer("company_id")
    .notNull()
    .references(() => companies.id);
const accountId = () =>
  integer("account_id")
    .notNull()
    .references(() => accounts.id);

/** A customer account: the owner user and the plan's ceilings across all its companies. */
export const accounts = sqliteTable("accounts", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  name: text("name").notNull(),
  ownerUserId: integer("owner_user_id"),
  maxCompanies: integer("max_companies").notNull(),
  maxDocuments: integer("max_documents").notNull(),
  maxContacts: integer("max_contacts").notNull(),
  maxDriveSpaceMb: integer("max_drive_space_mb").notNull(),
  maxDocumentTypes: integer("max_document_types").notNull(),
  createdAt: createdAt(),
  // 'read_only' while the account moves to another shard (docs/scale.md): writes are refused with 503;
  // 'moved' on the shard it left, until the clean-up deletes its rows: requests look it up in the directory.
  shardState: text("shard_state").notNull().default("active"),
});

export const users = sqliteTable(
  "users",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: accountId(),
    email: text("email").notNull(),
    name: text("name").notNull().default(""),
    createdAt: createdAt(),
  },
  (t) => [index("users_account_idx").on(t.accountId), uniqueIndex("users_email_uq").on(t.email)],
);

/** A company (tenant) with its quotas; `info` and `settings` are JSON objects. */
export const companies = sqliteTable(
  "companies",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: accountId(),
    name: text("name").notNull(),
    isDefault: integer("is_default").notNull().default(0),
    documentsLimit: integer("documents_limit").notNull(),
    documentsUsed: integer("documents_used").notNull().default(0),
    contactsLimit: integer("contacts_limit").notNull(),
    // Maintained by triggers on contacts (see migrations).
    contactsUsed: integer("contacts_used").notNull().default(0),
    driveSpaceMb: integer("drive_space_mb").notNull(),
    driveSpaceUsedKb: integer("drive_space_used_kb").notNull().default(0),
    // Archived items among documents_used (triggers): the unfiltered item list's total without a count.
    itemsArchived: integer("items_archived").notNull().default(0),
    info: text("info").notNull().default("{}"),
    settings: text("settings").notNull().default('{"timezone":"UTC","date_format":"YYYY-MM-DD"}'),
    createdAt: createdAt(),
    version: version(),
  },
  (t) => [
    index("companies_account_idx").on(t.accountId),
    uniqueIndex("companies_one_default_uq").on(t.accountId).where(sql`is_default = 1`),
  ],
);

export const departments = sqliteTable(
  "departments",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    name: text("name").notNull(),
    // Case-insensitive uniqueness key: nameKey(name) from src/lib/text-key.ts (Unicode case folding + NFC).
    nameKey: text("name_key"),
    isDefault: integer("is_default").notNull().default(0),
    // Usage counters, maintained by triggers (contacts) and by the items and files work.
    contactsUsed: integer("contacts_used").notNull().default(0),
    docsUsed: integer("docs_used").notNull().default(0),
    storageUsedKb: integer("storage_used_kb").notNull().default(0),
    createdAt: createdAt(),
    version: version(),
  },
  (t) => [
    uniqueIndex("departments_company_name_key_uq").on(t.companyId, t.nameKey),
    uniqueIndex("departments_one_default_uq").on(t.companyId).where(sql`is_default = 1`),
  ],
);

/** OAuth client credentials; the secret is stored only as a salted hash. */
export const apiClients = sqliteTable(
  "api_clients",
  {
    clientId: text("client_id").primaryKey(),
    name: text("name").notNull().default(""),
    secretHash: text("secret_hash").notNull(),
    secretSalt: text("secret_salt").notNull(),
    accountId: accountId(),
    companyId: companyId(),
    userId: integer("user_id")
      .notNull()
      .references(() => users.id),
    scopes: text("scopes").notNull(),
    active: integer("active").notNull().default(1),
    // Bumped by every revocation; a token carries the generation it was issued under and is
    // valid only while it matches, so reactivating a client never revives older tokens.
    tokenGeneration: integer("token_generation").notNull().default(0),
    // Failed token requests in the window that started at token_failures_since (unix s): past the
    // limit the token endpoint answers 429 until the window ends (src/auth/token-failures.ts).
    tokenFailures: integer("token_failures").notNull().default(0),
    tokenFailuresSince: integer("token_failures_since"),
    createdAt: createdAt(),
  },
  (t) => [index("api_clients_company_idx").on(t.companyId)],
);

export const contactGroups = sqliteTable(
  "contact_groups",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    name: text("name").notNull(),
    nameKey: text("name_key"),
    isDefault: integer("is_default").notNull().default(0),
    createdAt: createdAt(),
    version: version(),
  },
  (t) => [
    index("contact_groups_company_dept_idx").on(t.companyId, t.deptId),
    // The list's order (id) with the name key: `q` streams a page and counts from the index alone.
    index("contact_groups_company_id_name_idx").on(t.companyId, t.id, t.nameKey),
    uniqueIndex("contact_groups_dept_name_key_uq").on(t.deptId, t.nameKey),
    uniqueIndex("contact_groups_one_default_uq").on(t.deptId).where(sql`is_default = 1`),
  ],
);

export const contacts = sqliteTable(
  "contacts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    groupId: integer("group_id").references(() => contactGroups.id),
    firstName: text("first_name").notNull(),
    lastName: text("last_name").notNull(),
    email: text("email").notNull(),
    emailKey: text("email_key"),
    countryCode: text("country_code").notNull().default(""),
    iso: text("iso").notNull().default(""),
    mobileCode: text("mobile_code").notNull().default(""),
    phoneNumber: text("phone_number").notNull().default(""),
    // The words search finds the contact by (src/lib/search.ts); triggers index them (docs/search.md).
    searchWords: text("search_words").notNull().default("[]"),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull().default(sql`CURRENT_TIMESTAMP`),
    version: version(),
    // Whether reminder emails may go to this contact (src/lib/contact-preferences.ts); the migration
    // adds a column CHECK on the values (an ALTER TABLE cannot take drizzle's table-level check()).
    emailStatus: text("email_status", { enum: EMAIL_STATUSES }).notNull().default("active"),
    // ISO 8601 UTC instant of the last email_status change; null while it never changed.
    emailStatusChangedAt: text("email_status_changed_at"),
    // BCP 47 tag (canonical, its primary language supported: src/lib/languages.ts); null = the company's.
    language: text("language"),
    digest: text("digest", { enum: DIGESTS }).notNull().default("off"),
    // monday … sunday, set exactly when digest is weekly (a column CHECK in the migration).
    digestWeekday: text("digest_weekday", { enum: WEEKDAYS }),
    // JSON array of the contact channels the contact wants (email, sms); null = all.
    channels: text("channels"),
  },
  (t) => [
    index("contacts_company_idx").on(t.companyId),
    // Led by dept_id (ids are unique across companies): the deptid filter, and the foreign-key
    // check when a department is deleted, which looks contacts up by dept_id alone.
    index("contacts_dept_idx").on(t.deptId),
    index("contacts_company_group_idx").on(t.companyId, t.groupId),
    // For the foreign-key check when a contact group is deleted (it looks contacts up by group_id alone).
    index("contacts_group_idx").on(t.groupId),
    uniqueIndex("contacts_company_email_key_uq").on(t.companyId, t.emailKey),
    // The contacts on a digest, for the company clock's digest runs (src/company-clock/digests.ts).
    index("contacts_company_digest_idx").on(t.companyId, t.id).where(sql`digest <> 'off'`),
  ],
);

/** Document types of a company; `account_id` too, since the plan caps them per account. */
export const documentTypes = sqliteTable(
  "document_types",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: accountId(),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    name: text("name").notNull(),
    nameKey: text("name_key").notNull(),
    isDefault: integer("is_default").notNull().default(0),
    createdBy: integer("created_by")
      .notNull()
      .references(() => users.id),
    // Maintained by the items work (create, delete, moves between types).
    docsCount: integer("docs_count").notNull().default(0),
    createdAt: createdAt(),
    version: version(),
  },
  (t) => [
    index("document_types_account_idx").on(t.accountId),
    index("document_types_dept_idx").on(t.deptId),
    uniqueIndex("document_types_company_name_key_uq").on(t.companyId, t.nameKey),
    uniqueIndex("document_types_one_default_uq").on(t.companyId).where(sql`is_default = 1`),
  ],
);

/** Custom field definitions of a document type; `id` is the field's `autonum`. */
export const documentTypeFields = sqliteTable(
  "document_type_fields",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    typeId: integer("type_id")
      .notNull()
      .references(() => documentTypes.id),
    companyId: companyId(),
    fieldName: text("field_name").notNull(),
    fieldKey: text("field_key").notNull(),
    fieldType: text("field_type").notNull(),
    fieldData: text("field_data").notNull().default(""),
    private: integer("private").notNull().default(0),
    position: integer("position").notNull().default(0),
  },
  (t) => [
    uniqueIndex("document_type_fields_type_key_uq").on(t.typeId, t.fieldKey),
    index("document_type_fields_type_position_idx").on(t.typeId, t.position),
  ],
);

/** A company's folder tree; `parent_id` 0 is the top level (so sibling names can be unique). */
export const folders = sqliteTable(
  "folders",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    parentId: integer("parent_id").notNull().default(0),
    name: text("name").notNull(),
    nameKey: text("name_key").notNull(),
    description: text("description").notNull().default(""),
    createdAt: createdAt(),
    version: version(),
  },
  (t) => [
    uniqueIndex("folders_sibling_name_key_uq").on(t.companyId, t.parentId, t.nameKey),
    // The list's order (id) with the name key: a page streams without a sort, `q` counts from the index alone.
    index("folders_company_id_name_idx").on(t.companyId, t.id, t.nameKey),
    index("folders_dept_idx").on(t.deptId),
  ],
);

/**
 * Tracked items. Every list filter has an index that ends in (expiry_date, id), the list order,
 * so a page is an index range scan whatever the filter.
 */
export const items = sqliteTable(
  "items",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    documentTypeId: integer("document_type_id").references(() => documentTypes.id),
    folderId: integer("folder_id").references(() => folders.id),
    contactId: integer("contact_id").references(() => contacts.id, { onDelete: "set null" }),
    // The reminder sequence queued for the item (NULL: none). Not a foreign key: a deleted
    // sequence's items are moved to the company's default sequence in the same batch.
    seqId: integer("seq_id"),
    // The date relative reminders are computed from (NULL: expiry_date). PATCH moves it only with
    // reschedule_reminders; renew moves it and bumps schedule_epoch (the sequence is queued again).
    reminderAnchor: text("reminder_anchor"),
    scheduleEpoch: integer("schedule_epoch").notNull().default(1),
    title: text("title").notNull(),
    notes: text("notes").notNull().default(""),
    itemType: text("item_type").notNull().default("exp"),
    expiryDate: text("expiry_date").notNull(),
    status: text("status").notNull().default("pending"),
    archived: integer("archived").notNull().default(0),
    createdBy: integer("created_by").notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull().default(sql`CURRENT_TIMESTAMP`),
    version: version(),
    // The client's own key for the item (imports update the item whose external_id a row carries).
    externalId: text("external_id"),
    // The import row that last created or changed the item (import_id * 1,000,000 + row number):
    // lets an import's batch find the items it just inserted (docs/imports.md).
    importRef: integer("import_ref"),
    // The words of title and notes (src/lib/search.ts); triggers index them (docs/search.md).
    searchWords: text("search_words").notNull().default("[]"),
    // The recurrence rule (docs/recurrence.md): all NULL for a plain item. recur_anchor is the date
    // occurrences count from (k x every units after it, so the anchor's day is kept); recur_count
    // is the number of automatic renewals left (NULL: no limit).
    recurEvery: integer("recur_every"),
    recurUnit: text("recur_unit"),
    recurRenewOn: text("recur_renew_on"),
    recurUntil: text("recur_until"),
    recurCount: integer("recur_count"),
    recurAnchor: text("recur_anchor"),
    // The acknowledgement of the current occurrence (docs/reminders.md, "Acknowledgement and snooze"):
    // valid only while ack_epoch = schedule_epoch, so a renewal starts the new occurrence
    // unacknowledged (it also clears these in its own UPDATE). `acknowledgement` is the JSON the
    // detail shows: {at, by: {type, id}, via, note}.
    ackEpoch: integer("ack_epoch"),
    acknowledgement: text("acknowledgement"),
    // A snooze of the current occurrence, valid while snooze_epoch = schedule_epoch: nothing is sent
    // before snoozed_until (a date), then one reminder at the default hour, to snooze_contact_id when a
    // recipient snoozed from their page, else to the item's contact.
    snoozeEpoch: integer("snooze_epoch"),
    snoozedUntil: text("snoozed_until"),
    snoozeContactId: integer("snooze_contact_id"),
  },
  (t) => [
    // The list's acknowledged=true|false: the company's items by whether their current occurrence is
    // acknowledged, in (expiry_date, id) order (the expression is itemFilter's, character for character).
    index("items_company_ack_date_idx").on(
      t.companyId,
      t.archived,
      sql`(ack_epoch IS schedule_epoch)`,
      t.expiryDate,
      t.id,
    ),
    // The list's recurring=true: the company's recurring items in (expiry_date, id) order.
    index("items_company_recurring_idx")
      .on(t.companyId, t.archived, t.expiryDate, t.id)
      .where(sql`recur_every IS NOT NULL`),
    uniqueIndex("items_company_external_id_uq").on(t.companyId, t.externalId).where(sql`external_id IS NOT NULL`),
    uniqueIndex("items_import_ref_uq").on(t.importRef).where(sql`import_ref IS NOT NULL`),
    index("items_company_date_idx").on(t.companyId, t.archived, t.expiryDate, t.id),
    index("items_company_status_date_idx").on(t.companyId, t.archived, t.status, t.expiryDate, t.id),
    index("items_company_kind_date_idx").on(t.companyId, t.archived, t.itemType, t.expiryDate, t.id),
    // Led by the referenced id: they serve the foreign-key checks when a type, department, folder
    // or contact is deleted (which look items up by that column alone and would otherwise walk
    // every company's items), and, with archived and company_id next, the list filters by that
    // reference: an index seek in (expiry_date, id) order, and a count that reads only the index.
    // folder_id = 0 in the list ("no folder") seeks folder_id IS NULL for the company the same way.
    index("items_type_date_idx").on(t.documentTypeId, t.archived, t.companyId, t.expiryDate, t.id),
    index("items_dept_date_idx").on(t.deptId, t.archived, t.companyId, t.expiryDate, t.id),
    index("items_contact_date_idx").on(t.contactId, t.archived, t.companyId, t.expiryDate, t.id),
    index("items_folder_date_idx").on(t.folderId, t.archived, t.companyId, t.expiryDate, t.id),
    index("items_company_sequence_idx").on(t.companyId, t.seqId),
  ],
);

/** Earlier expiry dates of an item, one row per renewal. */
export const itemRenewals = sqliteTable(
  "item_renewals",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    itemId: integer("item_id")
      .notNull()
      .references(() => items.id, { onDelete: "cascade" }),
    companyId: companyId(),
    previousDate: text("previous_date").notNull(),
    newDate: text("new_date").notNull(),
    renewedBy: integer("renewed_by").notNull(),
    renewedAt: createdAt(),
    // manual (POST /renew), completed or expired (automatic, by the item's recurrence rule).
    reason: text("reason").notNull().default("manual"),
  },
  (t) => [index("item_renewals_item_idx").on(t.itemId)],
);

/** Per-company tag names; `items_count` is maintained by triggers on item_tags. */
export const tags = sqliteTable(
  "tags",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    name: text("name").notNull(),
    nameKey: text("name_key").notNull(),
    itemsCount: integer("items_count").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("tags_company_name_key_uq").on(t.companyId, t.nameKey),
    // The list (tags in use, by name) and its `q` count from the index alone.
    index("tags_company_name_count_idx").on(t.companyId, t.nameKey, t.itemsCount),
  ],
);

export const itemTags = sqliteTable(
  "item_tags",
  {
    itemId: integer("item_id")
      .notNull()
      .references(() => items.id, { onDelete: "cascade" }),
    tagId: integer("tag_id")
      .notNull()
      .references(() => tags.id),
    companyId: companyId(),
    position: integer("position").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.itemId, t.tagId] }), index("item_tags_tag_idx").on(t.tagId)],
);

// ---- reminders: sequences in D1; the reminders themselves live in each company's Durable Object ----

/** A company's reminder sequences: steps (JSON array of {period, unit, type, hour}) queued for new and renewed items. */
export const reminderSequences = sqliteTable(
  "reminder_sequences",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    name: text("name").notNull(),
    nameKey: text("name_key").notNull(),
    isDefault: integer("is_default").notNull().default(0),
    steps: text("steps").notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull().default(sql`CURRENT_TIMESTAMP`),
  },
  (t) => [
    uniqueIndex("reminder_sequences_company_name_key_uq").on(t.companyId, t.nameKey),
    uniqueIndex("reminder_sequences_company_default_uq").on(t.companyId).where(sql`is_default = 1`),
  ],
);

/**
 * The outbox between D1 and the reminder Durable Objects. Triggers on items (and on company
 * settings, as item_id 0) bump `version` in the same statement as the change; the Durable Object
 * records `synced_version` once it has applied that state. A row with version > synced_version is
 * a change the Durable Object has not seen yet: the cron sweep replays it.
 */
export const reminderSync = sqliteTable(
  "reminder_sync",
  {
    companyId: integer("company_id").notNull(),
    itemId: integer("item_id").notNull(),
    version: integer("version").notNull().default(1),
    syncedVersion: integer("synced_version").notNull().default(0),
    changedAt: integer("changed_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.companyId, t.itemId] }),
    index("reminder_sync_pending_idx").on(t.changedAt).where(sql`version > synced_version`),
    // A company's pending changes (alarm and sweep repair) without walking its whole outbox.
    index("reminder_sync_company_pending_idx").on(t.companyId).where(sql`version > synced_version`),
  ],
);

/** Each company's next reminder instant (ms), kept by its Durable Object; the cron sweep wakes overdue ones. */
export const reminderWakeups = sqliteTable(
  "reminder_wakeups",
  {
    companyId: integer("company_id").primaryKey(),
    dueAt: integer("due_at").notNull(),
  },
  (t) => [index("reminder_wakeups_due_idx").on(t.dueAt)],
);

// ---- search ----

/**
 * Every word longer than the FTS prefix indexes cover, behind its company's mark
 * (src/lib/search.ts): a long search term expands to the words that start with it. Written by the
 * search triggers; never pruned (a word no record has any more only expands to nothing).
 */
export const searchTerms = sqliteTable("search_terms", { term: text("term").primaryKey() });

// ---- tasks ----

export const tasks = sqliteTable(
  "tasks",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    publicId: text("public_id").notNull(),
    companyId: companyId(),
    itemId: integer("item_id").references(() => items.id, { onDelete: "set null" }),
    title: text("title").notNull(),
    description: text("description").notNull().default(""),
    status: text("status").notNull().default("open"),
    priority: text("priority").notNull().default("normal"),
    dueAt: text("due_at").notNull(),
    ownerId: integer("owner_id").notNull(),
    assigneeType: text("assignee_type"),
    assigneeId: integer("assignee_id"),
    createdBy: integer("created_by").notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull().default(sql`CURRENT_TIMESTAMP`),
    version: version(),
    /** Words of title and description (src/lib/search.ts), indexed by triggers in tasks_search. */
    searchWords: text("search_words").notNull().default("[]"),
  },
  (t) => [
    uniqueIndex("tasks_public_id_uq").on(t.publicId),
    index("tasks_company_due_idx").on(t.companyId, t.dueAt, t.id),
    index("tasks_company_status_due_idx").on(t.companyId, t.status, t.dueAt, t.id),
    // assignee_type last: the assignee_type list filter is answered from the index too.
    index("tasks_company_assignee_due_idx").on(t.companyId, t.assigneeId, t.dueAt, t.id, t.assigneeType),
    // Led by item_id: the SET NULL when an item is deleted, and the list's item_id filter.
    index("tasks_item_due_idx").on(t.itemId, t.companyId, t.dueAt, t.id),
  ],
);

/** Tasks per company and status, kept by triggers on tasks (docs/triggers.md): list totals without a count. */
export const taskCounts = sqliteTable(
  "task_counts",
  {
    companyId: integer("company_id").notNull(),
    status: text("status").notNull(),
    total: integer("total").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.status] })],
);

// ---- drive: file bytes in R2, their records here ----

export const files = sqliteTable(
  "files",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    publicId: text("public_id").notNull(),
    companyId: companyId(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id),
    folderId: integer("folder_id").references(() => folders.id, { onDelete: "set null" }),
    fileName: text("file_name").notNull(),
    contentType: text("content_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    sha256: text("sha256").notNull(),
    r2Key: text("r2_key").notNull(),
    createdBy: integer("created_by").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("files_public_id_uq").on(t.publicId),
    index("files_company_idx").on(t.companyId, t.id),
    index("files_dept_idx").on(t.deptId),
    index("files_folder_idx").on(t.folderId),
  ],
);

/** Upload sessions: the token is stored only as its SHA-256 hash; single use (used_at), expiring. */
export const uploadSessions = sqliteTable(
  "upload_sessions",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    tokenHash: text("token_hash").notNull(),
    companyId: companyId(),
    userId: integer("user_id").notNull(),
    deptId: integer("dept_id")
      .notNull()
      .references(() => departments.id, { onDelete: "cascade" }),
    folderId: integer("folder_id").references(() => folders.id, { onDelete: "set null" }),
    fileName: text("file_name").notNull(),
    contentType: text("content_type").notNull(),
    expiresAt: integer("expires_at").notNull(),
    usedAt: integer("used_at"),
    // KB held by the upload in progress (migration 0010): counted against the company's drive space until its file row exists.
    // Negative (-KB) once released unfinished (token expired, or the upload failed): holds nothing; its R2 object, if any, is
    // deleted with the session (src/records/drive/queries.ts, releaseAbandonedUploads). 0 when unclaimed or stored as a file.
    reservedKb: integer("reserved_kb").notNull().default(0),
    createdAt: createdAt(),
    // The API client that opened the session: the audit entry of the uploaded file names it.
    clientId: text("client_id"),
  },
  (t) => [
    uniqueIndex("upload_sessions_token_uq").on(t.tokenHash),
    // With expires_at (migration 0010): a company's spent sessions are pruned by an index range.
    index("upload_sessions_company_idx").on(t.companyId, t.expiresAt),
    index("upload_sessions_expires_idx").on(t.expiresAt),
    index("upload_sessions_dept_idx").on(t.deptId),
    index("upload_sessions_folder_idx").on(t.folderId),
    index("upload_sessions_reserved_idx").on(t.companyId, t.usedAt).where(sql`reserved_kb > 0`),
  ],
);

/** Files attached to items. */
export const itemFiles = sqliteTable(
  "item_files",
  {
    itemId: integer("item_id")
      .notNull()
      .references(() => items.id, { onDelete: "cascade" }),
    fileId: integer("file_id")
      .notNull()
      .references(() => files.id, { onDelete: "cascade" }),
    companyId: companyId(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.itemId, t.fileId] }),
    index("item_files_file_idx").on(t.fileId),
    index("item_files_company_idx").on(t.companyId),
  ],
);

// ---- webhooks (docs/webhooks.md) ----

/**
 * A company's webhook endpoints. The signing secret is stored encrypted (AES-GCM, key
 * WEBHOOK_SECRETS_KEY; src/webhooks/secrets.ts); after a rotation the previous one keeps signing
 * until previous_secret_expires_at (unix ms).
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    // JSON array of event types, or ["*"].
    events: text("events").notNull(),
    enabled: integer("enabled").notNull().default(1),
    secretCiphertext: text("secret_ciphertext").notNull(),
    previousSecretCiphertext: text("previous_secret_ciphertext"),
    previousSecretExpiresAt: integer("previous_secret_expires_at"),
    // Set when every delivery has failed since then (unix ms); cleared by a success.
    failingSince: integer("failing_since"),
    disabledReason: text("disabled_reason"),
    createdBy: integer("created_by").notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull().default(sql`CURRENT_TIMESTAMP`),
    version: version(),
  },
  (t) => [index("webhook_endpoints_company_idx").on(t.companyId, t.enabled, t.id)],
);

/**
 * What the company's reminder Durable Object last showed for an item (`{queued, sent}` as
 * GET /v1/items/{id} answers it), so that read needs no call to the object while nothing is pending
 * (docs/reminders.md, "The item's reminders in D1"). Written only by the object; `gen` (its own
 * counter) orders the writes, so an older one never replaces a newer one. `version` / `zone_version`
 * are the reminder_sync versions of the item and of the company's settings it reflects; `stale_at`
 * (Unix ms) the earliest instant it can change by itself (a reminder due, a delivery attempt).
 * `reminders` NULL: invalidated.
 */
export const itemReminderViews = sqliteTable(
  "item_reminder_views",
  {
    companyId: integer("company_id").notNull(),
    itemId: integer("item_id").notNull(),
    reminders: text("reminders"),
    version: integer("version").notNull(),
    zoneVersion: integer("zone_version").notNull(),
    gen: integer("gen").notNull(),
    staleAt: integer("stale_at"),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.itemId] })],
);

/**
 * The D1 event outbox: events of D1 changes (items, tasks, files), written by triggers in the same
 * statement as the change, only while the company has an enabled endpoint. The company's Durable
 * Object takes them (fan-out to endpoints, delivery, retries) and deletes them.
 */
export const webhookEvents = sqliteTable(
  "webhook_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: integer("company_id").notNull(),
    type: text("type").notNull(),
    // The event's `data`, as JSON (the API's own output shape).
    data: text("data").notNull(),
    // Unix ms.
    createdAt: integer("created_at").notNull(),
  },
  // created_at: the cron sweep finds companies whose events wait for more than 30 s (src/scheduled.ts).
  (t) => [
    index("webhook_events_company_idx").on(t.companyId, t.id),
    index("webhook_events_created_idx").on(t.createdAt),
  ],
);

export type ContactRow = typeof contacts.$inferSelect;
export type ItemRow = typeof items.$inferSelect;
export type FolderRow = typeof folders.$inferSelect;
export type CompanyRow = typeof companies.$inferSelect;
export type ContactGroupRow = typeof contactGroups.$inferSelect;
export type TaskRow = typeof tasks.$inferSelect;

// ---- idempotency and conditional writes (docs/idempotency.md) ----

/**
 * Idempotency-Key records: one per (company, client, key hash), kept 24 h. A running request holds
 * `lease` until `lease_until` (unix ms); every write it commits checks the lease and counts itself
 * in `applied` in the same batch. `body` is the response sealed with a key derived from the
 * Idempotency-Key, which is never stored.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: integer("company_id").notNull(),
    clientId: text("client_id").notNull(),
    keyHash: text("key_hash").notNull(),
    fingerprint: text("fingerprint").notNull(),
    operationId: text("operation_id").notNull(),
    state: text("state").notNull(),
    lease: text("lease").notNull(),
    leaseUntil: integer("lease_until").notNull(),
    applied: integer("applied").notNull().default(0),
    status: integer("status"),
    headers: text("headers"),
    body: text("body"),
    createdAt: integer("created_at").notNull(),
    expiresAt: integer("expires_at").notNull(),
    // Always 1: a write of the request sets it to "the row still holds my lease", and the CHECK
    // fails the whole batch when it does not (src/db/commit.ts).
    fence: integer("fence").notNull().default(1),
  },
  (t) => [
    uniqueIndex("idempotency_keys_scope_uq").on(t.companyId, t.clientId, t.keyHash),
    index("idempotency_keys_expires_idx").on(t.expiresAt),
    check("idempotency_lease_lost", sql`${t.fence} = 1`),
  ],
);

/**
 * Always empty: an If-Match write inserts a row here only when the record's version has changed,
 * and the CHECK then fails the whole batch (src/db/commit.ts).
 */
export const writeGuards = sqliteTable(
  "write_guards",
  {
    preconditionFailed: integer("precondition_failed"),
  },
  (t) => [check("precondition_failed", sql`${t.preconditionFailed} IS NULL`)],
);

/** An item's values of its document type's custom fields, by field (`autonum`). */
export const itemFieldValues = sqliteTable(
  "item_field_values",
  {
    itemId: integer("item_id")
      .notNull()
      .references(() => items.id, { onDelete: "cascade" }),
    fieldId: integer("field_id")
      .notNull()
      .references(() => documentTypeFields.id, { onDelete: "cascade" }),
    companyId: companyId(),
    value: text("value").notNull(),
  },
  (t) => [primaryKey({ columns: [t.itemId, t.fieldId] }), index("item_field_values_field_idx").on(t.fieldId)],
);

/**
 * Import jobs (docs/imports.md). The body waits in R2 under `body_key`; a Workflow instance named
 * after the id runs the job. `next_row` is how far the write steps have got: each step's batch moves
 * it on from exactly the value the step started from, and the CHECK on `fence` fails the batch when
 * it does not (the step already ran, or the job was canceled), so no row is written twice.
 */
export const imports = sqliteTable(
  "imports",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    clientId: text("client_id").notNull(),
    userId: integer("user_id").notNull(),
    resource: text("resource").notNull(),
    format: text("format").notNull(),
    status: text("status").notNull(),
    dryRun: integer("dry_run").notNull().default(0),
    onError: text("on_error").notNull(),
    dateFormat: text("date_format").notNull(),
    bodyKey: text("body_key").notNull(),
    bodyBytes: integer("body_bytes").notNull(),
    rows: integer("rows").notNull().default(0),
    valid: integer("valid").notNull().default(0),
    created: integer("created").notNull().default(0),
    updated: integer("updated").notNull().default(0),
    skipped: integer("skipped").notNull().default(0),
    failed: integer("failed").notNull().default(0),
    chunks: integer("chunks").notNull().default(0),
    nextRow: integer("next_row").notNull().default(0),
    message: text("message").notNull().default(""),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
    finishedAt: integer("finished_at"),
    fence: integer("fence").notNull().default(1),
    // The X-Request-Id of the request that created the job: the audit entries of its rows name it.
    requestId: text("request_id"),
  },
  (t) => [
    index("imports_company_idx").on(t.companyId, t.id),
    index("imports_status_updated_idx").on(t.status, t.updatedAt),
    check("import_step_replayed", sql`${t.fence} = 1`),
  ],
);

/** Row errors of an import: row numbers count from 1, the first data row. */
export const importErrors = sqliteTable(
  "import_errors",
  {
    importId: integer("import_id")
      .notNull()
      .references(() => imports.id, { onDelete: "cascade" }),
    rowNumber: integer("row_number").notNull(),
    column: text("column").notNull(),
    value: text("value").notNull(),
    message: text("message").notNull(),
  },
  (t) => [primaryKey({ columns: [t.importId, t.rowNumber, t.column] })],
);

/**
 * A counter per company that triggers move on every insert, update and delete of its items, folders
 * and document types: a calendar feed's ETag reads it instead of every item's version (one point read).
 */
export const companyRevisions = sqliteTable("company_revisions", {
  companyId: integer("company_id").primaryKey(),
  records: integer("records").notNull().default(0),
});

/** iCalendar feeds: the URL's token is shown once; only its SHA-256 is kept. */
export const calendarFeeds = sqliteTable(
  "calendar_feeds",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    companyId: companyId(),
    clientId: text("client_id").notNull(),
    tokenHash: text("token_hash").notNull(),
    filters: text("filters").notNull().default("{}"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("calendar_feeds_token_hash_uq").on(t.tokenHash),
    index("calendar_feeds_company_idx").on(t.companyId, t.id),
  ],
);

/**
 * A company's reminder email wording for one language (docs/languages.md, "Company templates"):
 * each text null keeps the default. At most one row per supported language.
 */
export const reminderTemplates = sqliteTable(
  "reminder_templates",
  {
    companyId: companyId(),
    language: text("language").notNull(),
    subject: text("subject"),
    intro: text("intro"),
    footer: text("footer"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.language] })],
);

// The directory (src/db/directory.ts, docs/scale.md): used in the home database (shard 0) only;
// every shard has the tables, since every shard runs the same migrations.

/** A client whose account is not on shard 0. */
export const directoryClients = sqliteTable("directory_clients", {
  clientId: text("client_id").primaryKey(),
  accountId: integer("account_id").notNull(),
  shard: integer("shard").notNull(),
});

/** A company whose rows are not on the shard that allocated its id (its account moved). */
export const directoryCompanies = sqliteTable(
  "directory_companies",
  {
    companyId: integer("company_id").primaryKey(),
    accountId: integer("account_id").notNull(),
    shard: integer("shard").notNull(),
  },
  (t) => [index("directory_companies_account_idx").on(t.accountId)],
);

/** Where each account lives when not on shard 0, and its moves (operator CLI: `shard list`). */
export const directoryAccounts = sqliteTable("directory_accounts", {
  accountId: integer("account_id").primaryKey(),
  shard: integer("shard").notNull(),
  movedAt: integer("moved_at"),
});

/**
 * A company whose rows are being copied into or deleted from this shard by `account move`
 * (scripts/lib/account-move.ts): the triggers that write other tables (counters, webhook events,
 * revisions, reminder sync, the default sequence) skip its rows, so a copy is exact and a clean-up
 * announces nothing. The search-index triggers still run. Empty outside a move.
 */
export const shardMoves = sqliteTable("shard_moves", {
  companyId: integer("company_id").primaryKey(),
  accountId: integer("account_id").notNull(),
  startedAt: integer("started_at").notNull(),
});

/**
 * The audit log (docs/audit-log.md): one row per change of a resource, written by triggers on the
 * resource tables in the same statement as the change (scripts/triggers/audit.ts, docs/triggers.md),
 * plus the token endpoint's issues and refusals. Never updated; the cron job deletes rows older than
 * a year. `at` is Unix ms; `before` / `after` hold only the fields that changed (JSON objects).
 */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    accountId: integer("account_id").notNull(),
    companyId: integer("company_id").notNull(),
    at: integer("at").notNull(),
    clientId: text("client_id"),
    userId: integer("user_id"),
    // The company of the actor's token (a company's owner can change the account's other companies).
    actorCompanyId: integer("actor_company_id"),
    requestId: text("request_id"),
    operationId: text("operation_id"),
    // The contact who acted from a reminder's page, and how the actor acted (api, link; null: the service).
    contactId: integer("contact_id"),
    via: text("via"),
    resourceType: text("resource_type").notNull(),
    resourceId: text("resource_id").notNull(),
    action: text("action").notNull(),
    before: text("before"),
    after: text("after"),
    // Entries written by a company clock: the key its outbox gave the entry, so a repeated handoff adds it once.
    sourceKey: text("source_key"),
  },
  (t) => [
    // The list: the account's entries newest first, and the time range as a seek.
    index("audit_log_account_at_idx").on(t.accountId, t.at, t.id),
    index("audit_log_account_resource_idx").on(t.accountId, t.resourceType, t.resourceId, t.at, t.id),
    index("audit_log_account_client_idx").on(t.accountId, t.clientId, t.at, t.id),
    // The retention prune: the oldest rows of every account.
    index("audit_log_at_idx").on(t.at),
    uniqueIndex("audit_log_source_key_uq").on(t.sourceKey).where(sql`source_key IS NOT NULL`),
  ],
);

/**
 * Who is writing: one row, inserted first and deleted last by every write batch of a request
 * (src/db/commit.ts), read by the audit triggers. Empty between batches; a write made without
 * it (the operator CLI, a migration) is logged with no actor.
 */
export const auditContext = sqliteTable(
  "audit_context",
  {
    slot: integer("slot").primaryKey(),
    accountId: integer("account_id"),
    companyId: integer("company_id"),
    at: integer("at").notNull(),
    clientId: text("client_id"),
    userId: integer("user_id"),
    requestId: text("request_id"),
    operationId: text("operation_id"),
    // A recipient acting from a reminder's page (no API client), and how the actor acted: api, link.
    contactId: integer("contact_id"),
    via: text("via"),
  },
  (t) => [check("audit_context_one_row", sql`${t.slot} = 1`)],
);
