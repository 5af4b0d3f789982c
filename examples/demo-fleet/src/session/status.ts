/** A session's status. Derived from facts every time; never stored. */
export type SessionStatus = "running" | "idle" | "terminated";

/**
 * - terminated, if a terminated time is set;
 * - running, if a `cf_agents_runs` row exists (a turn's fiber is live or awaiting recovery);
 * - idle, otherwise.
 */
export function deriveStatus(facts: { terminatedAt: number | null; runRows: number }): SessionStatus {
  if (facts.terminatedAt !== null) return "terminated";
  return facts.runRows > 0 ? "running" : "idle";
}
