import type { Source, TelemetryEvent } from "./envelope.js";

/**
 * Per-agent event numbers (the envelope's optional `seq`), so the console can tell how many of an agent's
 * events never arrived: it keeps the highest number it received and how many distinct numbered events it
 * received; the difference is what is missing.
 *
 * Where the number comes from: the outbox row's key (`cf_telemetry_outbox.seq`, INTEGER PRIMARY KEY
 * AUTOINCREMENT in the agent's own SQLite). AUTOINCREMENT never reuses a number, even after rows are deleted,
 * so numbers rise across drains and evictions, and a write rolled back with the agent's turn rolls its number
 * back too (no hole). It costs the agent nothing: no row, no write beyond the outbox row the event has anyway.
 * The number is stamped onto the event's stored text when the outbox drains, before the signature (so the
 * signature covers it).
 *
 * What gets a number, and so what a gap means:
 * - An event that was written to the outbox. A stash coalesced away before the outbox (`stashed()` ships the
 *   last of a synchronous run) never took one: it is no gap.
 * - An `event.too_large` placeholder takes the number of the event it stands for, whether it replaced the
 *   event at emit (the placeholder is what the row holds) or at send (the row's number is stamped after).
 * - A redelivered event carries the same id and the same number (the row is sent again until deleted):
 *   the console counts each event id once.
 * - Only the outbox owner's own events (source = the telemetry's source). An event naming another agent, and
 *   every event of a telemetry without storage (`subscribeAgentDiagnostics` with a `Telemetry` built without
 *   `sql`, or an outbox write that failed), ships unnumbered from memory: the console counts nothing for it,
 *   so it is never a false gap, and a loss of it is not seen either.
 * - If the agent's storage is wiped (`deleteAll`, `destroy` and a new agent under the same name), numbering
 *   restarts at 1. The console then sees more events than its highest number (seen > max), which it reads as
 *   "numbering restarted", not as a gap: it cannot count what is missing after a restart.
 *
 * If a later change packs several events into one outbox row, each event still needs its own number: a row of
 * k events takes k consecutive numbers by advancing the table's AUTOINCREMENT counter
 * (`UPDATE sqlite_sequence SET seq = seq + k - 1 WHERE name = 'cf_telemetry_outbox'`, in the same statement
 * batch as the insert), its key is the last of them, and event i (0-based) of the row is `key - k + 1 + i`.
 */

/** Largest number a sequence may reach: JSON and D1 integers stay exact up to here. */
export const MAX_SEQ = Number.MAX_SAFE_INTEGER;

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
