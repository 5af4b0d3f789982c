import type { AgentRef } from "../read-models/owner";
import { type FoundBeforeHot, readBeforeHot } from "./before-hot";
import { type HistoryEvent, idOf } from "./layout";
import type { ShardCounts } from "./read";

/** Whether an event belongs to the incident with this id: its timeline (the same rule as the hot timeline's). */
export const onIncidentTimeline = (e: HistoryEvent, id: string) => idOf(e, "incidentId") === id;

/** Hours of an agent's history an incident lookup reads, ending where the hot window starts. */
export const INCIDENT_LOOKBACK_HOURS = 48;

/** What an incident lookup in the history found, and the span it was asked to look at. */
export type IncidentHistory = FoundBeforeHot;

/**
 * An incident the hot store no longer holds (retention deleted its row: it was not open, and its last activity was
 * older than the hot window), as the R2 history has it: its timeline's events oldest first, and how far the read
 * looked. Every event of such an incident is older than `hotStart`, so the read ends there. With the agent known
 * (every console link carries it) it reads that agent's objects for INCIDENT_LOOKBACK_HOURS before `hotStart`;
 * without it, an id lookup of the 24 hours before `hotStart` (ID_SEARCH_LIMITS, every agent), which finds only
 * objects written since incident ids joined the Bloom filters (layout.ts ID_KINDS). An incident whose events are
 * older than the span is reported as not found, with the span said.
 */
export function incidentFromHistory(
  bucket: R2Bucket,
  counts: ShardCounts,
  id: string,
  owner: AgentRef | undefined,
  hotStart: number,
): Promise<IncidentHistory> {
  return readBeforeHot(bucket, counts, {
    owner,
    hotStart,
    lookbackHours: INCIDENT_LOOKBACK_HOURS,
    match: (e) => onIncidentTimeline(e, id),
    search: { incidentId: id },
  });
}
