-- Name search (q) on contact groups, folders and tags: the list order with the name key, so a page
-- streams from the index and a capped total counts without reading rows (docs/search.md).
CREATE INDEX `contact_groups_company_id_name_idx` ON `contact_groups` (`company_id`,`id`,`name_key`);--> statement-breakpoint
CREATE INDEX `folders_company_id_name_idx` ON `folders` (`company_id`,`id`,`name_key`);--> statement-breakpoint
CREATE INDEX `tags_company_name_count_idx` ON `tags` (`company_id`,`name_key`,`items_count`);