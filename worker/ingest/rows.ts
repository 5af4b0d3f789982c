import type { Table } from "drizzle-orm";
import * as schema from "../../src/store/schema";
import type { SqlRow } from "../../src/store/sql-names";
import { type TelemetryEvent, fiberIncidentId, turnIncidentId } from "../../src/telemetry";
import { type Row, type StampGroup, stampColumns } from "./merge";
import type { ProjectionName } from "./projections";

/**
 * Pure mapping from validated events to the rows they contribute: one events
 * row each, and rows for the projections their facts touch. Merging is
 * merge.ts's job; this file only says which facts an event carries.
 *
 * Rows are keyed by SQL column name (the statements read them with
 * `j ->> '$.<column>'`); each is checked against its table's SqlRow, so a
 * column renamed in the schema fails typecheck here too.
 */

export type BatchRows = { events: Row[]; projections: Record<ProjectionName, Row[]>; rollups: Row[] };

/** A rollup increment: the bucket key, plus the event id that makes it count once. */
type RollupRow = SqlRow<typeof schema.events, "id"> & SqlRow<typeof schema.eventRollups, "bucket" | "type" | "dim">;

/** Width of an event_rollups bucket. */
export const ROLLUP_BUCKET_MS = 5 * 60_000;

/** Event types whose rollup dimension is their reason (for "top reasons"); every other type rolls up under ''. */
export const REASON_DIM_TYPES = new Set<TelemetryEvent["type"]>([
  "chat.recovery.exhausted",
  "session.error",
  "chat.recovery.failed",
  "chat.recovery.skipped",
  "fiber.recovery.failed",
  "fiber.recovery.skipped",
]);
/** Longest reason kept as a rollup dimension; longer ones are cut so the key space stays small. */
const MAX_DIM = 200;

/** The last status a session reported, by event type. */
const SESSION_STATUS: Partial<Record<TelemetryEvent["type"], string>> = {
  "session.status_running": "running",
  "session.status_idle": "idle",
  "session.status_rescheduled": "rescheduled",
  "session.status_terminated": "terminated",
  "session.error": "error",
};
const SESSION_EVENT = /^(session|op|backup)\./;

/** What a fiber event says about the run's outcome. */
const FIBER_OUTCOME: Partial<Record<TelemetryEvent["type"], string>> = {
  "fiber.completed": "completed",
  "fiber.failed": "failed",
  "fiber.interrupted": "interrupted",
  "fiber.recovery.detected": "interrupted",
  "fiber.recovery.attempt": "recovering",
  "fiber.recovery.handled": "recovered",
  "fiber.recovery.skipped": "recovery_skipped",
  "fiber.recovery.failed": "recovery_failed",
};
const FIBER_ENDED = new Set<TelemetryEvent["type"]>(["fiber.completed", "fiber.failed", "fiber.recovery.handled"]);

/** What an event says about its incident's status. */
const INCIDENT_STATUS: Partial<Record<TelemetryEvent["type"], string>> = {
  "chat.recovery.detected": "open",
  "chat.recovery.scheduled": "open",
  "chat.recovery.attempt": "open",
  "chat.recovery.completed": "recovered",
  "chat.recovery.skipped": "skipped",
  "chat.recovery.failed": "failed",
  "chat.recovery.exhausted": "exhausted",
  "fiber.recovery.detected": "open",
  "fiber.recovery.attempt": "open",
  "fiber.recovery.handled": "recovered",
  "fiber.recovery.skipped": "skipped",
  "fiber.recovery.failed": "failed",
  "session.status_rescheduled": "open",
  "session.status_running": "open",
  "session.status_idle": "recovered",
  "session.error": "exhausted",
};

/** An incident's kind is the prefix of its id for derived ids; chat recovery ids have none. */
export function incidentKind(incidentId: string): string {
  const m = /^(fiber|turn):/.exec(incidentId);
  return m ? m[1]! : "chat";
}

/** A group stamp (see merge.ts): present only when the group's fact is. */
function stamp<T extends Table, G extends StampGroup<T>>(table: T, group: G, present: boolean, e: TelemetryEvent) {
  const [at, id] = stampColumns(table, group);
  // Computed keys widen to string; the cast restores the two stamp columns the rows are checked with.
  return (present ? { [at]: e.time, [id]: e.id } : { [at]: null, [id]: null }) as Record<typeof at, number | null> & Record<typeof id, string | null>;
}

