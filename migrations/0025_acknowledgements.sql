ALTER TABLE `audit_context` ADD `contact_id` integer;--> statement-breakpoint
ALTER TABLE `audit_context` ADD `via` text;--> statement-breakpoint
ALTER TABLE `audit_log` ADD `contact_id` integer;--> statement-breakpoint
ALTER TABLE `audit_log` ADD `via` text;--> statement-breakpoint
ALTER TABLE `items` ADD `ack_epoch` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `acknowledgement` text;--> statement-breakpoint
ALTER TABLE `items` ADD `snooze_epoch` integer;--> statement-breakpoint
ALTER TABLE `items` ADD `snoozed_until` text;--> statement-breakpoint
ALTER TABLE `items` ADD `snooze_contact_id` integer;--> statement-breakpoint
CREATE INDEX `items_company_ack_date_idx` ON `items` (`company_id`,`archived`,(ack_epoch IS schedule_epoch),`expiry_date`,`id`);