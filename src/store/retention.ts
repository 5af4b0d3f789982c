/**
 * Retention: deletes rows older than a cutoff in bounded batches, so one cron
 * run never exceeds D1's per-invocation query budget or holds a long write.
 */

import { RUN_KINDS } from "@agent-oncall/telemetry/contract";
import { LEDGER_SLOT_MS } from "./ledger-slot";
import { openNowSql } from "./read-models/incident-status";
import { INCIDENT_KINDS } from "./read-models/incidents";
import {
  alertDeliveries,
  auditLog,
  deadLetters,
  eventLedger,
  eventRollups,
  eventSegments,
  incidents,
  incidentUsage,
  opAmbiguities,
  respentRollups,
  runs,
  sessions,
  silentWakes,
  workspaceBackups,
} from "./schema";
import { keyColumns, names } from "./sql-names";

export type RetentionResult = { cutoff: number; futureCutoff: number; hotCutoff: number; deleted: Record<string, number>; complete: boolean };

/** Clock skew ingest accepts by default (INGEST_MAX_FUTURE_SKEW_SECONDS); anything later than now + skew is not a real time. */
export const DEFAULT_FUTURE_SKEW_MS = 5 * 60_000;

const G = names(eventSegments);
const D = names(deadLetters);
const F = names(runs);
const I = names(incidents);
const O = names(opAmbiguities);
const B = names(workspaceBackups);
const L = names(auditLog);
const S = names(sessions);
const R = names(eventRollups);
const A = names(alertDeliveries);
const RS = names(respentRollups);
const U = names(incidentUsage);
const W = names(silentWakes);
const EL = names(eventLedger);
/** Each table's primary key columns, by table name: rows are deleted by key (tables stored WITHOUT ROWID have no rowid). */
const KEY: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  [
    deadLetters,
    runs,
    incidents,
    opAmbiguities,
    workspaceBackups,
    auditLog,
    sessions,
    eventRollups,
    alertDeliveries,
    respentRollups,
    incidentUsage,
    silentWakes,
    eventLedger,
  ].map((t) => [names(t).$table, keyColumns(t)]),
);

/** Older than the cutoff (?1), or later than any real time (?2): rows stored before ingest refused future times. */
const outside = (col: string) => `(${col} < ?1 OR ${col} > ?2)`;
const future = (col: string) => `${col} > ?2`;

/**
 * A run is due when it finished (has an outcome) and its last activity is before the hot cutoff (?3), or when its
 * last activity is before the retention cutoff (?1), open or not. Due runs are found oldest first by first_seen
 * (runsOldestFirst): a run's first_seen is at most its last_seen, so every due run has first_seen < ?3 (?1 <= ?3).
 * No index holds last_seen (each batch would move it), so this is the bounded way in.
 */
export const runDueSql = (hot = "?3", cutoff = "?1") => `((${F.outcome} IS NOT NULL AND ${F.lastSeen} < ${hot}) OR ${F.lastSeen} < ${cutoff})`;

/**
 * One equality per run kind, as SQL (retention's statements number their parameters, so the kinds are literals):
 * every run has one of these kinds, a closed set (the contract's RUN_KINDS; ingest refuses any other), so runs_kind
 * merged over them is every run in first_seen order. No index of first_seen alone: it would cost every new run one
 * more entry written.
 */
export const RUN_KIND_ARMS: readonly string[] = kindArms(F.kind, RUN_KINDS);

/** The same for incidents (INCIDENT_KINDS, which ingest derives from the id: no other kind is stored): incidents_kind. */
export const INCIDENT_KIND_ARMS: readonly string[] = kindArms(I.kind, INCIDENT_KINDS);

function kindArms(column: string, kinds: readonly string[]): string[] {
  return kinds.map((k) => {
    if (!/^[a-z_]+$/.test(k)) throw new Error(`kind ${JSON.stringify(k)} is not a plain word`);
    return `${column} = '${k}'`;
  });
}

/**
 * `select` from the rows of `table` (through `index`) matching `where`, in `order` (ascending), at most `limit`:
 * one ordered scan per arm (an equality on the index's leading column) merged by a compound SELECT, which SQLite
 * runs as co-routines in index order until the LIMIT (about `limit` plus one row per arm read), or one scan
 * without arms. `select` must name the `order` columns as they are, since a compound orders by result columns.
 */
