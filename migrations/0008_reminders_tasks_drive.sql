CREATE TABLE `files` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`public_id` text NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`folder_id` integer,
	`file_name` text NOT NULL,
	`content_type` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`sha256` text NOT NULL,
	`r2_key` text NOT NULL,
	`created_by` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`folder_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `files_public_id_uq` ON `files` (`public_id`);--> statement-breakpoint
CREATE INDEX `files_company_idx` ON `files` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `files_dept_idx` ON `files` (`dept_id`);--> statement-breakpoint
CREATE INDEX `files_folder_idx` ON `files` (`folder_id`);--> statement-breakpoint
CREATE TABLE `item_files` (
	`item_id` integer NOT NULL,
	`file_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	PRIMARY KEY(`item_id`, `file_id`),
	FOREIGN KEY (`item_id`) REFERENCES `items`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`file_id`) REFERENCES `files`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `item_files_file_idx` ON `item_files` (`file_id`);--> statement-breakpoint
CREATE INDEX `item_files_company_idx` ON `item_files` (`company_id`);--> statement-breakpoint
CREATE TABLE `reminder_sequences` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`is_default` integer DEFAULT 0 NOT NULL,
	`steps` text NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	`updated_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `reminder_sequences_company_name_key_uq` ON `reminder_sequences` (`company_id`,`name_key`);--> statement-breakpoint
CREATE UNIQUE INDEX `reminder_sequences_company_default_uq` ON `reminder_sequences` (`company_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `reminder_sync` (
	`company_id` integer NOT NULL,
	`item_id` integer NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`synced_version` integer DEFAULT 0 NOT NULL,
	`changed_at` integer NOT NULL,
	PRIMARY KEY(`company_id`, `item_id`)
);
--> statement-breakpoint
CREATE INDEX `reminder_sync_pending_idx` ON `reminder_sync` (`changed_at`) WHERE version > synced_version;--> statement-breakpoint
CREATE TABLE `reminder_wakeups` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`due_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `reminder_wakeups_due_idx` ON `reminder_wakeups` (`due_at`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`public_id` text NOT NULL,
	`company_id` integer NOT NULL,
	`item_id` integer,
	`title` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`status` text DEFAULT 'open' NOT NULL,
	`priority` text DEFAULT 'normal' NOT NULL,
	`due_at` text NOT NULL,
	`owner_id` integer NOT NULL,
	`assignee_type` text,
	`assignee_id` integer,
	`created_by` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	`updated_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`item_id`) REFERENCES `items`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tasks_public_id_uq` ON `tasks` (`public_id`);--> statement-breakpoint
CREATE INDEX `tasks_company_due_idx` ON `tasks` (`company_id`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_company_status_due_idx` ON `tasks` (`company_id`,`status`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_company_assignee_due_idx` ON `tasks` (`company_id`,`assignee_id`,`due_at`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_item_idx` ON `tasks` (`item_id`);--> statement-breakpoint
CREATE TABLE `upload_sessions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`token_hash` text NOT NULL,
	`company_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`folder_id` integer,
	`file_name` text NOT NULL,
	`content_type` text NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`folder_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `upload_sessions_token_uq` ON `upload_sessions` (`token_hash`);--> statement-breakpoint
CREATE INDEX `upload_sessions_company_idx` ON `upload_sessions` (`company_id`);--> statement-breakpoint
CREATE INDEX `upload_sessions_expires_idx` ON `upload_sessions` (`expires_at`);--> statement-breakpoint
CREATE INDEX `upload_sessions_dept_idx` ON `upload_sessions` (`dept_id`);--> statement-breakpoint
CREATE INDEX `upload_sessions_folder_idx` ON `upload_sessions` (`folder_id`);--> statement-breakpoint
ALTER TABLE `items` ADD `reminder_anchor` text;--> statement-breakpoint
ALTER TABLE `items` ADD `schedule_epoch` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
CREATE INDEX `items_company_sequence_idx` ON `items` (`company_id`,`seq_id`);--> statement-breakpoint
-- Hand-written: every company gets the default sequence; existing items follow it and are queued
-- by the reminder engine through the outbox (reminder_sync), which triggers keep from here on.
INSERT INTO `reminder_sequences` (`company_id`, `name`, `name_key`, `is_default`, `steps`)
  SELECT `id`, 'Standard', 'standard', 1,
    '[{"period":30,"unit":"day","type":1,"hour":"09:00"},{"period":14,"unit":"day","type":1,"hour":"09:00"},{"period":7,"unit":"day","type":1,"hour":"09:00"},{"period":1,"unit":"day","type":1,"hour":"09:00"},{"period":0,"unit":"day","type":1,"hour":"09:00"}]'
  FROM `companies`;--> statement-breakpoint
UPDATE `items` SET `reminder_anchor` = `expiry_date`;--> statement-breakpoint
UPDATE `items` SET `seq_id` = (SELECT s.`id` FROM `reminder_sequences` s WHERE s.`company_id` = `items`.`company_id` AND s.`is_default` = 1)
  WHERE `seq_id` IS NULL OR `seq_id` NOT IN (SELECT s.`id` FROM `reminder_sequences` s WHERE s.`company_id` = `items`.`company_id`);--> statement-breakpoint
INSERT INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`)
  SELECT `company_id`, `id`, 1, 0, unixepoch() FROM `items`;--> statement-breakpoint
-- The outbox: each change the reminder engine must see bumps the item's version in the same statement.
CREATE TRIGGER `items_reminder_sync_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.company_id, new.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.company_id AND `item_id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_update` AFTER UPDATE OF `title`, `expiry_date`, `reminder_anchor`, `schedule_epoch`, `status`, `archived` ON `items` BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.company_id, new.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.company_id AND `item_id` = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `items_reminder_sync_after_delete` AFTER DELETE ON `items` BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (old.company_id, old.id, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = old.company_id AND `item_id` = old.id;
END;--> statement-breakpoint
-- A company's time zone moves its queued reminders: item_id 0 stands for the company's settings.
CREATE TRIGGER `companies_reminder_sync_after_settings` AFTER UPDATE OF `settings` ON `companies`
  WHEN json_extract(new.settings, '$.timezone') IS NOT json_extract(old.settings, '$.timezone') BEGIN
  INSERT OR IGNORE INTO `reminder_sync` (`company_id`, `item_id`, `version`, `synced_version`, `changed_at`) VALUES (new.id, 0, 0, 0, 0);
  UPDATE `reminder_sync` SET `version` = `version` + 1, `changed_at` = unixepoch() WHERE `company_id` = new.id AND `item_id` = 0;
END;
--> statement-breakpoint
-- Every new company starts with the default sequence, however it is created (API, operator CLI, tests).
CREATE TRIGGER `companies_default_sequence_after_insert` AFTER INSERT ON `companies` BEGIN
  INSERT INTO `reminder_sequences` (`company_id`, `name`, `name_key`, `is_default`, `steps`) VALUES (new.id, 'Standard', 'standard', 1,
    '[{"period":30,"unit":"day","type":1,"hour":"09:00"},{"period":14,"unit":"day","type":1,"hour":"09:00"},{"period":7,"unit":"day","type":1,"hour":"09:00"},{"period":1,"unit":"day","type":1,"hour":"09:00"},{"period":0,"unit":"day","type":1,"hour":"09:00"}]');
END;
