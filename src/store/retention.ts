/**
 * Retention: deletes rows older than a cutoff in bounded batches, so one cron
 * run never exceeds D1's per-invocation query budget or holds a long write.
 */

import { alertDeliveries, auditLog, deadLetters, eventRollups, events, fiberRuns, incidents, opAmbiguities, sessions, workspaceBackups } from "./schema";
import { names } from "./sql-names";
import { openNowSql } from "./read-models/incident-status";

export type RetentionResult = { cutoff: number; futureCutoff: number; deleted: Record<string, number>; complete: boolean };

/** Clock skew ingest accepts by default (INGEST_MAX_FUTURE_SKEW_SECONDS); anything later than now + skew is not a real time. */
export const DEFAULT_FUTURE_SKEW_MS = 5 * 60_000;

const E = names(events);
const D = names(deadLetters);
const F = names(fiberRuns);
const I = names(incidents);
const O = names(opAmbiguities);
const B = names(workspaceBackups);
const L = names(auditLog);
const S = names(sessions);
const R = names(eventRollups);
const A = names(alertDeliveries);

/** Older than the cutoff (?1), or later than any real time (?2): rows stored before ingest refused future times. */
const outside = (col: string) => `(${col} < ?1 OR ${col} > ?2)`;
const future = (col: string) => `${col} > ?2`;

/**
 * Tables and the time column that ages them. Open incidents (open now: not closed by a force idle or reconciliation
 * either) and unresolved ambiguities are kept regardless of
 * age, but not when dated in the future. Rows go by rowid: projection keys are composite (id + agent).
 */
const PLAN: { table: string; where: string }[] = [
  { table: E.$table, where: outside(E.time) },
  { table: D.$table, where: outside(D.receivedAt) },
  { table: F.$table, where: outside(F.lastSeen) },
  { table: I.$table, where: `((${I.lastSeen} < ?1 AND NOT ${openNowSql()}) OR ${future(I.lastSeen)})` },
  { table: O.$table, where: `((${O.lastSeen} < ?1 AND ${O.resolutionAt} IS NOT NULL) OR ${future(O.lastSeen)})` },
  { table: B.$table, where: outside(B.lastSeen) },
  { table: L.$table, where: outside(L.time) },
  { table: S.$table, where: outside(S.lastSeen) },
  // Rollups age with the events they count (the bucket range is the primary key's prefix).
  { table: R.$table, where: outside(R.bucket) },
  // The alert delivery log (its keys dedupe alerts: an incident older than retention could alert again, which is fine).
  { table: A.$table, where: outside(A.createdAt) },
];

/**
 * Deletes rows older than `maxAgeDays`, and rows dated later than now plus
 * `maxFutureSkewMs` (ingest refuses such times, so these are rows stored
 * before it did; kept, they would never age out and would sort first
 * forever). At most `batchSize` per statement and `maxBatches` statements per
 * table per run. Returns what it deleted and whether anything is left for the
 * next run.
 */
export async function runRetention(
  db: D1Database,
  opts: { maxAgeDays: number; maxFutureSkewMs?: number; now?: number; batchSize?: number; maxBatches?: number },
): Promise<RetentionResult> {
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.maxAgeDays * 86_400_000;
  const futureCutoff = now + (opts.maxFutureSkewMs ?? DEFAULT_FUTURE_SKEW_MS);
  const batchSize = opts.batchSize ?? 500;
  const maxBatches = opts.maxBatches ?? 20;
  const deleted: Record<string, number> = {};
  let complete = true;
  for (const { table, where } of PLAN) {
    deleted[table] = 0;
    for (let i = 0; i < maxBatches; i++) {
      const r = await db
        .prepare(`DELETE FROM ${table} WHERE rowid IN (SELECT rowid FROM ${table} WHERE ${where} LIMIT ${batchSize})`)
        .bind(cutoff, futureCutoff)
        .run();
      const n = r.meta.changes ?? 0;
      deleted[table] += n;
      if (n < batchSize) break;
      if (i === maxBatches - 1) complete = false;
    }
  }
  return { cutoff, futureCutoff, deleted, complete };
}

/** Parses the RETENTION_DAYS setting; a bad value falls back to the default rather than deleting too much. */
export function retentionDays(raw: unknown, fallback = 30): number {
  const n = typeof raw === "string" ? Number(raw) : typeof raw === "number" ? raw : Number.NaN;
  return Number.isFinite(n) && n >= 1 && n <= 3650 ? n : fallback;
}