export function orderedScanSql(q: {
  table: string;
  index: string;
  arms?: readonly string[];
  select: string;
  where: string;
  order: string[];
  limit: number;
}): string {
  const scan = (arm?: string) => `SELECT ${q.select} FROM ${q.table} INDEXED BY ${q.index} WHERE ${arm ? `${arm} AND ` : ""}${q.where}`;
  const scans = q.arms?.length ? q.arms.map(scan) : [scan()];
  return `${scans.join(" UNION ALL ")} ORDER BY ${q.order.join(", ")} LIMIT ${q.limit}`;
}

/**
 * The keys of the first `limit` due rows of `table`, oldest first by `firstSeen`, through its kind index merged over
 * the kinds (every row is under one of them). `firstSeen` is at most the last activity `due` ages by, so every due
 * row has firstSeen < ?3.
 */
const dueOldestFirstSql = (q: { table: string; index: string; arms: readonly string[]; firstSeen: string; due: string }) => (limit: number) =>
  `SELECT ${keyOf(q.table).join(", ")} FROM (${orderedScanSql({
    table: q.table,
    index: q.index,
    arms: q.arms,
    select: `${keyOf(q.table).join(", ")}, ${q.firstSeen}`,
    where: `${q.firstSeen} < ?3 AND ${q.due}`,
    order: [q.firstSeen],
    limit,
  })})`;

const dueRunsSql = dueOldestFirstSql({ table: F.$table, index: "runs_kind", arms: RUN_KIND_ARMS, firstSeen: F.firstSeen, due: runDueSql() });

/**
 * An incident is due when it is not open now (closed by the SDK, or by a force idle or reconciliation: the shown
 * status, incident-status.ts) and its last activity is before the hot cutoff (?3). Open incidents stay while open,
 * whatever their age. Found oldest first by first_seen (first_seen <= last_seen, as for runs), through incidents_kind
 * merged over the kinds.
 */
export const incidentDueSql = (hot = "?3") => `(${I.lastSeen} < ${hot} AND NOT ${openNowSql()})`;

const dueIncidentsSql = dueOldestFirstSql({
  table: I.$table,
  index: "incidents_kind",
  arms: INCIDENT_KIND_ARMS,
  firstSeen: I.firstSeen,
  due: incidentDueSql(),
});

/**
 * A backup is due once its expiry (the event's fact: the object is removed then) passed before the hot cutoff (?3):
 * the backups page lists expired ones for the hot window after expiry. Found through workspace_backups_expires.
 */
export const backupExpiredSql = (hot = "?3") => `${B.expiresAt} < ${hot}`;

/**
 * Tables and the time column that ages them. Finished runs and incidents not open now (open now: not closed by a
 * force idle or reconciliation either) are kept for the hot window after their last activity, as are resolved
 * ambiguities; open runs for the retention period; open incidents and unresolved ambiguities regardless of age,
 * but not when dated in the future. Rows go by primary key (KEY). Statements are
 * bound ?1 = cutoff, ?2 = future cutoff, ?3 = hot cutoff, up to the highest one each names (D1 refuses more
 * bindings than a statement's parameters). `rows`: the keys to delete, as a statement of its own, when `where` alone
 * cannot name the index order (runs). `children`: rows of another table deleted with the ones deleted, by key.
 */
