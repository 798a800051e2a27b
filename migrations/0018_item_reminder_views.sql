-- The item's reminders as the company's Durable Object last showed them (src/reminders/views.ts,
-- docs/reminders.md "The item's reminders in D1"): GET /v1/items/{id} answers from here, without
-- calling the object, while nothing is pending for the item or the company's settings.
CREATE TABLE `item_reminder_views` (
	`company_id` integer NOT NULL,
	`item_id` integer NOT NULL,
	`reminders` text,
	`version` integer NOT NULL,
	`zone_version` integer NOT NULL,
	`gen` integer NOT NULL,
	`stale_at` integer,
	PRIMARY KEY(`company_id`, `item_id`)
) WITHOUT ROWID;
