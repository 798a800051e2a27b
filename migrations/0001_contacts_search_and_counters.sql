-- Hand-written (drizzle-kit generate --custom): what drizzle's schema cannot express.

-- Word-prefix search over contacts for `GET /v1/contacts?q=`. Rows are keyed by contacts.id.
CREATE VIRTUAL TABLE `contacts_fts` USING fts5(`body`, tokenize = 'unicode61 remove_diacritics 2');
--> statement-breakpoint
CREATE TRIGGER `contacts_fts_after_insert` AFTER INSERT ON `contacts` BEGIN
  INSERT INTO `contacts_fts` (rowid, `body`) VALUES (new.id, new.first_name || ' ' || new.last_name || ' ' || new.email || ' ' || new.phone_number);
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_fts_after_update` AFTER UPDATE OF `first_name`, `last_name`, `email`, `phone_number` ON `contacts` BEGIN
  UPDATE `contacts_fts` SET `body` = new.first_name || ' ' || new.last_name || ' ' || new.email || ' ' || new.phone_number WHERE rowid = new.id;
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_fts_after_delete` AFTER DELETE ON `contacts` BEGIN
  DELETE FROM `contacts_fts` WHERE rowid = old.id;
END;
--> statement-breakpoint
-- companies.contacts_used follows every insert and delete, whatever the write path.
CREATE TRIGGER `contacts_used_after_insert` AFTER INSERT ON `contacts` BEGIN
  UPDATE `companies` SET `contacts_used` = `contacts_used` + 1 WHERE id = new.company_id;
END;
--> statement-breakpoint
CREATE TRIGGER `contacts_used_after_delete` AFTER DELETE ON `contacts` BEGIN
  UPDATE `companies` SET `contacts_used` = `contacts_used` - 1 WHERE id = old.company_id;
END;
