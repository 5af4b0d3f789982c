import {
  INCIDENT_STATUS_RANK,
  type IncidentOverlay,
  type IncidentStatus,
  incidentTransition,
  type SdkIncidentStatus,
  type TelemetryEvent,
} from "@agent-oncall/telemetry";
import { fiberIncidentClosing, fiberIncidentStatus, reconciledFiberIncidentStatus } from "./fiber-incident-facts";
import { shownStatus } from "./read-models/incident-status";

// Here, not in worker/ingest: ingest projects incidents by these facts and the pages fold a history's events by
// them, and the rooms check keeps the write and read sides of worker/ apart, so both read them from the store.

/** What one event says of its incident, by the declared lifecycle (src/telemetry/incident-lifecycle.ts). */
export type IncidentFacts = {
  /** The SDK's word it sets, or null when it says none. */
  status: SdkIncidentStatus | null;
  /** What closed the incident from outside the SDK, when the event is such a closing (an overlay). */
  closed: { by: IncidentOverlay; reason: string | null } | null;
  /** True for actions and reconciliation: they observe from outside and say no status, reason or attempt of the SDK's. */
  observed: boolean;
};

/**
 * The incident facts of an event that carries an incident id, following INCIDENT_LIFECYCLE: a fixed status word, the
 * fiber's SDK record (fiber-incident-facts.ts), an overlay, or reconciliation's finding (the fiber's record when the
 * agent keeps one, else the overlay when it no longer recovers the incident). Any other event says nothing.
 */
export function incidentFacts(e: TelemetryEvent): IncidentFacts {
  const t = incidentTransition(e.type);
  switch (t?.kind) {
    case undefined:
      return { status: null, closed: null, observed: false };
    case "status":
      return { status: t.status, closed: null, observed: false };
    case "fiber_record":
      return { status: fiberIncidentStatus(e), closed: fiberIncidentClosing(e), observed: false };
    case "closed_by":
      return { status: null, closed: { by: t.overlay, reason: (e.payload as { reason?: string }).reason ?? null }, observed: true };
    case "reconciled": {
      const pl = e.payload as { finding?: string; detail?: string; fiberStatus?: string };
      const recorded = reconciledFiberIncidentStatus(pl.fiberStatus);
      if (recorded !== null) return { status: recorded, closed: null, observed: true };
      return { status: null, closed: pl.finding === "not_recovering" ? { by: t.overlay, reason: pl.detail ?? null } : null, observed: true };
    }
  }
}

type Stamped = { id: string; time: number; type: string; payload: unknown };

/**
 * An incident's shown status from its own events (the R2 history's, when the hot store no longer holds its row),
 * folded by the projection's rules (worker/ingest/projections.ts): the SDK's word of the newest status-bearing event, exhausted
 * outranking later words (INCIDENT_STATUS_RANK), then the closed-by overlay where it applies (incident-status.ts).
 * Open until an event says otherwise, as ingest's default.
 */
export function statusFromEvents(events: readonly Stamped[]): IncidentStatus {
  const rank = (s: string) => (INCIDENT_STATUS_RANK as Record<string, number>)[s] ?? 0;
  const newer = (a: Stamped, at: number, id: string) => a.time > at || (a.time === at && a.id > id);
  let status: SdkIncidentStatus = "open";
  let statusAt = 0;
  let statusEventId = "";
  let closed: { by: IncidentOverlay; at: number; id: string } | null = null;
  for (const e of events) {
    const f = incidentFacts(e as unknown as TelemetryEvent);
    if (f.status !== null) {
      const r = rank(f.status) - rank(status);
      if (r > 0 || (r === 0 && newer(e, statusAt, statusEventId))) [status, statusAt, statusEventId] = [f.status, e.time, e.id];
    }
    if (f.closed && (!closed || newer(e, closed.at, closed.id))) closed = { by: f.closed.by, at: e.time, id: e.id };
  }
  return shownStatus({ status, statusAt, statusEventId, closedBy: closed?.by ?? null, closedByAt: closed?.at ?? null, closedByEventId: closed?.id ?? null });
}
