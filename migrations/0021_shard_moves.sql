-- Moving an account between shards (docs/scale.md, scripts/lib/account-move.ts): while a company is
-- listed in shard_moves, the triggers that write other tables (counters, webhook events, revisions,
-- reminder sync, the default sequence, task unassignment) skip its rows, so copying its rows in is
-- exact and deleting them afterwards announces nothing. The search-index, key-check and version
-- triggers are unchanged. Each trigger below is the previous one with that guard added.
CREATE TABLE `shard_moves` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`account_id` integer NOT NULL,
	`started_at` integer NOT NULL
);
--> statement-breakpoint
DROP TRIGGER `companies_default_sequence_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `companies_default_sequence_after_insert` AFTER INSERT ON `companies` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.id)
BEGIN
  INSERT INTO `reminder_sequences` (`company_id`, `name`, `name_key`, `is_default`, `steps`) VALUES (new.id, 'Standard', 'standard', 1,
    '[{"period":30,"unit":"day","type":1,"hour":"09:00"},{"period":14,"unit":"day","type":1,"hour":"09:00"},{"period":7,"unit":"day","type":1,"hour":"09:00"},{"period":1,"unit":"day","type":1,"hour":"09:00"},{"period":0,"unit":"day","type":1,"hour":"09:00"}]');
END;
--> statement-breakpoint
DROP TRIGGER `companies_reminder_sync_after_settings`;
--> statement-breakpoint
CREATE TRIGGER `companies_reminder_sync_after_settings` AFTER UPDATE OF `settings` ON `companies`
  WHEN (json_extract(new.settings, '$.timezone') IS NOT json_extract(old.settings, '$.timezone')) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.id)
BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.id, 0, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.id AND `item_id` = 0;
END;
--> statement-breakpoint
DROP TRIGGER `companies_task_counts_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `companies_task_counts_after_delete` AFTER DELETE ON `companies` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.id)
BEGIN
  DELETE FROM `task_counts` WHERE `company_id` = old.id;
END;
--> statement-breakpoint
DROP TRIGGER `contacts_unassign_tasks_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `contacts_unassign_tasks_after_delete` AFTER DELETE ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `tasks` SET `assignee_type` = NULL, `assignee_id` = NULL, `updated_at` = CURRENT_TIMESTAMP
    WHERE `company_id` = old.company_id AND `assignee_id` = old.id AND `assignee_type` = 'contact';
END;
--> statement-breakpoint
DROP TRIGGER `contacts_used_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `contacts_used_after_delete` AFTER DELETE ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `companies` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.company_id;
END;
--> statement-breakpoint
DROP TRIGGER `contacts_used_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `contacts_used_after_insert` AFTER INSERT ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `companies` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.company_id;
END;
--> statement-breakpoint
DROP TRIGGER `departments_contacts_used_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_delete` AFTER DELETE ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `departments_contacts_used_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_insert` AFTER INSERT ON `contacts` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `departments_contacts_used_after_move`;
--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_move` AFTER UPDATE OF `dept_id` ON `contacts` WHEN (new.dept_id <> old.dept_id) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.dept_id;
  UPDATE `departments` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `revision_document_types_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_delete` AFTER DELETE ON `document_types` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_document_types_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_insert` AFTER INSERT ON `document_types` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_document_types_after_update`;
