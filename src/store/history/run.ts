import type { AgentRef } from "../read-models/owner";
import { type FoundBeforeHot, readBeforeHot } from "./before-hot";
import type { HistoryEvent } from "./layout";
import type { ShardCounts } from "./read";

/** The fields that carry a run's id in its events: a fiber's, a Tasks run's, a chat turn's request id. */
const RUN_ID_FIELDS = ["fiberId", "taskId", "requestId"] as const;

/** Whether an event belongs to the run with this id (whatever its kind). */
export const carriesRunId = (e: HistoryEvent, id: string) => RUN_ID_FIELDS.some((k) => e[k] === id);

/** Hours of an agent's history a run lookup reads, ending where the hot window starts. */
export const RUN_LOOKBACK_HOURS = 48;

/** What a run lookup in the history found, and the span it was asked to look at. */
export type RunHistory = FoundBeforeHot;

/**
 * A run the hot store no longer holds (retention deleted its row), as the R2 history has it: its events oldest
 * first, and how far the read looked. A finished run leaves D1 once its last activity is older than the hot window,
 * so every event of it is older than `hotStart`: the read ends there. With the agent known (every console link
 * carries it) it reads that agent's objects for RUN_LOOKBACK_HOURS before `hotStart` (one list call per hour and
 * shard count); without it, an id lookup of the 24 hours before `hotStart` (ID_SEARCH_LIMITS, every agent). Each
 * miss costs those list calls (R2 Class A), so the span is short: a run older than it is reported as not found
 * with the span said. Only events carrying the id in a run field are returned. A run that completed healthily leaves
 * D1 when it ends (ingest): for it, `hotStart` is now (plus the clock skew ingest accepts) and `lookbackHours` covers
 * the hot window too.
 */
export function runFromHistory(
  bucket: R2Bucket,
  counts: ShardCounts,
  id: string,
  owner: AgentRef | undefined,
  hotStart: number,
  lookbackHours = RUN_LOOKBACK_HOURS,
): Promise<RunHistory> {
  return readBeforeHot(bucket, counts, { owner, hotStart, lookbackHours, match: (e) => carriesRunId(e, id), search: { id } });
}
