// The hand-written triggers, by family: each states its table, event, columns, condition, whether it
// skips during shard moves, its effect in words and its SQL. Rendered by trigger.ts; listed in
// docs/triggers.md. Change a trigger here, never in a migration: `node scripts/gen-triggers.ts`.
import { NOW_MS, type Family, type Row, type Trigger } from "./trigger.ts";

type Declaration = Omit<Trigger, "family">;
const family = (name: Family, triggers: Declaration[]): Trigger[] => triggers.map((t) => ({ family: name, ...t }));

// --- key checks ---------------------------------------------------------------------------------
// ALTER TABLE cannot add NOT NULL without a default (and '' would collide in the unique index), so
// these refuse a row without its key (src/lib/text-key.ts computes it), whatever the write path.

const keyCheck = (table: string, column: string): Declaration[] => {
  const refuse = [`SELECT RAISE(ABORT, '${table}.${column} is required')`];
  return [
    {
      name: `${table}_${column}_required`,
      table,
      timing: "BEFORE",
      event: "INSERT",
      when: `new.${column} IS NULL`,
      skipsShardMoves: false,
      effect: `refuses a row without \`${column}\``,
      body: refuse,
    },
    {
      name: `${table}_${column}_kept`,
      table,
      timing: "BEFORE",
      event: "UPDATE",
      columns: [column],
      when: `new.${column} IS NULL`,
      skipsShardMoves: false,
      effect: `refuses setting \`${column}\` to NULL`,
      body: refuse,
    },
  ];
};

const KEY_CHECKS = family("key check", [
  ...keyCheck("contacts", "email_key"),
  ...keyCheck("contact_groups", "name_key"),
  ...keyCheck("departments", "name_key"),
]);

// --- versions -----------------------------------------------------------------------------------
// Every UPDATE of the row bumps `version` once (If-Match: src/db/commit.ts). The trigger's own
// UPDATE changes only `version`, so WHEN stops it there (whether or not recursive triggers are on),
// and the column-specific triggers of these tables do not fire for it.

const version = (table: string): Declaration => ({
  name: `${table}_version_after_update`,
  table,
  event: "UPDATE",
  when: "new.version = old.version",
  skipsShardMoves: false,
  effect: "bumps the row's `version` (If-Match), once per UPDATE that did not set it",
  body: [`UPDATE \`${table}\` SET \`version\` = old.version + 1 WHERE \`id\` = new.id`],
});

const VERSIONS = family(
  "version",
  [
    "contacts",
    "contact_groups",
    "departments",
    "companies",
    "document_types",
    "folders",
    "items",
    "tasks",
    "webhook_endpoints",
    "channel_endpoints",
  ].map(version),
);

// --- search -------------------------------------------------------------------------------------
// Company-scoped search (docs/search.md): the Worker writes `search_words` (folded as unicode61 folds
// them); these index every word behind the company's mark (two private-use characters), so a term's
// postings are per company, and add words longer than 4 characters to `search_terms` (the prefix
// vocabulary). They run during shard moves too: the target builds the account's index as rows arrive.

/** The company's mark: the arguments of char(), to which items add their state. */
const markCodes = (r: Row) => `57344 + ${r}.company_id / 6400, 57344 + ${r}.company_id % 6400`;

interface SearchIndex {
  table: string;
  index: string;
  /** The index row's rowid: the list order where the list is ordered by a date. */
  rowid: (r: Row) => string;
  /** Before each word: the company's mark, and for items the state (U+F8FC archived, U+F8FD live). */
  mark: (r: Row) => string;
  /** What moves the index row. */
  updateOf: readonly string[];
}

