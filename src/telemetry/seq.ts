import type { Source, TelemetryEvent } from "./envelope.js";

/**
 * Per-agent event numbers (the envelope's optional `seq`), so the console can tell how many of an agent's
 * events never arrived: it keeps the highest number it received and how many distinct numbered events it
 * received; the difference is what is missing.
 *
 * Where the number comes from: the outbox (outbox.ts). Events are stored as lines `<seq>\t<event JSON>` in a few
 * rows of `cf_telemetry_outbox_rows`, each row recording the highest number it holds (`last_seq`); the next event
 * takes one more than the highest number any row records. A row is only overwritten with higher numbers and the
 * newest row is never deleted, so
 * numbers rise across drains, evictions and wakes without a hole, and a write rolled back with the agent's turn
 * takes its numbers back with it. It costs the agent nothing beyond the outbox write the events have anyway.
 * The number is stamped onto the event's stored text when the outbox drains, before the signature (so the
 * signature covers it).
 *
 * What gets a number, and so what a gap means:
 * - An event that was written to the outbox. A checkpoint coalesced away before the outbox (`stashed()` ships the
 *   newest per fiber per flush) never took one: it is no gap.
 * - An `event.too_large` placeholder takes the number of the event it stands for, whether it replaced the
 *   event at emit (the placeholder is what the row holds) or at send (the row's number is stamped after).
 * - A redelivered event carries the same id and the same number (a wake sends again what the rows still hold):
 *   the console counts each event id once.
 * - Only the outbox owner's own events (source = the telemetry's source). An event naming another agent, and
 *   every event of a telemetry without storage (`subscribeAgentDiagnostics` with a `Telemetry` built without
 *   `sql`, or an outbox write that failed), ships unnumbered from memory: the console counts nothing for it,
 *   so it is never a false gap, and a loss of it is not seen either. With `outboxWrites: "flush"`, events an
 *   eviction catches before their write (at most SAVE_DELAY_MS old) are lost unnumbered the same way.
 * - If the agent's storage is wiped (`deleteAll`, `destroy` and a new agent under the same name), numbering
 *   restarts at 1. The console then sees more events than its highest number (seen > max), which it reads as
 *   "numbering restarted", not as a gap: it cannot count what is missing after a restart.
 * - Rows of the one-event-per-row table of earlier versions (`cf_telemetry_outbox`, numbered by its AUTOINCREMENT
 *   key) move over at the next wake under their own numbers; numbering goes on after the highest that table gave.
 */

/**
 * Adds `"seq":<n>` as the last field of one event's JSON text (an object as JSON.stringify wrote it, without
 * a `seq` of its own: Telemetry.emit removes one). Parse-then-stringify of the result gives it back byte for
 * byte, which is what the signature check relies on (signing.ts). Text that is not an object is returned as is.
 */
export function stampSeq(text: string, seq: number): string {
  if (!Number.isSafeInteger(seq) || seq < 1 || !text.startsWith("{") || !text.endsWith("}")) return text;
  return text === "{}" ? `{"seq":${seq}}` : `${text.slice(0, -1)},"seq":${seq}}`;
}

/** The event without a `seq` field: numbers are given by the outbox that ships it, never carried over. */
export function withoutSeq(event: TelemetryEvent): TelemetryEvent {
  if (!("seq" in event)) return event;
  const { seq: _seq, ...rest } = event;
  return rest as TelemetryEvent;
}

/** True when `event` is about the agent `owner` (the same class and instance name). */
export function isOwnEvent(event: Pick<TelemetryEvent, "source">, owner: Source): boolean {
  return event.source.agentClass === owner.agentClass && event.source.agentName === owner.agentName;
}
