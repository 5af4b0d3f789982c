/**
 * Paced retention: a small slice of deletions the Queue consumer runs after each batch it stores, so deletion keeps
 * pace with ingest instead of waiting for the hourly cron (which stays, as the backstop: retention.ts). Per table,
 * a slice deletes at most `pace` x the rows the batch may have added to it, of rows that are due, oldest first,
 * always through an index, so a slice with nothing due reads a bounded number of rows.
 *
 * What is due is retention.ts's rule: finished runs, timeline segments, incidents not open now (with their
 * incident_usage rows, by key), resolved ops and backups expired before it after the hot window; open runs,
 * sessions, rollups and dead letters after the retention period. Not paced (the cron does them): audit, alert
 * deliveries (ingest adds none), orphaned re-spent tokens (found by a join, not an index), backups by last activity
 * (those with no known expiry, or one past the retention period: few), and rows dated in the future (stored before
 * ingest refused such times).
 */

import { LEDGER_SLOT_MS } from "./ledger-slot";
import {
  type Child,
  childDelete,
  deleteWhereSql,
  highestParam,
  INCIDENT_KIND_ARMS,
  incidentDueSql,
  keyOf,
  orderedScanSql,
  RUN_KIND_ARMS,
  rowValue,
  runDueSql,
} from "./retention";
import {
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
  workspaceBackups,
} from "./schema";
import { names } from "./sql-names";

const G = names(eventSegments);
const D = names(deadLetters);
const F = names(runs);
const I = names(incidents);
const O = names(opAmbiguities);
const B = names(workspaceBackups);
const S = names(sessions);
const R = names(eventRollups);
const RS = names(respentRollups);
const U = names(incidentUsage);
const EL = names(eventLedger);

/** How many times what a batch added each slice may delete, by default (RETENTION_PACE, worker/config.ts). */
export const DEFAULT_RETENTION_PACE = 10;

/**
 * A table whose index range holds only due rows: one DELETE of the first `budget` rows of the range, in index
 * order, reads about as many rows as it deletes (one more when nothing is due).
 */
type Direct = { table: string; index: string | null; order: string[]; range: string };

/**
 * A table whose index range also holds rows that are not due (open runs older than the hot window, open incidents,
 * sessions whose listed minute is old but whose last event is not): a bounded scan of `scan` index entries from a
 * cursor, the due ones among them deleted by primary key. The cursor walks past rows that stay (so they never block the
 * slice) and starts over once it reaches the end of the range.
 */
type Walked = Direct & { index: string; due: string; children?: Child; arms?: readonly string[] };

/** Bound: ?1 = retention cutoff, ?2 = future cutoff, ?3 = hot cutoff (each statement gets up to the highest it names). */
const DIRECT: Direct[] = [
  // Resolved ops by last activity, after the hot window (a partial index holding only resolved ones: all of its range is due).
  {
    table: O.$table,
    index: "op_ambiguities_resolved",
    order: [O.lastSeen, O.opId, O.agentClass, O.agentName],
    range: `${O.resolutionAt} IS NOT NULL AND ${O.lastSeen} < ?3`,
  },
  // Backups whose expiry passed before the hot window (retention.ts backupExpiredSql). Those without a known expiry
  // (seen only through a restore) or expiring after the retention period go by last activity: the cron's.
  { table: B.$table, index: "workspace_backups_expires", order: [B.expiresAt, B.handle, B.agentClass, B.agentName], range: `${B.expiresAt} < ?3` },
  // Rollups by bucket: the primary key's prefix.
  { table: R.$table, index: null, order: [R.bucket, R.type, R.dim], range: `${R.bucket} < ?1` },
  { table: RS.$table, index: null, order: [RS.bucket, RS.agentClass, RS.agentName], range: `${RS.bucket} < ?1` },
  { table: D.$table, index: "dead_letters_received", order: [D.receivedAt, D.messageId], range: `${D.receivedAt} < ?1` },
  // The idempotency ledger by bucket (the primary key's prefix): a bucket goes once its whole slot is before the hot window.
  { table: EL.$table, index: null, order: [EL.bucket], range: `${EL.bucket} < ?3 - ${LEDGER_SLOT_MS}` },
];