function search(s: SearchIndex): Declaration[] {
  const remove = `DELETE FROM \`${s.index}\` WHERE rowid = ${s.rowid("old")}`;
  const add = `INSERT INTO \`${s.index}\` (rowid, \`terms\`) SELECT ${s.rowid("new")}, coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT ${s.mark("new")} AS m)`;
  const terms = `INSERT OR IGNORE INTO \`search_terms\` (term) SELECT char(${markCodes("new")}) || value FROM json_each(new.search_words) WHERE length(value) > 4`;
  // Fired by another column too: the vocabulary has the words already when they did not change.
  const newTerms = s.updateOf.length > 1 ? `${terms} AND new.search_words IS NOT old.search_words` : terms;
  const names = s.updateOf.map((c) => `\`${c}\``).join(", ");
  return [
    {
      name: `${s.table}_search_after_insert`,
      table: s.table,
      event: "INSERT",
      skipsShardMoves: false,
      effect: `indexes the row's \`search_words\` in \`${s.index}\`; new long words into \`search_terms\``,
      body: [add, terms],
    },
    {
      name: `${s.table}_search_after_update`,
      table: s.table,
      event: "UPDATE",
      columns: s.updateOf,
      skipsShardMoves: false,
      effect: `re-indexes the row in \`${s.index}\` when ${names} change`,
      body: [remove, add, newTerms],
    },
    {
      name: `${s.table}_search_after_delete`,
      table: s.table,
      event: "DELETE",
      skipsShardMoves: false,
      effect: `removes the row from \`${s.index}\``,
      body: [remove],
    },
  ];
}

const SEARCH = family("search", [
  ...search({
    table: "contacts",
    index: "contacts_search",
    rowid: (r) => `${r}.id`,
    mark: (r) => `char(${markCodes(r)})`,
    updateOf: ["search_words"],
  }),
  ...search({
    table: "items",
    index: "items_search",
    // ((days since 1900-01-01) << 32) | id: the list order (expiry_date, id).
    rowid: (r) => `(((CAST(julianday(${r}.expiry_date) AS INTEGER) - 2415020) << 32) | ${r}.id)`,
    mark: (r) => `char(${markCodes(r)}, CASE WHEN ${r}.archived = 1 THEN 63740 ELSE 63741 END)`,
    updateOf: ["search_words", "expiry_date", "archived"],
  }),
  ...search({
    table: "tasks",
    index: "tasks_search",
    // ((minutes since 1900-01-01 00:00 UTC) << 31) | id: the list order (due_at, id) at minute precision.
    rowid: (r) => `((((unixepoch(${r}.due_at) + 2208988800) / 60) << 31) | ${r}.id)`,
    mark: (r) => `char(${markCodes(r)})`,
    updateOf: ["search_words", "due_at"],
  }),
]);

// --- business rules -----------------------------------------------------------------------------
// Only what must hold for every writer, the operator CLI included (docs/triggers.md, "Business
// rules: SQL or TypeScript").

const STANDARD_STEPS = [30, 14, 7, 1, 0].map((period) => ({ period, unit: "day", type: 1, hour: "09:00" }));

const BUSINESS_RULES = family("business rule", [
  {
    name: "companies_default_sequence_after_insert",
    table: "companies",
    event: "INSERT",
    skipsShardMoves: true,
    effect:
      "adds the company's default reminder sequence **Standard** (30, 14, 7, 1 days " + "before and on the day, 09:00)",
    body: [
      "INSERT INTO `reminder_sequences` (`company_id`, `name`, `name_key`, " +
        "`is_default`, `steps`) VALUES (new.id, 'Standard', 'standard', 1,\n" +
        `  '${JSON.stringify(STANDARD_STEPS)}')`,
    ],
  },
]);

// --- counters -----------------------------------------------------------------------------------
// Usage counters and totals, exact at all times whatever the write path; never counted at read time.

const kb = (r: Row) => `max(1, (${r}.size_bytes + 1023) / 1024)`;
const driveUsage = (r: Row, sign: "+" | "-") => [
  `UPDATE \`companies\` SET \`drive_space_used_kb\` = \`drive_space_used_kb\` ${sign} ${kb(r)} WHERE \`id\` = ${r}.company_id`,
  `UPDATE \`departments\` SET \`storage_used_kb\` = \`storage_used_kb\` ${sign} ${kb(r)} WHERE \`id\` = ${r}.dept_id`,
];
const deptContacts = (r: Row, sign: "+" | "-") =>
  `UPDATE \`departments\` SET \`contacts_used\` = \`contacts_used\` ${sign} 1 WHERE id = ${r}.dept_id`;
