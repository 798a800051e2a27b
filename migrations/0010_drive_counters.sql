-- Hand-written: drive usage counters and upload reservations (see src/routes/drive/).

-- The space an upload in progress holds: set (to the size in KB of its Content-Length) by the
-- same UPDATE that claims the upload token, and set back to 0 in the same batch that inserts its
-- file row, or when the upload fails. The company's quota check counts drive_space_used_kb plus
-- the reservations of its uploads in progress, so concurrent uploads can never overshoot it.
ALTER TABLE `upload_sessions` ADD `reserved_kb` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Only uploads in progress: the sum per company in the quota check, and the sweep of abandoned ones.
CREATE INDEX `upload_sessions_reserved_idx` ON `upload_sessions` (`company_id`,`used_at`) WHERE reserved_kb > 0;--> statement-breakpoint
-- With expires_at: the pruning of a company's spent sessions (each time it opens one) is an index range.
DROP INDEX `upload_sessions_company_idx`;--> statement-breakpoint
CREATE INDEX `upload_sessions_company_idx` ON `upload_sessions` (`company_id`,`expires_at`);--> statement-breakpoint
-- A file counts ceil(size_bytes / 1024) KB, at least 1 KB (an empty file too), towards its
-- company's drive_space_used_kb and its department's storage_used_kb. Kept by triggers on every
-- insert, delete and move, so both counters are exact at all times.
UPDATE `companies` SET `drive_space_used_kb` = (SELECT coalesce(sum(max(1, (f.`size_bytes` + 1023) / 1024)), 0) FROM `files` AS f WHERE f.`company_id` = `companies`.`id`);--> statement-breakpoint
UPDATE `departments` SET `storage_used_kb` = (SELECT coalesce(sum(max(1, (f.`size_bytes` + 1023) / 1024)), 0) FROM `files` AS f WHERE f.`dept_id` = `departments`.`id`);--> statement-breakpoint
CREATE TRIGGER `files_usage_after_insert` AFTER INSERT ON `files` BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.dept_id;
END;--> statement-breakpoint
CREATE TRIGGER `files_usage_after_delete` AFTER DELETE ON `files` BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.dept_id;
END;--> statement-breakpoint
CREATE TRIGGER `files_usage_after_move` AFTER UPDATE OF `company_id`, `dept_id`, `size_bytes` ON `files`
  WHEN new.company_id IS NOT old.company_id OR new.dept_id IS NOT old.dept_id OR new.size_bytes IS NOT old.size_bytes BEGIN
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` - max(1, (old.size_bytes + 1023) / 1024) WHERE `id` = old.dept_id;
  UPDATE `companies` SET `drive_space_used_kb` = `drive_space_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.company_id;
  UPDATE `departments` SET `storage_used_kb` = `storage_used_kb` + max(1, (new.size_bytes + 1023) / 1024) WHERE `id` = new.dept_id;
END;
