DROP INDEX `items_company_folder_date_idx`;--> statement-breakpoint
DROP INDEX `items_folder_idx`;--> statement-breakpoint
DROP INDEX `items_type_date_idx`;--> statement-breakpoint
DROP INDEX `items_dept_date_idx`;--> statement-breakpoint
DROP INDEX `items_contact_date_idx`;--> statement-breakpoint
CREATE INDEX `items_folder_date_idx` ON `items` (`folder_id`,`archived`,`company_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_type_date_idx` ON `items` (`document_type_id`,`archived`,`company_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_dept_date_idx` ON `items` (`dept_id`,`archived`,`company_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_contact_date_idx` ON `items` (`contact_id`,`archived`,`company_id`,`expiry_date`,`id`);--> statement-breakpoint
-- Prefix indexes make `q` word-prefix searches ("insp"*) read a prefix's own index instead of
-- every term that starts with it. The table is rebuilt from items (its triggers keep it in step).
DROP TABLE `items_fts`;--> statement-breakpoint
CREATE VIRTUAL TABLE `items_fts` USING fts5(`body`, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');--> statement-breakpoint
INSERT INTO `items_fts` (rowid, `body`) SELECT id, title || ' ' || notes FROM `items`;
