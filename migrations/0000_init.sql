CREATE TABLE `agents` (
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`agent_class`, `agent_name`)
);
--> statement-breakpoint
CREATE INDEX `agents_last_seen` ON `agents` (`last_seen`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE TABLE `audit_log` (
	`id` text PRIMARY KEY NOT NULL,
	`time` integer NOT NULL,
	`actor` text NOT NULL,
	`role` text NOT NULL,
	`action` text NOT NULL,
	`target_class` text NOT NULL,
	`target_name` text NOT NULL,
	`reason` text NOT NULL,
	`before` text,
	`after` text,
	`result` text NOT NULL,
	`error` text
);
--> statement-breakpoint
CREATE INDEX `audit_log_time` ON `audit_log` (`time`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_target` ON `audit_log` (`target_class`,`target_name`,`time`,`id`);--> statement-breakpoint
CREATE TABLE `dead_letters` (
	`message_id` text PRIMARY KEY NOT NULL,
	`received_at` integer NOT NULL,
	`reason` text NOT NULL,
	`event_type` text,
	`body` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dead_letters_received` ON `dead_letters` (`received_at`,`message_id`);--> statement-breakpoint
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`time` integer NOT NULL,
	`type` text NOT NULL,
	`v` integer NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`fiber_id` text,
	`incident_id` text,
	`request_id` text,
	`op_id` text,
	`session_name` text,
	`trace_id` text,
	`span_id` text,
	`payload` text NOT NULL,
	`received_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_time` ON `events` (`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_type_time` ON `events` (`type`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_incident_time` ON `events` (`incident_id`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_agent_time` ON `events` (`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_fiber_time` ON `events` (`fiber_id`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_session_time` ON `events` (`session_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_op_time` ON `events` (`op_id`,`time`,`id`);--> statement-breakpoint
CREATE TABLE `fiber_runs` (
	`fiber_id` text PRIMARY KEY NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`name` text NOT NULL,
	`started_at` integer,
	`ended_at` integer,
	`outcome` text,
	`outcome_at` integer,
	`outcome_event_id` text,
	`error` text,
	`snapshot_preview` text,
	`snapshot_bytes` integer,
	`snapshot_at` integer,
	`snapshot_event_id` text,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `fiber_runs_last_seen` ON `fiber_runs` (`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_agent` ON `fiber_runs` (`agent_class`,`agent_name`,`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_outcome` ON `fiber_runs` (`outcome`,`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE TABLE `incidents` (
	`incident_id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`status` text NOT NULL,
	`status_at` integer NOT NULL,
	`status_event_id` text NOT NULL,
	`attempts` integer NOT NULL,
	`max_attempts` integer,
	`reason` text,
	`reason_at` integer,
	`reason_event_id` text,
	`fiber_id` text,
	`request_id` text,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `incidents_last_seen` ON `incidents` (`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_status` ON `incidents` (`status`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_reason` ON `incidents` (`reason`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_agent` ON `incidents` (`agent_class`,`agent_name`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE TABLE `op_ambiguities` (
	`op_id` text PRIMARY KEY NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`session_name` text,
	`op_kind` text,
	`detail` text,
	`ambiguous_at` integer,
	`resolution` text,
	`resolution_at` integer,
	`resolution_event_id` text,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `op_ambiguities_last_seen` ON `op_ambiguities` (`last_seen`,`op_id`);--> statement-breakpoint
CREATE INDEX `op_ambiguities_open` ON `op_ambiguities` (`resolution_at`,`last_seen`,`op_id`);--> statement-breakpoint
CREATE TABLE `workspace_backups` (
	`handle` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`environment` text NOT NULL,
	`session_name` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`created_at` integer,
	`expires_at` integer,
	`bytes` integer,
	`restored_at` integer,
	`expired_at` integer,
	`last_seen` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `workspace_backups_scope` ON `workspace_backups` (`tenant`,`environment`,`session_name`,`created_at`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_created` ON `workspace_backups` (`created_at`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_last_seen` ON `workspace_backups` (`last_seen`,`handle`);