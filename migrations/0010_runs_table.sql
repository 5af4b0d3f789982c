ALTER TABLE `fiber_runs` RENAME TO `runs`;--> statement-breakpoint
DROP INDEX `fiber_runs_first_seen`;--> statement-breakpoint
DROP INDEX `fiber_runs_agent`;--> statement-breakpoint
DROP INDEX `fiber_runs_outcome`;--> statement-breakpoint
DROP INDEX `fiber_runs_class`;--> statement-breakpoint
DROP INDEX `fiber_runs_name`;--> statement-breakpoint
DROP INDEX `fiber_runs_kind`;--> statement-breakpoint
DROP INDEX `fiber_runs_kind_outcome`;--> statement-breakpoint
DROP INDEX `fiber_runs_open`;--> statement-breakpoint
DROP INDEX `fiber_runs_skipped_turns`;--> statement-breakpoint
CREATE INDEX `runs_first_seen` ON `runs` (`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `runs_agent` ON `runs` (`agent_class`,`agent_name`,`first_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `runs_outcome` ON `runs` (`outcome`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `runs_class` ON `runs` (`agent_class`,`first_seen`,`fiber_id`,`agent_name`);--> statement-breakpoint
CREATE INDEX `runs_name` ON `runs` (`agent_name`,`first_seen`,`fiber_id`,`agent_class`);--> statement-breakpoint
CREATE INDEX `runs_kind` ON `runs` (`kind`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `runs_kind_outcome` ON `runs` (`kind`,`outcome`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `runs_open` ON `runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`) WHERE outcome IS NULL;--> statement-breakpoint
CREATE INDEX `runs_skipped_turns` ON `runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`) WHERE kind = 'chat_turn' AND outcome = 'cancelled' AND reason = 'skipped';