/**
 * D1's size at steady state, per table by its own keep time: what the store holds once retention keeps pace.
 * Timelines (event_segments), the idempotency ledger (event_ledger) and finished runs are kept for the hot window; so are incidents that are not open,
 * their incident_usage rows and resolved ops (src/store/retention.ts), and backups until the hot window after they
 * expire. What stays open is estimated from the run (openAtEnd): open incidents as a level the fleet bounds (the
 * sim's recoveries end within seconds, so those open when the run ends are the standing level, Little's law: it
 * scales with agents, not time), unresolved ops for RETENTION_DAYS (the sim never resolves one; the store keeps them
 * until a person does, so this is what a person's 30 days of slack would leave). Some tables are bounded by the
 * fleet, not by time (one row per agent). Bytes per row are measured per table on the simulated store (dbstat: the
 * table's and its indexes' pages), rows per event from the run.
 */

import { openNowSql } from "../../src/store/read-models/incident-status";

const HOUR = 3_600_000;

/** Tables whose rows the fleet bounds (one per agent or per deploy), not time: the sim's sessions are one per agent. */
export const FLEET_BOUND = new Set(["agents", "sessions", "recovery_pauses", "deploys", "store_settings"]);
/** Tables kept for the hot window, whole. */
export const HOT_TABLES = new Set(["event_segments", "runs", "event_ledger"]);
/** Tables whose closed rows are kept for the hot window and whose open rows stay (openAtEnd says how many are open). */
export const CLOSING_TABLES = new Set(["incidents", "incident_usage", "op_ambiguities"]);
/** Of the closing tables, those whose open rows are a standing level bounded by the fleet (the rest: RETENTION_DAYS). */
const OPEN_IS_LEVEL = new Set(["incidents", "incident_usage"]);
/** Rollup tables: rows grow per 5-minute bucket, not per event. */
const BUCKETED = new Set(["event_rollups", "respent_rollups"]);
const BUCKET_MS = 5 * 60_000;

/** Bytes per table (its own pages and its indexes'), or null where the database does not answer dbstat. */
export async function tableBytes(db: D1Database): Promise<Record<string, number> | null> {
  try {
    const r = await db
      .prepare("SELECT m.tbl_name AS t, SUM(s.pgsize) AS bytes FROM dbstat s JOIN sqlite_master m ON m.name = s.name GROUP BY m.tbl_name")
      .all<{ t: string; bytes: number }>();
    return Object.fromEntries(r.results.map((x) => [x.t, Number(x.bytes)]));
  } catch {
    return null;
  }
}

/** What stays open in the store now, per closing table (rows), and the backups' mean lifetime to expiry (hours). */
export type OpenRows = { open: Record<string, number>; backupExpiryHours: number | null };

/** Rows open now (incidents open now and their usage rows, unresolved ops) and how long backups live before they expire. */
export async function openAtEnd(db: D1Database): Promise<OpenRows> {
  const [inc, usage, ops, exp] = await db.batch<{ n: number | null }>([
    db.prepare(`SELECT COUNT(*) AS n FROM incidents WHERE ${openNowSql()}`),
    db.prepare(
      `SELECT COUNT(*) AS n FROM incident_usage u JOIN incidents i ON i.incident_id = u.incident_id AND i.agent_class = u.agent_class AND i.agent_name = u.agent_name WHERE ${openNowSql("i")}`,
    ),
    db.prepare("SELECT COUNT(*) AS n FROM op_ambiguities WHERE resolution_at IS NULL"),
    db.prepare("SELECT AVG(expires_at - COALESCE(created_at, last_seen)) AS n FROM workspace_backups WHERE expires_at IS NOT NULL"),
  ]);
  const n = (r: D1Result<{ n: number | null }> | undefined) => Number(r?.results[0]?.n ?? 0);
  const expiry = exp?.results[0]?.n;
  return {
    open: { incidents: n(inc), incident_usage: n(usage), op_ambiguities: n(ops) },
    backupExpiryHours: expiry === null || expiry === undefined ? null : Number(expiry) / HOUR,
  };
}

