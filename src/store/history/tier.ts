import type { OlderEvents } from "../read-models/segments";
import { hotWindowHours } from "../retention";
import { type HistoryEnv, historyConfig } from "./config";
import { historySource } from "./read";

/** What a timeline needs to reach past the hot window: the R2 reader and where the hot window starts. */
export type HistoryTier = { older: OlderEvents; hotStart: number };

/**
 * The older tier for timeline read models (eventsBy's `history`): events before the hot window are read from the
 * R2 history. Undefined when no bucket is bound, so a timeline is then the hot window alone.
 */
export function historyTier(env: HistoryEnv & { HISTORY?: R2Bucket; HOT_WINDOW_HOURS?: string }, now = Date.now()): HistoryTier | undefined {
  if (!env.HISTORY) return undefined;
  const cfg = historyConfig(env);
  return { older: historySource(env.HISTORY, { shards: cfg.shards, previousShards: cfg.previousShards }), hotStart: now - hotWindowHours(env.HOT_WINDOW_HOURS) * 3_600_000 };
}
