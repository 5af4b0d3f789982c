DROP INDEX `runs_name`;--> statement-breakpoint
CREATE INDEX `agents_name` ON `agents` (`agent_name`,`agent_class`);