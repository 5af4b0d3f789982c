import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { UNCONFIRMED_STAMP } from "./outcome-stamps";

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

/**
 * The hot timeline: every valid event, once, packed into segments. A segment is one contiguous run of one
 * agent's numbered events (envelope `seq`, src/telemetry/seq.ts) that arrived in one ingest batch, so a batch
 * costs one row (plus its two index entries) per agent and run, not one row and eleven index entries per event.
 *
 * - Key (agent_class, agent_name, seq_from): an agent's segments never overlap, so an event is stored iff the
 *   segment with the largest seq_from <= its seq reaches it (seq_to) and holds its id at `seq - seq_from`.
 * - An event without a number (the console's own events, old agents), or whose number is taken by another id
 *   (numbering restarted after a wipe), is a segment of its own under a negative key derived from its id
 *   (SEGMENT_KEY in worker/ingest/segments.ts): it cannot collide with a real number, and dedupes by id.
 * - `body` is the events as one JSON array in seq order, each in the compact form of EVENT_FIELDS
 *   (read-models/segments.ts): every field the console shows or filters on.
 * - One index, for the timelines: an agent's segments by time_to. A segment spans at most MAX_SEGMENT_SPAN_MS
 *   of event time, so the segments holding events in [from, to] are one range time_to in [from, to + span].
 * - Fleet-wide "newest" reads and retention go by rowid (insertion order), which needs no index.
 */
export const eventSegments = sqliteTable(
  "event_segments",
  {
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    seqFrom: integer("seq_from").notNull(),
    seqTo: integer("seq_to").notNull(),
    timeFrom: integer("time_from").notNull(),
    timeTo: integer("time_to").notNull(),
    n: integer("n").notNull(),
    receivedAt: integer("received_at").notNull(),
    body: text("body").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agentClass, t.agentName, t.seqFrom] }), index("event_segments_agent_time").on(t.agentClass, t.agentName, t.timeTo)],
);

/**
 * The idempotency ledger: which events are stored, so a redelivered or resent event is stored, counted and written to
 * R2 once (worker/ingest/ledger.ts). One row per event-time slot (ledger.ts LEDGER_SLOT_MS, 15 s): `bucket` is the
 * slot's start, `keys` the short keys (ledger.ts ledgerKey) of every event stored in it, comma-separated with a comma
 * at each end. A write reads one row per slot it touches, whatever the slot holds (not one row per earlier write), and
 * appends its keys to each (one row written per slot touched, as before, with no row per write left for retention to
 * delete). `bucket` is the rowid (INTEGER PRIMARY KEY): the row is found by it, and rows
 * go after the hot window by its range.
 */
export const eventLedger = sqliteTable("event_ledger", {
  bucket: integer("bucket").primaryKey(),
  keys: text("keys").notNull(),
});

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
    /** The highest per-agent sequence number (envelope `seq`) received; null until a numbered event arrives. */
    seqMax: integer("seq_max"),
    /** How many distinct numbered events arrived (each event counted once). `seq_max - seq_seen` never arrived. */
    seqSeen: integer("seq_seen").notNull().default(0),
    /** last_seen to the minute (src/store/listed-at.ts): what the lists are ordered by, so their indexes move at most once a minute. */
    listedAt: integer("listed_at").notNull().default(0),
    /**
     * The first and last time a schedule's callback ran (`schedule.executed`): where an alarm loop's rate window
     * starts (read-models/residency.ts). Same row and statement as last_seen, in no index: no row written is added.
     */
    alarmFirstAt: integer("alarm_first_at"),
    alarmLastAt: integer("alarm_last_at"),
  },
  (t) => [
    primaryKey({ columns: [t.agentClass, t.agentName] }),
    index("agents_listed").on(t.listedAt, t.agentClass, t.agentName),
    index("agents_class_listed").on(t.agentClass, t.listedAt, t.agentName),
    // The classes an agent name is registered under: how runs and incidents filtered by a name alone are found
    // (runs_agent, incidents_agent: one range per class), instead of an index by name (one more entry per row). A
    // name never changes: one entry written per agent, ever.
    index("agents_name").on(t.agentName, t.agentClass),
  ],
);

