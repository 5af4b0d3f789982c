/** Ids that must be stable across processes, so drill-down URLs stay permanent. */

let seq = 0;
/**
 * This isolate's random part of every id, drawn once (at the first id, not at module load, where Workers
 * forbid random values). Unique per isolate; with the time and the isolate's counter, each id is unique,
 * without a random UUID drawn per event on the agent's path.
 */
let isolateId: string | undefined;

/**
 * A fresh, unique event id. It sorts by time, then by emission order within
 * this isolate, so projections can break same-millisecond ties deterministically.
 */
export function newEventId(now = Date.now()): string {
  seq = (seq + 1) % 2_176_782_336; // 36^6
  // 64 random bits are unique enough beside the time and counter; a whole UUID would add 20 bytes to every event,
  // in the outbox, on the Queue and in the console's store.
  isolateId ??= crypto.randomUUID().replace(/-/g, "").slice(0, 16);
  return `${now.toString(36).padStart(9, "0")}-${seq.toString(36).padStart(6, "0")}-${isolateId}`;
}

/** Incident id for a fiber recovery (one owner: the admin package's facts, whose recovery pause names incidents too). */
export { fiberIncidentId } from "@agent-oncall/admin-rpc/facts";

/** Incident id for a session turn recovery: one turn is one incident. */
export function turnIncidentId(agentClass: string, agentName: string, turnSeq: number): string {
  return `turn:${agentClass}/${agentName}/${turnSeq}`;
}