const deptDocs = (r: Row, sign: "+" | "-") =>
  `UPDATE \`departments\` SET \`docs_used\` = \`docs_used\` ${sign} 1 WHERE id = ${r}.dept_id`;
const typeDocs = (r: Row, sign: "+" | "-") =>
  `UPDATE \`document_types\` SET \`docs_count\` = \`docs_count\` ${sign} 1 WHERE id = ${r}.document_type_id`;
const taskCount = (r: Row, sign: "+" | "-") =>
  `UPDATE \`task_counts\` SET \`total\` = \`total\` ${sign} 1 WHERE \`company_id\` = ${r}.company_id AND \`status\` = ${r}.status`;
const taskCountRow =
  "INSERT OR IGNORE INTO `task_counts` (`company_id`, `status`, `total`) VALUES " + "(new.company_id, new.status, 0)";

const COUNTERS = family("counter", [
  {
    name: "contacts_used_after_delete",
    table: "contacts",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "`companies.contacts_used` − 1",
    body: ["UPDATE `companies` SET `contacts_used` = `contacts_used` - 1 WHERE id = " + "old.company_id"],
  },
  {
    name: "contacts_used_after_insert",
    table: "contacts",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "`companies.contacts_used` + 1",
    body: ["UPDATE `companies` SET `contacts_used` = `contacts_used` + 1 WHERE id = " + "new.company_id"],
  },
  {
    name: "departments_contacts_used_after_delete",
    table: "contacts",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "the department's `contacts_used` − 1",
    body: [deptContacts("old", "-")],
  },
  {
    name: "departments_contacts_used_after_insert",
    table: "contacts",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "the department's `contacts_used` + 1",
    body: [deptContacts("new", "+")],
  },
  {
    name: "departments_contacts_used_after_move",
    table: "contacts",
    event: "UPDATE",
    columns: ["dept_id"],
    when: "new.dept_id <> old.dept_id",
    skipsShardMoves: true,
    effect: "moves one from the old department's `contacts_used` to the new one's",
    body: [deptContacts("old", "-"), deptContacts("new", "+")],
  },
  {
    name: "companies_task_counts_after_delete",
    table: "companies",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "deletes the company's `task_counts` rows",
    body: ["DELETE FROM `task_counts` WHERE `company_id` = old.id"],
  },
  {
    name: "files_usage_after_delete",
    table: "files",
    event: "DELETE",
    skipsShardMoves: true,
    effect:
      "the file's KB (at least 1) off the company's `drive_space_used_kb` and the " + "department's `storage_used_kb`",
    body: driveUsage("old", "-"),
  },
  {
    name: "files_usage_after_insert",
    table: "files",
    event: "INSERT",
    skipsShardMoves: true,
    effect:
      "the file's KB (at least 1) onto the company's `drive_space_used_kb` and the " + "department's `storage_used_kb`",
    body: driveUsage("new", "+"),
  },
  {
    name: "files_usage_after_move",
    table: "files",
    event: "UPDATE",
    columns: ["company_id", "dept_id", "size_bytes"],
    when:
      "new.company_id IS NOT old.company_id OR new.dept_id IS NOT old.dept_id OR " +
      "new.size_bytes IS NOT old.size_bytes",
    skipsShardMoves: true,
    effect: "moves the file's KB from the old company and department to the new ones",
    body: [...driveUsage("old", "-"), ...driveUsage("new", "+")],
  },
  {
    name: "item_tags_count_after_delete",
    table: "item_tags",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "the tag's `items_count` − 1 (also when the item's delete cascades)",
    body: ["UPDATE `tags` SET `items_count` = `items_count` - 1 WHERE id = old.tag_id"],
  },
  {
    name: "item_tags_count_after_insert",
    table: "item_tags",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "the tag's `items_count` + 1",
    body: ["UPDATE `tags` SET `items_count` = `items_count` + 1 WHERE id = new.tag_id"],
  },
  {
    name: "items_counters_after_archive",
    table: "items",
    event: "UPDATE",
    columns: ["archived"],
    when: "new.archived <> old.archived",
    skipsShardMoves: true,
    effect: "`companies.items_archived` ± 1",
    body: [
      "UPDATE `companies` SET `items_archived` = `items_archived` + new.archived - " +
        "old.archived WHERE id = new.company_id",
    ],
  },
  {
    name: "items_counters_after_delete",
    table: "items",
    event: "DELETE",
    skipsShardMoves: true,
    effect:
      "`companies.documents_used` − 1 (and `items_archived` if archived), the " +
      "department's `docs_used` − 1, the document type's `docs_count` − 1",
    body: [
      "UPDATE `companies` SET `documents_used` = `documents_used` - 1, " +
        "`items_archived` = `items_archived` - old.archived WHERE id = old.company_id",
      deptDocs("old", "-"),
      typeDocs("old", "-"),
    ],
  },
  {
    name: "items_counters_after_dept_move",
    table: "items",
    event: "UPDATE",
    columns: ["dept_id"],
    when: "new.dept_id <> old.dept_id",
    skipsShardMoves: true,
    effect: "moves one from the old department's `docs_used` to the new one's",
    body: [deptDocs("old", "-"), deptDocs("new", "+")],
  },
  {
    name: "items_counters_after_insert",
    table: "items",
    event: "INSERT",
    skipsShardMoves: true,
    effect:
      "`companies.documents_used` + 1 (and `items_archived` if archived), the " +
      "department's `docs_used` + 1, the document type's `docs_count` + 1",
    body: [
      "UPDATE `companies` SET `documents_used` = `documents_used` + 1, " +
        "`items_archived` = `items_archived` + new.archived WHERE id = new.company_id",
      deptDocs("new", "+"),
      typeDocs("new", "+"),
    ],
  },
  {
    name: "items_counters_after_type_change",
    table: "items",
    event: "UPDATE",
    columns: ["document_type_id"],
    when: "new.document_type_id IS NOT old.document_type_id",
    skipsShardMoves: true,
    effect: "moves one from the old document type's `docs_count` to the new one's",
    body: [typeDocs("old", "-"), typeDocs("new", "+")],
  },
  {
    name: "tasks_counts_after_delete",
    table: "tasks",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "`task_counts` of the company and status − 1",
    body: [taskCount("old", "-")],
  },
  {
    name: "tasks_counts_after_insert",
    table: "tasks",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "`task_counts` of the company and status + 1",
    body: [taskCountRow, taskCount("new", "+")],
  },
  {
    name: "tasks_counts_after_status",
    table: "tasks",
    event: "UPDATE",
    columns: ["status", "company_id"],
    when: "new.status IS NOT old.status OR new.company_id IS NOT old.company_id",
    skipsShardMoves: true,
    effect: "moves one from the old status's `task_counts` to the new one's",
    body: [taskCount("old", "-"), taskCountRow, taskCount("new", "+")],
  },
]);

