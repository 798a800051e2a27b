-- Case-insensitive uniqueness moves from SQLite's ASCII-only lower() to keys computed in the
-- Worker (src/lib/text-key.ts: Unicode case folding + NFC). Existing rows are backfilled with
-- lower(), which equals the Worker's key for ASCII text.
DROP INDEX `contact_groups_dept_name_uq`;--> statement-breakpoint
ALTER TABLE `contact_groups` ADD `name_key` text;--> statement-breakpoint
UPDATE `contact_groups` SET `name_key` = lower(`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `contact_groups_dept_name_key_uq` ON `contact_groups` (`dept_id`,`name_key`);--> statement-breakpoint
DROP INDEX `contacts_company_email_uq`;--> statement-breakpoint
ALTER TABLE `contacts` ADD `email_key` text;--> statement-breakpoint
UPDATE `contacts` SET `email_key` = lower(`email`);--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_company_email_key_uq` ON `contacts` (`company_id`,`email_key`);--> statement-breakpoint
DROP INDEX `departments_company_name_uq`;--> statement-breakpoint
ALTER TABLE `departments` ADD `name_key` text;--> statement-breakpoint
UPDATE `departments` SET `name_key` = lower(`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `departments_company_name_key_uq` ON `departments` (`company_id`,`name_key`);--> statement-breakpoint
-- ALTER TABLE cannot add NOT NULL without a default (and '' would collide in the unique index):
-- these triggers refuse a row without its key, so no write path can skip it.
CREATE TRIGGER `contact_groups_name_key_required` BEFORE INSERT ON `contact_groups` WHEN new.name_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'contact_groups.name_key is required');
END;--> statement-breakpoint
CREATE TRIGGER `contact_groups_name_key_kept` BEFORE UPDATE OF `name_key` ON `contact_groups` WHEN new.name_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'contact_groups.name_key is required');
END;--> statement-breakpoint
CREATE TRIGGER `contacts_email_key_required` BEFORE INSERT ON `contacts` WHEN new.email_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'contacts.email_key is required');
END;--> statement-breakpoint
CREATE TRIGGER `contacts_email_key_kept` BEFORE UPDATE OF `email_key` ON `contacts` WHEN new.email_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'contacts.email_key is required');
END;--> statement-breakpoint
CREATE TRIGGER `departments_name_key_required` BEFORE INSERT ON `departments` WHEN new.name_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'departments.name_key is required');
END;--> statement-breakpoint
CREATE TRIGGER `departments_name_key_kept` BEFORE UPDATE OF `name_key` ON `departments` WHEN new.name_key IS NULL BEGIN
  SELECT RAISE(ABORT, 'departments.name_key is required');
END;--> statement-breakpoint
-- Revocation bumps it; tokens carry the generation they were issued under.
ALTER TABLE `api_clients` ADD `token_generation` integer DEFAULT 0 NOT NULL;
