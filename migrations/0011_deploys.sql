CREATE TABLE `deploys` (
	`version` text PRIMARY KEY NOT NULL,
	`first_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deploys_first_seen` ON `deploys` (`first_seen`,`version`);--> statement-breakpoint
ALTER TABLE `incidents` ADD `version` text;--> statement-breakpoint
ALTER TABLE `incidents` ADD `version_at` integer;--> statement-breakpoint
CREATE INDEX `incidents_version` ON `incidents` (`version`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);