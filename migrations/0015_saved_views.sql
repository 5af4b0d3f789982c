CREATE TABLE `saved_views` (
	`view_id` text PRIMARY KEY NOT NULL,
	`shelf` text NOT NULL,
	`owner` text NOT NULL,
	`list` text NOT NULL,
	`name` text NOT NULL,
	`query` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `saved_views_shelf_name` ON `saved_views` (`shelf`,`name`);--> statement-breakpoint
CREATE TABLE `view_last_used` (
	`email` text NOT NULL,
	`list` text NOT NULL,
	`view_id` text NOT NULL,
	PRIMARY KEY(`email`, `list`)
);
