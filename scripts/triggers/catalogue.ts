// The trigger catalogue: every trigger of the database, in the order the migrations create them.
// scripts/gen-triggers.ts renders it into the next migration and into docs/triggers.md;
// test/tools/triggers.test.ts checks that the migrated database holds exactly this.
import { AUDIT } from "./audit.ts";
import { HAND_WRITTEN } from "./hand-written.ts";
import { FAMILIES, type Family, type Trigger } from "./trigger.ts";

export const CATALOGUE: readonly Trigger[] = [...HAND_WRITTEN, ...AUDIT].sort(
  (a, b) => FAMILIES.indexOf(a.family) - FAMILIES.indexOf(b.family),
);

/** What each family is for (docs/triggers.md). */
export const FAMILY_NOTES: Readonly<Record<Family, string>> = {
  "key check":
    "BEFORE triggers that refuse a row without its normalised key " +
    "(`src/lib/text-key.ts`). ALTER TABLE cannot add NOT NULL without a default, and " +
    "`''` would collide in the unique index, so no write path can skip the key.",
  version:
    "Every UPDATE of the row bumps `version` once: the If-Match precondition " +
    '(`src/db/commit.ts`, [docs/api-notes.md](api-notes.md) "Conditional requests"). ' +
    "The trigger's own UPDATE changes only `version`, so its WHEN stops it there, " +
    "and the column-specific triggers do not fire for it.",
  search:
    "The company-scoped search indexes ([docs/search.md](search.md)): the Worker " +
    "writes `search_words`, these index them behind the company's mark and add long " +
    "words to `search_terms`. They also run during shard moves, so the target builds " +
    "the account's index as the rows arrive.",
  "business rule":
    'A rule of the service that must hold however a row is written: see "Business rules: SQL or TypeScript" below.',
  counter:
    "Usage counters and totals (`contacts_used`, `documents_used`, `docs_used`, " +
    "`docs_count`, `items_archived`, `items_count`, drive usage, `task_counts`): " +
    "exact at all times whatever the write path, never counted at read time.",
  "reminder sync":
    "The outbox to the company clock ([docs/reminders.md](reminders.md)): each " +
    "change the reminder engine must apply bumps `reminder_sync.version` in the same " +
    "statement as the change.",
  revision:
    "`company_revisions.records`, which a calendar feed's ETag reads: moves on every " +
    "change of the company's items, folders and document types (an UPDATE counts " +
    "once, on its version bump).",
  "webhook event":
    "Webhook events of D1 changes ([docs/webhooks.md](webhooks.md)) into the " +
    "`webhook_events` outbox, in the same statement as the change, only while the " +
    "company has an enabled endpoint subscribed to the type. The payload (`data`) is " +
    "the API's output shape, built here with `json_object`.",
  audit:
    "The audit log ([docs/audit-log.md](audit-log.md)): an entry in `audit_log` in " +
    "the same statement as the change, with the actor of the batch " +
    "(`audit_context`). Declared per resource table in `scripts/triggers/audit.ts`.",
};

/** Rules of the service and where each one lives (docs/triggers.md). */
export const BUSINESS_RULES: ReadonlyArray<{ rule: string; where: string; why: string }> = [
  {
    rule: 'Every new company gets the default reminder sequence "Standard"',
    where: "SQL: `companies_default_sequence_after_insert`",
    why:
      "Companies are created by `POST /v1/companies`, by the operator CLI (`account " +
      "create` in `scripts/admin.ts`, raw SQL through wrangler), by the local seed and " +
      "by tests; the rule must hold for each of them, with no writer able to forget " +
      "it. It skips during shard moves: a moved company arrives with its sequences.",
  },
  {
    rule: "Webhook payloads and event types of item, task and file changes",
    where: "SQL: the webhook event family",
    why:
      "Items are written by the API, the import Workflow (raw SQL) and the company " +
      "clock's renewals; the type of an item update (renewed, archived, status " +
      "changed, updated) is decided from the row before and after, which only a " +
      "trigger sees without reading the row first.",
  },
  {
    rule: "Deleting a contact unassigns its tasks",
    where:
      "TypeScript: `deleteContact` in `src/records/contacts.ts`, an UPDATE of `tasks` " +
      "in the same D1 batch as the contact's DELETE (before the migration " +
      "`…_trigger_catalogue.sql`: the trigger `contacts_unassign_tasks_after_delete`)",
    why:
      "One writer deletes contacts: the API's `DELETE /v1/contacts/{id}`. The operator " +
      "CLI never deletes contacts, imports only create and update them, a company " +
      "cannot be deleted while it holds contacts, and an account move's clean-up " +
      "deletes them with the rule skipped anyway. The batch is one transaction, so the " +
      "unassignment cannot be lost; its task `updated` audit entries and " +
      "`task.updated` webhook events are written as before. Deploy the Worker before " +
      "applying that migration: the previous Worker relies on the trigger.",
  },
];