/**
 * The last time reconciliation asked each agent what it is doing, and what came of it: one row per agent,
 * overwritten per ask. A pass skips agents asked within the reconcile age, so agents that cannot answer
 * (no admin mixin, failing) do not take every pass's batch.
 */
export const reconciliations = sqliteTable(
  "reconciliations",
  {
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    askedAt: integer("asked_at").notNull(),
    /** How many findings were recorded (closed or confirmed work). */
    findings: integer("findings").notNull(),
    /** Why the agent could not answer; null when it did. */
    error: text("error"),
    /** The agent's next alarm as it answered at `asked_at` (stuck detection: an alarm overdue); null when none or no answer. */
    nextAlarmAt: integer("next_alarm_at"),
    /**
     * The agent's telemetry pipeline as it last answered, kept only when its events could not reach the console:
     * "no_queue" or "failing" (src/admin-rpc/pipeline-state.ts); null when it shipped or never said. An ask it could
     * not answer keeps what it said before (nothing showed it healed). The overview's blocked-agents figure.
     */
    pipeline: text("pipeline", { enum: ["no_queue", "failing"] }),
  },
  (t) => [
    primaryKey({ columns: [t.agentClass, t.agentName] }),
    // Only agents that said their events cannot reach the console: a healthy answer writes no index entry.
    index("reconciliations_blocked").on(t.askedAt, t.agentClass, t.agentName).where(sql`pipeline IS NOT NULL`),
  ],
);

/**
 * The runs runs_kind_outcome holds: running ones and every outcome but "completed", the outcome most runs end
 * with. Completed runs are listed by their kind (runs_kind) with the outcome tested per row: they are most of
 * the runs, so that scan is dense. A query on the index repeats this text (SQLite uses a partial index only for
 * a WHERE that has its condition as a term; `outcome IS NULL` alone is one).
 */
export const RUNS_OUTCOME_LISTED = "outcome IS NULL OR outcome <> 'completed'";

/**
 * One row per run of an agent: every kind of durable work agents 0.32 runs (RUN_KINDS: runFiber, managed
 * fiber, Tasks run, chat turn). `fiber_id` is the run's own id in the SDK: the fiber id, the Tasks runId, or a
 * chat turn's request id (the SDK's internal chat-turn fibers and Tasks are folded into their turn at ingest).
 *
 * Why one table with a `kind` and not a table per kind: the kinds share their whole lifecycle (started, a
 * last-known snapshot, one terminal outcome, force idle, reconciliation) and every list, filter, count and
 * retention rule over them; Tasks even run on the same replay machinery as fibers, and a chat turn is a Task
 * or a fiber depending on where its agent lives. One table keeps one merge spec, one keyset order and one
 * retention rule, and the rows stored before kinds existed are fibers as they were (the column's default).
 * What only a task has (definition, attempt, step, waiting) is a few nullable columns.
 *
 * `outcome` is how the run ended (null while it runs), the latest outcome-bearing event by (time, event id),
 * so arrival order does not matter; a reconciliation's "ended_unreported" is stamped at time 0, so any
 * reported outcome, earlier or later, supersedes it. `phase` is the latest live state a Task reported
 * (pending, running, waiting, interrupted: a replay is due); it says nothing once `outcome` is set.
 * `confirmed_at` is the latest reconciliation that found the run alive; events of reconciliation never move
 * first_seen / last_seen, so "confirmed" is confirmed_at ≥ last_seen.
 */
