CREATE TABLE `respent_rollups` (
	`bucket` integer NOT NULL,
	`agent_class` text NOT NULL,
	`agent_name` text NOT NULL,
	`tokens` integer NOT NULL,
	PRIMARY KEY(`bucket`, `agent_class`, `agent_name`)
);
