DROP INDEX `incidents_first_seen`;--> statement-breakpoint
DROP INDEX `runs_first_seen`;