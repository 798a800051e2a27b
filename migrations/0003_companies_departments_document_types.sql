CREATE TABLE `document_type_fields` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`type_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`field_name` text NOT NULL,
	`field_key` text NOT NULL,
	`field_type` text NOT NULL,
	`field_data` text DEFAULT '' NOT NULL,
	`private` integer DEFAULT 0 NOT NULL,
	`position` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`type_id`) REFERENCES `document_types`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `document_type_fields_type_key_uq` ON `document_type_fields` (`type_id`,`field_key`);--> statement-breakpoint
CREATE INDEX `document_type_fields_type_position_idx` ON `document_type_fields` (`type_id`,`position`);--> statement-breakpoint
CREATE TABLE `document_types` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`is_default` integer DEFAULT 0 NOT NULL,
	`created_by` integer NOT NULL,
	`docs_count` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`created_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `document_types_account_idx` ON `document_types` (`account_id`);--> statement-breakpoint
CREATE INDEX `document_types_company_dept_idx` ON `document_types` (`company_id`,`dept_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `document_types_company_name_key_uq` ON `document_types` (`company_id`,`name_key`);--> statement-breakpoint
CREATE UNIQUE INDEX `document_types_one_default_uq` ON `document_types` (`company_id`) WHERE is_default = 1;--> statement-breakpoint
ALTER TABLE `departments` ADD `contacts_used` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `departments` ADD `docs_used` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `departments` ADD `storage_used_kb` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `companies_one_default_uq` ON `companies` (`account_id`) WHERE is_default = 1;--> statement-breakpoint
-- departments.contacts_used follows every insert, delete and move of a contact, whatever the write path.
UPDATE `departments` SET `contacts_used` = (SELECT count(*) FROM `contacts` WHERE `contacts`.`dept_id` = `departments`.`id`);--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_insert` AFTER INSERT ON `contacts` BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.dept_id;
END;--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_delete` AFTER DELETE ON `contacts` BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.dept_id;
END;--> statement-breakpoint
CREATE TRIGGER `departments_contacts_used_after_move` AFTER UPDATE OF `dept_id` ON `contacts` WHEN new.dept_id <> old.dept_id BEGIN
  UPDATE `departments` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.dept_id;
  UPDATE `departments` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.dept_id;
END;
