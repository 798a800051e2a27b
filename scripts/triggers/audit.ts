// The audit family (docs/audit-log.md): which tables are the API's resources, which of their columns
// an entry shows under which API name, and the SQL that writes the entry in the same statement as
// the change. Part of the trigger catalogue (catalogue.ts, docs/triggers.md).
import { NOW_MS, type Row, type Trigger } from "./trigger.ts";

/** A column an entry shows: its API name, the SQL column, and whether it holds JSON (shown as JSON, not as a string). */
type Field = readonly [api: string, column: string, json?: "json"];

/** A table whose rows are a resource: one entry per insert, update of a shown field, and delete. */
interface Resource {
  table: string;
  type: string;
  /** The resource's id as clients know it (`{r}` stands for the row, old or new). */
  id: string;
  /** The account, when the row does not say it: looked up from its company. */
  account?: string;
  company: string;
  fields: readonly Field[];
  /** The changes that are entries (default all three). */
  events?: ReadonlyArray<"insert" | "update" | "delete">;
}

/** A table whose rows are part of another resource (an item's tags): an `updated` entry of the parent under `key`. */
interface Part {
  table: string;
  type: string;
  id: string;
  company: string;
  /** The pseudo-field's name, e.g. 'tags.' || tag_id. */
  key: string;
  /** That name in words (docs/triggers.md). */
  shown: string;
  /** Its value; NULL on the side where the row does not exist. */
  value: string;
  /** The parent row: a part deleted along with its parent (a cascade) adds nothing to the parent's `deleted` entry. */
  parent: string;
  /** Columns whose change is an update of the part (none: rows are only added and removed). */
  changes?: readonly string[];
}

const f = (api: string, column = api, json?: "json"): Field => (json ? [api, column, json] : [api, column]);

