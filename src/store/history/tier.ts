import { type HistoryEventsQuery, type HistoryRead, historyEvents, historyNewest } from "./read";
import { type HistoryTimeline, historyTimelinePage } from "./timeline";

/**
 * What a read model needs to read from the R2 history: the timeline reader, one agent's events (historyEvents), the
 * fleet's newest events (historyNewest), where the hot window starts (a timeline with no known start reads from
 * there), now (a timeline with no known end reads up to it, plus the clock skew ingest accepts), and whether D1 also
 * keeps the hot timeline's segments (TIMELINE_SEGMENTS): when it does not, the readers that used them read R2.
 */
export type HistoryTier = {
  timeline: HistoryTimeline;
  agentEvents: (q: HistoryEventsQuery) => Promise<HistoryRead>;
  newest: (q: Parameters<typeof historyNewest>[1]) => Promise<HistoryRead>;
  hotStart: number;
  now: number;
  futureSkewMs: number;
  segments: boolean;
};

/**
 * The R2 tier for read models (eventsBy's `history`): a run's, an incident's or a session's timeline is read
 * from the R2 history, which holds every event ingest accepted. Undefined when no bucket is bound, so a timeline is
 * then the hot store's alone.
 */
export function historyTier(
  bucket: R2Bucket | undefined,
  settings: { shards: number; previousShards: number[]; hotWindowHours: number; futureSkewMs?: number; segments?: boolean },
  now = Date.now(),
): HistoryTier | undefined {
  if (!bucket) return undefined;
  const counts = { shards: settings.shards, previousShards: settings.previousShards };
  return {
    timeline: (q) => historyTimelinePage(bucket, counts, q),
    agentEvents: (q) => historyEvents(bucket, counts, q),
    newest: (q) => historyNewest(bucket, q),
    hotStart: now - settings.hotWindowHours * 3_600_000,
    now,
    futureSkewMs: settings.futureSkewMs ?? 5 * 60_000,
    segments: settings.segments ?? true,
  };
}
