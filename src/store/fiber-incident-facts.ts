import { fiberIncidentStatusOf, type SdkIncidentStatus, type TelemetryEvent } from "@agent-oncall/telemetry";

/**
 * A fiber incident's status from an event whose lifecycle step is the fiber's SDK record (INCIDENT_LIFECYCLE
 * `fiber_record`), by what the SDK records (sdk-states.ts FIBER_RECOVERY_INCIDENT): a plain runFiber's recovery
 * hook that returned is recovered (the SDK keeps no record after it); a managed fiber's is what the SDK made of the
 * hook's answer, read by the agent side (`fiberStatus`): still `interrupted` (it waits for resolveFiber) keeps the
 * incident open, completed is recovered, error failed, aborted skipped. `fiber.resolved` carries the settled
 * status. Null: the event says nothing of the status (a word this mapping does not know).
 */
export function fiberIncidentStatus(e: TelemetryEvent): SdkIncidentStatus | null {
  const p = e.payload as { managed?: boolean; kind?: string; fiberStatus?: string; status?: string };
  if (e.type === "fiber.resolved") return fiberIncidentStatusOf(p.status);
  if (p.managed === true || p.kind === "managed_fiber") return fiberIncidentStatusOf(p.fiberStatus);
  return "recovered";
}

/**
 * What reconciliation found of a fiber incident, when the agent still records its managed fiber (`fiberStatus`):
 * the SDK's own status, mapped. Null when it records none: then reconciliation only closes it from outside (the
 * incident's closed-by overlay, "ended, not reported").
 */
export function reconciledFiberIncidentStatus(fiberStatus: string | undefined): SdkIncidentStatus | null {
  return fiberIncidentStatusOf(fiberStatus);
}
