-- Custom migration (drizzle-kit generate --custom): rows stored before listed_at existed get theirs from last_seen
-- (to the minute, as ingest writes it; src/store/listed-at.ts), so they keep their place in the lists.
UPDATE `agents` SET `listed_at` = `last_seen` - (`last_seen` % 60000);--> statement-breakpoint
UPDATE `sessions` SET `listed_at` = `last_seen` - (`last_seen` % 60000);
