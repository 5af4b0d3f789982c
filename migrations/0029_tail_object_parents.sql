ALTER TABLE `tail_objects` ADD `parent_path` text;--> statement-breakpoint
ALTER TABLE `tail_objects` ADD `parent_unknown` text;--> statement-breakpoint
CREATE INDEX `tail_objects_agent` ON `tail_objects` (`agent_class`,`agent_name`);