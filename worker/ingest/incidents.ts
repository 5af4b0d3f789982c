import { type IncidentOverlay, incidentTransition, type SdkIncidentStatus, type TelemetryEvent } from "@agent-oncall/telemetry";
import { fiberIncidentStatus, reconciledFiberIncidentStatus } from "./fiber-incidents";

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
 * fiber's SDK record (fiber-incidents.ts), an overlay, or reconciliation's finding (the fiber's record when the
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
      return { status: fiberIncidentStatus(e), closed: null, observed: false };
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
