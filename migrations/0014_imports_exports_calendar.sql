CREATE TABLE `calendar_feeds` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`client_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`filters` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `calendar_feeds_token_hash_uq` ON `calendar_feeds` (`token_hash`);--> statement-breakpoint
CREATE INDEX `calendar_feeds_company_idx` ON `calendar_feeds` (`company_id`,`id`);--> statement-breakpoint
CREATE TABLE `company_revisions` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`records` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `import_errors` (
	`import_id` integer NOT NULL,
	`row_number` integer NOT NULL,
	`column` text NOT NULL,
	`value` text NOT NULL,
	`message` text NOT NULL,
	PRIMARY KEY(`import_id`, `row_number`, `column`),
	FOREIGN KEY (`import_id`) REFERENCES `imports`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `imports` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`client_id` text NOT NULL,
	`user_id` integer NOT NULL,
	`resource` text NOT NULL,
	`format` text NOT NULL,
	`status` text NOT NULL,
	`dry_run` integer DEFAULT 0 NOT NULL,
	`on_error` text NOT NULL,
	`date_format` text NOT NULL,
	`body_key` text NOT NULL,
	`body_bytes` integer NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`valid` integer DEFAULT 0 NOT NULL,
	`created` integer DEFAULT 0 NOT NULL,
	`updated` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`chunks` integer DEFAULT 0 NOT NULL,
	`next_row` integer DEFAULT 0 NOT NULL,
	`message` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`fence` integer DEFAULT 1 NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	CONSTRAINT "import_step_replayed" CHECK("imports"."fence" = 1)
);
--> statement-breakpoint
CREATE INDEX `imports_company_idx` ON `imports` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `imports_status_updated_idx` ON `imports` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `item_field_values` (
	`item_id` integer NOT NULL,
	`field_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`item_id`, `field_id`),
	FOREIGN KEY (`item_id`) REFERENCES `items`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`field_id`) REFERENCES `document_type_fields`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `item_field_values_field_idx` ON `item_field_values` (`field_id`);--> statement-breakpoint
ALTER TABLE `items` ADD `external_id` text;--> statement-breakpoint
ALTER TABLE `items` ADD `import_ref` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `items_company_external_id_uq` ON `items` (`company_id`,`external_id`) WHERE external_id IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `items_import_ref_uq` ON `items` (`import_ref`) WHERE import_ref IS NOT NULL;--> statement-breakpoint
-- company_revisions.records moves on every change to a company's items, folders and document types
-- (a calendar feed's ETag reads it: src/routes/calendar-feeds/feed.ts). An UPDATE counts once: after
-- the version triggers' bump (every UPDATE of these tables bumps version exactly once).
CREATE TRIGGER `revision_items_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_items_after_update` AFTER UPDATE ON `items` WHEN new.version <> old.version BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_items_after_delete` AFTER DELETE ON `items` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_insert` AFTER INSERT ON `folders` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_update` AFTER UPDATE ON `folders` WHEN new.version <> old.version BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_folders_after_delete` AFTER DELETE ON `folders` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_insert` AFTER INSERT ON `document_types` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_update` AFTER UPDATE ON `document_types` WHEN new.version <> old.version BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (new.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;--> statement-breakpoint
CREATE TRIGGER `revision_document_types_after_delete` AFTER DELETE ON `document_types` BEGIN
  INSERT INTO `company_revisions` (`company_id`, `records`) VALUES (old.company_id, 1) ON CONFLICT (`company_id`) DO UPDATE SET `records` = `records` + 1;
END;