const PLAN: { table: string; where: string; rows?: (limit: number) => string; children?: Child }[] = [
  { table: D.$table, where: outside(D.receivedAt) },
  { table: F.$table, where: "", rows: dueRunsSql },
  { table: F.$table, where: future(F.lastSeen) },
  { table: I.$table, where: "", rows: dueIncidentsSql, children: { table: U.$table, on: [U.incidentId, U.agentClass, U.agentName] } },
  { table: I.$table, where: future(I.lastSeen), children: { table: U.$table, on: [U.incidentId, U.agentClass, U.agentName] } },
  { table: O.$table, where: `((${O.lastSeen} < ?3 AND ${O.resolutionAt} IS NOT NULL) OR ${future(O.lastSeen)})` },
  { table: B.$table, where: `${backupExpiredSql()} ORDER BY ${B.expiresAt}` },
  { table: B.$table, where: outside(B.lastSeen) },
  { table: L.$table, where: outside(L.time) },
  { table: S.$table, where: outside(S.lastSeen) },
  // Rollups age with the events they count (the bucket range is the primary key's prefix).
  { table: R.$table, where: outside(R.bucket) },
  { table: RS.$table, where: outside(RS.bucket) },
  // The idempotency ledger goes with the hot window: a bucket once its whole slot is before it (worker/ingest/ledger.ts).
  { table: EL.$table, where: `(${EL.bucket} < ?3 - ${LEDGER_SLOT_MS} OR ${future(EL.bucket)})` },
  // Alarm wakes that published nothing: /awake reads the last hour of them, so they go with the hot window.
  { table: W.$table, where: `(${W.at} < ?3 OR ${future(W.at)})` },
  // The alert delivery log (its keys dedupe alerts: an incident older than retention could alert again, which is fine).
  { table: A.$table, where: outside(A.createdAt) },
  // Re-spent tokens go with their incident (children above); this sweeps rows whose incident is gone otherwise.
  // (?1 and ?2 are bound to every statement of the plan; this one needs neither.)
  {
    table: U.$table,
    where: `?1 IS NOT NULL AND ?2 IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ${I.$table} i WHERE i.${I.incidentId} = ${U.$table}.${U.incidentId} AND i.${I.agentClass} = ${U.$table}.${U.agentClass} AND i.${I.agentName} = ${U.$table}.${U.agentName})`,
  },
];

/** Rows of another table that go with a table's deleted rows, found by key (its primary key's prefix). */
export type Child = { table: string; on: string[] };

/** Deletes a child table's rows whose key is one of `keys` (a JSON array of key tuples), through its primary key. */
export function childDelete(db: D1Database, c: Child, keys: unknown[][]): D1PreparedStatement {
  const join = c.on.map((col, i) => `t.${col} = j.value ->> ${i}`).join(" AND ");
  const key = keyOf(c.table);
  return db
    .prepare(
      `DELETE FROM ${c.table} WHERE ${rowValue(key)} IN (SELECT ${key.map((col) => `t.${col}`).join(", ")} FROM json_each(?1) j JOIN ${c.table} t ON ${join})`,
    )
    .bind(JSON.stringify(keys));
}

/** A table's primary key columns (KEY); throws for a table retention does not know. */
export function keyOf(table: string): readonly string[] {
  const key = KEY[table];
  if (!key) throw new Error(`retention has no primary key for ${table}`);
  return key;
}

/** Columns as one SQL value: the column itself, or a row value `(a, b)`. */
export const rowValue = (cols: readonly string[]) => (cols.length === 1 ? cols[0]! : `(${cols.join(", ")})`);

/** Deletes the rows of `table` whose primary key `select` returns (a SELECT of the key's columns, in key order). */
export const deleteKeysSql = (table: string, select: string) => `DELETE FROM ${table} WHERE ${rowValue(keyOf(table))} IN (${select})`;

/** Deletes the rows of `table`, read from `from`, that match `where` (with its own ORDER BY and LIMIT), by primary key. */
export const deleteWhereSql = (table: string, from: string, where: string) =>
  deleteKeysSql(table, `SELECT ${keyOf(table).join(", ")} FROM ${from} WHERE ${where}`);

/** Hours of event time the hot store keeps timelines (event segments) for, by default (HOT_WINDOW_HOURS, worker/config.ts). */
export const DEFAULT_HOT_WINDOW_HOURS = 48;

/** Segments deleted per statement: each holds a run of events, so this is several times as many events. */
export const SEGMENT_DELETE_BATCH = 1000;
/** Rows of any other table deleted per statement, and statements per table per run, by default. */
export const RETENTION_BATCH = 500;
export const RETENTION_MAX_BATCHES = 20;

/** The highest numbered parameter (?N) a statement names. */
export const highestParam = (sql: string) => Math.max(0, ...[...sql.matchAll(/\?(\d+)/g)].map((m) => Number(m[1])));

/** The most rows one default run of runRetention deletes from `table`: its capacity per cron run. */
export function retentionRunCap(table: string): number {
  return (table === G.$table ? SEGMENT_DELETE_BATCH : RETENTION_BATCH) * RETENTION_MAX_BATCHES;
}

export type SegmentRetention = { segments: number; events: number; statements: number; complete: boolean };

/**
 * Deletes the hot timeline's segments whose newest event is before `hotCutoff` (or later than any real time,
 * `futureCutoff`), oldest first by rowid (arrival order: no time index). Each statement deletes the first
 * `batchSize` such segments in rowid order; segments arrive roughly in time order, so the scan stops right after
 * them. Returns how many segments and events it deleted and whether any are left for the next run.
 */
