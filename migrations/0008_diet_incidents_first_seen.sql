DROP INDEX `incidents_last_seen`;--> statement-breakpoint
DROP INDEX `incidents_status`;--> statement-breakpoint
DROP INDEX `incidents_reason`;--> statement-breakpoint
DROP INDEX `incidents_agent`;--> statement-breakpoint
DROP INDEX `incidents_kind`;--> statement-breakpoint
DROP INDEX `incidents_class`;--> statement-breakpoint
DROP INDEX `incidents_name`;--> statement-breakpoint
CREATE INDEX `incidents_first_seen` ON `incidents` (`first_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_open` ON `incidents` (`last_seen`,`incident_id`,`agent_class`,`agent_name`) WHERE status = 'open';--> statement-breakpoint
CREATE INDEX `incidents_skipped` ON `incidents` (`last_seen`,`incident_id`,`agent_class`,`agent_name`) WHERE status = 'skipped';--> statement-breakpoint
CREATE INDEX `incidents_status` ON `incidents` (`status`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_reason` ON `incidents` (`reason`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_agent` ON `incidents` (`agent_class`,`agent_name`,`first_seen`,`incident_id`);--> statement-breakpoint
CREATE INDEX `incidents_kind` ON `incidents` (`kind`,`first_seen`,`incident_id`,`agent_class`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_class` ON `incidents` (`agent_class`,`first_seen`,`incident_id`,`agent_name`);--> statement-breakpoint
CREATE INDEX `incidents_name` ON `incidents` (`agent_name`,`first_seen`,`incident_id`,`agent_class`);