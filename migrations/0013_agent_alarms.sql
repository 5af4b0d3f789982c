ALTER TABLE `agents` ADD `alarm_first_at` integer;--> statement-breakpoint
ALTER TABLE `agents` ADD `alarm_last_at` integer;