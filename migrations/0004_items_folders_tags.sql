CREATE TABLE `folders` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`parent_id` integer DEFAULT 0 NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `folders_sibling_name_key_uq` ON `folders` (`company_id`,`parent_id`,`name_key`);--> statement-breakpoint
CREATE INDEX `folders_company_dept_idx` ON `folders` (`company_id`,`dept_id`);--> statement-breakpoint
CREATE TABLE `item_renewals` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`item_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`previous_date` text NOT NULL,
	`new_date` text NOT NULL,
	`renewed_by` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`item_id`) REFERENCES `items`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `item_renewals_item_idx` ON `item_renewals` (`item_id`);--> statement-breakpoint
CREATE TABLE `item_tags` (
	`item_id` integer NOT NULL,
	`tag_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`position` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`item_id`, `tag_id`),
	FOREIGN KEY (`item_id`) REFERENCES `items`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`tag_id`) REFERENCES `tags`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `item_tags_tag_idx` ON `item_tags` (`tag_id`);--> statement-breakpoint
CREATE TABLE `items` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`document_type_id` integer,
	`folder_id` integer,
	`contact_id` integer,
	`seq_id` integer,
	`title` text NOT NULL,
	`notes` text DEFAULT '' NOT NULL,
	`item_type` text DEFAULT 'exp' NOT NULL,
	`expiry_date` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`archived` integer DEFAULT 0 NOT NULL,
	`created_by` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	`updated_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`document_type_id`) REFERENCES `document_types`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`folder_id`) REFERENCES `folders`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `items_company_date_idx` ON `items` (`company_id`,`archived`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_status_date_idx` ON `items` (`company_id`,`archived`,`status`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_kind_date_idx` ON `items` (`company_id`,`archived`,`item_type`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_type_date_idx` ON `items` (`company_id`,`document_type_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_dept_date_idx` ON `items` (`company_id`,`dept_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_folder_date_idx` ON `items` (`company_id`,`folder_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_company_contact_date_idx` ON `items` (`company_id`,`contact_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE TABLE `tags` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`items_count` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tags_company_name_key_uq` ON `tags` (`company_id`,`name_key`);--> statement-breakpoint
ALTER TABLE `companies` ADD `items_archived` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Word-prefix search over items for `GET /v1/items?q=` (title and notes). Rows are keyed by items.id.
CREATE VIRTUAL TABLE `items_fts` USING fts5(`body`, tokenize = 'unicode61 remove_diacritics 2');--> statement-breakpoint
CREATE TRIGGER `items_fts_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `items_fts` (rowid, `body`) VALUES (new.id, new.title || ' ' || new.notes);
END;--> statement-breakpoint
CREATE TRIGGER `items_fts_after_update` AFTER UPDATE OF `title`, `notes` ON `items` BEGIN
  UPDATE `items_fts` SET `body` = new.title || ' ' || new.notes WHERE rowid = new.id;
END;--> statement-breakpoint
CREATE TRIGGER `items_fts_after_delete` AFTER DELETE ON `items` BEGIN
  DELETE FROM `items_fts` WHERE rowid = old.id;
END;--> statement-breakpoint
-- Usage counters follow every insert, delete and move of an item, whatever the write path:
-- companies.documents_used and items_archived, departments.docs_used, document_types.docs_count.
CREATE TRIGGER `items_counters_after_insert` AFTER INSERT ON `items` BEGIN
  UPDATE `companies` SET `documents_used` = `documents_used` + 1, `items_archived` = `items_archived` + new.archived WHERE id = new.company_id;
  UPDATE `departments` SET `docs_used` = `docs_used` + 1 WHERE id = new.dept_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` + 1 WHERE id = new.document_type_id;
END;--> statement-breakpoint
CREATE TRIGGER `items_counters_after_delete` AFTER DELETE ON `items` BEGIN
  UPDATE `companies` SET `documents_used` = `documents_used` - 1, `items_archived` = `items_archived` - old.archived WHERE id = old.company_id;
  UPDATE `departments` SET `docs_used` = `docs_used` - 1 WHERE id = old.dept_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` - 1 WHERE id = old.document_type_id;
END;--> statement-breakpoint
CREATE TRIGGER `items_counters_after_archive` AFTER UPDATE OF `archived` ON `items` WHEN new.archived <> old.archived BEGIN
  UPDATE `companies` SET `items_archived` = `items_archived` + new.archived - old.archived WHERE id = new.company_id;
END;--> statement-breakpoint
CREATE TRIGGER `items_counters_after_dept_move` AFTER UPDATE OF `dept_id` ON `items` WHEN new.dept_id <> old.dept_id BEGIN
  UPDATE `departments` SET `docs_used` = `docs_used` - 1 WHERE id = old.dept_id;
  UPDATE `departments` SET `docs_used` = `docs_used` + 1 WHERE id = new.dept_id;
END;--> statement-breakpoint
CREATE TRIGGER `items_counters_after_type_change` AFTER UPDATE OF `document_type_id` ON `items`
  WHEN new.document_type_id IS NOT old.document_type_id BEGIN
  UPDATE `document_types` SET `docs_count` = `docs_count` - 1 WHERE id = old.document_type_id;
  UPDATE `document_types` SET `docs_count` = `docs_count` + 1 WHERE id = new.document_type_id;
END;--> statement-breakpoint
-- tags.items_count follows item_tags (including the rows removed with their item).
CREATE TRIGGER `item_tags_count_after_insert` AFTER INSERT ON `item_tags` BEGIN
  UPDATE `tags` SET `items_count` = `items_count` + 1 WHERE id = new.tag_id;
END;--> statement-breakpoint
CREATE TRIGGER `item_tags_count_after_delete` AFTER DELETE ON `item_tags` BEGIN
  UPDATE `tags` SET `items_count` = `items_count` - 1 WHERE id = old.tag_id;
END;