export const runs = sqliteTable(
  "runs",
  {
    fiberId: text("fiber_id").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    /** fiber | managed_fiber | task | chat_turn. */
    kind: text("kind").notNull().default("fiber"),
    name: text("name").notNull(),
    /** A Tasks run's definition (registered task name). */
    definition: text("definition"),
    /** The highest attempt a Tasks run reported. */
    attempt: integer("attempt"),
    startedAt: integer("started_at"),
    endedAt: integer("ended_at"),
    outcome: text("outcome"),
    outcomeAt: integer("outcome_at"),
    outcomeEventId: text("outcome_event_id"),
    error: text("error"),
    /** Words that came with the outcome: a cancellation or force-idle reason, a recovery's result, the SDK's turn status. */
    reason: text("reason"),
    phase: text("phase"),
    phaseAt: integer("phase_at"),
    phaseEventId: text("phase_event_id"),
    /** When a waiting Tasks run wakes. */
    wakeAt: integer("wake_at"),
    /** The step a Tasks run's attempt was interrupted in, or the one the agent reported it at. */
    step: text("step"),
    /** The Tasks run's own progress line (`step.status()`), as the agent reported it (SDK `statusMessage`). */
    statusMessage: text("status_message"),
    confirmedAt: integer("confirmed_at"),
    snapshotPreview: text("snapshot_preview"),
    snapshotBytes: integer("snapshot_bytes"),
    snapshotAt: integer("snapshot_at"),
    snapshotEventId: text("snapshot_event_id"),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
    /**
     * last_seen to the minute (src/store/listed-at.ts): what running runs are found by (runs_open), so a running
     * run's index entry moves at most once a minute instead of with every batch of its events.
     */
    listedAt: integer("listed_at").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.fiberId, t.agentClass, t.agentName] }),
    // Lists run newest first by first_seen, which a run's later events never move: a run's every batch of events
    // moves last_seen, and D1 bills each index entry an update rewrites, so no full index holds last_seen.
    // No index of first_seen alone: every run (the unfiltered list, retention's oldest-first walk) is runs_kind
    // merged over the kinds, a closed set (RUN_KINDS: the contract refuses others), one entry fewer per new run.
    index("runs_agent").on(t.agentClass, t.agentName, t.firstSeen, t.fiberId),
    index("runs_class").on(t.agentClass, t.firstSeen, t.fiberId, t.agentName),
    // A kind alone: this index, not runs_kind_outcome merged over the outcomes (12 arms: a page would read its size
    // plus 12 rows, over the lists' size + 10). Merged over the kinds, it is also every run by first_seen.
    index("runs_kind").on(t.kind, t.firstSeen, t.fiberId, t.agentClass, t.agentName),
    // Runs of a kind by outcome; "running" (outcome IS NULL) by kind is the overview's count. An outcome alone is this
    // index merged over the kinds (read-models/runs.ts): no index of its own to write per run and per end. Partial
    // (RUNS_OUTCOME_LISTED): a run that completed leaves it, unbilled, so most runs' end writes their row alone.
    index("runs_kind_outcome").on(t.kind, t.outcome, t.firstSeen, t.fiberId, t.agentClass, t.agentName).where(sql.raw(RUNS_OUTCOME_LISTED)),
    // Running runs by last activity to the minute (stale and stuck work): one entry per running run, gone when it
    // ends, moved at most once a minute (listed_at; last_seen, exact, is in no index a running run is in).
    index("runs_open").on(t.listedAt, t.fiberId, t.agentClass, t.agentName).where(sql`outcome IS NULL`),
    // Runs whose end the event could not say whole (outcome-stamps.ts UNCONFIRMED_STAMP: the tail path's managed fiber
    // failures and Tasks failures), by last activity to the minute: reconciliation's cron finds their agents by it. Few
    // rows: an ordinary run never enters it, so its writes cost no entry here; an entry leaves when the agent's record
    // (a dated end) supersedes the stamp.
    index("runs_unconfirmed")
      .on(t.listedAt, t.fiberId, t.agentClass, t.agentName)
      .where(sql.raw(`outcome_at = ${UNCONFIRMED_STAMP}`)),
    // Chat turns the SDK finished as "skipped" (the stuck rule skipped_no_reason), by last activity: few rows, rarely moved.
    index("runs_skipped_turns")
      .on(t.lastSeen, t.fiberId, t.agentClass, t.agentName)
      .where(sql`kind = 'chat_turn' AND outcome = 'cancelled' AND reason = 'skipped'`),
  ],
);

