ALTER TABLE `tasks` ADD `search_words` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
-- Company-scoped task search (docs/search.md), as 0015 did for items and contacts. The rowid is
-- the list order at minute precision: ((minutes since 1900-01-01 00:00 UTC) << 31) | id; tasks
-- due in the same minute are put in (due_at, id) order by the query (src/routes/tasks/queries.ts).
CREATE VIRTUAL TABLE `tasks_search` USING fts5(`terms`, tokenize = 'unicode61 remove_diacritics 2', prefix = '3 4 5 6', detail = none, content = '', contentless_delete = 1);--> statement-breakpoint
CREATE TRIGGER `tasks_search_after_insert` AFTER INSERT ON `tasks` BEGIN
  INSERT INTO `tasks_search` (rowid, `terms`) SELECT ((((unixepoch(new.due_at) + 2208988800) / 60) << 31) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4;
END;--> statement-breakpoint
CREATE TRIGGER `tasks_search_after_update` AFTER UPDATE OF `search_words`, `due_at` ON `tasks` BEGIN
  DELETE FROM `tasks_search` WHERE rowid = ((((unixepoch(old.due_at) + 2208988800) / 60) << 31) | old.id);
  INSERT INTO `tasks_search` (rowid, `terms`) SELECT ((((unixepoch(new.due_at) + 2208988800) / 60) << 31) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4 AND new.search_words IS NOT old.search_words;
END;--> statement-breakpoint
CREATE TRIGGER `tasks_search_after_delete` AFTER DELETE ON `tasks` BEGIN
  DELETE FROM `tasks_search` WHERE rowid = ((((unixepoch(old.due_at) + 2208988800) / 60) << 31) | old.id);
END;--> statement-breakpoint
-- Existing tasks: their words are the old shared index's tokens, read back through fts5vocab.
CREATE VIRTUAL TABLE `tasks_fts_words` USING fts5vocab(`tasks_fts`, 'instance');--> statement-breakpoint
CREATE TABLE `search_backfill` (`doc` integer PRIMARY KEY, `words` text NOT NULL);--> statement-breakpoint
INSERT INTO `search_backfill` (doc, words) SELECT doc, json_group_array(term) FROM (SELECT DISTINCT doc, term FROM `tasks_fts_words`) GROUP BY doc;--> statement-breakpoint
UPDATE `tasks` SET `search_words` = (SELECT words FROM `search_backfill` WHERE doc = tasks.id) WHERE id IN (SELECT doc FROM `search_backfill`);--> statement-breakpoint
DROP TABLE `search_backfill`;--> statement-breakpoint
DROP TABLE `tasks_fts_words`;--> statement-breakpoint
DROP TRIGGER `tasks_fts_after_insert`;--> statement-breakpoint
DROP TRIGGER `tasks_fts_after_update`;--> statement-breakpoint
DROP TRIGGER `tasks_fts_after_delete`;--> statement-breakpoint
DROP TABLE `tasks_fts`;
