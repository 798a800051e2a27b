-- Items' search tokens carry the item's state: `mark + state + word` (state U+F8FD live, U+F8FC
-- archived) instead of `mark + word` plus one state token per item. A search of live items (the
-- default) then reads the live postings alone, instead of intersecting every match with the
-- company's live token, whose postings hold every live item (docs/search.md). The prefix indexes
-- move up by one character for the state. Same rowid (the list order), same search_terms.
DROP TRIGGER `items_search_after_insert`;--> statement-breakpoint
DROP TRIGGER `items_search_after_update`;--> statement-breakpoint
DROP TRIGGER `items_search_after_delete`;--> statement-breakpoint
DROP TABLE `items_search`;--> statement-breakpoint
CREATE VIRTUAL TABLE `items_search` USING fts5(`terms`, tokenize = 'unicode61 remove_diacritics 2', prefix = '4 5 6 7', detail = none, content = '', contentless_delete = 1);--> statement-breakpoint
CREATE TRIGGER `items_search_after_insert` AFTER INSERT ON `items` BEGIN
  INSERT INTO `items_search` (rowid, `terms`) SELECT (((CAST(julianday(new.expiry_date) AS INTEGER) - 2415020) << 32) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400, CASE WHEN new.archived = 1 THEN 63740 ELSE 63741 END) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4;
END;--> statement-breakpoint
CREATE TRIGGER `items_search_after_update` AFTER UPDATE OF `search_words`, `expiry_date`, `archived` ON `items` BEGIN
  DELETE FROM `items_search` WHERE rowid = (((CAST(julianday(old.expiry_date) AS INTEGER) - 2415020) << 32) | old.id);
  INSERT INTO `items_search` (rowid, `terms`) SELECT (((CAST(julianday(new.expiry_date) AS INTEGER) - 2415020) << 32) | new.id), coalesce((SELECT group_concat(m || value, ' ') FROM json_each(new.search_words)), '') FROM (SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400, CASE WHEN new.archived = 1 THEN 63740 ELSE 63741 END) AS m);
  INSERT OR IGNORE INTO `search_terms` (term) SELECT char(57344 + new.company_id / 6400, 57344 + new.company_id % 6400) || value FROM json_each(new.search_words) WHERE length(value) > 4 AND new.search_words IS NOT old.search_words;
END;--> statement-breakpoint
CREATE TRIGGER `items_search_after_delete` AFTER DELETE ON `items` BEGIN
  DELETE FROM `items_search` WHERE rowid = (((CAST(julianday(old.expiry_date) AS INTEGER) - 2415020) << 32) | old.id);
END;--> statement-breakpoint
INSERT INTO `items_search` (rowid, `terms`)
  SELECT (((CAST(julianday(i.expiry_date) AS INTEGER) - 2415020) << 32) | i.id),
    coalesce((SELECT group_concat(char(57344 + i.company_id / 6400, 57344 + i.company_id % 6400, CASE WHEN i.archived = 1 THEN 63740 ELSE 63741 END) || value, ' ') FROM json_each(i.search_words)), '')
  FROM `items` AS i;
