/**
 * Retention: deletes rows older than a cutoff in bounded batches, so one cron
 * run never exceeds D1's per-invocation query budget or holds a long write.
 */

import { auditLog, deadLetters, eventRollups, events, fiberRuns, incidents, opAmbiguities, sessions, workspaceBackups } from "./schema";
import { names } from "./sql-names";

export type RetentionResult = { cutoff: number; deleted: Record<string, number>; complete: boolean };

const E = names(events);
const D = names(deadLetters);
const F = names(fiberRuns);
const I = names(incidents);
const O = names(opAmbiguities);
const B = names(workspaceBackups);
const L = names(auditLog);
const S = names(sessions);
const R = names(eventRollups);

/** Tables and the time column that ages them. Open incidents and unresolved ambiguities are kept regardless of age. */
const PLAN: { table: string; key: string; where: string }[] = [
  { table: E.$table, key: E.id, where: `${E.time} < ?1` },
  { table: D.$table, key: D.messageId, where: `${D.receivedAt} < ?1` },
  { table: F.$table, key: F.fiberId, where: `${F.lastSeen} < ?1` },
  { table: I.$table, key: I.incidentId, where: `${I.lastSeen} < ?1 AND ${I.status} <> 'open'` },
  { table: O.$table, key: O.opId, where: `${O.lastSeen} < ?1 AND ${O.resolutionAt} IS NOT NULL` },
  { table: B.$table, key: B.handle, where: `${B.lastSeen} < ?1` },
  { table: L.$table, key: L.id, where: `${L.time} < ?1` },
  { table: S.$table, key: S.sessionName, where: `${S.lastSeen} < ?1` },
  // Rollups age with the events they count (a composite key, so rows go by rowid; the bucket range is the primary key's prefix).
  { table: R.$table, key: "rowid", where: `${R.bucket} < ?1` },
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
