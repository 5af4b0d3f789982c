CREATE TABLE `recovery_pauses` (
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`pause_state` text,
	`paused_until` integer,
	`pause_reason` text,
	`pause_actor` text,
	`pause_at` integer,
	`pause_event_id` text,
	`skipped` integer DEFAULT 0 NOT NULL,
	`last_skipped_at` integer,
	PRIMARY KEY(`agent_class`, `agent_name`)
);
