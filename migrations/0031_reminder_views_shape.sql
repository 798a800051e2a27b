-- The items' reminder views (a cache the company clock writes: src/company-clock/handoff/views.ts)
-- gained `channel_id` on each reminder and delivery (issue 35). Views written before lack it: they
-- are dropped, and the next read of each item asks its clock, which writes the view again.
DELETE FROM `item_reminder_views`;
