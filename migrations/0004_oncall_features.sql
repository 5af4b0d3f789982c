CREATE TABLE `alert_deliveries` (
	`alert_key` text NOT NULL,
	`channel` text NOT NULL,
	`kind` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`subject_id` text NOT NULL,
	`summary` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`http_status` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`alert_key`, `channel`)
);
--> statement-breakpoint
CREATE INDEX `alert_deliveries_created` ON `alert_deliveries` (`created_at`,`alert_key`,`channel`);--> statement-breakpoint
CREATE INDEX `alert_deliveries_status` ON `alert_deliveries` (`status`,`created_at`,`alert_key`,`channel`);--> statement-breakpoint
ALTER TABLE `audit_log` ADD `batch_id` text;--> statement-breakpoint
CREATE INDEX `audit_log_batch` ON `audit_log` (`batch_id`,`time`,`id`);--> statement-breakpoint
ALTER TABLE `event_rollups` ADD `amount` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `incidents` ADD `respent_input_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `incidents` ADD `respent_output_tokens` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `op_ambiguities` ADD `idempotent` integer;--> statement-breakpoint
ALTER TABLE `op_ambiguities` ADD `resolution_ref` text;--> statement-breakpoint
ALTER TABLE `reconciliations` ADD `next_alarm_at` integer;