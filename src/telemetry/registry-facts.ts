import type { EventType } from "./payloads.js";
import { EVENT_REGISTRY, type EventEntry, type RunEffect, type SdkEventType, SESSION_STATUSES, type SessionStatusWord, type Tone } from "./registry.js";

/**
 * The registry's facts, read by type: what ingest, the store and the console ask of an event type. Each answers
 * for a type the registry does not know (an old row's, a newer sender's) as "no effect".
 */

export { type RunEffect, type SdkEventType, SESSION_STATUSES, type SessionStatusWord, type Tone };

const entryOf = (type: string): EventEntry | undefined =>
  Object.hasOwn(EVENT_REGISTRY, type) ? (EVENT_REGISTRY as Record<string, EventEntry>)[type] : undefined;

/** The event types whose entry has `fact` set, in registry order. */
const typesWith = (fact: keyof EventEntry): EventType[] => (Object.keys(EVENT_REGISTRY) as EventType[]).filter((t) => entryOf(t)?.[fact] !== undefined);

/** What an event says of its run's state, where a fixed answer exists (see RunEffect). */
export function runEffectOf(type: string): RunEffect {
  return entryOf(type)?.run ?? {};
}

/** The status a session's projection takes from an event, or null. */
export function sessionStatusOf(type: string): SessionStatusWord | null {
  return entryOf(type)?.session ?? null;
}

/** How an event reads on a timeline (null: neutral, or a type the registry does not know). */
export function toneOf(type: string): Tone {
  return entryOf(type)?.tone ?? null;
}

/** Event types whose rollup dimension is their reason (for "top reasons"). */
export const REASON_DIM_TYPES: ReadonlySet<string> = new Set(typesWith("reasonDim"));

/**
 * Chart series that add up several event types, by series key (from the entries' `series`), each list sorted: the
 * types go into links (`?type=a,b`), which stay the same whatever order the registry lists its entries in.
 */
export const SERIES_TYPES: Readonly<Record<string, readonly EventType[]>> = [...typesWith("series")].sort().reduce<Record<string, EventType[]>>((out, t) => {
  const key = entryOf(t)!.series!;
  out[key] = [...(out[key] ?? []), t];
  return out;
  // No prototype: a series name from a URL ("toString") is not a series.
}, Object.create(null));

/** The event a schedule's callback firing is reported as (the one entry with `alarmFiring`). */
export const ALARM_EVENT = typesWith("alarmFiring")[0]!;

/** Whether an event can raise an alert: it moves the incident it names, or can make the op it names ambiguous. */
export function isAlertCandidate(e: { type: string; corr: { incidentId?: string; opId?: string } }): boolean {
  const entry = entryOf(e.type);
  return (!!e.corr.incidentId && entry?.incident !== undefined) || (!!e.corr.opId && entry?.opAlert === true);
}