/**
 * One row per incident (a chat recovery's incidentId, or one derived from a
 * fiber or turn). Status is the latest status-bearing event by time (open,
 * recovered, exhausted, failed, skipped, force_idled, ended_unreported); reason
 * is the latest reason given, so a reason-less failure after an exhaustion keeps
 * the exhaustion's reason (as the SDK's own record does); attempts is the
 * highest attempt number the SDK reported (0 when it reports none, as for
 * fibers) and maxAttempts a maximum; all merges are order-independent.
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
    /** The latest reconciliation that found the incident still being recovered (events of reconciliation never move last_seen). */
    confirmedAt: integer("confirmed_at"),
    /**
     * What closed the incident from outside the SDK, when the SDK's own last word (`status`) is still "open":
     * force_idled (an operator's action) or ended_unreported (reconciliation). An overlay, never a rewrite:
     * `status` and `reason` keep only what the SDK said, so a closed incident keeps its root cause; the shown
     * status is derived (src/store/read-models/incidents.ts).
     */
    closedBy: text("closed_by"),
    closedByAt: integer("closed_by_at"),
    closedByEventId: text("closed_by_event_id"),
    closedByReason: text("closed_by_reason"),
    /** Model tokens the incident's recovery attempts re-spent (sums of model.usage events carrying its incident id). */
    respentInputTokens: integer("respent_input_tokens").notNull().default(0),
    respentOutputTokens: integer("respent_output_tokens").notNull().default(0),
    /**
     * Recovery attempts counted from the incident's own events (event types whose step is "attempt", each event once):
     * what the incident page sets beside the SDK's counter (`attempts`). Same row and statement as last_seen, in no
     * index: no row written is added.
     */
    attemptEvents: integer("attempt_events").notNull().default(0),
    /**
     * Recoveries of the incident an operator's recovery pause stopped (recovery.skipped_paused carrying its id, each
     * event once): held for after the pause (fibers) or declined (chat turns), and when the latest was. In no index.
     */
    pauseHeld: integer("pause_held").notNull().default(0),
    pauseDeclined: integer("pause_declined").notNull().default(0),
    pauseSkippedAt: integer("pause_skipped_at"),
    /**
     * The Worker version (envelope `ver`) of the earliest versioned event of the incident: the deploy it opened
     * under (src/store/merge.ts `earliest`). `version_at` is that event's time, which keeps the merge
     * order-independent. Null while no event of the incident carried a version.
     */
    version: text("version"),
    versionAt: integer("version_at"),
    firstSeen: integer("first_seen").notNull(),
    lastSeen: integer("last_seen").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.incidentId, t.agentClass, t.agentName] }),
    // Incidents by the version they opened under (deploys page, storm alert). A full index, not a partial one: ingest
    // then sets version in its own statement, only when it changes (merge.ts upsertSqls), so an incident's later
    // events never rewrite this entry; the price is one entry per incident, versioned or not.
    index("incidents_version").on(t.version, t.firstSeen, t.incidentId, t.agentClass, t.agentName),
    // Listed newest first by first_seen, which an incident's later events never move (see runs). Every incident
    // (the unfiltered list, counts, retention) is incidents_kind merged over the kinds, a closed set ingest derives
    // from the id: no index of first_seen alone, one entry fewer per incident.
    index("incidents_status").on(t.status, t.firstSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_reason").on(t.reason, t.firstSeen, t.incidentId, t.agentClass, t.agentName),
    // Also an agent name alone, merged over the classes agents_name has it under (read-models/incidents.ts).
    index("incidents_agent").on(t.agentClass, t.agentName, t.firstSeen, t.incidentId),
    index("incidents_kind").on(t.kind, t.firstSeen, t.incidentId, t.agentClass, t.agentName),
    index("incidents_class").on(t.agentClass, t.firstSeen, t.incidentId, t.agentName),
    // Open and skipped incidents by last activity (stale and stuck work): few rows each.
    index("incidents_open").on(t.lastSeen, t.incidentId, t.agentClass, t.agentName).where(sql`status = 'open'`),
    index("incidents_skipped").on(t.lastSeen, t.incidentId, t.agentClass, t.agentName).where(sql`status = 'skipped'`),
  ],
);

