-- Shards (docs/scale.md): the directory, used in the home database (shard 0) only, and the account
-- state that makes an account read-only while it moves between shards.
CREATE TABLE `directory_accounts` (
	`account_id` integer PRIMARY KEY NOT NULL,
	`shard` integer NOT NULL,
	`moved_at` integer
);
--> statement-breakpoint
CREATE TABLE `directory_clients` (
	`client_id` text PRIMARY KEY NOT NULL,
	`account_id` integer NOT NULL,
	`shard` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `directory_companies` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`account_id` integer NOT NULL,
	`shard` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `directory_companies_account_idx` ON `directory_companies` (`account_id`);--> statement-breakpoint
ALTER TABLE `accounts` ADD `shard_state` text DEFAULT 'active' NOT NULL;