// --- reminder sync ------------------------------------------------------------------------------
// The outbox to the company clock (docs/reminders.md): each change the reminder engine must see
// bumps the item's `reminder_sync.version` in the same statement; item 0 is the company's settings.

const reminderSync = (company: string, item: string) => [
  `INSERT OR IGNORE INTO \`reminder_sync\` (\`company_id\`, \`item_id\`, \`version\`, \`synced_version\`, \`changed_at\`) VALUES (${company}, ${item}, 0, 0, 0)`,
  `UPDATE \`reminder_sync\` SET \`version\` = \`version\` + 1, \`changed_at\` = unixepoch() WHERE \`company_id\` = ${company} AND \`item_id\` = ${item}`,
];

const REMINDER_SYNC = family("reminder sync", [
  {
    name: "companies_reminder_sync_after_settings",
    table: "companies",
    event: "UPDATE",
    columns: ["settings"],
    when: "json_extract(new.settings, '$.timezone') IS NOT json_extract(old.settings, '$.timezone')",
    skipsShardMoves: true,
    effect:
      "a new time zone: `reminder_sync` of item 0 (the company's settings) bumped, so " + "every queued reminder moves",
    body: reminderSync("new.id", "0"),
  },
  {
    name: "items_reminder_sync_after_delete",
    table: "items",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "the item's `reminder_sync` bumped (its reminders go)",
    body: reminderSync("old.company_id", "old.id"),
  },
  {
    name: "items_reminder_sync_after_insert",
    table: "items",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "the item's `reminder_sync` bumped (its reminders are queued)",
    body: reminderSync("new.company_id", "new.id"),
  },
  {
    name: "items_reminder_sync_after_update",
    table: "items",
    event: "UPDATE",
    // What the reminder engine reads of an item, the recurrence rule included (it renews renew_on=expired items).
    // An acknowledgement holds its occurrence's reminders, a snooze defers them (docs/reminders.md).
    columns: [
      "title",
      "expiry_date",
      "reminder_anchor",
      "schedule_epoch",
      "status",
      "archived",
      "recur_every",
      "recur_unit",
      "recur_renew_on",
      "recur_until",
      "recur_count",
      "recur_anchor",
      "ack_epoch",
      "snooze_epoch",
      "snoozed_until",
      "snooze_contact_id",
    ],
    skipsShardMoves: true,
    effect: "the item's `reminder_sync` bumped when what its reminders depend on changes",
    body: reminderSync("new.company_id", "new.id"),
  },
]);