const WALKED: Walked[] = [
  // A run's first_seen is at most its last_seen, so every due run is in this range (retention.ts runDueSql); every
  // run is in runs_kind under one of the kinds, so the walk merges one scan per kind in first_seen order.
  {
    table: F.$table,
    index: "runs_kind",
    arms: RUN_KIND_ARMS,
    order: [F.firstSeen, F.fiberId, F.agentClass, F.agentName],
    range: `${F.firstSeen} < ?3`,
    due: runDueSql(),
  },
  // Incidents not open now, after the hot window (retention.ts incidentDueSql); first_seen <= last_seen, as for runs,
  // and every incident is in incidents_kind under one of the kinds.
  {
    table: I.$table,
    index: "incidents_kind",
    arms: INCIDENT_KIND_ARMS,
    order: [I.firstSeen, I.incidentId, I.agentClass, I.agentName],
    range: `${I.firstSeen} < ?3`,
    due: incidentDueSql(),
    children: { table: U.$table, on: [U.incidentId, U.agentClass, U.agentName] },
  },
  // listed_at is last_seen to the minute, never later: every session due by last_seen is in this range.
  {
    table: S.$table,
    index: "sessions_listed",
    order: [S.listedAt, S.sessionName, S.agentClass, S.agentName],
    range: `${S.listedAt} < ?1`,
    due: `${S.lastSeen} < ?1`,
  },
];

/** The tables whose slices scan before they delete (the simulator counts those scans as pacing's). */
export const WALKED_TABLES: ReadonlySet<string> = new Set(WALKED.map((w) => w.table));

/** The tables a slice paces, by SQL name: what the consumer counts rows added for. */
export const PACED_TABLES: readonly string[] = [G.$table, ...DIRECT.map((d) => d.table), ...WALKED.map((w) => w.table)];

/** The tables a slice deletes from: the paced ones and the rows that go with them (incident_usage). */
export const PACE_DELETES_FROM: readonly string[] = [...PACED_TABLES, ...WALKED.flatMap((w) => (w.children ? [w.children.table] : []))];

/**
 * Deletes a walked table's `rows` by primary key. The walk's order holds the key's columns (every index a walk uses
 * ends with them), so the rows it read name what to delete.
 */
function deleteByKeys(db: D1Database, w: Walked, rows: Record<string, unknown>[]): D1PreparedStatement {
  const key = keyOf(w.table);
  const missing = key.filter((c) => !w.order.includes(c));
  if (missing.length) throw new Error(`the walk of ${w.table} does not read its key column(s) ${missing.join(", ")}`);
  const picks = key.map((_, i) => `j.value ->> ${i}`).join(", ");
  return db
    .prepare(`DELETE FROM ${w.table} WHERE ${rowValue(key)} IN (SELECT ${picks} FROM json_each(?1) j)`)
    .bind(JSON.stringify(rows.map((x) => key.map((c) => x[c]))));
}

/** Index entries a walked table's slice reads per row it may delete: room to pass rows that stay. */
export const WALK_SCAN_FACTOR = 4;

/** What one slice did, and what it cost D1 (from each statement's meta). */
export type PaceResult = { deleted: Record<string, number>; rowsRead: number; rowsWritten: number; statements: number };

/** Each walked table's cursor (its index columns' values past which the next scan starts), per database. */
const cursors = new WeakMap<D1Database, Map<string, unknown[]>>();

const params = (from: number, n: number) => Array.from({ length: n }, (_, i) => `?${from + i}`);

/**
 * One slice of paced retention on one database (a partition): `added` is how many rows the batch may have added
 * per table (keys it touched: an upper bound), `agents` the agents it carried (timeline segments are deleted per
 * agent, through event_segments_agent_time: the segments table has no time index across agents, and a quiet
 * agent's old segments are the cron's). Two round trips: the direct deletes and the walks' scans, then the walks'
 * deletes. Tables with nothing added are not touched.
 */
