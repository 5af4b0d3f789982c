/**
 * D1's size at steady state, per table by its own keep time: what the store holds once retention keeps pace.
 * Timelines (event_segments) and finished runs are kept for the hot window; incidents, ops, backups, rollups and the
 * rest for RETENTION_DAYS; some tables are bounded by the fleet, not by time (one row per agent). Bytes per row are
 * measured per table on the simulated store (dbstat: the table's and its indexes' pages), rows per event from the run.
 */

const HOUR = 3_600_000;

/** Tables whose rows the fleet bounds (one per agent or per deploy), not time: the sim's sessions are one per agent. */
export const FLEET_BOUND = new Set(["agents", "sessions", "recovery_pauses", "deploys", "store_settings"]);
/** Tables kept for the hot window. */
export const HOT_TABLES = new Set(["event_segments", "runs"]);
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

export type TableGrowth = { table: string; rows: number; bytesPerRow: number };

/**
 * Bytes each table holds at steady state for `agents` agents at `rate` events/agent/min, with a hot window of
 * `hotHours` and `retentionDays`. `grown` is what the run added per table over `events` events and `seconds`
 * seconds with `runAgents` agents.
 */
export function steadyBytes(
  grown: TableGrowth[],
  run: { events: number; seconds: number; agents: number },
  at: { agents: number; rate: number; hotHours: number; retentionDays: number },
): Record<string, number> {
  const eventsPerHour = at.agents * at.rate * 60;
  const out: Record<string, number> = {};
  for (const g of grown) {
    const keepHours = HOT_TABLES.has(g.table) ? at.hotHours : at.retentionDays * 24;
    let rows: number;
    if (FLEET_BOUND.has(g.table)) rows = (g.rows / run.agents) * at.agents;
    else if (BUCKETED.has(g.table)) {
      // Rows per bucket grow with the kinds of events (and agents, for re-spent tokens), not their number: held flat.
      const buckets = Math.max(1, Math.ceil((run.seconds * 1000) / BUCKET_MS));
      rows = (g.rows / buckets) * ((keepHours * HOUR) / BUCKET_MS) * (g.table === "respent_rollups" ? at.agents / run.agents : 1);
    } else rows = (g.rows / Math.max(1, run.events)) * eventsPerHour * keepHours;
    out[g.table] = rows * g.bytesPerRow;
  }
  return out;
}

/** The largest hot window (hours) whose steady state fits `capBytes` in one database, or 0 when the rest alone does not. */
export function largestHotWindow(
  grown: TableGrowth[],
  run: { events: number; seconds: number; agents: number },
  at: { agents: number; rate: number; retentionDays: number },
  capBytes = 10e9,
): number {
  const sum = (o: Record<string, number>, hot: boolean) => Object.entries(o).reduce((n, [t, b]) => n + (HOT_TABLES.has(t) === hot ? b : 0), 0);
  const one = steadyBytes(grown, run, { ...at, hotHours: 1 });
  const fixed = sum(one, false);
  const perHour = sum(one, true);
  return fixed >= capBytes ? 0 : (capBytes - fixed) / Math.max(perHour, 1e-9);
}
