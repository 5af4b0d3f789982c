/**
 * A backlog of due rows, seeded before a simulated run, so paced retention has something to delete while the fleet
 * runs and the simulator can measure what it deletes against what the fleet adds. Rows are written straight into
 * D1 (the store as an older console would have left it), dated past what each table keeps: timelines, finished
 * runs, closed incidents, resolved ops and expired backups past the hot window, the rest past RETENTION_DAYS. They belong to the fleet's own agents, round robin (a
 * timeline is paced per agent: an agent that went quiet is the cron's).
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Rows per INSERT (each bound as one JSON array: well inside D1's 100 KB per statement). */
const CHUNK = 500;

type Agent = { agentClass: string; agentName: string };

/** One seeded table: how to insert a chunk of rows from a JSON array of [agentClass, agentName, i, time]. */
type Seeder = { table: string; insert: string; dueSql: (hot: number, cutoff: number) => string };

const j = (n: number) => `json_extract(j.value, '$[${n}]')`;

/** The paced tables and what makes a row of each due (the same rules as src/store/retention.ts). */
export const SEEDERS: Seeder[] = [
  {
    table: "runs",
    insert: `INSERT OR IGNORE INTO runs (fiber_id, agent_class, agent_name, kind, name, outcome, first_seen, last_seen, listed_at)
      SELECT 'backlog-' || ${j(2)}, ${j(0)}, ${j(1)}, 'fiber', 'backlog', 'completed', ${j(3)}, ${j(3)}, ${j(3)} FROM json_each(?1) j`,
    dueSql: (hot, cutoff) =>
      `SELECT COUNT(*) AS n FROM runs WHERE first_seen < ${hot} AND ((outcome IS NOT NULL AND last_seen < ${hot}) OR last_seen < ${cutoff})`,
  },
  {
    table: "event_segments",
    // Negative sequence numbers and no events (n = 0, body '[]'): an unnumbered (tail) event's segment has a negative key too.
    insert: `INSERT OR IGNORE INTO event_segments (agent_class, agent_name, seq_from, seq_to, time_from, time_to, n, received_at, body)
      SELECT ${j(0)}, ${j(1)}, -1 - ${j(2)}, -1 - ${j(2)}, ${j(3)}, ${j(3)}, 0, ${j(3)}, '[]' FROM json_each(?1) j`,
    dueSql: (hot) => `SELECT COUNT(*) AS n FROM event_segments WHERE time_to < ${hot}`,
  },
  {
    table: "incidents",
    insert: `INSERT OR IGNORE INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, first_seen, last_seen)
      SELECT 'backlog-' || ${j(2)}, 'chat', ${j(0)}, ${j(1)}, 'recovered', ${j(3)}, '', 1, ${j(3)}, ${j(3)} FROM json_each(?1) j`,
    dueSql: (hot) => `SELECT COUNT(*) AS n FROM incidents WHERE last_seen < ${hot} AND status <> 'open'`,
  },
  {
    table: "sessions",
    insert: `INSERT OR IGNORE INTO sessions (session_name, agent_class, agent_name, first_seen, last_seen, last_event_type, last_event_at, last_event_event_id, status, listed_at)
      SELECT 'backlog-' || ${j(2)}, ${j(0)}, ${j(1)}, ${j(3)}, ${j(3)}, 'session.status_idle', ${j(3)}, '', 'idle', ${j(3)} FROM json_each(?1) j`,
    dueSql: (_hot, cutoff) => `SELECT COUNT(*) AS n FROM sessions WHERE last_seen < ${cutoff}`,
  },
  {
    table: "op_ambiguities",
    insert: `INSERT OR IGNORE INTO op_ambiguities (op_id, agent_class, agent_name, resolution, resolution_at, first_seen, last_seen)
      SELECT 'backlog-' || ${j(2)}, ${j(0)}, ${j(1)}, 'ran', ${j(3)}, ${j(3)}, ${j(3)} FROM json_each(?1) j`,
    dueSql: (hot) => `SELECT COUNT(*) AS n FROM op_ambiguities WHERE resolution_at IS NOT NULL AND last_seen < ${hot}`,
  },
  {
    table: "workspace_backups",
    // Expired at their last activity: due by expiry (workspace_backups_expires).
    insert: `INSERT OR IGNORE INTO workspace_backups (handle, tenant, environment, session_name, agent_class, agent_name, created_at, expires_at, last_seen)
      SELECT 'backlog-' || ${j(2)}, 'acme', 'prod', ${j(1)}, ${j(0)}, ${j(1)}, ${j(3)}, ${j(3)}, ${j(3)} FROM json_each(?1) j`,
    dueSql: (hot) => `SELECT COUNT(*) AS n FROM workspace_backups WHERE expires_at < ${hot}`,
  },
  {
    table: "event_rollups",
    // One bucket per row (5 minutes apart, going back from the cutoff).
    insert: `INSERT OR IGNORE INTO event_rollups (bucket, type, dim, n) SELECT ${j(3)}, 'backlog', '', 1 FROM json_each(?1) j`,
    dueSql: (_hot, cutoff) => `SELECT COUNT(*) AS n FROM event_rollups WHERE bucket < ${cutoff}`,
  },
];

