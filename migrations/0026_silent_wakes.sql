CREATE TABLE `silent_wakes` (
	`worker` text NOT NULL,
	`object_id` text NOT NULL,
	`at` integer NOT NULL,
	`agent_class` text,
	PRIMARY KEY(`worker`, `object_id`, `at`)
);
--> statement-breakpoint
CREATE INDEX `silent_wakes_at` ON `silent_wakes` (`at`);--> statement-breakpoint
CREATE TABLE `tail_objects` (
	`worker` text NOT NULL,
	`object_id` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`seen_at` integer NOT NULL,
	PRIMARY KEY(`worker`, `object_id`)
);