--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_update` AFTER UPDATE ON `document_types` WHEN (new.version <> old.version) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `files_usage_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `files_usage_after_delete` AFTER DELETE ON `files` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `files_usage_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `files_usage_after_insert` AFTER INSERT ON `files` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `files_usage_after_move`;
--> statement-breakpoint
CREATE TRIGGER `files_usage_after_move` AFTER UPDATE OF `company_id`, `dept_id`, `size_bytes` ON `files`
  WHEN (new.company_id IS NOT old.company_id OR new.dept_id IS NOT old.dept_id OR new.size_bytes IS NOT old.size_bytes) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.dept_id;
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `webhook_files_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `webhook_files_after_insert` AFTER INSERT ON `files` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'file.uploaded', json_object('file_id', new.public_id, 'file_name', new.file_name, 'size_bytes', new.size_bytes, 'content_type', new.content_type), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'file.uploaded')));
END;
--> statement-breakpoint
DROP TRIGGER `revision_folders_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_delete` AFTER DELETE ON `folders` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_folders_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_insert` AFTER INSERT ON `folders` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_folders_after_update`;
--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_update` AFTER UPDATE ON `folders` WHEN (new.version <> old.version) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `item_tags_count_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `item_tags_count_after_delete` AFTER DELETE ON `item_tags` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `tags` SET `items_count` = `items_count` - 1 WHERE id = old.tag_id;
END;
--> statement-breakpoint
DROP TRIGGER `item_tags_count_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `item_tags_count_after_insert` AFTER INSERT ON `item_tags` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `tags` SET `items_count` = `items_count` + 1 WHERE id = new.tag_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_counters_after_archive`;
--> statement-breakpoint
CREATE TRIGGER `items_counters_after_archive` AFTER UPDATE OF `archived` ON `items` WHEN (new.archived <> old.archived) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `companies` SET `items_archived` = `items_archived` + new.archived - old.archived WHERE id = new.company_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_counters_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `items_counters_after_delete` AFTER DELETE ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `companies` SET `documents_used` = `documents_used` - 1, `items_archived` = `items_archived` - old.archived WHERE id = old.company_id;
  UPDATE `departments` SET `docs_used` = `docs_used` - 1 WHERE id = old.dept_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` - 1 WHERE id = old.document_type_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_counters_after_dept_move`;
--> statement-breakpoint
CREATE TRIGGER `items_counters_after_dept_move` AFTER UPDATE OF `dept_id` ON `items` WHEN (new.dept_id <> old.dept_id) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `departments` SET `docs_used` = `docs_used` - 1 WHERE id = old.dept_id;
  UPDATE `departments` SET `docs_used` = `docs_used` + 1 WHERE id = new.dept_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_counters_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `items_counters_after_insert` AFTER INSERT ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `companies` SET `documents_used` = `documents_used` + 1, `items_archived` = `items_archived` + new.archived WHERE id = new.company_id;
  UPDATE `departments` SET `docs_used` = `docs_used` + 1 WHERE id = new.dept_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` + 1 WHERE id = new.document_type_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_counters_after_type_change`;
--> statement-breakpoint
CREATE TRIGGER `items_counters_after_type_change` AFTER UPDATE OF `document_type_id` ON `items`
  WHEN (new.document_type_id IS NOT old.document_type_id) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `document_types` SET `docs_count` = `docs_count` - 1 WHERE id = old.document_type_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` + 1 WHERE id = new.document_type_id;
END;
--> statement-breakpoint
DROP TRIGGER `items_reminder_sync_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_delete` AFTER DELETE ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (old.company_id, old.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = old.company_id AND `item_id` = old.id;
END;
--> statement-breakpoint
DROP TRIGGER `items_reminder_sync_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_insert` AFTER INSERT ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.company_id, new.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.company_id AND `item_id` = new.id;
END;
--> statement-breakpoint
DROP TRIGGER `items_reminder_sync_after_update`;
--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_update` AFTER UPDATE OF `title`, `expiry_date`, `reminder_anchor`, `schedule_epoch`, `status`, `archived` ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.company_id, new.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.company_id AND `item_id` = new.id;
END;
--> statement-breakpoint
DROP TRIGGER `revision_items_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `revision_items_after_delete` AFTER DELETE ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_items_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `revision_items_after_insert` AFTER INSERT ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `revision_items_after_update`;
--> statement-breakpoint
CREATE TRIGGER `revision_items_after_update` AFTER UPDATE ON `items` WHEN (new.version <> old.version) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
--> statement-breakpoint
DROP TRIGGER `webhook_items_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `webhook_items_after_delete` AFTER DELETE ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT old.company_id, 'item.deleted', json_object('item_id', old.id, 'title', old.title, 'item_type', old.item_type,
      'document_type', coalesce((SELECT `name` FROM `document_types` WHERE `id` = old.document_type_id), ''),
      'document_type_id', coalesce(old.document_type_id, 0), 'deptid', old.dept_id, 'expiry_date', old.expiry_date,
      'status', old.status, 'folder_id', coalesce(old.folder_id, 0), 'active', json(CASE WHEN old.archived = 0 THEN 'true' ELSE 'false' END)), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = old.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'item.deleted')));
