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
  // The tail says what the hook did when the SDK's messages show it (resumed); when they cannot, no word of the SDK's.
  if ((p as { hook?: string }).hook === "unknown") return null;
  return "recovered";
}

/** Why a plain runFiber's recovery shows no outcome: its hook ran, and the SDK's events do not say what it did. */
export const HOOK_UNKNOWN_REASON = "its recovery hook ran; the SDK's events do not say whether it resumed or dropped the work";

/**
 * A plain runFiber's recovery whose hook ran with an outcome the SDK's events do not tell (payload `hook: "unknown"`):
 * the recovery ended, and what it did was not reported, so the incident is closed as ended-unreported with that
 * reason, never shown as recovered. Null for every other event.
 */
export function fiberIncidentClosing(e: TelemetryEvent): { by: "ended_unreported"; reason: string } | null {
  if (e.type !== "fiber.recovery.handled" || (e.payload as { hook?: string }).hook !== "unknown") return null;
  return { by: "ended_unreported", reason: HOOK_UNKNOWN_REASON };
}

/**
 * What reconciliation found of a fiber incident, when the agent still records its managed fiber (`fiberStatus`):
 * the SDK's own status, mapped. Null when it records none: then reconciliation only closes it from outside (the
 * incident's closed-by overlay, "ended, not reported").
 */
export function reconciledFiberIncidentStatus(fiberStatus: string | undefined): SdkIncidentStatus | null {
  return fiberIncidentStatusOf(fiberStatus);
}
