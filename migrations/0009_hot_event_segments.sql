CREATE TABLE `event_segments` (
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`seq_from` integer NOT NULL,
	`seq_to` integer NOT NULL,
	`time_from` integer NOT NULL,
	`time_to` integer NOT NULL,
	`n` integer NOT NULL,
	`received_at` integer NOT NULL,
	`body` text NOT NULL,
	PRIMARY KEY(`agent_class`, `agent_name`, `seq_from`)
);
--> statement-breakpoint
CREATE INDEX `event_segments_agent_time` ON `event_segments` (`agent_class`,`agent_name`,`time_to`);--> statement-breakpoint
DROP TABLE `events`;