// --- revisions ----------------------------------------------------------------------------------
// company_revisions.records moves on every change to a company's items, folders and document types
// (a calendar feed's ETag reads it: src/records/calendar-feeds/feed.ts). An UPDATE counts once: after
// the version trigger's bump (every UPDATE of these tables bumps version exactly once).

const revision = (table: string): Declaration[] => {
  const bump = (r: Row) => [
    `INSERT INTO \`company_revisions\` (\`company_id\`, \`records\`) VALUES (${r}.company_id, 1) ON CONFLICT (\`company_id\`) DO UPDATE SET \`records\` = \`records\` + 1`,
  ];
  const effect = "the company's `company_revisions.records` + 1 (calendar feed ETags)";
  return [
    {
      name: `revision_${table}_after_delete`,
      table,
      event: "DELETE",
      skipsShardMoves: true,
      effect,
      body: bump("old"),
    },
    {
      name: `revision_${table}_after_insert`,
      table,
      event: "INSERT",
      skipsShardMoves: true,
      effect,
      body: bump("new"),
    },
    {
      name: `revision_${table}_after_update`,
      table,
      event: "UPDATE",
      when: "new.version <> old.version",
      skipsShardMoves: true,
      effect: `${effect}, on the version bump`,
      body: bump("new"),
    },
  ];
};

const REVISIONS = family("revision", [...revision("document_types"), ...revision("folders"), ...revision("items")]);

// --- webhook events -----------------------------------------------------------------------------
// Events of D1 changes (docs/webhooks.md), recorded in the same statement as the change and only
// while the company has an enabled endpoint subscribed to the type (an index seek on
// webhook_endpoints_company_idx). `data` is the API's own output shape. The company clock delivers
// and deletes them.

/** An event of `type` (SQL) with `data` about row `r`, when an endpoint of the company wants it; `from` names `t.type`. */
function webhookEvent(r: Row, type: string, data: string, from?: string): string {
  return (
    "INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)\n" +
    `  SELECT ${r}.company_id, ${type}, ${data}, ${NOW_MS}\n` +
    (from ? `  ${from}\n  WHERE ${type} IS NOT NULL AND ` : "  WHERE ") +
    `EXISTS (SELECT 1 FROM \`webhook_endpoints\` AS e WHERE e.company_id = ${r}.company_id AND e.enabled = 1\n` +
    `    AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', ${type})))`
  );
}

const itemData = (r: Row) =>
  `json_object('item_id', ${r}.id, 'title', ${r}.title, 'item_type', ${r}.item_type,\n` +
  `    'document_type', coalesce((SELECT \`name\` FROM \`document_types\` WHERE \`id\` = ${r}.document_type_id), ''),\n` +
  `    'document_type_id', coalesce(${r}.document_type_id, 0), 'deptid', ${r}.dept_id, 'expiry_date', ${r}.expiry_date,\n` +
  `    'status', ${r}.status, 'folder_id', coalesce(${r}.folder_id, 0), 'active', json(CASE WHEN ${r}.archived = 0 THEN 'true' ELSE 'false' END))`;

