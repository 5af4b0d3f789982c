-- Written by hand (drizzle cannot say WITHOUT ROWID): see schema.ts withoutRowid. Each table is rebuilt as drizzle
-- rebuilds one (new table, copy, drop, rename, indexes), with the same columns, keys and indexes as before.
CREATE TABLE `__new_runs` (
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
	`last_seen` integer NOT NULL, `kind` text DEFAULT 'fiber' NOT NULL, `definition` text, `attempt` integer, `reason` text, `phase` text, `phase_at` integer, `phase_event_id` text, `wake_at` integer, `step` text, `confirmed_at` integer, `status_message` text, `listed_at` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`fiber_id`, `agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_runs` (`fiber_id`, `agent_class`, `agent_name`, `name`, `started_at`, `ended_at`, `outcome`, `outcome_at`, `outcome_event_id`, `error`, `snapshot_preview`, `snapshot_bytes`, `snapshot_at`, `snapshot_event_id`, `first_seen`, `last_seen`, `kind`, `definition`, `attempt`, `reason`, `phase`, `phase_at`, `phase_event_id`, `wake_at`, `step`, `confirmed_at`, `status_message`, `listed_at`) SELECT `fiber_id`, `agent_class`, `agent_name`, `name`, `started_at`, `ended_at`, `outcome`, `outcome_at`, `outcome_event_id`, `error`, `snapshot_preview`, `snapshot_bytes`, `snapshot_at`, `snapshot_event_id`, `first_seen`, `last_seen`, `kind`, `definition`, `attempt`, `reason`, `phase`, `phase_at`, `phase_event_id`, `wake_at`, `step`, `confirmed_at`, `status_message`, `listed_at` FROM `runs`;
--> statement-breakpoint
DROP TABLE `runs`;
--> statement-breakpoint
ALTER TABLE `__new_runs` RENAME TO `runs`;
--> statement-breakpoint
CREATE INDEX `runs_agent` ON `runs` (`agent_class`,`agent_name`,`first_seen`,`fiber_id`);
--> statement-breakpoint
CREATE INDEX `runs_class` ON `runs` (`agent_class`,`first_seen`,`fiber_id`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `runs_first_seen` ON `runs` (`first_seen`,`fiber_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `runs_kind` ON `runs` (`kind`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `runs_kind_outcome` ON `runs` (`kind`,`outcome`,`first_seen`,`fiber_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `runs_open` ON `runs` (`listed_at`,`fiber_id`,`agent_class`,`agent_name`) WHERE outcome IS NULL;
--> statement-breakpoint
CREATE INDEX `runs_skipped_turns` ON `runs` (`last_seen`,`fiber_id`,`agent_class`,`agent_name`) WHERE kind = 'chat_turn' AND outcome = 'cancelled' AND reason = 'skipped';
--> statement-breakpoint
CREATE TABLE `__new_agents` (
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`first_seen` integer NOT NULL,
	`last_seen` integer NOT NULL, `seq_max` integer, `seq_seen` integer DEFAULT 0 NOT NULL, `listed_at` integer DEFAULT 0 NOT NULL, `alarm_first_at` integer, `alarm_last_at` integer,
	PRIMARY KEY(`agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_agents` (`agent_class`, `agent_name`, `first_seen`, `last_seen`, `seq_max`, `seq_seen`, `listed_at`, `alarm_first_at`, `alarm_last_at`) SELECT `agent_class`, `agent_name`, `first_seen`, `last_seen`, `seq_max`, `seq_seen`, `listed_at`, `alarm_first_at`, `alarm_last_at` FROM `agents`;
--> statement-breakpoint
DROP TABLE `agents`;
--> statement-breakpoint
ALTER TABLE `__new_agents` RENAME TO `agents`;
--> statement-breakpoint
CREATE INDEX `agents_class_listed` ON `agents` (`agent_class`,`listed_at`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `agents_listed` ON `agents` (`listed_at`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `agents_name` ON `agents` (`agent_name`,`agent_class`);
--> statement-breakpoint
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
	`last_seen` integer NOT NULL, `confirmed_at` integer, `respent_input_tokens` integer DEFAULT 0 NOT NULL, `respent_output_tokens` integer DEFAULT 0 NOT NULL, `closed_by` text, `closed_by_at` integer, `closed_by_event_id` text, `closed_by_reason` text, `version` text, `version_at` integer, `attempt_events` integer DEFAULT 0 NOT NULL, `pause_held` integer DEFAULT 0 NOT NULL, `pause_declined` integer DEFAULT 0 NOT NULL, `pause_skipped_at` integer,
	PRIMARY KEY(`incident_id`, `agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_incidents` (`incident_id`, `kind`, `agent_class`, `agent_name`, `status`, `status_at`, `status_event_id`, `attempts`, `max_attempts`, `reason`, `reason_at`, `reason_event_id`, `fiber_id`, `request_id`, `first_seen`, `last_seen`, `confirmed_at`, `respent_input_tokens`, `respent_output_tokens`, `closed_by`, `closed_by_at`, `closed_by_event_id`, `closed_by_reason`, `version`, `version_at`, `attempt_events`, `pause_held`, `pause_declined`, `pause_skipped_at`) SELECT `incident_id`, `kind`, `agent_class`, `agent_name`, `status`, `status_at`, `status_event_id`, `attempts`, `max_attempts`, `reason`, `reason_at`, `reason_event_id`, `fiber_id`, `request_id`, `first_seen`, `last_seen`, `confirmed_at`, `respent_input_tokens`, `respent_output_tokens`, `closed_by`, `closed_by_at`, `closed_by_event_id`, `closed_by_reason`, `version`, `version_at`, `attempt_events`, `pause_held`, `pause_declined`, `pause_skipped_at` FROM `incidents`;
--> statement-breakpoint
DROP TABLE `incidents`;
--> statement-breakpoint
ALTER TABLE `__new_incidents` RENAME TO `incidents`;
--> statement-breakpoint
CREATE INDEX `incidents_agent` ON `incidents` (`agent_class`,`agent_name`,`first_seen`,`incident_id`);
--> statement-breakpoint
CREATE INDEX `incidents_class` ON `incidents` (`agent_class`,`first_seen`,`incident_id`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `incidents_first_seen` ON `incidents` (`first_seen`,`incident_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `incidents_kind` ON `incidents` (`kind`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `incidents_open` ON `incidents` (`last_seen`,`incident_id`,`agent_class`,`agent_name`) WHERE status = 'open';
--> statement-breakpoint
CREATE INDEX `incidents_reason` ON `incidents` (`reason`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `incidents_skipped` ON `incidents` (`last_seen`,`incident_id`,`agent_class`,`agent_name`) WHERE status = 'skipped';
--> statement-breakpoint
CREATE INDEX `incidents_status` ON `incidents` (`status`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `incidents_version` ON `incidents` (`version`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE TABLE `__new_incident_usage` (
	`incident_id` text NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`attempt` integer NOT NULL,
	`calls` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`incident_id`, `agent_class`, `agent_name`, `attempt`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_incident_usage` (`incident_id`, `agent_class`, `agent_name`, `attempt`, `calls`, `input_tokens`, `output_tokens`) SELECT `incident_id`, `agent_class`, `agent_name`, `attempt`, `calls`, `input_tokens`, `output_tokens` FROM `incident_usage`;
--> statement-breakpoint
DROP TABLE `incident_usage`;
--> statement-breakpoint
ALTER TABLE `__new_incident_usage` RENAME TO `incident_usage`;
--> statement-breakpoint
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
	`last_turn_seq` integer, `listed_at` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`session_name`, `agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_sessions` (`session_name`, `agent_class`, `agent_name`, `first_seen`, `last_seen`, `last_event_type`, `last_event_at`, `last_event_event_id`, `status`, `status_at`, `status_event_id`, `recovery_count`, `last_turn_seq`, `listed_at`) SELECT `session_name`, `agent_class`, `agent_name`, `first_seen`, `last_seen`, `last_event_type`, `last_event_at`, `last_event_event_id`, `status`, `status_at`, `status_event_id`, `recovery_count`, `last_turn_seq`, `listed_at` FROM `sessions`;
--> statement-breakpoint
DROP TABLE `sessions`;
--> statement-breakpoint
ALTER TABLE `__new_sessions` RENAME TO `sessions`;
--> statement-breakpoint
CREATE INDEX `sessions_class` ON `sessions` (`agent_class`,`listed_at`,`session_name`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `sessions_listed` ON `sessions` (`listed_at`,`session_name`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `sessions_status` ON `sessions` (`status`,`listed_at`,`session_name`,`agent_class`,`agent_name`);
--> statement-breakpoint
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
	`last_seen` integer NOT NULL, `idempotent` integer, `resolution_ref` text,
	PRIMARY KEY(`op_id`, `agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_op_ambiguities` (`op_id`, `agent_class`, `agent_name`, `session_name`, `op_kind`, `detail`, `ambiguous_at`, `resolution`, `resolution_at`, `resolution_event_id`, `first_seen`, `last_seen`, `idempotent`, `resolution_ref`) SELECT `op_id`, `agent_class`, `agent_name`, `session_name`, `op_kind`, `detail`, `ambiguous_at`, `resolution`, `resolution_at`, `resolution_event_id`, `first_seen`, `last_seen`, `idempotent`, `resolution_ref` FROM `op_ambiguities`;
--> statement-breakpoint
DROP TABLE `op_ambiguities`;
--> statement-breakpoint
ALTER TABLE `__new_op_ambiguities` RENAME TO `op_ambiguities`;
--> statement-breakpoint
CREATE INDEX `op_ambiguities_agent_open` ON `op_ambiguities` (`agent_class`,`agent_name`,`last_seen`,`op_id`) WHERE resolution_at IS NULL;
--> statement-breakpoint
CREATE INDEX `op_ambiguities_last_seen` ON `op_ambiguities` (`last_seen`,`op_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `op_ambiguities_open` ON `op_ambiguities` (`resolution_at`,`last_seen`,`op_id`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `op_ambiguities_resolved` ON `op_ambiguities` (`last_seen`,`op_id`,`agent_class`,`agent_name`) WHERE resolution_at IS NOT NULL;
--> statement-breakpoint
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
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_workspace_backups` (`handle`, `tenant`, `environment`, `session_name`, `agent_class`, `agent_name`, `created_at`, `expires_at`, `bytes`, `restored_at`, `expired_at`, `last_seen`) SELECT `handle`, `tenant`, `environment`, `session_name`, `agent_class`, `agent_name`, `created_at`, `expires_at`, `bytes`, `restored_at`, `expired_at`, `last_seen` FROM `workspace_backups`;
--> statement-breakpoint
DROP TABLE `workspace_backups`;
--> statement-breakpoint
ALTER TABLE `__new_workspace_backups` RENAME TO `workspace_backups`;
--> statement-breakpoint
CREATE INDEX `workspace_backups_created` ON `workspace_backups` (`created_at`,`handle`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_environment` ON `workspace_backups` (`environment`,`last_seen`,`handle`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_expires` ON `workspace_backups` (`expires_at`,`handle`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_last_seen` ON `workspace_backups` (`last_seen`,`handle`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_scope` ON `workspace_backups` (`tenant`,`environment`,`session_name`,`created_at`,`handle`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_session` ON `workspace_backups` (`session_name`,`last_seen`,`handle`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE INDEX `workspace_backups_tenant` ON `workspace_backups` (`tenant`,`last_seen`,`handle`,`agent_class`,`agent_name`);
--> statement-breakpoint
CREATE TABLE `__new_event_rollups` (
	`bucket` integer NOT NULL,
	`type` text NOT NULL,
	`dim` text DEFAULT '' NOT NULL,
	`n` integer NOT NULL, `amount` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`bucket`, `type`, `dim`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_event_rollups` (`bucket`, `type`, `dim`, `n`, `amount`) SELECT `bucket`, `type`, `dim`, `n`, `amount` FROM `event_rollups`;
--> statement-breakpoint
DROP TABLE `event_rollups`;
--> statement-breakpoint
ALTER TABLE `__new_event_rollups` RENAME TO `event_rollups`;
--> statement-breakpoint
CREATE INDEX `event_rollups_type` ON `event_rollups` (`type`,`bucket`,`dim`);
--> statement-breakpoint
CREATE TABLE `__new_respent_rollups` (
	`bucket` integer NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`tokens` integer NOT NULL,
	PRIMARY KEY(`bucket`, `agent_class`, `agent_name`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_respent_rollups` (`bucket`, `agent_class`, `agent_name`, `tokens`) SELECT `bucket`, `agent_class`, `agent_name`, `tokens` FROM `respent_rollups`;
--> statement-breakpoint
DROP TABLE `respent_rollups`;
--> statement-breakpoint
ALTER TABLE `__new_respent_rollups` RENAME TO `respent_rollups`;
