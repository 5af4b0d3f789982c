import type { ProjectionRows } from "./rows";

/**
 * SQL that merges projection rows into D1. Each statement takes ONE bound
 * parameter, a JSON array of rows, and expands it with json_each: a batch of
 * any size stays far inside D1's 100-parameter limit.
 *
 * Every merge is idempotent and order-independent:
 * - first/last seen are MIN/MAX;
 * - "latest" facts (an outcome, a status, a snapshot) win by (time, event id),
 *   so the same events in any order give the same row.
 */

/** Largest JSON parameter we send in one statement (D1 caps a value at 2 MB). */
const MAX_PARAM_BYTES = 900_000;

const col = (name: string) => `j ->> '$.${name}'`;

/** `excluded` wins when its (at, id) is newer than the stored one. */
function newer(at: string, id: string, storedAt: string, storedId: string): string {
  return `(excluded.${at} IS NOT NULL AND (${storedAt} IS NULL OR excluded.${at} > ${storedAt} OR (excluded.${at} = ${storedAt} AND excluded.${id} > ${storedId})))`;
}
const pick = (cond: string, table: string, column: string) => `${column} = CASE WHEN ${cond} THEN excluded.${column} ELSE ${table}.${column} END`;
const minOf = (table: string, c: string) => `${c} = CASE WHEN excluded.${c} IS NULL THEN ${table}.${c} WHEN ${table}.${c} IS NULL THEN excluded.${c} ELSE MIN(${table}.${c}, excluded.${c}) END`;
const maxOf = (table: string, c: string) => `${c} = CASE WHEN excluded.${c} IS NULL THEN ${table}.${c} WHEN ${table}.${c} IS NULL THEN excluded.${c} ELSE MAX(${table}.${c}, excluded.${c}) END`;
const from = `FROM (SELECT value AS j FROM json_each(?1)) WHERE true`;

const EVENTS_SQL = `INSERT INTO events (id, time, type, v, agent_class, agent_name, fiber_id, incident_id, request_id, op_id, session_name, trace_id, span_id, payload, received_at)
SELECT ${["id", "time", "type", "v", "agentClass", "agentName", "fiberId", "incidentId", "requestId", "opId", "sessionName", "traceId", "spanId", "payload", "receivedAt"].map(col).join(", ")}
${from} ON CONFLICT(id) DO NOTHING`;

const AGENTS_SQL = `INSERT INTO agents (agent_class, agent_name, first_seen, last_seen)
SELECT ${col("agentClass")}, ${col("agentName")}, ${col("time")}, ${col("time")} ${from}
ON CONFLICT(agent_class, agent_name) DO UPDATE SET ${minOf("agents", "first_seen")}, ${maxOf("agents", "last_seen")}`;

const fiberOutcomeNewer = newer("outcome_at", "outcome_event_id", "fiber_runs.outcome_at", "fiber_runs.outcome_event_id");
const fiberSnapNewer = newer("snapshot_at", "snapshot_event_id", "fiber_runs.snapshot_at", "fiber_runs.snapshot_event_id");
const FIBERS_SQL = `INSERT INTO fiber_runs (fiber_id, agent_class, agent_name, name, started_at, ended_at, outcome, outcome_at, outcome_event_id, error, snapshot_preview, snapshot_bytes, snapshot_at, snapshot_event_id, first_seen, last_seen)
SELECT ${col("fiberId")}, ${col("agentClass")}, ${col("agentName")}, ${col("name")}, ${col("startedAt")}, ${col("endedAt")},
  ${col("outcome")}, CASE WHEN ${col("outcome")} IS NULL THEN NULL ELSE ${col("time")} END, CASE WHEN ${col("outcome")} IS NULL THEN NULL ELSE ${col("eventId")} END,
  ${col("error")}, ${col("snapshotPreview")}, ${col("snapshotBytes")},
  CASE WHEN ${col("snapshotPreview")} IS NULL THEN NULL ELSE ${col("time")} END, CASE WHEN ${col("snapshotPreview")} IS NULL THEN NULL ELSE ${col("eventId")} END,
  ${col("time")}, ${col("time")} ${from}
ON CONFLICT(fiber_id) DO UPDATE SET
  name = CASE WHEN fiber_runs.name = '(unnamed)' THEN excluded.name ELSE fiber_runs.name END,
  ${minOf("fiber_runs", "started_at")},
  ${pick(fiberOutcomeNewer, "fiber_runs", "outcome")}, ${pick(fiberOutcomeNewer, "fiber_runs", "error")}, ${pick(fiberOutcomeNewer, "fiber_runs", "ended_at")},
  ${pick(fiberOutcomeNewer, "fiber_runs", "outcome_at")}, ${pick(fiberOutcomeNewer, "fiber_runs", "outcome_event_id")},
  ${pick(fiberSnapNewer, "fiber_runs", "snapshot_preview")}, ${pick(fiberSnapNewer, "fiber_runs", "snapshot_bytes")},
  ${pick(fiberSnapNewer, "fiber_runs", "snapshot_at")}, ${pick(fiberSnapNewer, "fiber_runs", "snapshot_event_id")},
  ${minOf("fiber_runs", "first_seen")}, ${maxOf("fiber_runs", "last_seen")}`;

