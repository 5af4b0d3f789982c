import { packBodies } from "../../src/telemetry/pack";
import { foldRows, type ProjectionSpec, type Row, upsertSql } from "./merge";

/**
 * The projections ingest maintains, as merge specs (see merge.ts). Table
 * shapes come from src/store/schema.ts; these say only how facts combine.
 */
export const SPECS = {
  agents: { table: "agents", key: ["agent_class", "agent_name"], columns: { first_seen: "min", last_seen: "max" } },
  fibers: {
    table: "fiber_runs",
    key: ["fiber_id"],
    columns: {
      agent_class: "max", agent_name: "max", name: "max", started_at: "min",
      outcome: { latest: "outcome" }, ended_at: { latest: "outcome" }, error: { latest: "outcome" },
      snapshot_preview: { latest: "snapshot" }, snapshot_bytes: { latest: "snapshot" },
      first_seen: "min", last_seen: "max",
    },
    defaults: { name: "'(unnamed)'" },
  },
  incidents: {
    table: "incidents",
    key: ["incident_id"],
    columns: {
      kind: "max", agent_class: "max", agent_name: "max",
      status: { latest: "status" }, attempts: "max", max_attempts: "max", reason: { latest: "reason" },
      fiber_id: "max", request_id: "max", first_seen: "min", last_seen: "max",
    },
    // An incident first seen through an event that says nothing of status is open until one does.
    defaults: { status: "'open'", status_at: "0", status_event_id: "''" },
  },
  ops: {
    table: "op_ambiguities",
    key: ["op_id"],
    columns: {
      agent_class: "max", agent_name: "max", session_name: "max", op_kind: "max", detail: "max",
      ambiguous_at: "min", resolution: { latest: "resolution" }, first_seen: "min", last_seen: "max",
    },
  },
  backups: {
    table: "workspace_backups",
    key: ["handle"],
    columns: {
      tenant: "max", environment: "max", session_name: "max", agent_class: "max", agent_name: "max",
      created_at: "min", expires_at: "max", bytes: "max", restored_at: "max", expired_at: "min", last_seen: "max",
    },
  },
  sessions: {
    table: "sessions",
    key: ["session_name"],
    columns: {
      agent_class: "max", agent_name: "max", first_seen: "min", last_seen: "max",
      last_event_type: { latest: "last_event" },
      status: { latest: "status" },
      recovery_count: "max", last_turn_seq: "max",
    },
    defaults: { recovery_count: "0" },
  },
} satisfies Record<string, ProjectionSpec>;

export type ProjectionName = keyof typeof SPECS;

const EVENTS_COLUMNS = ["id", "time", "type", "v", "agent_class", "agent_name", "fiber_id", "incident_id", "request_id", "op_id", "session_name", "timeline_id", "trace_id", "span_id", "payload", "received_at"];
const EVENTS_SQL = `INSERT INTO events (${EVENTS_COLUMNS.join(", ")})
SELECT ${EVENTS_COLUMNS.map((c) => `j ->> '$.${c}'`).join(", ")} FROM (SELECT value AS j FROM json_each(?1)) WHERE true
ON CONFLICT(id) DO NOTHING`;

/**
 * Adds each incoming event to its rollup bucket, but only events whose id is not stored yet. It must run
 * BEFORE the events insert of the same transaction: that is what makes a redelivered event count zero
 * times. Ids inside one call must be distinct (projectionStatements dedupes them first).
 */
const ROLLUPS_SQL = `INSERT INTO event_rollups (bucket, type, dim, n)
SELECT j.value ->> '$.bucket', j.value ->> '$.type', j.value ->> '$.dim', COUNT(*) FROM json_each(?1) j
WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.id = j.value ->> '$.id')
GROUP BY 1, 2, 3
ON CONFLICT(bucket, type, dim) DO UPDATE SET n = event_rollups.n + excluded.n`;

const SQL = Object.fromEntries(Object.entries(SPECS).map(([k, spec]) => [k, upsertSql(spec)])) as Record<ProjectionName, string>;

/** Largest JSON parameter we send in one statement (D1 caps a value at 2 MB). */
const MAX_PARAM_BYTES = 900_000;

/** Splits rows into JSON-array parameters under the size cap. */
const chunks = (rows: unknown[]): string[] => packBodies(rows.map((r) => JSON.stringify(r)), MAX_PARAM_BYTES);

/** The first row per id: a batch may carry the same event twice, and rollups must count it once. */
function firstById(rows: Row[]): Row[] {
  const seen = new Set<unknown>();
  return rows.filter((r) => !seen.has(r.id) && (seen.add(r.id), true));
}

/**
 * Statements for one ingest batch, to run in one db.batch (one transaction).
 * Each takes ONE bound parameter, a JSON array expanded with json_each, so a
 * batch of any size stays far inside D1's 100-parameter limit; rows are first
 * folded per key so each projection row is written once per batch. Rollups
 * come first: they count only ids the events insert has not stored yet.
 */
export function projectionStatements(db: D1Database, events: Row[], projections: Record<ProjectionName, Row[]>, rollups: Row[]): D1PreparedStatement[] {
  const stmts: D1PreparedStatement[] = [];
  for (const json of chunks(firstById(rollups))) stmts.push(db.prepare(ROLLUPS_SQL).bind(json));
  for (const json of chunks(firstById(events))) stmts.push(db.prepare(EVENTS_SQL).bind(json));
  for (const name of Object.keys(SPECS) as ProjectionName[]) {
    const rows = foldRows(SPECS[name], projections[name]);
    for (const json of chunks(rows)) stmts.push(db.prepare(SQL[name]).bind(json));
  }
  return stmts;
}