export async function paceRetention(
  db: D1Database,
  opts: {
    added: Readonly<Record<string, number>>;
    agents: readonly { agentClass: string; agentName: string }[];
    pace?: number;
    maxAgeDays: number;
    hotWindowHours: number;
    now?: number;
  },
): Promise<PaceResult> {
  const pace = opts.pace ?? DEFAULT_RETENTION_PACE;
  const now = opts.now ?? Date.now();
  const cutoff = now - opts.maxAgeDays * 86_400_000;
  const hotCutoff = Math.max(cutoff, now - opts.hotWindowHours * 3_600_000);
  // ?2 (the future cutoff) is the cron's alone: rows dated in the future are not paced.
  const base = [cutoff, null, hotCutoff];
  const out: PaceResult = { deleted: {}, rowsRead: 0, rowsWritten: 0, statements: 0 };
  if (pace <= 0) return out;
  const budget = (table: string) => Math.floor(pace * (opts.added[table] ?? 0));
  const bind = (sql: string, extra: unknown[] = []) => db.prepare(sql).bind(...[...base, ...extra].slice(0, Math.max(highestParam(sql), 0)));

  const first: { table: string; kind: "delete" | "scan"; walked?: Walked; budget: number; stmt: D1PreparedStatement }[] = [];
  const segBudget = budget(G.$table);
  if (segBudget > 0 && opts.agents.length) {
    const agents = JSON.stringify(opts.agents.map((a) => [a.agentClass, a.agentName]));
    first.push({
      table: G.$table,
      kind: "delete",
      budget: segBudget,
      stmt: bind(
        `DELETE FROM ${G.$table} WHERE rowid IN (SELECT s.rowid FROM json_each(?4) j JOIN ${G.$table} s INDEXED BY event_segments_agent_time ON s.${G.agentClass} = j.value ->> 0 AND s.${G.agentName} = j.value ->> 1 AND s.${G.timeTo} < ?3 LIMIT ${segBudget})`,
        [agents],
      ),
    });
  }
  for (const d of DIRECT) {
    const n = budget(d.table);
    if (n <= 0) continue;
    const from = `${d.table}${d.index ? ` INDEXED BY ${d.index}` : ""}`;
    first.push({
      table: d.table,
      kind: "delete",
      budget: n,
      stmt: bind(deleteWhereSql(d.table, from, `${d.range} ORDER BY ${d.order.join(", ")} LIMIT ${n}`)),
    });
  }
  const mine = cursors.get(db) ?? new Map<string, unknown[]>();
  cursors.set(db, mine);
  for (const w of WALKED) {
    const n = budget(w.table);
    if (n <= 0) continue;
    const cursor = mine.get(w.table);
    const after = cursor ? ` AND ${rowValue(w.order)} > ${rowValue(params(4, w.order.length))}` : "";
    first.push({
      table: w.table,
      kind: "scan",
      walked: w,
      budget: n,
      stmt: bind(
        orderedScanSql({
          table: w.table,
          index: w.index,
          arms: w.arms,
          select: `${w.order.join(", ")}, ${w.due} AS due`,
          where: `${w.range}${after}`,
          order: w.order,
          limit: n * WALK_SCAN_FACTOR,
        }),
        cursor ?? [],
      ),
    });
  }
  if (!first.length) return out;
  const results = await db.batch<Record<string, unknown>>(first.map((f) => f.stmt));
  out.statements += first.length;
  const second: { table: string; stmt: D1PreparedStatement }[] = [];
  results.forEach((r, i) => {
    const f = first[i]!;
    out.rowsRead += Number(r.meta?.rows_read ?? 0);
    out.rowsWritten += Number(r.meta?.rows_written ?? 0);
    if (f.kind === "delete") {
      out.deleted[f.table] = (out.deleted[f.table] ?? 0) + Number(r.meta?.changes ?? 0);
      return;
    }
    const w = f.walked!;
    const rows = r.results;
    const scanned = f.budget * WALK_SCAN_FACTOR;
    // Past the last row read, or back to the start once the range is read to its end.
    if (rows.length < scanned) mine.delete(w.table);
    else
      mine.set(
        w.table,
        w.order.map((c) => rows.at(-1)![c]),
      );
    const dueRows = rows.filter((x) => Number(x.due) === 1).slice(0, f.budget);
    out.deleted[w.table] ??= 0;
    if (dueRows.length) second.push({ table: w.table, stmt: deleteByKeys(db, w, dueRows) });
    const c = w.children;
    if (c && dueRows.length) {
      // The walk's order ends with the parent's key columns, in the child's key order.
      const keys = dueRows.map((x) => w.order.slice(-c.on.length).map((col) => x[col]));
      second.push({ table: c.table, stmt: childDelete(db, c, keys) });
    }
  });
  if (second.length) {
    const deletes = await db.batch(second.map((s) => s.stmt));
    out.statements += second.length;
    deletes.forEach((r, i) => {
      const t = second[i]!.table;
      out.deleted[t] = (out.deleted[t] ?? 0) + Number(r.meta?.changes ?? 0);
      out.rowsRead += Number(r.meta?.rows_read ?? 0);
      out.rowsWritten += Number(r.meta?.rows_written ?? 0);
    });
  }
  return out;
}
