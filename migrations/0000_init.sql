CREATE TABLE `accounts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`owner_user_id` integer,
	`max_companies` integer NOT NULL,
	`max_documents` integer NOT NULL,
	`max_contacts` integer NOT NULL,
	`max_drive_space_mb` integer NOT NULL,
	`max_document_types` integer NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_clients` (
	`client_id` text PRIMARY KEY NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`secret_hash` text NOT NULL,
	`secret_salt` text NOT NULL,
	`account_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`scopes` text NOT NULL,
	`active` integer DEFAULT 1 NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `api_clients_company_idx` ON `api_clients` (`company_id`);--> statement-breakpoint
CREATE TABLE `companies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`name` text NOT NULL,
	`is_default` integer DEFAULT 0 NOT NULL,
	`documents_limit` integer NOT NULL,
	`documents_used` integer DEFAULT 0 NOT NULL,
	`contacts_limit` integer NOT NULL,
	`contacts_used` integer DEFAULT 0 NOT NULL,
	`drive_space_mb` integer NOT NULL,
	`drive_space_used_kb` integer DEFAULT 0 NOT NULL,
	`info` text DEFAULT '{}' NOT NULL,
	`settings` text DEFAULT '{"timezone":"UTC","date_format":"YYYY-MM-DD"}' NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `companies_account_idx` ON `companies` (`account_id`);--> statement-breakpoint
CREATE TABLE `contact_groups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`name` text NOT NULL,
	`is_default` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `contact_groups_company_dept_idx` ON `contact_groups` (`company_id`,`dept_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `contact_groups_dept_name_uq` ON `contact_groups` (`dept_id`,lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX `contact_groups_one_default_uq` ON `contact_groups` (`dept_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`dept_id` integer NOT NULL,
	`group_id` integer,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`email` text NOT NULL,
	`country_code` text DEFAULT '' NOT NULL,
	`iso` text DEFAULT '' NOT NULL,
	`mobile_code` text DEFAULT '' NOT NULL,
	`phone_number` text DEFAULT '' NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	`updated_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`dept_id`) REFERENCES `departments`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`group_id`) REFERENCES `contact_groups`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `contacts_company_idx` ON `contacts` (`company_id`);--> statement-breakpoint
CREATE INDEX `contacts_company_dept_idx` ON `contacts` (`company_id`,`dept_id`);--> statement-breakpoint
CREATE INDEX `contacts_company_group_idx` ON `contacts` (`company_id`,`group_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_company_email_uq` ON `contacts` (`company_id`,lower("email"));--> statement-breakpoint
CREATE TABLE `departments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`name` text NOT NULL,
	`is_default` integer DEFAULT 0 NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `departments_company_name_uq` ON `departments` (`company_id`,lower("name"));--> statement-breakpoint
CREATE UNIQUE INDEX `departments_one_default_uq` ON `departments` (`company_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `users` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`account_id` integer NOT NULL,
	`email` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`created_at` text DEFAULT CURRENT_TIMESTAMP NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `users_account_idx` ON `users` (`account_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_uq` ON `users` (`email`);