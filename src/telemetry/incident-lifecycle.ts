import type { TelemetryEvent } from "./envelope.js";
import { CHAT_RECOVERY_EVENT_STATUS, CHAT_RECOVERY_STATUS, type IncidentOverlay, type SdkIncidentStatus } from "./sdk-states.js";

/**
 * The incident lifecycle, declared once for both sides of the Queue: which event moves an incident to which status.
 * The agent side reads it to know which recovery is under way now (usage.ts RecoveryScope stamps model calls with
 * it); ingest projects the incident's status with it (src/store/incident-facts.ts); the store counts attempts by it.
 */

/**
 * What an event does to the recovery in the agent: `detected` (known, about to be recovered), `attempt` (an attempt
 * starts; the console counts these), `ended` (nothing recovers it any more), or null (no change).
 */
export type RecoveryStep = "detected" | "attempt" | "ended" | null;

/** What an event that carries an incident id says of that incident. */
export type IncidentTransition =
  /** The SDK's word for the incident, fixed by the event type. */
  | { readonly kind: "status"; readonly status: SdkIncidentStatus; readonly recovery: RecoveryStep }
  /**
   * The SDK's record of the fiber decides (FIBER_RECOVERY_INCIDENT, read from the payload by ingest): a managed
   * fiber left `interrupted` keeps its incident open; a plain runFiber's recovery hook that returned recovered it.
   */
  | { readonly kind: "fiber_record"; readonly recovery: RecoveryStep }
  /** Closed from outside the SDK (an operator's action): the overlay, while the SDK's word stays. */
  | { readonly kind: "closed_by"; readonly overlay: IncidentOverlay; readonly recovery: RecoveryStep }
  /**
   * Reconciliation: the fiber's SDK record when the agent still keeps one, else the overlay when the agent
   * said it is not recovering the incident any more; an observation, never the SDK's word otherwise.
   */
  | { readonly kind: "reconciled"; readonly overlay: IncidentOverlay; readonly recovery: RecoveryStep };

/**
 * Every event type that moves an incident, and what it does to the recovery in the agent. The agent side reads only
 * this (usage.ts), so a user's Worker does not carry the statuses below.
 */
export const RECOVERY_STEP = {
  "chat.recovery.detected": "detected",
  "chat.recovery.scheduled": "detected",
  "chat.recovery.attempt": "attempt",
  "chat.recovery.completed": "ended",
  "chat.recovery.skipped": "ended",
  "chat.recovery.exhausted": "ended",
  "chat.recovery.failed": "ended",
  "fiber.recovery.detected": "detected",
  "fiber.recovery.attempt": "attempt",
  "fiber.recovery.handled": "ended",
  "fiber.recovery.skipped": "ended",
  "fiber.recovery.failed": "ended",
  "recovery.skipped_paused": null,
  "fiber.resolved": null,
  "session.status_rescheduled": "attempt",
  "session.status_running": null,
  "session.status_idle": "ended",
  "session.error": "ended",
  "incident.force_idled": "ended",
  "incident.reconciled": null,
} as const satisfies Partial<Record<TelemetryEvent["type"], RecoveryStep>>;

/** The event types that move an incident. */
export type IncidentEventType = keyof typeof RECOVERY_STEP;

/** A transition without its step (RECOVERY_STEP holds that). */
type Moves = DistributiveOmit<IncidentTransition, "recovery">;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A chat-recovery event: the record status the SDK writes before it (CHAT_RECOVERY_EVENT_STATUS), mapped. */
const chat = /* @__NO_SIDE_EFFECTS__ */ (word: keyof typeof CHAT_RECOVERY_EVENT_STATUS) =>
  ({ kind: "status", status: CHAT_RECOVERY_STATUS[CHAT_RECOVERY_EVENT_STATUS[word]] }) as const;

/** Each type's status move joined with its step. */
const withSteps = /* @__NO_SIDE_EFFECTS__ */ <T extends Record<IncidentEventType, Moves>>(moves: T) =>
  Object.fromEntries(Object.entries(moves).map(([t, m]) => [t, { ...m, recovery: RECOVERY_STEP[t as IncidentEventType] }])) as unknown as {
    readonly [K in IncidentEventType]: T[K] & { readonly recovery: (typeof RECOVERY_STEP)[K] };
  };

/** Every event type that moves an incident, and how. An event type not listed says nothing of its incident's status. */
export const INCIDENT_LIFECYCLE = withSteps({
  "chat.recovery.detected": chat("detected"),
  "chat.recovery.scheduled": chat("scheduled"),
  "chat.recovery.attempt": chat("attempt"),
  "chat.recovery.completed": chat("completed"),
  "chat.recovery.skipped": chat("skipped"),
  "chat.recovery.exhausted": chat("exhausted"),
  "chat.recovery.failed": chat("failed"),
  "fiber.recovery.detected": { kind: "status", status: "open" },
  "fiber.recovery.attempt": { kind: "status", status: "open" },
  "fiber.recovery.handled": { kind: "fiber_record" },
  "fiber.recovery.skipped": { kind: "status", status: "skipped" },
  "fiber.recovery.failed": { kind: "status", status: "failed" },
  // A recovery an operator's pause held back: the incident stays open (its run is kept for after the pause).
  "recovery.skipped_paused": { kind: "status", status: "open" },
  // resolveFiber settles a managed fiber the SDK kept interrupted: its record says how the incident ended.
  "fiber.resolved": { kind: "fiber_record" },
  // A session turn's recovery: rescheduled is an attempt; running again is still open; idle is recovered; an
  // error is the session giving up (its runtime's exhaustion).
  "session.status_rescheduled": { kind: "status", status: "open" },
  "session.status_running": { kind: "status", status: "open" },
  "session.status_idle": { kind: "status", status: "recovered" },
  "session.error": { kind: "status", status: "exhausted" },
  "incident.force_idled": { kind: "closed_by", overlay: "force_idled" },
  "incident.reconciled": { kind: "reconciled", overlay: "ended_unreported" },
} as const);

/** How an event type moves its incident; undefined for a type that says nothing of it. */
export function incidentTransition(type: string): IncidentTransition | undefined {
  return Object.hasOwn(INCIDENT_LIFECYCLE, type) ? INCIDENT_LIFECYCLE[type as IncidentEventType] : undefined;
}

/** The event types whose step is one of `steps` (e.g. the attempts the console counts). */
export function eventTypesWithStep(...steps: Exclude<RecoveryStep, null>[]): IncidentEventType[] {
  return (Object.keys(RECOVERY_STEP) as IncidentEventType[]).filter((t) => (steps as RecoveryStep[]).includes(RECOVERY_STEP[t]));
}
