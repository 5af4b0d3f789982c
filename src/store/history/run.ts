import type { AgentRef } from "../read-models/owner";
import { type HistoryEvent, HOUR_MS, hourOf } from "./layout";
import { AGENT_READ_LIMITS, type HistoryRead, historyEvents, historySearch, type ShardCounts } from "./read";

/** The fields that carry a run's id in its events: a fiber's, a Tasks run's, a chat turn's request id. */
const RUN_ID_FIELDS = ["fiberId", "taskId", "requestId"] as const;

/** Whether an event belongs to the run with this id (whatever its kind). */
export const carriesRunId = (e: HistoryEvent, id: string) => RUN_ID_FIELDS.some((k) => e[k] === id);

/**
 * A run the hot store no longer holds (retention deleted its row), as the R2 history has it: its events oldest
 * first, and how far the read looked. With the agent known (every console link carries it) this reads that agent's
 * objects over AGENT_READ_LIMITS' hours (a week) back from `now`; without it, an id lookup over ID_SEARCH_LIMITS
 * (the last 24 hours, every agent). Only events carrying the id in a run field are returned.
 */
export async function runFromHistory(
  bucket: R2Bucket,
  counts: ShardCounts,
  id: string,
  owner: AgentRef | undefined,
  now = Date.now(),
): Promise<HistoryRead & { from: number; to: number }> {
  if (owner) {
    // Whole UTC hours, the one holding `now` and those before it: exactly the read's hour limit.
    const from = hourOf(now) - (AGENT_READ_LIMITS.maxHours - 1) * HOUR_MS;
    // Newest first: a limit then cuts the oldest part, which the page says.
    const r = await historyEvents(bucket, counts, { agent: owner, from, to: now, dir: "DESC", match: (e) => carriesRunId(e, id) });
    return { events: r.events.reverse(), scan: r.scan, from, to: now };
  }
  const r = await historySearch(bucket, { id, to: now }, { now });
  const events = r.events.filter((e) => carriesRunId(e, id)).reverse();
  return { events, scan: r.scan, from: r.scan.coveredFrom ?? now, to: now };
}
