ALTER TABLE `item_renewals` ADD `reason` text DEFAULT 'manual' NOT NULL;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_every` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_unit` text;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_renew_on` text;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_until` text;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_count` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `recur_anchor` text;--> statement-breakpoint
CREATE INDEX `items_company_recurring_idx` ON `items` (`company_id`,`archived`,`expiry_date`,`id`) WHERE recur_every IS NOT NULL;--> statement-breakpoint
-- Hand-written (issue 19): the reminder engine mirrors the rule (it renews renew_on=expired items),
-- so a change of it is a change the company's clock must apply; and a changed rule is item.updated.
DROP TRIGGER `items_reminder_sync_after_update`;
--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_update` AFTER UPDATE OF `title`, `expiry_date`, `reminder_anchor`, `schedule_epoch`, `status`, `archived`, `recur_every`, `recur_unit`, `recur_renew_on`, `recur_until`, `recur_count`, `recur_anchor` ON `items` WHEN NOT EXISTS (SELECT 1 FROM shard_moves WHERE company_id = new.company_id)
BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.company_id, new.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.company_id AND `item_id` = new.id;
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
          OR new.contact_id IS NOT old.contact_id OR new.dept_id IS NOT old.dept_id
          OR new.recur_every IS NOT old.recur_every OR new.recur_unit IS NOT old.recur_unit OR new.recur_renew_on IS NOT old.recur_renew_on
          OR new.recur_until IS NOT old.recur_until OR new.recur_count IS NOT old.recur_count THEN 'item.updated'
      END AS type) AS t
    WHERE t.type IS NOT NULL AND EXISTS (SELECT 1 FROM `webhook_endpoints` AS e WHERE e.company_id = new.company_id AND e.enabled = 1
      AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE value IN ('*', t.type)));
END;
