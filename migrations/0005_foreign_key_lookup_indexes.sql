DROP INDEX `items_company_type_date_idx`;--> statement-breakpoint
DROP INDEX `items_company_dept_date_idx`;--> statement-breakpoint
DROP INDEX `items_company_contact_date_idx`;--> statement-breakpoint
CREATE INDEX `items_type_date_idx` ON `items` (`document_type_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_dept_date_idx` ON `items` (`dept_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_contact_date_idx` ON `items` (`contact_id`,`expiry_date`,`id`);--> statement-breakpoint
CREATE INDEX `items_folder_idx` ON `items` (`folder_id`);--> statement-breakpoint
CREATE INDEX `contacts_group_idx` ON `contacts` (`group_id`);