DROP INDEX `agents_last_seen`;--> statement-breakpoint
DROP INDEX `agents_class_last_seen`;--> statement-breakpoint
ALTER TABLE `agents` ADD `listed_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `agents_listed` ON `agents` (`listed_at`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `agents_class_listed` ON `agents` (`agent_class`,`listed_at`,`agent_name`);--> statement-breakpoint
DROP INDEX `fiber_runs_last_seen`;--> statement-breakpoint
DROP INDEX `fiber_runs_agent`;--> statement-breakpoint
DROP INDEX `fiber_runs_outcome`;--> statement-breakpoint
DROP INDEX `fiber_runs_class`;--> statement-breakpoint
DROP INDEX `fiber_runs_name`;--> statement-breakpoint
DROP INDEX `fiber_runs_kind`;--> statement-breakpoint
DROP INDEX `fiber_runs_kind_outcome`;--> statement-breakpoint
CREATE INDEX `fiber_runs_first_seen` ON `fiber_runs` (`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_open` ON `fiber_runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`) WHERE outcome IS NULL;--> statement-breakpoint
CREATE INDEX `fiber_runs_skipped_turns` ON `fiber_runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`) WHERE kind = 'chat_turn' AND outcome = 'cancelled' AND reason = 'skipped';--> statement-breakpoint
CREATE INDEX `fiber_runs_agent` ON `fiber_runs` (`agent_class`,`agent_name`,`first_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_outcome` ON `fiber_runs` (`outcome`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_class` ON `fiber_runs` (`agent_class`,`first_seen`,`fiber_id`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_name` ON `fiber_runs` (`agent_name`,`first_seen`,`fiber_id`,`agent_class`);--> statement-breakpoint
CREATE INDEX `fiber_runs_kind` ON `fiber_runs` (`kind`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_kind_outcome` ON `fiber_runs` (`kind`,`outcome`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
DROP INDEX `sessions_last_seen`;--> statement-breakpoint
DROP INDEX `sessions_status`;--> statement-breakpoint
DROP INDEX `sessions_class`;--> statement-breakpoint
ALTER TABLE `sessions` ADD `listed_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `sessions_listed` ON `sessions` (`listed_at`,`session_name`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `sessions_status` ON `sessions` (`status`,`listed_at`,`session_name`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `sessions_class` ON `sessions` (`agent_class`,`listed_at`,`session_name`,`agent_name`);