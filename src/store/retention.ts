/**
 * Retention: deletes rows older than a cutoff in bounded batches, so one cron
 * run never exceeds D1's per-invocation query budget or holds a long write.
 */

export type RetentionResult = { cutoff: number; deleted: Record<string, number>; complete: boolean };

/** Tables and the time column that ages them. Open incidents and unresolved ambiguities are kept regardless of age. */
const PLAN: { table: string; key: string; where: string }[] = [
  { table: "events", key: "id", where: "time < ?1" },
  { table: "dead_letters", key: "message_id", where: "received_at < ?1" },
  { table: "fiber_runs", key: "fiber_id", where: "last_seen < ?1" },
  { table: "incidents", key: "incident_id", where: "last_seen < ?1 AND status <> 'open'" },
  { table: "op_ambiguities", key: "op_id", where: "last_seen < ?1 AND resolution_at IS NOT NULL" },
  { table: "workspace_backups", key: "handle", where: "last_seen < ?1" },
  { table: "audit_log", key: "id", where: "time < ?1" },
  { table: "sessions", key: "session_name", where: "last_seen < ?1" },
  // Rollups age with the events they count (a composite key, so rows go by rowid; the bucket range is the primary key's prefix).
  { table: "event_rollups", key: "rowid", where: "bucket < ?1" },
];

/**
 * Deletes rows older than `maxAgeDays`, at most `batchSize` per statement and
 * `maxBatches` statements per table per run. Returns what it deleted and
 * whether anything old is left for the next run.
 */
export async function runRetention(
  db: D1Database,
  opts: { maxAgeDays: number; now?: number; batchSize?: number; maxBatches?: number },
): Promise<RetentionResult> {
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.maxAgeDays * 86_400_000;
  const batchSize = opts.batchSize ?? 500;
  const maxBatches = opts.maxBatches ?? 20;
  const deleted: Record<string, number> = {};
  let complete = true;
  for (const { table, key, where } of PLAN) {
    deleted[table] = 0;
    for (let i = 0; i < maxBatches; i++) {
      const r = await db
        .prepare(`DELETE FROM ${table} WHERE ${key} IN (SELECT ${key} FROM ${table} WHERE ${where} LIMIT ${batchSize})`)
        .bind(cutoff)
        .run();
      const n = r.meta.changes ?? 0;
      deleted[table] += n;
      if (n < batchSize) break;
      if (i === maxBatches - 1) complete = false;
    }
  }
  return { cutoff, deleted, complete };
}

/** Parses the RETENTION_DAYS setting; a bad value falls back to the default rather than deleting too much. */
export function retentionDays(raw: unknown, fallback = 30): number {
  const n = typeof raw === "string" ? Number(raw) : typeof raw === "number" ? raw : Number.NaN;
  return Number.isFinite(n) && n >= 1 && n <= 3650 ? n : fallback;
}
