import { MAX_EVENT_BYTES } from "@agent-oncall/telemetry";
import { DEFAULT_FUTURE_SKEW_MS } from "../../src/store/retention";
import type { ConsoleConfig } from "../config";

/**
 * What ingest accepts, as settings: the event time window around receipt,
 * the size of one event and how deep its JSON may nest. Anything outside goes
 * to dead letters with the reason; nothing is dropped.
 */
export type IngestBounds = {
  /** Oldest event time accepted, as an age at receipt (default: the retention period). */
  maxAgeMs: number;
  /** How far past receipt an event time may be (agents' clocks drift). */
  maxFutureSkewMs: number;
  /** UTF-8 bytes of one event's JSON (the sender's limit, so every event it ships fits). */
  maxEventBytes: number;
  /** Nesting levels of one event's JSON, counted from the event object (the contract itself needs 3). */
  maxDepth: number;
};

const DAY_MS = 86_400_000;

export const DEFAULT_BOUNDS: IngestBounds = {
  maxAgeMs: 30 * DAY_MS,
  maxFutureSkewMs: DEFAULT_FUTURE_SKEW_MS,
  maxEventBytes: MAX_EVENT_BYTES,
  maxDepth: 32,
};

/** The bounds for the parsed settings (worker/config.ts: INGEST_MAX_AGE_DAYS, INGEST_MAX_FUTURE_SKEW_SECONDS). */
export function ingestBounds(settings: ConsoleConfig["ingest"]): IngestBounds {
  return { ...DEFAULT_BOUNDS, maxAgeMs: settings.maxAgeDays * DAY_MS, maxFutureSkewMs: settings.maxFutureSkewSeconds * 1000 };
}
