DROP INDEX `events_fiber_time`;--> statement-breakpoint
DROP INDEX `events_session_time`;--> statement-breakpoint
DROP INDEX `events_timeline_time`;--> statement-breakpoint
CREATE INDEX `events_fiber_time` ON `events` (`fiber_id`,`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_session_time` ON `events` (`session_name`,`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
CREATE INDEX `events_timeline_time` ON `events` (`timeline_id`,`agent_class`,`agent_name`,`time`,`id`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_fiber_runs` (
	`fiber_id` text NOT NULL,
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
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`fiber_id`, `agent_class`, `agent_name`)
);
--> statement-breakpoint
INSERT INTO `__new_fiber_runs`("fiber_id", "agent_class", "agent_name", "name", "started_at", "ended_at", "outcome", "outcome_at", "outcome_event_id", "error", "snapshot_preview", "snapshot_bytes", "snapshot_at", "snapshot_event_id", "first_seen", "last_seen") SELECT "fiber_id", "agent_class", "agent_name", "name", "started_at", "ended_at", "outcome", "outcome_at", "outcome_event_id", "error", "snapshot_preview", "snapshot_bytes", "snapshot_at", "snapshot_event_id", "first_seen", "last_seen" FROM `fiber_runs`;--> statement-breakpoint
DROP TABLE `fiber_runs`;--> statement-breakpoint
ALTER TABLE `__new_fiber_runs` RENAME TO `fiber_runs`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `fiber_runs_last_seen` ON `fiber_runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_agent` ON `fiber_runs` (`agent_class`,`agent_name`,`last_seen`,`fiber_id`);--> statement-breakpoint
CREATE INDEX `fiber_runs_outcome` ON `fiber_runs` (`outcome`,`last_seen`,`fiber_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_class` ON `fiber_runs` (`agent_class`,`last_seen`,`fiber_id`,`agent_name`);--> statement-breakpoint
CREATE INDEX `fiber_runs_name` ON `fiber_runs` (`agent_name`,`last_seen`,`fiber_id`,`agent_class`);--> statement-breakpoint
CREATE TABLE `__new_incidents` (
	`incident_id` text NOT NULL,
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
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`incident_id`, `agent_class`, `agent_name`)
);
--> statement-breakpoint
INSERT INTO `__new_incidents`("incident_id", "kind", "agent_class", "agent_name", "status", "status_at", "status_event_id", "attempts", "max_attempts", "reason", "reason_at", "reason_event_id", "fiber_id", "request_id", "first_seen", "last_seen") SELECT "incident_id", "kind", "agent_class", "agent_name", "status", "status_at", "status_event_id", "attempts", "max_attempts", "reason", "reason_at", "reason_event_id", "fiber_id", "request_id", "first_seen", "last_seen" FROM `incidents`;--> statement-breakpoint
DROP TABLE `incidents`;--> statement-breakpoint
ALTER TABLE `__new_incidents` RENAME TO `incidents`;--> statement-breakpoint
CREATE INDEX `incidents_last_seen` ON `incidents` (`last_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_status` ON `incidents` (`status`,`last_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_reason` ON `incidents` (`reason`,`last_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_agent` ON `incidents` (`agent_class`,`agent_name`,`last_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_kind` ON `incidents` (`kind`,`last_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_class` ON `incidents` (`agent_class`,`last_seen`,`incident_id`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_name` ON `incidents` (`agent_name`,`last_seen`,`incident_id`,`agent_class`);--> statement-breakpoint
CREATE TABLE `__new_op_ambiguities` (
	`op_id` text NOT NULL,
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
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`op_id`, `agent_class`, `agent_name`)
);
--> statement-breakpoint
INSERT INTO `__new_op_ambiguities`("op_id", "agent_class", "agent_name", "session_name", "op_kind", "detail", "ambiguous_at", "resolution", "resolution_at", "resolution_event_id", "first_seen", "last_seen") SELECT "op_id", "agent_class", "agent_name", "session_name", "op_kind", "detail", "ambiguous_at", "resolution", "resolution_at", "resolution_event_id", "first_seen", "last_seen" FROM `op_ambiguities`;--> statement-breakpoint
DROP TABLE `op_ambiguities`;--> statement-breakpoint
ALTER TABLE `__new_op_ambiguities` RENAME TO `op_ambiguities`;--> statement-breakpoint
CREATE INDEX `op_ambiguities_last_seen` ON `op_ambiguities` (`last_seen`,`op_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `op_ambiguities_open` ON `op_ambiguities` (`resolution_at`,`last_seen`,`op_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `op_ambiguities_resolved` ON `op_ambiguities` (`last_seen`,`op_id`,`agent_class`,`agent_name`) WHERE resolution_at IS NOT NULL;--> statement-breakpoint
CREATE TABLE `__new_sessions` (
	`session_name` text NOT NULL,
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
	`last_turn_seq` integer,
	PRIMARY KEY(`session_name`, `agent_class`, `agent_name`)
);
--> statement-breakpoint
INSERT INTO `__new_sessions`("session_name", "agent_class", "agent_name", "first_seen", "last_seen", "last_event_type", "last_event_at", "last_event_event_id", "status", "status_at", "status_event_id", "recovery_count", "last_turn_seq") SELECT "session_name", "agent_class", "agent_name", "first_seen", "last_seen", "last_event_type", "last_event_at", "last_event_event_id", "status", "status_at", "status_event_id", "recovery_count", "last_turn_seq" FROM `sessions`;--> statement-breakpoint
DROP TABLE `sessions`;--> statement-breakpoint
ALTER TABLE `__new_sessions` RENAME TO `sessions`;--> statement-breakpoint
CREATE INDEX `sessions_last_seen` ON `sessions` (`last_seen`,`session_name`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `sessions_status` ON `sessions` (`status`,`last_seen`,`session_name`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `sessions_class` ON `sessions` (`agent_class`,`last_seen`,`session_name`,`agent_name`);--> statement-breakpoint
CREATE TABLE `__new_workspace_backups` (
	`handle` text NOT NULL,
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
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`handle`, `agent_class`, `agent_name`)
);
--> statement-breakpoint
INSERT INTO `__new_workspace_backups`("handle", "tenant", "environment", "session_name", "agent_class", "agent_name", "created_at", "expires_at", "bytes", "restored_at", "expired_at", "last_seen") SELECT "handle", "tenant", "environment", "session_name", "agent_class", "agent_name", "created_at", "expires_at", "bytes", "restored_at", "expired_at", "last_seen" FROM `workspace_backups`;--> statement-breakpoint
DROP TABLE `workspace_backups`;--> statement-breakpoint
ALTER TABLE `__new_workspace_backups` RENAME TO `workspace_backups`;--> statement-breakpoint
CREATE INDEX `workspace_backups_scope` ON `workspace_backups` (`tenant`,`environment`,`session_name`,`created_at`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_created` ON `workspace_backups` (`created_at`,`handle`);--> statement-breakpoint
CREATE INDEX `workspace_backups_last_seen` ON `workspace_backups` (`last_seen`,`handle`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `workspace_backups_tenant` ON `workspace_backups` (`tenant`,`last_seen`,`handle`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `workspace_backups_environment` ON `workspace_backups` (`environment`,`last_seen`,`handle`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `workspace_backups_session` ON `workspace_backups` (`session_name`,`last_seen`,`handle`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `workspace_backups_expires` ON `workspace_backups` (`expires_at`,`handle`,`agent_class`,`agent_name`);