export async function runSegmentRetention(
  db: D1Database,
  opts: { hotCutoff: number; futureCutoff: number; batchSize?: number; maxBatches?: number },
): Promise<SegmentRetention> {
  const batchSize = opts.batchSize ?? SEGMENT_DELETE_BATCH;
  const maxBatches = opts.maxBatches ?? RETENTION_MAX_BATCHES;
  const out: SegmentRetention = { segments: 0, events: 0, statements: 0, complete: true };
  for (let i = 0; i < maxBatches; i++) {
    const r = await db
      .prepare(
        `DELETE FROM ${G.$table} WHERE rowid IN (SELECT rowid FROM ${G.$table} WHERE ${G.timeTo} < ?1 OR ${G.timeFrom} > ?2 ORDER BY rowid LIMIT ${batchSize}) RETURNING ${G.n} AS n`,
      )
      .bind(opts.hotCutoff, opts.futureCutoff)
      .all<{ n: number }>();
    out.statements++;
    const n = r.results.length;
    out.segments += n;
    out.events += r.results.reduce((a, x) => a + Number(x.n), 0);
    if (n < batchSize) return out;
  }
  out.complete = false;
  return out;
}

/**
 * What retention deletes per second against what ingest stores: deletes `segments` worth of the oldest hot
 * segments (all of them older than `hotCutoff`) and reports segments/s and events/s. The simulator and the bench
 * print it next to the ingest rate (the target: at least 10x).
 */
export async function measureSegmentRetention(db: D1Database, hotCutoff: number, futureCutoff = Date.now() + DEFAULT_FUTURE_SKEW_MS) {
  const started = performance.now();
  const r = await runSegmentRetention(db, { hotCutoff, futureCutoff, maxBatches: 1_000 });
  // Workers' clock only moves across I/O, which every statement is: the elapsed time is the statements' time.
  const seconds = Math.max((performance.now() - started) / 1000, 1e-3);
  return { ...r, seconds, segmentsPerSecond: r.segments / seconds, eventsPerSecond: r.events / seconds };
}

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
  opts: { maxAgeDays: number; hotWindowHours?: number; maxFutureSkewMs?: number; now?: number; batchSize?: number; maxBatches?: number },
): Promise<RetentionResult> {
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.maxAgeDays * 86_400_000;
  const futureCutoff = now + (opts.maxFutureSkewMs ?? DEFAULT_FUTURE_SKEW_MS);
  // The hot timeline keeps the hot window, never more than the other tables keep.
  const hotCutoff = Math.max(cutoff, now - (opts.hotWindowHours ?? DEFAULT_HOT_WINDOW_HOURS) * 3_600_000);
  const batchSize = opts.batchSize ?? RETENTION_BATCH;
  const maxBatches = opts.maxBatches ?? RETENTION_MAX_BATCHES;
  const deleted: Record<string, number> = {};
  const seg = await runSegmentRetention(db, { hotCutoff, futureCutoff, maxBatches });
  deleted[G.$table] = seg.segments;
  let complete = seg.complete;
  for (const { table, where, rows, children } of PLAN) {
    deleted[table] ??= 0;
    const select = rows ? rows(batchSize) : `SELECT ${keyOf(table).join(", ")} FROM ${table} WHERE ${where} LIMIT ${batchSize}`;
    const args = [cutoff, futureCutoff, hotCutoff].slice(0, highestParam(select));
    for (let i = 0; i < maxBatches; i++) {
      const returning = children ? ` RETURNING ${children.on.join(", ")}` : "";
      const r = await db
        .prepare(`${deleteKeysSql(table, select)}${returning}`)
        .bind(...args)
        .all<Record<string, unknown>>();
      const n = children ? r.results.length : (r.meta.changes ?? 0);
      deleted[table] += n;
      if (children && n) {
        const c = await childDelete(
          db,
          children,
          r.results.map((x) => children.on.map((col) => x[col])),
        ).run();
        deleted[children.table] = (deleted[children.table] ?? 0) + (c.meta.changes ?? 0);
      }
      if (n < batchSize) break;
      if (i === maxBatches - 1) complete = false;
    }
  }
  return { cutoff, futureCutoff, hotCutoff, deleted, complete };
}
