import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * The single source of D1 table shapes. `npm run db:generate` turns this into
 * migrations/; never edit the SQL by hand.
 *
 * Projections hold only what an event said and when; anything that can be
 * derived (a session's status, whether an op is still ambiguous) is derived
 * in the read models, not stored twice.
 *
 * Every projection row is keyed by the reporting agent (class + name) as well
 * as by its own id: fiber ids and chat incident ids are unique only per agent,
 * and any producer can claim any id, so one agent's events can never change
 * another agent's rows. The key's id comes first (lookups by id alone), and
 * each list index ends with the whole key, so keyset order stays unique.
 */

/** Every valid event, once (the id is the dedupe key). */
export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    time: integer("time").notNull(),
    type: text("type").notNull(),
    v: integer("v").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    fiberId: text("fiber_id"),
    incidentId: text("incident_id"),
    requestId: text("request_id"),
    opId: text("op_id"),
    sessionName: text("session_name"),
    /**
     * The incident timeline this event belongs to: the reported incident id, else the one a fiber or
     * turn recovery of this event's fiber / session turn would derive (fiber:… / turn:…). An index key,
     * so an incident's timeline (its own events plus its fiber's or turn's) is one index range.
     */
    timelineId: text("timeline_id"),
    traceId: text("trace_id"),
    spanId: text("span_id"),
    payload: text("payload").notNull(),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [
    index("events_time").on(t.time, t.id),
    index("events_type_time").on(t.type, t.time, t.id),
    index("events_incident_time").on(t.incidentId, t.time, t.id),
    index("events_agent_time").on(t.agentClass, t.agentName, t.time, t.id),
    // Timelines belong to one agent's fiber / session / incident: forged events under the same id are not in them.
    index("events_fiber_time").on(t.fiberId, t.agentClass, t.agentName, t.time, t.id),
    index("events_session_time").on(t.sessionName, t.agentClass, t.agentName, t.time, t.id),
    index("events_op_time").on(t.opId, t.time, t.id),
    index("events_timeline_time").on(t.timelineId, t.agentClass, t.agentName, t.time, t.id),
  ],
);

/** Messages that failed validation, with the reason. Nothing is dropped silently. */
export const deadLetters = sqliteTable(
  "dead_letters",
  {
    messageId: text("message_id").primaryKey(),
    receivedAt: integer("received_at").notNull(),
    reason: text("reason").notNull(),
    eventType: text("event_type"),
    body: text("body").notNull(),
  },
  (t) => [index("dead_letters_received").on(t.receivedAt, t.messageId)],
);

/** Agent registry: every agent instance that ever reported. */
export const agents = sqliteTable(
  "agents",
  {
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.agentClass, t.agentName] }),
    index("agents_last_seen").on(t.lastSeen, t.agentClass, t.agentName),
    index("agents_class_last_seen").on(t.agentClass, t.lastSeen, t.agentName),
  ],
);

/** One row per fiber run of an agent. `outcome` is the latest terminal event by time, so arrival order does not matter. */
export const fiberRuns = sqliteTable(
  "fiber_runs",
  {
    fiberId: text("fiber_id").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    name: text("name").notNull(),
    startedAt: integer("started_at"),
    endedAt: integer("ended_at"),
    outcome: text("outcome"),
    outcomeAt: integer("outcome_at"),
    outcomeEventId: text("outcome_event_id"),
    error: text("error"),
    snapshotPreview: text("snapshot_preview"),
    snapshotBytes: integer("snapshot_bytes"),
    snapshotAt: integer("snapshot_at"),
    snapshotEventId: text("snapshot_event_id"),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.fiberId, t.agentClass, t.agentName] }),
    index("fiber_runs_last_seen").on(t.lastSeen, t.fiberId, t.agentClass, t.agentName),
    index("fiber_runs_agent").on(t.agentClass, t.agentName, t.lastSeen, t.fiberId),
    index("fiber_runs_outcome").on(t.outcome, t.lastSeen, t.fiberId, t.agentClass, t.agentName),
    index("fiber_runs_class").on(t.agentClass, t.lastSeen, t.fiberId, t.agentName),
    index("fiber_runs_name").on(t.agentName, t.lastSeen, t.fiberId, t.agentClass),
  ],
);

/**
 * One row per incident (a chat recovery's incidentId, or one derived from a
 * fiber or turn). Status is the latest status-bearing event by time; attempts
 * and maxAttempts are maxima; all merges are order-independent.
 */
export const incidents = sqliteTable(
  "incidents",
  {
    incidentId: text("incident_id").notNull(),
    kind: text("kind").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    status: text("status").notNull(),
    statusAt: integer("status_at").notNull(),
    statusEventId: text("status_event_id").notNull(),
    attempts: integer("attempts").notNull(),
    maxAttempts: integer("max_attempts"),
    reason: text("reason"),
    reasonAt: integer("reason_at"),
    reasonEventId: text("reason_event_id"),
    fiberId: text("fiber_id"),
    requestId: text("request_id"),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.incidentId, t.agentClass, t.agentName] }),
    index("incidents_last_seen").on(t.lastSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_status").on(t.status, t.lastSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_reason").on(t.reason, t.lastSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_agent").on(t.agentClass, t.agentName, t.lastSeen, t.incidentId),
    index("incidents_kind").on(t.kind, t.lastSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_class").on(t.agentClass, t.lastSeen, t.incidentId, t.agentName),
    index("incidents_name").on(t.agentName, t.lastSeen, t.incidentId, t.agentClass),
  ],
);