export type Keep = { hotWindowHours: number; retentionDays: number };

/** Tables whose seeded rows (finished, closed, resolved, expired) are due after the hot window; the rest after RETENTION_DAYS. */
const HOT_KEPT = new Set(["runs", "event_segments", "incidents", "op_ambiguities", "workspace_backups"]);

/** Where a table's due rows start: the hot window for the HOT_KEPT tables, the retention period for the rest. */
const keptFrom = (table: string, now: number, keep: Keep) => (HOT_KEPT.has(table) ? now - keep.hotWindowHours * HOUR : now - keep.retentionDays * DAY);

/**
 * Seeds `perTable` due rows in each paced table, spread over `agents`, dated from 1 hour to 3 days past what the table
 * keeps (rollup buckets 5 minutes apart). Returns the rows written per table.
 */
export async function seedBacklog(db: D1Database, agents: readonly Agent[], perTable: number, keep: Keep, now = Date.now()): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of SEEDERS) {
    const edge = keptFrom(s.table, now, keep);
    const stmts: D1PreparedStatement[] = [];
    for (let from = 0; from < perTable; from += CHUNK) {
      const rows = Array.from({ length: Math.min(CHUNK, perTable - from) }, (_, k) => {
        const i = from + k;
        const a = agents[i % agents.length]!;
        const t = s.table === "event_rollups" ? edge - HOUR - i * 300_000 : edge - HOUR - ((i * 7919) % (71 * HOUR));
        return [a.agentClass, a.agentName, i, Math.floor(t)];
      });
      stmts.push(db.prepare(s.insert).bind(JSON.stringify(rows)));
    }
    const rs = stmts.length ? await db.batch(stmts) : [];
    out[s.table] = rs.reduce((n, r) => n + Number(r.meta?.changes ?? 0), 0);
  }
  return out;
}

/** Due rows left per paced table (as of `now`). */
export async function dueRows(db: D1Database, keep: Keep, now = Date.now()): Promise<Record<string, number>> {
  const hot = now - keep.hotWindowHours * HOUR;
  const cutoff = now - keep.retentionDays * DAY;
  const rs = await db.batch<{ n: number }>(SEEDERS.map((s) => db.prepare(s.dueSql(Math.max(hot, cutoff), cutoff))));
  return Object.fromEntries(SEEDERS.map((s, i) => [s.table, Number(rs[i]!.results[0]?.n ?? 0)]));
}

/** Deletes what is left of the backlog (so the store's size and rows are the fleet's own again). Returns rows deleted. */
export async function dropBacklog(db: D1Database): Promise<number> {
  const rs = await db.batch([
    db.prepare("DELETE FROM runs WHERE fiber_id LIKE 'backlog-%'"),
    db.prepare("DELETE FROM event_segments WHERE seq_from < 0 AND n = 0 AND body = '[]'"),
    db.prepare("DELETE FROM incidents WHERE incident_id LIKE 'backlog-%'"),
    db.prepare("DELETE FROM sessions WHERE session_name LIKE 'backlog-%'"),
    db.prepare("DELETE FROM op_ambiguities WHERE op_id LIKE 'backlog-%'"),
    db.prepare("DELETE FROM workspace_backups WHERE handle LIKE 'backlog-%'"),
    db.prepare("DELETE FROM event_rollups WHERE type = 'backlog'"),
  ]);
  return rs.reduce((n, r) => n + Number(r.meta?.changes ?? 0), 0);
}