export const RESOURCES: readonly Resource[] = [
  {
    table: "companies",
    type: "company",
    id: "{r}.id",
    account: "{r}.account_id",
    company: "{r}.id",
    fields: [
      f("company_name", "name"),
      f("is_default"),
      f("documents_limit"),
      f("contacts_limit"),
      f("drive_space_mb"),
      f("info", "info", "json"),
      f("settings", "settings", "json"),
    ],
  },
  {
    table: "departments",
    type: "department",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [f("name"), f("is_default")],
  },
  {
    table: "contact_groups",
    type: "contact_group",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [f("group_name", "name"), f("deptid", "dept_id"), f("isdefault", "is_default")],
  },
  {
    table: "contacts",
    type: "contact",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [
      f("firstname", "first_name"),
      f("lastname", "last_name"),
      f("email"),
      f("deptid", "dept_id"),
      f("groupid", "group_id"),
      f("country_code"),
      f("iso"),
      f("mobile_code"),
      f("phone_number"),
      f("email_status"),
      f("language"),
      f("digest"),
      f("digest_weekday"),
      f("channels", "channels", "json"),
    ],
  },
  {
    table: "document_types",
    type: "document_type",
    id: "{r}.id",
    account: "{r}.account_id",
    company: "{r}.company_id",
    fields: [f("name"), f("deptid", "dept_id"), f("is_default")],
  },
  {
    table: "folders",
    type: "folder",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [f("folder_name", "name"), f("parentid", "parent_id"), f("deptid", "dept_id"), f("description")],
  },
  {
    table: "items",
    type: "item",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [
      f("title"),
      f("notes"),
      f("item_type"),
      f("expiry_date"),
      f("status"),
      f("archived"),
      f("deptid", "dept_id"),
      f("document_type_id"),
      f("folder_id"),
      f("contact_id"),
      f("seqid", "seq_id"),
      f("reminder_anchor"),
      f("external_id"),
      f("recurrence.every", "recur_every"),
      f("recurrence.unit", "recur_unit"),
      f("recurrence.renew_on", "recur_renew_on"),
      f("recurrence.until", "recur_until"),
      f("recurrence.count", "recur_count"),
      // An acknowledgement or snooze of the current occurrence (a renewal clears both).
      f("acknowledgement", "acknowledgement", "json"),
      f("snoozed_until"),
    ],
  },
  { table: "tags", type: "tag", id: "{r}.id", company: "{r}.company_id", fields: [f("name")] },
  {
    table: "reminder_sequences",
    type: "reminder_sequence",
    id: "{r}.id",
    company: "{r}.company_id",
    fields: [f("name"), f("is_default"), f("reminders", "steps", "json")],
  },
  {
    table: "tasks",
    type: "task",
    id: "{r}.public_id",
    company: "{r}.company_id",
    fields: [
      f("title"),
      f("description"),
      f("status"),
      f("priority"),
      f("due_at"),
      f("item_id"),
      f("assignee_type"),
      f("assignee_id"),
      f("ownerid", "owner_id"),
    ],
  },
  {
    table: "files",
    type: "file",
    id: "{r}.public_id",
    company: "{r}.company_id",
    // The bytes are in R2 and never in an entry; size and digest say which bytes they were.
    fields: [f("file_name"), f("content_type"), f("size_bytes"), f("sha256"), f("deptid", "dept_id"), f("folder_id")],
  },
  {
    table: "upload_sessions",
    type: "upload_session",
    id: "{r}.id",
    company: "{r}.company_id",
    // token_hash is a credential: never shown. Its use shows as the file's `created`; expired
    // sessions are pruned by the cron job, which is not a change anyone made.
    fields: [f("file_name"), f("content_type"), f("deptid", "dept_id"), f("folder_id"), f("expires_at")],
    events: ["insert"],
  },
  {
    table: "webhook_endpoints",
    type: "webhook",
    id: "{r}.id",
    company: "{r}.company_id",
    // The signing secrets are never shown; a rotation shows as previous_secret_expires_at.
    fields: [
      f("url"),
      f("description"),
      f("events", "events", "json"),
      f("enabled"),
      f("disabled_reason"),
      f("previous_secret_expires_at"),
    ],
  },
  {
    table: "channel_endpoints",
    type: "channel",
    id: "{r}.id",
    company: "{r}.company_id",
    // The URL and the access token are secrets: only their masked forms are shown, never the ciphertexts.
    fields: [
      f("type"),
      f("name"),
      f("url", "url_hint"),
      f("access_token", "token_hint"),
      f("language"),
      f("disabled"),
      f("disabled_reason"),
    ],
  },
  {
    table: "calendar_feeds",
    type: "calendar_feed",
    id: "{r}.id",
    company: "{r}.company_id",
    // The URL's token is a credential: never shown (only its hash is stored anyway).
    fields: [f("client_id"), f("filters", "filters", "json")],
  },
  {
    table: "imports",
    type: "import",
    id: "{r}.id",
    company: "{r}.company_id",
    // Progress counters move with every chunk: only the job's settings and its status are entries.
    fields: [f("resource"), f("format"), f("dry_run"), f("on_error"), f("date_format"), f("status")],
  },
  {
    table: "api_clients",
    type: "api_client",
    id: "{r}.client_id",
    account: "{r}.account_id",
    company: "{r}.company_id",
    // Secret hash and salt are never shown; failed-attempt counters are not changes of the client.
    fields: [f("name"), f("scopes"), f("active"), f("user_id"), f("token_generation")],
  },
  {
    table: "reminder_templates",
    type: "reminder_template",
    // One per company and language: the language is its id (GET /v1/reminder-templates/{language}).
    id: "{r}.language",
    company: "{r}.company_id",
    fields: [f("subject"), f("intro"), f("footer")],
  },
];