/**
 * Model tokens an incident's recovery re-spent, per attempt (model.usage events carrying the incident id, each event
 * counted once; `attempt` is -1 when the agent could not tell which): the incident page's per-attempt table, read by
 * its key (a handful of rows), never by scanning the timeline. The primary key is the only index.
 */
export const incidentUsage = sqliteTable(
  "incident_usage",
  {
    incidentId: text("incident_id").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    attempt: integer("attempt").notNull(),
    calls: integer("calls").notNull().default(0),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.incidentId, t.agentClass, t.agentName, t.attempt] })],
);

/**
 * Deploys: one row per Worker version (envelope `ver`), with the time its first event happened. Written once per
 * version (and again only if an earlier event of it arrives later): the overview marks these on its chart, and
 * a version's "previous version" is the one first seen before it.
 */
export const deploys = sqliteTable(
  "deploys",
  {
    version: text("version").primaryKey(),
    firstSeen: integer("first_seen").notNull(),
  },
  (t) => [index("deploys_first_seen").on(t.firstSeen, t.version)],
);

/**
 * The recovery pause operators put on an agent, as its events said (recovery.paused / recovery.resumed from the
 * audited admin path, recovery.skipped_paused from the agent): one row per agent, rewritten only by those events.
 * Whether a pause applies now is derived when read (`paused_until` against the clock): an expired pause is not
 * rewritten. No secondary index: the agent page and the incident page read it by its key.
 */
export const recoveryPauses = sqliteTable(
  "recovery_pauses",
  {
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    /** paused | resumed: the latest of the two events. */
    pauseState: text("pause_state"),
    pausedUntil: integer("paused_until"),
    pauseReason: text("pause_reason"),
    pauseActor: text("pause_actor"),
    pauseAt: integer("pause_at"),
    pauseEventId: text("pause_event_id"),
    /** Recoveries the pause held back (recovery.skipped_paused, each event counted once), over every pause. */
    skipped: integer("skipped").notNull().default(0),
    lastSkippedAt: integer("last_skipped_at"),
  },
  (t) => [primaryKey({ columns: [t.agentClass, t.agentName] })],
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
    /** The op reported an idempotency key its upstream honours (op.ambiguous `idempotent`): re-running it is safe. */
    idempotent: integer("idempotent"),
    ambiguousAt: integer("ambiguous_at"),
    resolution: text("resolution"),
    /** What the resolution points at: the result's reference when it ran, the re-run's when re-issued. */
    resolutionRef: text("resolution_ref"),
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
    // One agent's open ones (the incident and session pages list them): a partial index, so an agent's page reads its
    // own few open ops, never a scan of the fleet's. An entry per open op, gone when the op is resolved.
    index("op_ambiguities_agent_open").on(t.agentClass, t.agentName, t.lastSeen, t.opId).where(sql`resolution_at IS NULL`),
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
    /** The bulk action this row belongs to (the batch's own row and one per target share it); null for a single action. */
    batchId: text("batch_id"),
  },
  (t) => [
    index("audit_log_time").on(t.time, t.id),
    index("audit_log_batch").on(t.batchId, t.time, t.id),
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
    /** running | idle | rescheduled | terminated | error, or ended_unreported (reconciliation); null until a status event arrives. */
    status: text("status"),
    statusAt: integer("status_at"),
    statusEventId: text("status_event_id"),
    recoveryCount: integer("recovery_count").notNull().default(0),
    lastTurnSeq: integer("last_turn_seq"),
    /** last_seen to the minute (src/store/listed-at.ts): what the lists are ordered by, so their indexes move at most once a minute. */
    listedAt: integer("listed_at").notNull().default(0),
  },
  (t) => [
    primaryKey({ columns: [t.sessionName, t.agentClass, t.agentName] }),
    index("sessions_listed").on(t.listedAt, t.sessionName, t.agentClass, t.agentName),
    index("sessions_status").on(t.status, t.listedAt, t.sessionName, t.agentClass, t.agentName),
    index("sessions_class").on(t.agentClass, t.listedAt, t.sessionName, t.agentName),
  ],
);

