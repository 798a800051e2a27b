CREATE TABLE `idempotency_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`client_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`fingerprint` text NOT NULL,
	`operation_id` text NOT NULL,
	`state` text NOT NULL,
	`lease` text NOT NULL,
	`lease_until` integer NOT NULL,
	`applied` integer DEFAULT 0 NOT NULL,
	`status` integer,
	`headers` text,
	`body` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`fence` integer DEFAULT 1 NOT NULL,
	CONSTRAINT "idempotency_lease_lost" CHECK("idempotency_keys"."fence" = 1)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `idempotency_keys_scope_uq` ON `idempotency_keys` (`company_id`,`client_id`,`key_hash`);--> statement-breakpoint
CREATE INDEX `idempotency_keys_expires_idx` ON `idempotency_keys` (`expires_at`);--> statement-breakpoint
CREATE TABLE `write_guards` (
	`precondition_failed` integer,
	CONSTRAINT "precondition_failed" CHECK("write_guards"."precondition_failed" IS NULL)
);
--> statement-breakpoint
ALTER TABLE `api_clients` ADD `token_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `api_clients` ADD `token_failures_since` integer;--> statement-breakpoint
ALTER TABLE `companies` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `contact_groups` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `contacts` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `departments` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `document_types` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `folders` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `items` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Row versions for conditional writes (If-Match): every UPDATE of the row bumps `version` once. The
-- trigger's own UPDATE changes only `version`, so WHEN stops it there (whether or not recursive
-- triggers are on), and the column-specific triggers of these tables do not fire for it.
CREATE TRIGGER `companies_version_after_update` AFTER UPDATE ON `companies` WHEN new.version = old.version BEGIN
  UPDATE `companies` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `departments_version_after_update` AFTER UPDATE ON `departments` WHEN new.version = old.version BEGIN
  UPDATE `departments` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `contact_groups_version_after_update` AFTER UPDATE ON `contact_groups` WHEN new.version = old.version BEGIN
  UPDATE `contact_groups` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `contacts_version_after_update` AFTER UPDATE ON `contacts` WHEN new.version = old.version BEGIN
  UPDATE `contacts` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `document_types_version_after_update` AFTER UPDATE ON `document_types` WHEN new.version = old.version BEGIN
  UPDATE `document_types` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `folders_version_after_update` AFTER UPDATE ON `folders` WHEN new.version = old.version BEGIN
  UPDATE `folders` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `items_version_after_update` AFTER UPDATE ON `items` WHEN new.version = old.version BEGIN
  UPDATE `items` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `tasks_version_after_update` AFTER UPDATE ON `tasks` WHEN new.version = old.version BEGIN
  UPDATE `tasks` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `webhook_endpoints_version_after_update` AFTER UPDATE ON `webhook_endpoints` WHEN new.version = old.version BEGIN
  UPDATE `webhook_endpoints` SET `version` = old.version + 1 WHERE `id` = new.id;
END;--> statement-breakpoint
-- webhook_tasks_after_update fires on any UPDATE of a task: it must ignore the version bump above,
-- or every task change would record task.updated twice.
DROP TRIGGER `webhook_tasks_after_update`;--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_update` AFTER UPDATE ON `tasks` WHEN new.version = old.version BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'task.updated', json_object('task_id', new.id, 'public_id', new.public_id, 'title', new.title, 'description', new.description,
      'status', new.status, 'priority', new.priority, 'due_at', new.due_at, 'ownerid', new.owner_id,
      'assignee_type', CASE WHEN new.assignee_id IS NULL THEN '' ELSE new.assignee_type END, 'assignee_id', coalesce(new.assignee_id, 0),
      'item_id', coalesce(new.item_id, 0), 'add_date', new.created_at, 'updated_at', new.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.updated')));
END;