/**
 * The coarse activity time lists of long-lived rows (agents, sessions) are ordered by: last_seen to the minute.
 *
 * Why not last_seen itself: a session's or an open run's row moves with nearly every ingest batch, and D1 bills each
 * index entry an update rewrites; an index on `listed_at` is rewritten at most once a minute per row, while the
 * row itself (last_seen included) stays exact. Within one minute, a list is ordered by its key instead. An agent's
 * last_seen is itself coarse (src/store/heard-from.ts): its listed_at moves with it, once per step.
 */
export const LISTED_AT_MS = 60_000;

/** The minute a time falls in (floor), as stored in `listed_at`. */
export function listedAt(time: number): number {
  return Math.floor(time / LISTED_AT_MS) * LISTED_AT_MS;
}
