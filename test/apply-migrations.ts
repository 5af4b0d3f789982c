import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { storedEventsSql } from "../src/store/read-models/segments";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
// Tests read stored events as rows (the old per-event table's columns) through this view of the hot store's
// segments: the same expansion the read models use (storedEventsSql), so what they assert is what is stored.
await env.DB.prepare(`CREATE VIEW IF NOT EXISTS events AS ${storedEventsSql()}`).run();