const incStatusNewer = newer("status_at", "status_event_id", "incidents.status_at", "incidents.status_event_id");
const incReasonNewer = newer("reason_at", "reason_event_id", "incidents.reason_at", "incidents.reason_event_id");
// A row with no status (e.g. an event that only carries the incident id) must not win; give it the oldest possible key.
const INCIDENTS_SQL = `INSERT INTO incidents (incident_id, kind, agent_class, agent_name, status, status_at, status_event_id, attempts, max_attempts, reason, reason_at, reason_event_id, fiber_id, request_id, first_seen, last_seen)
SELECT ${col("incidentId")}, ${col("kind")}, ${col("agentClass")}, ${col("agentName")},
  COALESCE(${col("status")}, 'open'), CASE WHEN ${col("status")} IS NULL THEN 0 ELSE ${col("time")} END, CASE WHEN ${col("status")} IS NULL THEN '' ELSE ${col("eventId")} END,
  ${col("attempts")}, ${col("maxAttempts")},
  ${col("reason")}, CASE WHEN ${col("reason")} IS NULL THEN NULL ELSE ${col("time")} END, CASE WHEN ${col("reason")} IS NULL THEN NULL ELSE ${col("eventId")} END,
  ${col("fiberId")}, ${col("requestId")}, ${col("time")}, ${col("time")} ${from}
ON CONFLICT(incident_id) DO UPDATE SET
  ${pick(incStatusNewer, "incidents", "status")}, ${pick(incStatusNewer, "incidents", "status_at")}, ${pick(incStatusNewer, "incidents", "status_event_id")},
  ${pick(incReasonNewer, "incidents", "reason")}, ${pick(incReasonNewer, "incidents", "reason_at")}, ${pick(incReasonNewer, "incidents", "reason_event_id")},
  attempts = MAX(incidents.attempts, excluded.attempts), ${maxOf("incidents", "max_attempts")},
  fiber_id = COALESCE(incidents.fiber_id, excluded.fiber_id), request_id = COALESCE(incidents.request_id, excluded.request_id),
  ${minOf("incidents", "first_seen")}, ${maxOf("incidents", "last_seen")}`;

const OPS_SQL = `INSERT INTO op_ambiguities (op_id, agent_class, agent_name, session_name, op_kind, detail, ambiguous_at, resolved_at, resolution, first_seen, last_seen)
SELECT ${["opId", "agentClass", "agentName", "sessionName", "opKind", "detail", "ambiguousAt", "resolvedAt", "resolution", "time", "time"].map(col).join(", ")} ${from}
ON CONFLICT(op_id) DO UPDATE SET
  session_name = COALESCE(op_ambiguities.session_name, excluded.session_name), op_kind = COALESCE(op_ambiguities.op_kind, excluded.op_kind),
  detail = COALESCE(op_ambiguities.detail, excluded.detail), ${minOf("op_ambiguities", "ambiguous_at")},
  ${pick("(excluded.resolved_at IS NOT NULL AND (op_ambiguities.resolved_at IS NULL OR excluded.resolved_at > op_ambiguities.resolved_at))", "op_ambiguities", "resolution")},
  ${maxOf("op_ambiguities", "resolved_at")}, ${minOf("op_ambiguities", "first_seen")}, ${maxOf("op_ambiguities", "last_seen")}`;

const BACKUPS_SQL = `INSERT INTO workspace_backups (handle, tenant, environment, session_name, agent_class, agent_name, created_at, expires_at, bytes, restored_at, expired_at, last_seen)
SELECT ${["handle", "tenant", "environment", "sessionName", "agentClass", "agentName", "createdAt", "expiresAt", "bytes", "restoredAt", "expiredAt", "time"].map(col).join(", ")} ${from}
ON CONFLICT(handle) DO UPDATE SET
  ${minOf("workspace_backups", "created_at")}, expires_at = COALESCE(workspace_backups.expires_at, excluded.expires_at), bytes = COALESCE(workspace_backups.bytes, excluded.bytes),
  ${maxOf("workspace_backups", "restored_at")}, ${minOf("workspace_backups", "expired_at")}, ${maxOf("workspace_backups", "last_seen")}`;

/** Splits rows into JSON parameters under the size cap. */
function chunks(rows: unknown[]): string[] {
  const out: string[] = [];
  let cur: string[] = [];
  let bytes = 2;
  for (const r of rows) {
    const s = JSON.stringify(r);
    if (cur.length && bytes + s.length + 1 > MAX_PARAM_BYTES) {
      out.push(`[${cur.join(",")}]`);
      cur = [];
      bytes = 2;
    }
    cur.push(s);
    bytes += s.length + 1;
  }
  if (cur.length) out.push(`[${cur.join(",")}]`);
  return out;
}

/** Prepared statements for one ingest batch; run them in one db.batch so they commit together. */
export function projectionStatements(db: D1Database, rows: ProjectionRows): D1PreparedStatement[] {
  const plan: [string, unknown[]][] = [
    [EVENTS_SQL, rows.events],
    [AGENTS_SQL, rows.agents],
    [FIBERS_SQL, rows.fibers],
    [INCIDENTS_SQL, rows.incidents],
    [OPS_SQL, rows.ops],
    [BACKUPS_SQL, rows.backups],
  ];
  const stmts: D1PreparedStatement[] = [];
  for (const [sql, list] of plan) for (const json of chunks(list)) stmts.push(db.prepare(sql).bind(json));
  return stmts;
}
