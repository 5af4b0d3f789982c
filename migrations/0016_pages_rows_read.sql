CREATE TABLE `incident_usage` (
	`incident_id` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`attempt` integer NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`incident_id`, `agent_class`, `agent_name`, `attempt`)
);
--> statement-breakpoint
ALTER TABLE `incidents` ADD `attempt_events` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `incidents` ADD `pause_held` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `incidents` ADD `pause_declined` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `incidents` ADD `pause_skipped_at` integer;--> statement-breakpoint
CREATE INDEX `op_ambiguities_agent_open` ON `op_ambiguities` (`agent_class`,`agent_name`,`last_seen`,`op_id`) WHERE resolution_at IS NULL;