/** Paid operations a recovery could not prove ran once. "Still ambiguous" is derived: no resolution yet. */
export const opAmbiguities = sqliteTable(
  "op_ambiguities",
  {
    opId: text("op_id").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    sessionName: text("session_name"),
    opKind: text("op_kind"),
    detail: text("detail"),
    ambiguousAt: integer("ambiguous_at"),
    resolution: text("resolution"),
    resolutionAt: integer("resolution_at"),
    resolutionEventId: text("resolution_event_id"),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.opId, t.agentClass, t.agentName] }),
    index("op_ambiguities_last_seen").on(t.lastSeen, t.opId, t.agentClass, t.agentName),
    index("op_ambiguities_open").on(t.resolutionAt, t.lastSeen, t.opId, t.agentClass, t.agentName),
    // Resolved ones, newest first: a partial index, since "resolution_at IS NOT NULL" is a range the open index cannot order by last_seen.
    index("op_ambiguities_resolved").on(t.lastSeen, t.opId, t.agentClass, t.agentName).where(sql`resolution_at IS NOT NULL`),
  ],
);

/** Workspace backups, by R2 handle and reporting agent. Expiry is a fact from the event; "expired" is derived from time. */
export const workspaceBackups = sqliteTable(
  "workspace_backups",
  {
    handle: text("handle").notNull(),
    tenant: text("tenant").notNull(),
    environment: text("environment").notNull(),
    sessionName: text("session_name").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    createdAt: integer("created_at"),
    expiresAt: integer("expires_at"),
    bytes: integer("bytes"),
    restoredAt: integer("restored_at"),
    expiredAt: integer("expired_at"),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.handle, t.agentClass, t.agentName] }),
    index("workspace_backups_scope").on(t.tenant, t.environment, t.sessionName, t.createdAt, t.handle),
    index("workspace_backups_created").on(t.createdAt, t.handle),
    index("workspace_backups_last_seen").on(t.lastSeen, t.handle, t.agentClass, t.agentName),
    index("workspace_backups_tenant").on(t.tenant, t.lastSeen, t.handle, t.agentClass, t.agentName),
    index("workspace_backups_environment").on(t.environment, t.lastSeen, t.handle, t.agentClass, t.agentName),
    index("workspace_backups_session").on(t.sessionName, t.lastSeen, t.handle, t.agentClass, t.agentName),
    index("workspace_backups_expires").on(t.expiresAt, t.handle, t.agentClass, t.agentName),
  ],
);

/** Every admin action, allowed or not, with who, why, and what changed. */
export const auditLog = sqliteTable(
  "audit_log",
  {
    id: text("id").primaryKey(),
    time: integer("time").notNull(),
    actor: text("actor").notNull(),
    role: text("role").notNull(),
    action: text("action").notNull(),
    targetClass: text("target_class").notNull(),
    targetName: text("target_name").notNull(),
    reason: text("reason").notNull(),
    before: text("before"),
    after: text("after"),
    result: text("result").notNull(),
    error: text("error"),
  },
  (t) => [
    index("audit_log_time").on(t.time, t.id),
    index("audit_log_target").on(t.targetClass, t.targetName, t.time, t.id),
    index("audit_log_actor").on(t.actor, t.time, t.id),
    index("audit_log_action").on(t.action, t.time, t.id),
    index("audit_log_result").on(t.result, t.time, t.id),
    index("audit_log_target_class").on(t.targetClass, t.time, t.id),
    index("audit_log_target_name").on(t.targetName, t.time, t.id),
  ],
);

/**
 * One row per session of an agent (the `corr.sessionName` of session.*, op.* and backup.* events). `status` is the
 * last REPORTED status (latest session.status_* / session.error by time, event id): the agent derives
 * its status; we only record what it said.
 */
export const sessions = sqliteTable(
  "sessions",
  {
    sessionName: text("session_name").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
    lastEventType: text("last_event_type").notNull(),
    lastEventAt: integer("last_event_at").notNull(),
    lastEventEventId: text("last_event_event_id").notNull(),
    /** running | idle | rescheduled | terminated | error; null until a status event arrives. */
    status: text("status"),
    statusAt: integer("status_at"),
    statusEventId: text("status_event_id"),
    recoveryCount: integer("recovery_count").notNull().default(0),
    lastTurnSeq: integer("last_turn_seq"),
  },
  (t) => [
    primaryKey({ columns: [t.sessionName, t.agentClass, t.agentName] }),
    index("sessions_last_seen").on(t.lastSeen, t.sessionName, t.agentClass, t.agentName),
    index("sessions_status").on(t.status, t.lastSeen, t.sessionName, t.agentClass, t.agentName),
    index("sessions_class").on(t.agentClass, t.lastSeen, t.sessionName, t.agentName),
  ],
);

/**
 * Event counts per 5-minute bucket, type and dimension (a recovery's reason for the reason-bearing
 * types, else ''), so the overview never counts over `events`. Written in the same transaction as the
 * events insert and only for ids not stored yet, so redelivery never counts twice.
 */
export const eventRollups = sqliteTable(
  "event_rollups",
  {
    bucket: integer("bucket").notNull(),
    type: text("type").notNull(),
    dim: text("dim").notNull().default(""),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.type, t.dim] }), index("event_rollups_type").on(t.type, t.bucket, t.dim)],
);