export const PARTS: readonly Part[] = [
  {
    table: "item_tags",
    type: "item",
    id: "{r}.item_id",
    company: "{r}.company_id",
    key: "'tags.' || {r}.tag_id",
    shown: "tags.<tag id>",
    value: "(SELECT name FROM tags WHERE id = {r}.tag_id)",
    parent: "SELECT 1 FROM items WHERE id = {r}.item_id",
  },
  {
    table: "item_files",
    type: "item",
    id: "{r}.item_id",
    company: "{r}.company_id",
    key: "'attachments.' || coalesce((SELECT public_id FROM files WHERE id = {r}.file_id), {r}.file_id)",
    shown: "attachments.<file id>",
    value: "coalesce((SELECT file_name FROM files WHERE id = {r}.file_id), '')",
    parent: "SELECT 1 FROM items WHERE id = {r}.item_id",
  },
  {
    table: "item_field_values",
    type: "item",
    id: "{r}.item_id",
    company: "{r}.company_id",
    key: "'fields.' || {r}.field_id",
    shown: "fields.<field id>",
    value: "{r}.value",
    parent: "SELECT 1 FROM items WHERE id = {r}.item_id",
    changes: ["value"],
  },
  {
    table: "document_type_fields",
    type: "document_type",
    id: "{r}.type_id",
    company: "{r}.company_id",
    key: "'fields.' || {r}.id",
    shown: "fields.<field id>",
    value:
      "json_object('field_name', {r}.field_name, 'field_type', {r}.field_type, " +
      "'field_data', {r}.field_data, 'private', {r}.private, 'position', {r}.position)",
    parent: "SELECT 1 FROM document_types WHERE id = {r}.type_id",
    changes: ["field_name", "field_type", "field_data", "private", "position"],
  },
];

/** Tables that are not resources of the API, and why. A test checks that every table is audited or listed here. */
export const NOT_AUDITED: Readonly<Record<string, string>> = {
  accounts: "the operator's (CLI), not the API's",
  users: "the operator's (CLI), not the API's",
  item_renewals: "the renewal is the item's own `updated` entry (expiry_date before and after)",
  item_reminder_views: "a cache of the company clock",
  reminder_sync: "the outbox to the company clock",
  reminder_wakeups: "the company clock's next alarm",
  webhook_events: "the event outbox (the change it announces has its own entry)",
  idempotency_keys: "request bookkeeping",
  write_guards: "never holds rows",
  import_errors: "a job's output",
  company_revisions: "a counter",
  task_counts: "a counter",
  search_terms: "search vocabulary",
  items_search: "search index",
  contacts_search: "search index",
  tasks_search: "search index",
  directory_accounts: "the directory (operator)",
  directory_clients: "the directory (operator)",
  directory_companies: "the directory (operator)",
  shard_moves: "an account move's marker",
  audit_log: "the log itself",
  audit_context: "the actor of the batch being written",
};

const row = (expr: string, r: Row) => expr.replaceAll("{r}", r);
/** A path json_remove finds nothing at: keeps the field. */
const KEEP = "'$.\"\"'";

function insertEntry(
  type: string,
  id: string,
  company: string,
  account: string | undefined,
  action: string,
  before: string,
  after: string,
): string {
  const accountExpr = account ?? `(SELECT account_id FROM companies WHERE id = ${company})`;
  return (
    "INSERT INTO `audit_log` (`account_id`, `company_id`, `at`, `client_id`, " +
    "`user_id`, `actor_company_id`, `request_id`, `operation_id`, `contact_id`, " +
    "`via`, `resource_type`, `resource_id`, `action`, `before`, `after`)\n" +
    `SELECT coalesce(ctx.account_id, ${accountExpr}, 0), ${company}, coalesce(ctx.at, ${NOW_MS}), ctx.client_id, ctx.user_id, ctx.company_id, ctx.request_id, ctx.operation_id, ctx.contact_id, ctx.via,\n` +
    `  '${type}', ${id}, '${action}', ${before}, ${after}\n` +
    "FROM (SELECT 1) LEFT JOIN `audit_context` AS ctx"
  );
}

