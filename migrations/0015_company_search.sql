CREATE TABLE `search_terms` (
	`term` text PRIMARY KEY NOT NULL
) WITHOUT ROWID;
--> statement-breakpoint
ALTER TABLE `contacts` ADD `search_words` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `items` ADD `search_words` text DEFAULT '[]' NOT NULL;
--> statement-breakpoint
-- Company-scoped search (docs/search.md, src/lib/search.ts). The Worker writes search_words (the
-- record's words, folded as unicode61 folds them); these triggers index every word behind the
-- company's mark, so a term's postings are per company. Items' rowid is their list order
-- (expiry_date, id): ((days since 1900-01-01) << 32) | id; archived items carry a state token.
CREATE VIRTUAL TABLE `items_search` USING fts5(`terms`, tokenize = 'unicode61 remove_diacritics 2', prefix = '3 4 5 6', detail = none, content = '', contentless_delete = 1);--> statement-breakpoint
CREATE TRIGGER `items_search_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `items_search` (rowid, `terms`) SELECT (((CAST(julianday(new.expiry_date) AS INTEGER) - 2415020) << 32) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') || ' ' || m || char(63742) || CASE WHEN new.archived = 1 THEN 'a' ELSE 'l' END FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4;
END;--> statement-breakpoint
CREATE TRIGGER `items_search_after_update` AFTER UPDATE OF `search_words`, `expiry_date`, `archived` ON `items` BEGIN
  DELETE FROM `items_search` WHERE rowid = (((CAST(julianday(old.expiry_date) AS INTEGER) - 2415020) << 32) | old.id);
  INSERT INTO `items_search` (rowid, `terms`) SELECT (((CAST(julianday(new.expiry_date) AS INTEGER) - 2415020) << 32) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') || ' ' || m || char(63742) || CASE WHEN new.archived = 1 THEN 'a' ELSE 'l' END FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4 AND new.search_words IS NOT old.search_words;
END;--> statement-breakpoint
CREATE TRIGGER `items_search_after_delete` AFTER DELETE ON `items` BEGIN
  DELETE FROM `items_search` WHERE rowid = (((CAST(julianday(old.expiry_date) AS INTEGER) - 2415020) << 32) | old.id);
END;--> statement-breakpoint
CREATE VIRTUAL TABLE `contacts_search` USING fts5(`terms`, tokenize = 'unicode61 remove_diacritics 2', prefix = '3 4 5 6', detail = none, content = '', contentless_delete = 1);--> statement-breakpoint
CREATE TRIGGER `contacts_search_after_insert` AFTER INSERT ON `contacts` BEGIN
  INSERT INTO `contacts_search` (rowid, `terms`) SELECT new.id, coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4;
END;--> statement-breakpoint
CREATE TRIGGER `contacts_search_after_update` AFTER UPDATE OF `search_words` ON `contacts` BEGIN
  DELETE FROM `contacts_search` WHERE rowid = old.id;
  INSERT INTO `contacts_search` (rowid, `terms`) SELECT new.id, coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4;
END;--> statement-breakpoint
CREATE TRIGGER `contacts_search_after_delete` AFTER DELETE ON `contacts` BEGIN
  DELETE FROM `contacts_search` WHERE rowid = old.id;
END;--> statement-breakpoint
-- Existing records: their words are the old shared index's tokens (the same tokenizer, so the
-- same words the Worker would compute), read back through fts5vocab; the triggers above index them.
CREATE VIRTUAL TABLE `items_fts_words` USING fts5vocab(`items_fts`, 'instance');--> statement-breakpoint
CREATE TABLE `search_backfill` (`doc` integer PRIMARY KEY, `words` text NOT NULL);--> statement-breakpoint
INSERT INTO `search_backfill` (doc, words) SELECT doc, json_group_array(term) FROM (SELECT DISTINCT doc, term FROM `items_fts_words`) GROUP BY doc;--> statement-breakpoint
UPDATE `items` SET `search_words` = (SELECT words FROM `search_backfill` WHERE doc = items.id) WHERE id IN (SELECT doc FROM `search_backfill`);--> statement-breakpoint
DELETE FROM `search_backfill`;--> statement-breakpoint
CREATE VIRTUAL TABLE `contacts_fts_words` USING fts5vocab(`contacts_fts`, 'instance');--> statement-breakpoint
INSERT INTO `search_backfill` (doc, words) SELECT doc, json_group_array(term) FROM (SELECT DISTINCT doc, term FROM `contacts_fts_words`) GROUP BY doc;--> statement-breakpoint
UPDATE `contacts` SET `search_words` = (SELECT words FROM `search_backfill` WHERE doc = contacts.id) WHERE id IN (SELECT doc FROM `search_backfill`);--> statement-breakpoint
DROP TABLE `search_backfill`;--> statement-breakpoint
DROP TABLE `items_fts_words`;--> statement-breakpoint
DROP TABLE `contacts_fts_words`;--> statement-breakpoint
DROP TRIGGER `items_fts_after_insert`;--> statement-breakpoint
DROP TRIGGER `items_fts_after_update`;--> statement-breakpoint
DROP TRIGGER `items_fts_after_delete`;--> statement-breakpoint
DROP TABLE `items_fts`;--> statement-breakpoint
DROP TRIGGER `contacts_fts_after_insert`;--> statement-breakpoint
DROP TRIGGER `contacts_fts_after_update`;--> statement-breakpoint
DROP TRIGGER `contacts_fts_after_delete`;--> statement-breakpoint
DROP TABLE `contacts_fts`;