/**
 * Event counts per 5-minute bucket, type and dimension (a recovery's reason for the reason-bearing
 * types, else ''), so the overview never counts stored events. Written in the same transaction as the
 * segment insert and only for events not stored yet, so redelivery never counts twice.
 */
export const eventRollups = sqliteTable(
  "event_rollups",
  {
    bucket: integer("bucket").notNull(),
    type: text("type").notNull(),
    dim: text("dim").notNull().default(""),
    n: integer("n").notNull(),
    /** A summed amount for types that carry one (model.usage: input + output tokens); 0 otherwise. */
    amount: integer("amount").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.type, t.dim] }), index("event_rollups_type").on(t.type, t.bucket, t.dim)],
);

/**
 * Model tokens chat recovery re-spent, per 5-minute bucket and agent (model.usage events that carry an incident
 * id): what the spend alert sums over the last hour per agent and per class. Written in the ingest transaction,
 * like event_rollups, and only for events not stored yet. The primary key is the only index: an hour is one
 * bucket range, at most 13 buckets × agents that re-spent anything.
 */
export const respentRollups = sqliteTable(
  "respent_rollups",
  {
    bucket: integer("bucket").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    tokens: integer("tokens").notNull(),
  },
  (t) => [primaryKey({ columns: [t.bucket, t.agentClass, t.agentName] })],
);

/**
 * Alert notifications (webhook: generic JSON or Slack-compatible), one row per alert and channel. The key
 * deduplicates (one alert per incident, ambiguous op or stuck finding); the row is the delivery log.
 * `status`: queued | sent | failed (retries used up) | rate_limited (dropped by the per-window limit).
 */
export const alertDeliveries = sqliteTable(
  "alert_deliveries",
  {
    alertKey: text("alert_key").notNull(),
    channel: text("channel").notNull(),
    /** exhausted | ambiguous_op | stuck | deploy_storm | exhaust_soon | respent | alarm_loop | telemetry | exhaustion_wave (src/store/alerts.ts ALERT_KINDS) */
    kind: text("kind").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    /** The incident, op or stuck rule the alert is about. */
    subjectId: text("subject_id").notNull(),
    summary: text("summary").notNull(),
    status: text("status").notNull(),
    attempts: integer("attempts").notNull().default(0),
    httpStatus: integer("http_status"),
    lastError: text("last_error"),
    createdAt: integer("created_at").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.alertKey, t.channel] }),
    index("alert_deliveries_created").on(t.createdAt, t.alertKey, t.channel),
    index("alert_deliveries_status").on(t.status, t.createdAt, t.alertKey, t.channel),
  ],
);

/**
 * Saved views: a list's filters (its URL query) under a name. `shelf` says who sees the view: the owner's email
 * for a personal view, '' for a team view (everyone). One index then answers both "the views I see"
 * (`shelf IN (me, '')`, by name) and "is this name taken on that shelf". `owner` is who saved it (who may delete it).
 */
