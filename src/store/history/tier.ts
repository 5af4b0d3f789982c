import { type HistoryTimeline, historyTimelinePage } from "./timeline";

/**
 * What a timeline read model needs to read from the R2 history: the reader, where the hot window starts (a timeline
 * with no known start reads from there), and now (a timeline with no known end reads up to it, plus the clock skew
 * ingest accepts).
 */
export type HistoryTier = { timeline: HistoryTimeline; hotStart: number; now: number; futureSkewMs: number };

/**
 * The R2 tier for timeline read models (eventsBy's `history`): a run's, an incident's or a session's timeline is read
 * from the R2 history, which holds every event ingest accepted. Undefined when no bucket is bound, so a timeline is
 * then the hot store's alone.
 */
export function historyTier(
  bucket: R2Bucket | undefined,
  settings: { shards: number; previousShards: number[]; hotWindowHours: number; futureSkewMs?: number },
  now = Date.now(),
): HistoryTier | undefined {
  if (!bucket) return undefined;
  const counts = { shards: settings.shards, previousShards: settings.previousShards };
  return {
    timeline: (q) => historyTimelinePage(bucket, counts, q),
    hotStart: now - settings.hotWindowHours * 3_600_000,
    now,
    futureSkewMs: settings.futureSkewMs ?? 5 * 60_000,
  };
}
