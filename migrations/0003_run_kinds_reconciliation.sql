CREATE TABLE `reconciliations` (
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`asked_at` integer NOT NULL,
	`findings` integer NOT NULL,
	`error` text,
	PRIMARY KEY(`agent_class`, `agent_name`)
);
--> statement-breakpoint
ALTER TABLE `events` ADD `task_id` text;--> statement-breakpoint
CREATE INDEX `events_task_time` ON `events` (`task_id`,`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_request_time` ON `events` (`request_id`,`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `kind` text DEFAULT 'fiber' NOT NULL;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `definition` text;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `attempt` integer;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `phase` text;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `phase_at` integer;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `phase_event_id` text;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `wake_at` integer;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `step` text;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `confirmed_at` integer;--> statement-breakpoint
CREATE INDEX `fiber_runs_kind` ON `fiber_runs` (`kind`,`last_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_kind_outcome` ON `fiber_runs` (`kind`,`outcome`,`last_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
ALTER TABLE `incidents` ADD `confirmed_at` integer;