export const savedViews = sqliteTable(
  "saved_views",
  {
    viewId: text("view_id").primaryKey(),
    shelf: text("shelf").notNull(),
    owner: text("owner").notNull(),
    /** The list's name (console/links.ts LISTS key), not its path: paths may move, names stay. */
    list: text("list").notNull(),
    name: text("name").notNull(),
    /** The list's query string, without paging (`status=open&kind=chat`). */
    query: text("query").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [uniqueIndex("saved_views_shelf_name").on(t.shelf, t.name)],
);

/**
 * Durable Objects the console's tail handler has seen publish an SDK event, with the agent it named: a trace item
 * carries the object's id and class but never the agent's name, so an invocation that published nothing (a
 * keepAlive heartbeat) is named from here. One row per object, written when it is first seen, renamed, or its
 * parent is found.
 * `worker` is the item's scriptName ('' when the runtime gives none, as in local dev).
 */
export const tailObjects = sqliteTable(
  "tail_objects",
  {
    worker: text("worker").notNull(),
    objectId: text("object_id").notNull(),
    agentClass: text("agent_class").notNull(),
    agentName: text("agent_name").notNull(),
    seenAt: integer("seen_at").notNull(),
    /**
     * A sub-agent whose Worker publishes no ancestry: the parent the tail matched to its object id (JSON, root-first
     * `{ className, name }` steps; worker/ingest/facet-parents.ts), so the match is computed once per facet.
     */
    parentPath: text("parent_path"),
    /** Set instead when the object is a facet whose parent the console could not match: what it tried, in words. */
    parentUnknown: text("parent_unknown"),
  },
  // By agent: the agent page reads whether its parent is unknown (read-models/facet-parents.ts).
  (t) => [primaryKey({ columns: [t.worker, t.objectId] }), index("tail_objects_agent").on(t.agentClass, t.agentName)],
);

/**
 * Alarm invocations of a Durable Object in which the agents SDK published nothing (read-models/residency.ts
 * silentWakes): what a `keepAlive()` heartbeat looks like from the tail, since the SDK publishes nothing for it.
 * One row per invocation, keyed by its start, so a redelivered trace item counts once. `agent_class` is the
 * item's entrypoint (the Durable Object class), null when the runtime gives none.
 */
export const silentWakes = sqliteTable(
  "silent_wakes",
  {
    worker: text("worker").notNull(),
    objectId: text("object_id").notNull(),
    at: integer("at").notNull(),
    agentClass: text("agent_class"),
  },
  (t) => [primaryKey({ columns: [t.worker, t.objectId, t.at] }), index("silent_wakes_at").on(t.at)],
);

/** The view each identity opened last, per list: what opening that list with no query restores. */
export const viewLastUsed = sqliteTable(
  "view_last_used",
  {
    email: text("email").notNull(),
    list: text("list").notNull(),
    viewId: text("view_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.email, t.list] })],
);

/**
 * Facts about the store itself, in the home database: `partitions` is the number of D1 databases the store was
 * first partitioned across (src/store/partitions.ts); the console refuses another STORE_PARTITIONS until re-sharded.
 */
export const storeSettings = sqliteTable("store_settings", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});

/**
 * Tables stored WITHOUT ROWID (migration 0022_without_rowid, written by hand: drizzle cannot say it). A rowid table
 * with a composite primary key keeps its key twice, in the table and in the key's automatic index, and D1 bills a
 * new row's entry in each: without rowid the row lives in its key's b-tree, one row written less per insert and the
 * key's bytes stored once. Such rows are found and deleted by primary key (sql-names.ts rowKeys), never by rowid.
 * test/store/without-rowid.test.ts checks the migrated database against this list: a migration drizzle generates
 * later that rebuilds one of these tables would make it a rowid table again, and must be followed by a hand edit.
 * event_segments stays a rowid table: retention's cron walks it in arrival (rowid) order. event_ledger is a rowid
 * table whose key is the rowid (one integer: nothing stored twice); it was WITHOUT ROWID with a two-column key until
 * 0028 made it one row per slot.
 */
export const withoutRowid = [runs, agents, incidents, incidentUsage, sessions, opAmbiguities, workspaceBackups, eventRollups, respentRollups] as const;
