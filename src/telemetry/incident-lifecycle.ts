import { EVENT_REGISTRY } from "./registry.js";
import type { IncidentOverlay, SdkIncidentStatus } from "./sdk-states.js";

/**
 * The incident lifecycle, declared once for both sides of the Queue (each registry entry's `incident`, registry.ts):
 * which event moves an incident to which status.
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

type Registry = typeof EVENT_REGISTRY;

/** The event types that move an incident: those whose registry entry declares `incident`. */
export type IncidentEventType = { [K in keyof Registry]: Registry[K] extends { readonly incident: IncidentTransition } ? K : never }[keyof Registry];

/**
 * Every event type that moves an incident, and how, with what it does to the recovery in the agent: read from the
 * registry (registry.ts). An event type not listed says nothing of its incident's status.
 */
export const INCIDENT_LIFECYCLE = Object.fromEntries(
  Object.entries(EVENT_REGISTRY).flatMap(([type, entry]) => ("incident" in entry ? [[type, entry.incident]] : [])),
) as { readonly [K in IncidentEventType]: Registry[K] extends { readonly incident: infer T } ? T : never };

/** Every event type that moves an incident, and what it does to the recovery in the agent. The agent side reads this (usage.ts). */
export const RECOVERY_STEP = Object.fromEntries(Object.entries(INCIDENT_LIFECYCLE).map(([type, t]) => [type, t.recovery])) as {
  readonly [K in IncidentEventType]: Registry[K] extends { readonly incident: { readonly recovery: infer R } } ? R : never;
};

/** How an event type moves its incident; undefined for a type that says nothing of it. */
export function incidentTransition(type: string): IncidentTransition | undefined {
  return Object.hasOwn(INCIDENT_LIFECYCLE, type) ? INCIDENT_LIFECYCLE[type as IncidentEventType] : undefined;
}

/** The event types whose step is one of `steps` (e.g. the attempts the console counts). */
export function eventTypesWithStep(...steps: Exclude<RecoveryStep, null>[]): IncidentEventType[] {
  return (Object.keys(RECOVERY_STEP) as IncidentEventType[]).filter((t) => (steps as RecoveryStep[]).includes(RECOVERY_STEP[t]));
}
