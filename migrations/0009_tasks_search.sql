-- Hand-written: task search, list indexes and counters (see src/routes/tasks/queries.ts).

-- The assignee filter reads its page and its count from the index alone, also with the
-- assignee_type extension filter (the last column): ordered by (due_at, id) like every task list.
DROP INDEX `tasks_company_assignee_due_idx`;--> statement-breakpoint
CREATE INDEX `tasks_company_assignee_due_idx` ON `tasks` (`company_id`,`assignee_id`,`due_at`,`id`,`assignee_type`);--> statement-breakpoint
-- Led by item_id: the foreign-key action when an item is deleted (SET NULL looks tasks up by
-- item_id alone), and the list's item_id filter in (due_at, id) order.
DROP INDEX `tasks_item_idx`;--> statement-breakpoint
CREATE INDEX `tasks_item_due_idx` ON `tasks` (`item_id`,`company_id`,`due_at`,`id`);--> statement-breakpoint
-- Tasks per company and status, kept by triggers: the unfiltered and status-filtered list totals
-- without counting rows. A company's rows go with the company.
CREATE TABLE `task_counts` (
	`company_id` integer NOT NULL,
	`status` text NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`company_id`, `status`)
);
--> statement-breakpoint
INSERT INTO `task_counts` (`company_id`, `status`, `total`) SELECT `company_id`, `status`, count(*) FROM `tasks` GROUP BY `company_id`, `status`;--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_insert` AFTER INSERT ON `tasks` BEGIN
  INSERT OR IGNORE INTO `task_counts` (`company_id`, `status`, `total`) VALUES (new.company_id, new.status, 0);
  UPDATE `task_counts` SET `total` = `total` + 1 WHERE `company_id` = new.company_id AND `status` = new.status;
END;--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_delete` AFTER DELETE ON `tasks` BEGIN
  UPDATE `task_counts` SET `total` = `total` - 1 WHERE `company_id` = old.company_id AND `status` = old.status;
END;--> statement-breakpoint
CREATE TRIGGER `tasks_counts_after_status` AFTER UPDATE OF `status`, `company_id` ON `tasks`
  WHEN new.status IS NOT old.status OR new.company_id IS NOT old.company_id BEGIN
  UPDATE `task_counts` SET `total` = `total` - 1 WHERE `company_id` = old.company_id AND `status` = old.status;
  INSERT OR IGNORE INTO `task_counts` (`company_id`, `status`, `total`) VALUES (new.company_id, new.status, 0);
  UPDATE `task_counts` SET `total` = `total` + 1 WHERE `company_id` = new.company_id AND `status` = new.status;
END;--> statement-breakpoint
CREATE TRIGGER `companies_task_counts_after_delete` AFTER DELETE ON `companies` BEGIN
  DELETE FROM `task_counts` WHERE `company_id` = old.id;
END;--> statement-breakpoint
-- A deleted contact no longer has tasks: they become unassigned (assignee_id is not a foreign key,
-- since it names a user or a contact).
CREATE TRIGGER `contacts_unassign_tasks_after_delete` AFTER DELETE ON `contacts` BEGIN
  UPDATE `tasks` SET `assignee_type` = NULL, `assignee_id` = NULL, `updated_at` = CURRENT_TIMESTAMP
    WHERE `company_id` = old.company_id AND `assignee_id` = old.id AND `assignee_type` = 'contact';
END;--> statement-breakpoint
-- Word-prefix search over title and description for `GET /v1/tasks?q=`: an external-content FTS5
-- table over tasks (rowid = tasks.id; the text is not stored twice), kept in step by triggers.
CREATE VIRTUAL TABLE `tasks_fts` USING fts5(`title`, `description`, content = 'tasks', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3 4');--> statement-breakpoint
INSERT INTO `tasks_fts` (`tasks_fts`) VALUES ('rebuild');--> statement-breakpoint
CREATE TRIGGER `tasks_fts_after_insert` AFTER INSERT ON `tasks` BEGIN
  INSERT INTO `tasks_fts` (rowid, `title`, `description`) VALUES (new.id, new.title, new.description);
END;--> statement-breakpoint
CREATE TRIGGER `tasks_fts_after_update` AFTER UPDATE OF `title`, `description` ON `tasks` BEGIN
  INSERT INTO `tasks_fts` (`tasks_fts`, rowid, `title`, `description`) VALUES ('delete', old.id, old.title, old.description);
  INSERT INTO `tasks_fts` (rowid, `title`, `description`) VALUES (new.id, new.title, new.description);
END;--> statement-breakpoint
CREATE TRIGGER `tasks_fts_after_delete` AFTER DELETE ON `tasks` BEGIN
  INSERT INTO `tasks_fts` (`tasks_fts`, rowid, `title`, `description`) VALUES ('delete', old.id, old.title, old.description);
END;
