ALTER TABLE `agents` ADD `seq_max` integer;--> statement-breakpoint
ALTER TABLE `agents` ADD `seq_seen` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `fiber_runs` ADD `status_message` text;--> statement-breakpoint
ALTER TABLE `incidents` ADD `closed_by` text;--> statement-breakpoint
ALTER TABLE `incidents` ADD `closed_by_at` integer;--> statement-breakpoint
ALTER TABLE `incidents` ADD `closed_by_event_id` text;--> statement-breakpoint
ALTER TABLE `incidents` ADD `closed_by_reason` text;