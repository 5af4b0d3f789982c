/**
 * The streaming tail's flush (worker/tail-stream.ts), in a module of its own with no imports: the configuration
 * (worker/config.ts, STREAM_FLUSH_SECONDS), the simulator and the end-to-end tests read the same figures.
 */
/**
 * The streaming tail's default flush. Its cost is the runs a flush splits (a run whose start and end leave in
 * different flushes is written to D1 twice) and its lag is the flush plus ingest: in the simulator (60 s, demo and
 * busy mixes) 2 s gave 1.60 / 1.38 D1 rows per event, 6 s 1.09 / 0.96, 7.5 s 0.97 / 0.91 with lag p99 8.2 / 8.5 s
 * (`npm run bench`), 8 s 0.95 / 0.84 with 8.9 / 9.3 s: 7.5 s is where both stay under 1 row per event and 10 s.
 */
export const DEFAULT_STREAM_FLUSH_MS = 7_500;

/** A flush never holds more entries than this: a busy invocation is sent in steps, not at its end. */
export const STREAM_FLUSH_MAX = 200;
