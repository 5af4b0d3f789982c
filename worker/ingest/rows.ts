import type { TelemetryEvent } from "../../src/telemetry";

/**
 * Pure mapping from a validated event to the rows it contributes to each
 * projection. The SQL in projections.ts merges these rows in an
 * order-independent, idempotent way.
 */

export type EventRow = {
  id: string; time: number; type: string; v: number; agentClass: string; agentName: string;
  fiberId: string | null; incidentId: string | null; requestId: string | null; opId: string | null;
  sessionName: string | null; traceId: string | null; spanId: string | null; payload: string; receivedAt: number;
};
export type AgentRow = { agentClass: string; agentName: string; time: number };
export type FiberRow = {
  fiberId: string; agentClass: string; agentName: string; name: string; time: number; eventId: string;
  startedAt: number | null; outcome: string | null; endedAt: number | null; error: string | null;
  snapshotPreview: string | null; snapshotBytes: number | null;
};
export type IncidentRow = {
  incidentId: string; kind: string; agentClass: string; agentName: string; time: number; eventId: string;
  status: string | null; attempts: number; maxAttempts: number | null; reason: string | null;
  fiberId: string | null; requestId: string | null;
};
export type OpRow = {
  opId: string; agentClass: string; agentName: string; sessionName: string | null; opKind: string | null; time: number;
  ambiguousAt: number | null; detail: string | null; resolvedAt: number | null; resolution: string | null;
};
export type BackupRow = {
  handle: string; tenant: string; environment: string; sessionName: string; agentClass: string; agentName: string; time: number;
  createdAt: number | null; expiresAt: number | null; bytes: number | null; restoredAt: number | null; expiredAt: number | null;
};

export type ProjectionRows = {
  events: EventRow[]; agents: AgentRow[]; fibers: FiberRow[]; incidents: IncidentRow[]; ops: OpRow[]; backups: BackupRow[];
};

/** What a fiber event says about the run's outcome (null: nothing). */
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

/** Maps a batch of validated events to projection rows. */
export function toRows(events: TelemetryEvent[], receivedAt: number): ProjectionRows {
  const out: ProjectionRows = { events: [], agents: [], fibers: [], incidents: [], ops: [], backups: [] };
  for (const e of events) {
    const { agentClass, agentName } = e.source;
    const c = e.corr;
    out.events.push({
      id: e.id, time: e.time, type: e.type, v: e.v, agentClass, agentName,
      fiberId: c.fiberId ?? null, incidentId: c.incidentId ?? null, requestId: c.requestId ?? null, opId: c.opId ?? null,
      sessionName: c.sessionName ?? null, traceId: c.traceId ?? null, spanId: c.spanId ?? null,
      payload: JSON.stringify(e.payload), receivedAt,
    });
    out.agents.push({ agentClass, agentName, time: e.time });

    if (e.type.startsWith("fiber.") && c.fiberId) {
      const p = e.payload as { fiberName?: string; error?: string; snapshot?: { preview: string; bytes: number } };
      out.fibers.push({
        fiberId: c.fiberId, agentClass, agentName, name: p.fiberName ?? "(unnamed)", time: e.time, eventId: e.id,
        startedAt: e.type === "fiber.started" ? e.time : null,
        outcome: FIBER_OUTCOME[e.type] ?? null,
        endedAt: e.type === "fiber.completed" || e.type === "fiber.failed" || e.type === "fiber.recovery.handled" ? e.time : null,
        error: p.error ?? null,
        snapshotPreview: e.type === "fiber.stashed" ? p.snapshot!.preview : null,
        snapshotBytes: e.type === "fiber.stashed" ? p.snapshot!.bytes : null,
      });
    }

    if (c.incidentId) {
      const p = e.payload as { attempt?: number; maxAttempts?: number; recoveryCount?: number; reason?: string; error?: string };
      const status = INCIDENT_STATUS[e.type] ?? null;
      // A failure's reason is only useful with its error: "handler_error: cannot resume ...".
      const reason =
        e.type === "fiber.recovery.failed" ? [p.reason, p.error].filter(Boolean).join(": ") : (p.reason ?? (e.type === "session.error" ? p.error : undefined));
      out.incidents.push({
        incidentId: c.incidentId, kind: incidentKind(c.incidentId), agentClass, agentName, time: e.time, eventId: e.id,
        status, attempts: p.attempt ?? p.recoveryCount ?? (e.type === "fiber.recovery.attempt" ? 1 : 0),
        maxAttempts: p.maxAttempts ?? null, reason: reason ?? null, fiberId: c.fiberId ?? null, requestId: c.requestId ?? null,
      });
    }

    if ((e.type === "op.ambiguous" || e.type === "op.resolved") && c.opId) {
      const p = e.payload as { opKind: string; detail?: string; resolution?: string };
      out.ops.push({
        opId: c.opId, agentClass, agentName, sessionName: c.sessionName ?? null, opKind: p.opKind, time: e.time,
        ambiguousAt: e.type === "op.ambiguous" ? e.time : null, detail: p.detail ?? null,
        resolvedAt: e.type === "op.resolved" ? e.time : null, resolution: p.resolution ?? null,
      });
    }

    if (e.type === "backup.created" || e.type === "backup.restored" || e.type === "backup.expired") {
      const p = e.payload as { handle: string; tenant: string; environment: string; sessionName: string; expiresAt?: number; bytes?: number };
      out.backups.push({
        handle: p.handle, tenant: p.tenant, environment: p.environment, sessionName: p.sessionName, agentClass, agentName, time: e.time,
        createdAt: e.type === "backup.created" ? e.time : null, expiresAt: p.expiresAt ?? null, bytes: p.bytes ?? null,
        restoredAt: e.type === "backup.restored" ? e.time : null, expiredAt: e.type === "backup.expired" ? e.time : null,
      });
    }
  }
  return out;
}
