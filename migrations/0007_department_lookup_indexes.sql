DROP INDEX `contacts_company_dept_idx`;--> statement-breakpoint
CREATE INDEX `contacts_dept_idx` ON `contacts` (`dept_id`);--> statement-breakpoint
DROP INDEX `document_types_company_dept_idx`;--> statement-breakpoint
CREATE INDEX `document_types_dept_idx` ON `document_types` (`dept_id`);--> statement-breakpoint
DROP INDEX `folders_company_dept_idx`;--> statement-breakpoint
CREATE INDEX `folders_dept_idx` ON `folders` (`dept_id`);