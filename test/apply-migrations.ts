import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { storedEventsSql } from "../src/store/read-models/segments";
import { patient } from "./patience";

// Every store partition gets the same migrations (src/store/partitions.ts): DB, and DB_P1 … where the config binds them.
const databases = [
  env.DB,
  ...Object.entries(env)
    .filter(([k]) => /^DB_P\d+$/.test(k))
    .map(([, v]) => v as D1Database),
];
for (const db of databases) {
  await applyD1Migrations(db, env.TEST_MIGRATIONS);
  // Tests read stored events as rows (the old per-event table's columns) through this view of the hot store's
  // segments: the same expansion the read models use (storedEventsSql), so what they assert is what is stored.
  await db.prepare(`CREATE VIEW IF NOT EXISTS events AS ${storedEventsSql()}`).run();
}
await settle();
await emptyStores();

/**
 * Waits (up to 3 s on a quiet machine, test/patience.ts) until the previous file's queued events stop arriving (no change over three polls 150 ms apart:
 * longer than a Queue batch's timeout here), so the wipe below does not leave half an agent's events behind (a
 * false gap) for the next file to see.
 */
async function settle(): Promise<void> {
  const signature = async () =>
    (await env.DB.prepare("SELECT (SELECT count(*) FROM event_segments) || ':' || (SELECT total(seq_seen) FROM agents) AS s").first<{ s: string }>())?.s;
  const deadline = Date.now() + patient(3_000);
  let last = await signature();
  for (let quiet = 0; quiet < 3 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 150));
    const now = await signature();
    quiet = now === last ? quiet + 1 : 0;
    last = now;
  }
}

/**
 * Each test file starts from an empty console store. The suite runs files without isolation (one workerd per worker,
 * modules loaded once), so a file would otherwise see the rows and R2 objects the previous file left.
 */
async function emptyStores(): Promise<void> {
  for (const db of databases) {
    const { results } = await db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('d1_migrations', 'sqlite_sequence') AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\'",
      )
      .all<{ name: string }>();
    if (results.length) await db.batch(results.map(({ name }) => db.prepare(`DELETE FROM "${name}"`)));
  }
  // The bench worker binds no BACKUPS bucket.
  for (const bucket of [env.HISTORY, env.BACKUPS as R2Bucket | undefined]) {
    if (!bucket) continue;
    for (let cursor: string | undefined; ; ) {
      const page = await bucket.list({ limit: 1000, ...(cursor ? { cursor } : {}) });
      if (page.objects.length) await bucket.delete(page.objects.map((o) => o.key));
      if (!page.truncated) break;
      cursor = page.cursor;
    }
  }
}