const taskData = (r: Row) =>
  `json_object('task_id', ${r}.id, 'public_id', ${r}.public_id, 'title', ${r}.title, 'description', ${r}.description,\n` +
  `    'status', ${r}.status, 'priority', ${r}.priority, 'due_at', ${r}.due_at, 'ownerid', ${r}.owner_id,\n` +
  `    'assignee_type', CASE WHEN ${r}.assignee_id IS NULL THEN '' ELSE ${r}.assignee_type END, 'assignee_id', coalesce(${r}.assignee_id, 0),\n` +
  `    'item_id', coalesce(${r}.item_id, 0), 'add_date', ${r}.created_at, 'updated_at', ${r}.updated_at)`;

// One event per item update, the most specific: a renewal, else archived/restored, else a status
// change, else a change of what the item says (the recurrence rule included).
const ITEM_UPDATE_TYPE =
  "FROM (SELECT CASE\n" +
  "      WHEN new.schedule_epoch IS NOT old.schedule_epoch THEN 'item.renewed'\n" +
  "      WHEN new.archived IS NOT old.archived THEN CASE WHEN new.archived = 1 " +
  "THEN 'item.archived' ELSE 'item.restored' END\n" +
  "      WHEN new.status IS NOT old.status THEN 'item.status_changed'\n" +
  "      WHEN new.title IS NOT old.title OR new.notes IS NOT old.notes OR new.expiry_date IS NOT old.expiry_date\n" +
  "        OR new.item_type IS NOT old.item_type OR new.folder_id IS NOT " +
  "old.folder_id OR new.document_type_id IS NOT old.document_type_id\n" +
  "        OR new.contact_id IS NOT old.contact_id OR new.dept_id IS NOT old.dept_id\n" +
  "        OR new.recur_every IS NOT old.recur_every OR new.recur_unit IS NOT " +
  "old.recur_unit OR new.recur_renew_on IS NOT old.recur_renew_on\n" +
  "        OR new.recur_until IS NOT old.recur_until OR new.recur_count IS NOT old.recur_count THEN 'item.updated'\n" +
  "    END AS type) AS t";

// A recipient's or a client's action on the current occurrence (docs/webhooks.md): acknowledged or
// no longer, snoozed or no longer. A renewal clears both in its own UPDATE, which is item.renewed.
const ITEM_ACTION_TYPE =
  "FROM (SELECT CASE\n" +
  "      WHEN new.ack_epoch IS NOT old.ack_epoch THEN CASE WHEN new.ack_epoch IS " +
  "NULL THEN 'item.unacknowledged' ELSE 'item.acknowledged' END\n" +
  "      WHEN new.snooze_epoch IS NOT old.snooze_epoch OR new.snoozed_until IS NOT old.snoozed_until\n" +
  "        THEN CASE WHEN new.snoozed_until IS NULL THEN 'item.unsnoozed' ELSE 'item.snoozed' END\n" +
  "    END AS type) AS t";

/** src/lib/actors.ts CHANNEL_VIAS (test/tools/triggers.test.ts checks they agree). */
export const CHANNEL_VIAS = ["slack", "teams", "google_chat", "discord", "ntfy"] as const;

/**
 * Who acted how, `by` and `via`, from the batch's actor row (audit_context); null and null for the
 * service itself. A channel's action keeps the channel in the recipient's column (src/db/commit.ts):
 * its via, the channel's type, tells it from a contact's.
 */
const ACTOR_FIELDS =
  "    'by', (SELECT json(CASE WHEN ctx.contact_id IS NOT NULL AND ctx.via IN (" +
  CHANNEL_VIAS.map((v) => `'${v}'`).join(", ") +
  ") THEN json_object('type', 'channel', 'id', ctx.contact_id)\n" +
  "      WHEN ctx.contact_id IS NOT NULL THEN json_object('type', 'contact', 'id', ctx.contact_id)\n" +
  "      WHEN ctx.client_id IS NOT NULL THEN json_object('type', 'client', 'id', " +
  "ctx.client_id) END) FROM `audit_context` AS ctx),\n" +
  "    'via', (SELECT ctx.via FROM `audit_context` AS ctx))";

