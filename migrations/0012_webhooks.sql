CREATE TABLE `webhook_endpoints` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`url` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`events` text NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`secret_ciphertext` text NOT NULL,
	`previous_secret_ciphertext` text,
	`previous_secret_expires_at` integer,
	`failing_since` integer,
	`disabled_reason` text,
	`created_by` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	`updated_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_company_idx` ON `webhook_endpoints` (`company_id`,`enabled`,`id`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`type` text NOT NULL,
	`data` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `webhook_events_company_idx` ON `webhook_events` (`company_id`,`id`);--> statement-breakpoint
-- Webhook events of D1 changes (docs/webhooks.md), recorded in the same statement as the change and
-- only while the company has an enabled endpoint subscribed to the type (an index seek on
-- webhook_endpoints_company_idx). `data` is the API's own output shape. The company's Durable Object
-- takes them (fan-out, delivery, retries) and deletes them; the cron sweep wakes companies whose
-- events wait for more than 30 s (webhook_events_created_idx).
CREATE INDEX `webhook_events_created_idx` ON `webhook_events` (`created_at`);--> statement-breakpoint
CREATE TRIGGER `webhook_items_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'item.created', json_object('item_id', new.id, 'title', new.title, 'item_type', new.item_type,
      'document_type', coalesce((SELECT `name` FROM `document_types` WHERE `id` = new.document_type_id), ''),
      'document_type_id', coalesce(new.document_type_id, 0), 'deptid', new.dept_id, 'expiry_date', new.expiry_date,
      'status', new.status, 'folder_id', coalesce(new.folder_id, 0), 'active', json(CASE WHEN new.archived = 0 THEN 'true' ELSE 'false' END)), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'item.created')));
END;--> statement-breakpoint
CREATE TRIGGER `webhook_items_after_delete` AFTER DELETE ON `items` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT old.company_id, 'item.deleted', json_object('item_id', old.id, 'title', old.title, 'item_type', old.item_type,
      'document_type', coalesce((SELECT `name` FROM `document_types` WHERE `id` = old.document_type_id), ''),
      'document_type_id', coalesce(old.document_type_id, 0), 'deptid', old.dept_id, 'expiry_date', old.expiry_date,
      'status', old.status, 'folder_id', coalesce(old.folder_id, 0), 'active', json(CASE WHEN old.archived = 0 THEN 'true' ELSE 'false' END)), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = old.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'item.deleted')));
END;--> statement-breakpoint
-- One event per update, the most specific: a renewal, else archived/restored, else a status change,
-- else a change of what the item says (title, notes, date, type, folder, document type, contact, department).
CREATE TRIGGER `webhook_items_after_update` AFTER UPDATE ON `items` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, t.type, json_object('item_id', new.id, 'title', new.title, 'item_type', new.item_type,
      'document_type', coalesce((SELECT `name` FROM `document_types` WHERE `id` = new.document_type_id), ''),
      'document_type_id', coalesce(new.document_type_id, 0), 'deptid', new.dept_id, 'expiry_date', new.expiry_date,
      'status', new.status, 'folder_id', coalesce(new.folder_id, 0), 'active', json(CASE WHEN new.archived = 0 THEN 'true' ELSE 'false' END)), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM (SELECT CASE
        WHEN new.schedule_epoch IS NOT old.schedule_epoch THEN 'item.renewed'
        WHEN new.archived IS NOT old.archived THEN CASE WHEN new.archived = 1 THEN 'item.archived' ELSE 'item.restored' END
        WHEN new.status IS NOT old.status THEN 'item.status_changed'
        WHEN new.title IS NOT old.title OR new.notes IS NOT old.notes OR new.expiry_date IS NOT old.expiry_date
          OR new.item_type IS NOT old.item_type OR new.folder_id IS NOT old.folder_id OR new.document_type_id IS NOT old.document_type_id
          OR new.contact_id IS NOT old.contact_id OR new.dept_id IS NOT old.dept_id THEN 'item.updated'
      END AS type) AS t
    WHERE t.type IS NOT NULL AND EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', t.type)));
END;--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_insert` AFTER INSERT ON `tasks` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'task.created', json_object('task_id', new.id, 'public_id', new.public_id, 'title', new.title, 'description', new.description,
      'status', new.status, 'priority', new.priority, 'due_at', new.due_at, 'ownerid', new.owner_id,
      'assignee_type', CASE WHEN new.assignee_id IS NULL THEN '' ELSE new.assignee_type END, 'assignee_id', coalesce(new.assignee_id, 0),
      'item_id', coalesce(new.item_id, 0), 'add_date', new.created_at, 'updated_at', new.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.created')));
END;--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_update` AFTER UPDATE ON `tasks` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'task.updated', json_object('task_id', new.id, 'public_id', new.public_id, 'title', new.title, 'description', new.description,
      'status', new.status, 'priority', new.priority, 'due_at', new.due_at, 'ownerid', new.owner_id,
      'assignee_type', CASE WHEN new.assignee_id IS NULL THEN '' ELSE new.assignee_type END, 'assignee_id', coalesce(new.assignee_id, 0),
      'item_id', coalesce(new.item_id, 0), 'add_date', new.created_at, 'updated_at', new.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.updated')));
END;--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_delete` AFTER DELETE ON `tasks` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT old.company_id, 'task.deleted', json_object('task_id', old.id, 'public_id', old.public_id, 'title', old.title, 'description', old.description,
      'status', old.status, 'priority', old.priority, 'due_at', old.due_at, 'ownerid', old.owner_id,
      'assignee_type', CASE WHEN old.assignee_id IS NULL THEN '' ELSE old.assignee_type END, 'assignee_id', coalesce(old.assignee_id, 0),
      'item_id', coalesce(old.item_id, 0), 'add_date', old.created_at, 'updated_at', old.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = old.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.deleted')));
END;--> statement-breakpoint
CREATE TRIGGER `webhook_files_after_insert` AFTER INSERT ON `files` BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'file.uploaded', json_object('file_id', new.public_id, 'file_name', new.file_name, 'size_bytes', new.size_bytes, 'content_type', new.content_type), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'file.uploaded')));
END;
