DROP INDEX `runs_open`;--> statement-breakpoint
ALTER TABLE `runs` ADD `listed_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `runs` SET `listed_at` = `last_seen` - (`last_seen` % 60000);--> statement-breakpoint
CREATE INDEX `runs_open` ON `runs` (`listed_at`,`fiber_id`,`agent_class`,`agent_name`) WHERE outcome IS NULL;