CREATE TABLE `event_rollups` (
	`bucket` integer NOT NULL,
	`type` text NOT NULL,
	`dim` text DEFAULT '' NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`bucket`, `type`, `dim`)
);
--> statement-breakpoint
CREATE INDEX `event_rollups_type` ON `event_rollups` (`type`,`bucket`,`dim`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`session_name` text PRIMARY KEY NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL,
	`last_event_type` text NOT NULL,
	`last_event_at` integer NOT NULL,
	`last_event_event_id` text NOT NULL,
	`status` text,
	`status_at` integer,
	`status_event_id` text,
	`recovery_count` integer DEFAULT 0 NOT NULL,
	`last_turn_seq` integer
);
--> statement-breakpoint
CREATE INDEX `sessions_last_seen` ON `sessions` (`last_seen`,`session_name`);--> statement-breakpoint
CREATE INDEX `sessions_status` ON `sessions` (`status`,`last_seen`,`session_name`);--> statement-breakpoint
CREATE INDEX `sessions_class` ON `sessions` (`agent_class`,`last_seen`,`session_name`);--> statement-breakpoint
ALTER TABLE `events` ADD `timeline_id` text;--> statement-breakpoint
CREATE INDEX `events_timeline_time` ON `events` (`timeline_id`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `agents_class_last_seen` ON `agents` (`agent_class`,`last_seen`,`agent_name`);--> statement-breakpoint
CREATE INDEX `audit_log_actor` ON `audit_log` (`actor`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_action` ON `audit_log` (`action`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_result` ON `audit_log` (`result`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_target_class` ON `audit_log` (`target_class`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_target_name` ON `audit_log` (`target_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_class` ON `fiber_runs` (`agent_class`,`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_name` ON `fiber_runs` (`agent_name`,`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `incidents_kind` ON `incidents` (`kind`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_class` ON `incidents` (`agent_class`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_name` ON `incidents` (`agent_name`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `op_ambiguities_resolved` ON `op_ambiguities` (`last_seen`,`op_id`) WHERE resolution_at IS NOT NULL;--> statement-breakpoint
CREATE INDEX `workspace_backups_tenant` ON `workspace_backups` (`tenant`,`last_seen`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_environment` ON `workspace_backups` (`environment`,`last_seen`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_session` ON `workspace_backups` (`session_name`,`last_seen`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_expires` ON `workspace_backups` (`expires_at`,`handle`);