/** The item entry with the occurrence's acknowledgement and snooze, and who acted how. */
const itemActionData = (r: Row) =>
  `${itemData(r).slice(0, -1)},\n` +
  `    'acknowledgement', CASE WHEN ${r}.ack_epoch IS ${r}.schedule_epoch THEN json(${r}.acknowledgement) END,\n` +
  `    'snoozed_until', CASE WHEN ${r}.snooze_epoch IS ${r}.schedule_epoch THEN ${r}.snoozed_until END,\n` +
  ACTOR_FIELDS;

/** The item entry after a change, and who made it how. */
const itemChangeData = (r: Row) => `${itemData(r).slice(0, -1)},\n${ACTOR_FIELDS}`;

const WEBHOOK_EVENTS = family("webhook event", [
  {
    name: "webhook_files_after_insert",
    table: "files",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "`file.uploaded` into `webhook_events`",
    body: [
      webhookEvent(
        "new",
        "'file.uploaded'",
        "json_object('file_id', new.public_id, 'file_name', new.file_name, 'size_bytes', " +
          "new.size_bytes, 'content_type', new.content_type)",
      ),
    ],
  },
  {
    name: "webhook_items_after_delete",
    table: "items",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "`item.deleted` into `webhook_events`",
    body: [webhookEvent("old", "'item.deleted'", itemData("old"))],
  },
  {
    name: "webhook_items_after_insert",
    table: "items",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "`item.created` into `webhook_events`",
    body: [webhookEvent("new", "'item.created'", itemData("new"))],
  },
  {
    name: "webhook_items_after_update",
    table: "items",
    event: "UPDATE",
    skipsShardMoves: true,
    effect:
      "the most specific of `item.renewed`, `item.archived` / `item.restored`, " +
      "`item.status_changed`, `item.updated` into `webhook_events` with who made it how " +
      "(`by`, `via`: the batch's actor; none for other columns, such as the version bump)",
    body: [webhookEvent("new", "t.type", itemChangeData("new"), ITEM_UPDATE_TYPE)],
  },
  {
    name: "webhook_items_after_action",
    table: "items",
    event: "UPDATE",
    columns: ["ack_epoch", "snooze_epoch", "snoozed_until"],
    // A renewal's UPDATE clears them too: its event is item.renewed, above.
    when: "new.schedule_epoch IS old.schedule_epoch",
    skipsShardMoves: true,
    effect:
      "`item.acknowledged` / `item.unacknowledged`, else `item.snoozed` / " +
      "`item.unsnoozed` into `webhook_events`, with the acknowledgement, the snooze " +
      "and who acted how (`by`, `via`: the batch's actor)",
    body: [webhookEvent("new", "t.type", itemActionData("new"), ITEM_ACTION_TYPE)],
  },
  {
    name: "webhook_tasks_after_delete",
    table: "tasks",
    event: "DELETE",
    skipsShardMoves: true,
    effect: "`task.deleted` into `webhook_events`",
    body: [webhookEvent("old", "'task.deleted'", taskData("old"))],
  },
  {
    name: "webhook_tasks_after_insert",
    table: "tasks",
    event: "INSERT",
    skipsShardMoves: true,
    effect: "`task.created` into `webhook_events`",
    body: [webhookEvent("new", "'task.created'", taskData("new"))],
  },
  {
    name: "webhook_tasks_after_update",
    table: "tasks",
    event: "UPDATE",
    // Fires on any UPDATE of a task: it ignores the version bump, or every change would be recorded twice.
    when: "new.version = old.version",
    skipsShardMoves: true,
    effect: "`task.updated` into `webhook_events` (once: not for the version bump)",
    body: [webhookEvent("new", "'task.updated'", taskData("new"))],
  },
]);

export const HAND_WRITTEN: readonly Trigger[] = [
  ...KEY_CHECKS,
  ...VERSIONS,
  ...SEARCH,
  ...BUSINESS_RULES,
  ...COUNTERS,
  ...REMINDER_SYNC,
  ...REVISIONS,
  ...WEBHOOK_EVENTS,
];