const value = (field: Field, r: Row) => (field[2] === "json" ? `json(${r}.${field[1]})` : `${r}.${field[1]}`);
const object = (fields: readonly Field[], r: Row) =>
  `json_object(${fields.map((fl) => `'${fl[0]}', ${value(fl, r)}`).join(", ")})`;
/** The side's object without the fields that did not change. */
const changed = (fields: readonly Field[], r: Row) =>
  `json_remove(${object(fields, r)}, ${fields.map((fl) => `CASE WHEN old.${fl[1]} IS new.${fl[1]} THEN '$."${fl[0]}"' ELSE ${KEEP} END`).join(", ")})`;

const audit = (t: Omit<Trigger, "family" | "name" | "skipsShardMoves">): Trigger => ({
  name: `audit_${t.table}_after_${t.event.toLowerCase()}`,
  family: "audit",
  skipsShardMoves: true,
  ...t,
});

function resourceTriggers(t: Resource): Trigger[] {
  const [n, o] = [(e: string) => row(e, "new"), (e: string) => row(e, "old")];
  const account = (r: (e: string) => string) => (t.account ? r(t.account) : undefined);
  const shown = t.fields.map((fl) => fl[0]).join(", ");
  const triggers: Record<"insert" | "update" | "delete", Trigger> = {
    insert: audit({
      table: t.table,
      event: "INSERT",
      effect: `\`${t.type}\` \`created\` entry (${shown})`,
      body: [insertEntry(t.type, n(t.id), n(t.company), account(n), "created", "NULL", object(t.fields, "new"))],
    }),
    update: audit({
      table: t.table,
      event: "UPDATE",
      when: t.fields.map((fl) => `old.${fl[1]} IS NOT new.${fl[1]}`).join(" OR "),
      effect: `\`${t.type}\` \`updated\` entry with the shown fields that changed; none when only other columns change`,
      body: [
        insertEntry(
          t.type,
          n(t.id),
          n(t.company),
          account(n),
          "updated",
          changed(t.fields, "old"),
          changed(t.fields, "new"),
        ),
      ],
    }),
    delete: audit({
      table: t.table,
      event: "DELETE",
      effect: `\`${t.type}\` \`deleted\` entry`,
      body: [insertEntry(t.type, o(t.id), o(t.company), account(o), "deleted", object(t.fields, "old"), "NULL")],
    }),
  };
  return (t.events ?? ["insert", "update", "delete"]).map((event) => triggers[event]);
}

function partTriggers(p: Part): Trigger[] {
  const [n, o] = [(e: string) => row(e, "new"), (e: string) => row(e, "old")];
  const side = (r: (e: string) => string, present: boolean) =>
    `json_object(${r(p.key)}, ${present ? r(p.value) : "NULL"})`;
  const triggers = [
    audit({
      table: p.table,
      event: "INSERT",
      effect: `\`${p.type}\` \`updated\` entry: \`${p.shown}\` added`,
      body: [insertEntry(p.type, n(p.id), n(p.company), undefined, "updated", side(n, false), side(n, true))],
    }),
    audit({
      table: p.table,
      event: "DELETE",
      when: `EXISTS (${o(p.parent)})`,
      effect: `\`${p.type}\` \`updated\` entry: \`${p.shown}\` removed (nothing when the ${p.type} itself is deleted)`,
      body: [insertEntry(p.type, o(p.id), o(p.company), undefined, "updated", side(o, true), side(o, false))],
    }),
  ];
  if (p.changes) {
    triggers.splice(
      1,
      0,
      audit({
        table: p.table,
        event: "UPDATE",
        when: p.changes.map((c) => `old.${c} IS NOT new.${c}`).join(" OR "),
        effect: `\`${p.type}\` \`updated\` entry: \`${p.shown}\` before and after`,
        body: [insertEntry(p.type, n(p.id), n(p.company), undefined, "updated", side(o, true), side(n, true))],
      }),
    );
  }
  return triggers;
}

export const AUDIT: readonly Trigger[] = [...RESOURCES.flatMap(resourceTriggers), ...PARTS.flatMap(partTriggers)];
