import { recoveryPauses } from "../schema";
import { names } from "../sql-names";

/**
 * The recovery pause of one agent as its events said. `state` is derived when read: `paused` while the latest
 * event paused it and its expiry is ahead, `expired` once the expiry passed (the pause no longer holds recovery
 * back; what it held waits for a resume), `resumed` after a resume. Facts only: the words are the console's.
 */
export type RecoveryPauseView = {
  state: "paused" | "expired" | "resumed";
  /** When the pause ends by itself; null after a resume. */
  until: number | null;
  reason: string | null;
  actor: string | null;
  /** When it was paused or resumed (the latest of the two). */
  changedAt: number;
  /** Recoveries held back by pauses of this agent, as the agent reported them. */
  skipped: number;
  lastSkippedAt: number | null;
};

const P = names(recoveryPauses);

/** The agent's recovery pause, or null when no operator ever paused it (one row read, by its key). */
export async function recoveryPauseOf(db: D1Database, agentClass: string, agentName: string, now: number): Promise<RecoveryPauseView | null> {
  const r = await db
    .prepare(
      `SELECT ${P.pauseState} AS state, ${P.pausedUntil} AS until, ${P.pauseReason} AS reason, ${P.pauseActor} AS actor, ${P.pauseAt} AS at, ${P.skipped} AS skipped, ${P.lastSkippedAt} AS lastSkippedAt FROM ${P.$table} WHERE ${P.agentClass} = ? AND ${P.agentName} = ?`,
    )
    .bind(agentClass, agentName)
    .first<{
      state: string | null;
      until: number | null;
      reason: string | null;
      actor: string | null;
      at: number | null;
      skipped: number;
      lastSkippedAt: number | null;
    }>();
  // A row only skips reported (no pause event arrived yet, or it was lost): nothing the console can say of a pause.
  if (!r || r.state === null || r.at === null) return null;
  const state = r.state === "resumed" ? "resumed" : r.until !== null && r.until > now ? "paused" : "expired";
  return { state, until: r.until, reason: r.reason, actor: r.actor, changedAt: r.at, skipped: r.skipped, lastSkippedAt: r.lastSkippedAt };
}