END;
--> statement-breakpoint
DROP TRIGGER `webhook_items_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `webhook_items_after_insert` AFTER INSERT ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'item.created', json_object('item_id', new.id, 'title', new.title, 'item_type', new.item_type,
      'document_type', coalesce((SELECT `name` FROM `document_types` WHERE `id` = new.document_type_id), ''),
      'document_type_id', coalesce(new.document_type_id, 0), 'deptid', new.dept_id, 'expiry_date', new.expiry_date,
      'status', new.status, 'folder_id', coalesce(new.folder_id, 0), 'active', json(CASE WHEN new.archived = 0 THEN 'true' ELSE 'false' END)), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'item.created')));
END;
--> statement-breakpoint
DROP TRIGGER `webhook_items_after_update`;
--> statement-breakpoint
CREATE TRIGGER `webhook_items_after_update` AFTER UPDATE ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
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
END;
--> statement-breakpoint
DROP TRIGGER `tasks_counts_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_delete` AFTER DELETE ON `tasks` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  UPDATE `task_counts` SET `total` = `total` - 1 WHERE `company_id` = old.company_id AND `status` = old.status;
END;
--> statement-breakpoint
DROP TRIGGER `tasks_counts_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_insert` AFTER INSERT ON `tasks` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT OR IGNORE INTO `task_counts` (`company_id`, `status`, `total`) VALUES (new.company_id, new.status, 0);
  UPDATE `task_counts` SET `total` = `total` + 1 WHERE `company_id` = new.company_id AND `status` = new.status;
END;
--> statement-breakpoint
DROP TRIGGER `tasks_counts_after_status`;
--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_status` AFTER UPDATE OF `status`, `company_id` ON `tasks`
  WHEN (new.status IS NOT old.status OR new.company_id IS NOT old.company_id) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  UPDATE `task_counts` SET `total` = `total` - 1 WHERE `company_id` = old.company_id AND `status` = old.status;
  INSERT OR IGNORE INTO `task_counts` (`company_id`, `status`, `total`) VALUES (new.company_id, new.status, 0);
  UPDATE `task_counts` SET `total` = `total` + 1 WHERE `company_id` = new.company_id AND `status` = new.status;
END;
--> statement-breakpoint
DROP TRIGGER `webhook_tasks_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_delete` AFTER DELETE ON `tasks` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = old.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT old.company_id, 'task.deleted', json_object('task_id', old.id, 'public_id', old.public_id, 'title', old.title, 'description', old.description,
      'status', old.status, 'priority', old.priority, 'due_at', old.due_at, 'ownerid', old.owner_id,
      'assignee_type', CASE WHEN old.assignee_id IS NULL THEN '' ELSE old.assignee_type END, 'assignee_id', coalesce(old.assignee_id, 0),
      'item_id', coalesce(old.item_id, 0), 'add_date', old.created_at, 'updated_at', old.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = old.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.deleted')));
END;
--> statement-breakpoint
DROP TRIGGER `webhook_tasks_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_insert` AFTER INSERT ON `tasks` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'task.created', json_object('task_id', new.id, 'public_id', new.public_id, 'title', new.title, 'description', new.description,
      'status', new.status, 'priority', new.priority, 'due_at', new.due_at, 'ownerid', new.owner_id,
      'assignee_type', CASE WHEN new.assignee_id IS NULL THEN '' ELSE new.assignee_type END, 'assignee_id', coalesce(new.assignee_id, 0),
      'item_id', coalesce(new.item_id, 0), 'add_date', new.created_at, 'updated_at', new.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.created')));
END;
--> statement-breakpoint
DROP TRIGGER `webhook_tasks_after_update`;
--> statement-breakpoint
CREATE TRIGGER `webhook_tasks_after_update` AFTER UPDATE ON `tasks` WHEN (new.version = old.version) AND NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT INTO `webhook_events` (`company_id`, `type`, `data`, `created_at`)
    SELECT new.company_id, 'task.updated', json_object('task_id', new.id, 'public_id', new.public_id, 'title', new.title, 'description', new.description,
      'status', new.status, 'priority', new.priority, 'due_at', new.due_at, 'ownerid', new.owner_id,
      'assignee_type', CASE WHEN new.assignee_id IS NULL THEN '' ELSE new.assignee_type END, 'assignee_id', coalesce(new.assignee_id, 0),
      'item_id', coalesce(new.item_id, 0), 'add_date', new.created_at, 'updated_at', new.updated_at), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    WHERE EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', 'task.updated')));
END;