/** Maps a batch of validated events to rows. */
export function toRows(events: TelemetryEvent[], receivedAt: number): BatchRows {
  const out: BatchRows = { events: [], projections: { agents: [], fibers: [], incidents: [], ops: [], backups: [], sessions: [] }, rollups: [] };
  const p = out.projections;
  for (const e of events) {
    const { agentClass: agent_class, agentName: agent_name } = e.source;
    const c = e.corr;
    const who = { agent_class, agent_name };
    out.events.push({
      id: e.id, time: e.time, type: e.type, v: e.v, ...who,
      fiber_id: c.fiberId ?? null, incident_id: c.incidentId ?? null, request_id: c.requestId ?? null, op_id: c.opId ?? null,
      session_name: c.sessionName ?? null, timeline_id: timelineId(e), trace_id: c.traceId ?? null, span_id: c.spanId ?? null,
      payload: JSON.stringify(e.payload), received_at: receivedAt,
    } satisfies SqlRow<typeof schema.events>);
    const reason = REASON_DIM_TYPES.has(e.type) ? (e.payload as { reason?: string }).reason : undefined;
    out.rollups.push({ id: e.id, bucket: Math.floor(e.time / ROLLUP_BUCKET_MS) * ROLLUP_BUCKET_MS, type: e.type, dim: reason ? reason.slice(0, MAX_DIM) : "" } satisfies RollupRow);
    p.agents.push({ ...who, first_seen: e.time, last_seen: e.time } satisfies SqlRow<typeof schema.agents>);

    if (e.type.startsWith("fiber.") && c.fiberId) {
      const pl = e.payload as { fiberName?: string; error?: string; snapshot?: { preview: string; bytes: number } };
      const outcome = FIBER_OUTCOME[e.type] ?? null;
      const snap = e.type === "fiber.stashed" ? pl.snapshot! : null;
      p.fibers.push({
        fiber_id: c.fiberId, ...who, name: pl.fiberName && pl.fiberName !== "(unnamed)" ? pl.fiberName : null,
        started_at: e.type === "fiber.started" ? e.time : null,
        outcome, ended_at: FIBER_ENDED.has(e.type) ? e.time : null, error: outcome ? (pl.error ?? null) : null, ...stamp(schema.fiberRuns, "outcome", outcome !== null, e),
        snapshot_preview: snap?.preview ?? null, snapshot_bytes: snap?.bytes ?? null, ...stamp(schema.fiberRuns, "snapshot", snap !== null, e),
        first_seen: e.time, last_seen: e.time,
      } satisfies SqlRow<typeof schema.fiberRuns>);
    }

    if (c.incidentId) {
      const pl = e.payload as { attempt?: number; maxAttempts?: number; recoveryCount?: number; reason?: string; error?: string };
      // The SDK follows an exhaustion sealed inside a recovery continuation with a reason-less
      // chat:recovery:failed; that one reports nothing new, so the incident stays exhausted.
      const silentFailure = e.type === "chat.recovery.failed" && !pl.reason;
      const status = silentFailure ? null : (INCIDENT_STATUS[e.type] ?? null);
      // A failure's reason is only useful with its error: "handler_error: cannot resume ...".
      const reason =
        e.type === "fiber.recovery.failed" ? [pl.reason, pl.error].filter(Boolean).join(": ") : (pl.reason ?? (e.type === "session.error" ? pl.error : undefined) ?? null);
      p.incidents.push({
        incident_id: c.incidentId, kind: incidentKind(c.incidentId), ...who,
        status, ...stamp(schema.incidents, "status", status !== null, e),
        attempts: pl.attempt ?? pl.recoveryCount ?? (e.type === "fiber.recovery.attempt" ? 1 : 0), max_attempts: pl.maxAttempts ?? null,
        reason, ...stamp(schema.incidents, "reason", reason !== null, e),
        fiber_id: c.fiberId ?? null, request_id: c.requestId ?? null, first_seen: e.time, last_seen: e.time,
      } satisfies SqlRow<typeof schema.incidents>);
    }

    if ((e.type === "op.ambiguous" || e.type === "op.resolved") && c.opId) {
      const pl = e.payload as { opKind: string; detail?: string; resolution?: string };
      const resolution = e.type === "op.resolved" ? (pl.resolution ?? null) : null;
      p.ops.push({
        op_id: c.opId, ...who, session_name: c.sessionName ?? null, op_kind: pl.opKind, detail: pl.detail ?? null,
        ambiguous_at: e.type === "op.ambiguous" ? e.time : null, resolution, ...stamp(schema.opAmbiguities, "resolution", resolution !== null, e),
        first_seen: e.time, last_seen: e.time,
      } satisfies SqlRow<typeof schema.opAmbiguities>);
    }

    if (c.sessionName && SESSION_EVENT.test(e.type)) {
      const pl = e.payload as { turnSeq?: number; recoveryCount?: number };
      const status = SESSION_STATUS[e.type] ?? null;
      p.sessions.push({
        session_name: c.sessionName, ...who, first_seen: e.time, last_seen: e.time,
        last_event_type: e.type, ...stamp(schema.sessions, "lastEvent", true, e),
        status, ...stamp(schema.sessions, "status", status !== null, e),
        recovery_count: e.type === "session.status_rescheduled" ? (pl.recoveryCount ?? null) : null, last_turn_seq: pl.turnSeq ?? null,
      } satisfies SqlRow<typeof schema.sessions>);
    }

    if (e.type === "backup.created" || e.type === "backup.restored" || e.type === "backup.expired") {
      const pl = e.payload as { handle: string; tenant: string; environment: string; sessionName: string; expiresAt?: number; bytes?: number };
      p.backups.push({
        handle: pl.handle, tenant: pl.tenant, environment: pl.environment, session_name: pl.sessionName, ...who,
        created_at: e.type === "backup.created" ? e.time : null, expires_at: pl.expiresAt ?? null, bytes: pl.bytes ?? null,
        restored_at: e.type === "backup.restored" ? e.time : null, expired_at: e.type === "backup.expired" ? e.time : null, last_seen: e.time,
      } satisfies SqlRow<typeof schema.workspaceBackups>);
    }
  }
  return out;
}

/**
 * The incident timeline an event belongs to: its reported incident id; else, for a fiber's event, the
 * id a recovery of that fiber derives; else, for a session event that names its turn, the id a recovery
 * of that turn derives. Derived with the same functions the agent side uses, so ids match.
 */
function timelineId(e: TelemetryEvent): string | null {
  const c = e.corr;
  if (c.incidentId) return c.incidentId;
  if (c.fiberId && e.type.startsWith("fiber.")) return fiberIncidentId(e.source.agentClass, e.source.agentName, c.fiberId);
  const turnSeq = (e.payload as { turnSeq?: unknown }).turnSeq;
  if (c.sessionName && SESSION_EVENT.test(e.type) && typeof turnSeq === "number") return turnIncidentId(e.source.agentClass, e.source.agentName, turnSeq);
  return null;
}
