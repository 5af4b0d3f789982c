/**
 * How exactly the agent registry knows when it last heard from an agent (agents.last_seen, and listed_at, its
 * minute, which the lists are ordered by).
 *
 * Why coarse: the time of an agent's latest event moves with nearly every Queue message, and rewriting the
 * registry row for it cost a row written per message (0.45 per event on a quiet fleet of chat agents), plus its two
 * list index entries once a minute. Ingest stores a later time only once it is at least HEARD_FROM_STEP_MS past the
 * stored one (worker/ingest/projections.ts), so an active agent's row is written about once per step. The stored
 * time is that of an event the console received; the agent may have sent more in the step after it.
 *
 * Why this step: the shortest silence the console acts on is TELEMETRY_QUIET_MS (5 minutes: a class gone quiet, an
 * agent whose sends fail), so judging silence from the stored time errs by at most one such silence.
 */
export const HEARD_FROM_STEP_MS = 5 * 60_000;

/**
 * The latest the console may have heard from an agent whose stored last_seen is `lastSeen`: events up to a step
 * later do not move it. "Quiet since" judgements use this bound, so they never call an agent quiet that may not be.
 */
export function heardFromBy(lastSeen: number): number {
  return lastSeen + HEARD_FROM_STEP_MS - 1;
}