export type TableGrowth = {
  table: string;
  rows: number;
  bytesPerRow: number /** Of `rows`, those open at the end of the run (closing tables). */;
  open?: number;
};

/** Where a steady state is asked for: fleet, rate, keep times; `opsResolvedHot`: unresolved ops counted as resolved at once. */
export type SteadyAt = { agents: number; rate: number; hotHours: number; retentionDays: number; backupExpiryHours?: number | null; opsResolvedHot?: boolean };

/** Hours a table's rows are kept, when time bounds them. */
function keepHours(table: string, at: SteadyAt): number {
  const retention = at.retentionDays * 24;
  if (HOT_TABLES.has(table) || CLOSING_TABLES.has(table)) return Math.min(at.hotHours, retention);
  // Listed until the hot window after expiry (never past the retention period after their last activity).
  if (table === "workspace_backups" && at.backupExpiryHours != null) return Math.min(at.backupExpiryHours + at.hotHours, retention);
  return retention;
}

/**
 * Bytes each table holds at steady state for `agents` agents at `rate` events/agent/min, with a hot window of
 * `hotHours` and `retentionDays`. `grown` is what the run added per table over `events` events and `seconds`
 * seconds with `runAgents` agents (and, for the closing tables, how many of them were open at its end).
 */
export function steadyBytes(grown: TableGrowth[], run: { events: number; seconds: number; agents: number }, at: SteadyAt): Record<string, number> {
  const eventsPerHour = at.agents * at.rate * 60;
  const perEvent = (rows: number) => rows / Math.max(1, run.events);
  const out: Record<string, number> = {};
  for (const g of grown) {
    const keep = keepHours(g.table, at);
    let rows: number;
    if (FLEET_BOUND.has(g.table)) rows = (g.rows / run.agents) * at.agents;
    else if (BUCKETED.has(g.table)) {
      // Rows per bucket grow with the kinds of events (and agents, for re-spent tokens), not their number: held flat.
      const buckets = Math.max(1, Math.ceil((run.seconds * 1000) / BUCKET_MS));
      rows = (g.rows / buckets) * ((keep * HOUR) / BUCKET_MS) * (g.table === "respent_rollups" ? at.agents / run.agents : 1);
    } else if (CLOSING_TABLES.has(g.table)) {
      const open = g.table === "op_ambiguities" && at.opsResolvedHot ? 0 : Math.min(g.open ?? 0, g.rows);
      const closed = perEvent(g.rows - open) * eventsPerHour * keep;
      const stays = OPEN_IS_LEVEL.has(g.table) ? (open / run.agents) * at.agents : perEvent(open) * eventsPerHour * at.retentionDays * 24;
      rows = closed + stays;
    } else rows = perEvent(g.rows) * eventsPerHour * keep;
    out[g.table] = rows * g.bytesPerRow;
  }
  return out;
}

/**
 * The largest hot window (hours) whose steady state fits `capBytes` in one database, or 0 when even a window of
 * none does not. The size only grows with the window, so a bisection finds it (to a tenth of an hour, up to the
 * retention period: past it the window changes nothing).
 */
export function largestHotWindow(
  grown: TableGrowth[],
  run: { events: number; seconds: number; agents: number },
  at: Omit<SteadyAt, "hotHours">,
  capBytes = 10e9,
): number {
  const total = (hotHours: number) => Object.values(steadyBytes(grown, run, { ...at, hotHours })).reduce((a, b) => a + b, 0);
  const max = at.retentionDays * 24;
  if (total(0) > capBytes) return 0;
  if (total(max) <= capBytes) return max;
  let [lo, hi] = [0, max];
  while (hi - lo > 0.1) {
    const mid = (lo + hi) / 2;
    if (total(mid) <= capBytes) lo = mid;
    else hi = mid;
  }
  return lo;
}
