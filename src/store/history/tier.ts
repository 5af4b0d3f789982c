import type { OlderEvents } from "../read-models/segments";
import { historySource } from "./read";

/** What a timeline needs to reach past the hot window: the R2 reader and where the hot window starts. */
export type HistoryTier = { older: OlderEvents; hotStart: number };

/**
 * The older tier for timeline read models (eventsBy's `history`): events before the hot window are read from the
 * R2 history. Undefined when no bucket is bound, so a timeline is then the hot window alone.
 */
export function historyTier(
  bucket: R2Bucket | undefined,
  settings: { shards: number; previousShards: number[]; hotWindowHours: number },
  now = Date.now(),
): HistoryTier | undefined {
  if (!bucket) return undefined;
  return {
    older: historySource(bucket, { shards: settings.shards, previousShards: settings.previousShards }),
    hotStart: now - settings.hotWindowHours * 3_600_000,
  };
}
