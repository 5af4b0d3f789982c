import { DEFAULT_FUTURE_SKEW_MS, retentionDays } from "../../src/store/retention";
import { MAX_EVENT_BYTES } from "@agent-oncall/telemetry";

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
  maxAgeMs: retentionDays(undefined) * DAY_MS,
  maxFutureSkewMs: DEFAULT_FUTURE_SKEW_MS,
  maxEventBytes: MAX_EVENT_BYTES,
  maxDepth: 32,
};

/** The env vars the bounds read (typed in worker/env.ts). */
export type BoundsEnv = { INGEST_MAX_AGE_DAYS?: string; INGEST_MAX_FUTURE_SKEW_SECONDS?: string; RETENTION_DAYS?: string };

function number(raw: unknown, min: number, max: number): number | null {
  const n = typeof raw === "string" && raw.trim() ? Number(raw) : Number.NaN;
  return Number.isFinite(n) && n >= min && n <= max ? n : null;
}

/**
 * Bounds from env. A bad value falls back to the default (and says so once
 * per isolate) rather than opening the window: an unparseable setting must not
 * make ingest accept everything.
 */
export function boundsFromEnv(env: BoundsEnv): IngestBounds {
  const age = number(env.INGEST_MAX_AGE_DAYS, 1, 3650);
  const skew = number(env.INGEST_MAX_FUTURE_SKEW_SECONDS, 0, 86_400);
  warnOnce(env.INGEST_MAX_AGE_DAYS, age, "INGEST_MAX_AGE_DAYS", "a number of days from 1 to 3650");
  warnOnce(env.INGEST_MAX_FUTURE_SKEW_SECONDS, skew, "INGEST_MAX_FUTURE_SKEW_SECONDS", "a number of seconds from 0 to 86400");
  return {
    ...DEFAULT_BOUNDS,
    maxAgeMs: (age ?? retentionDays(env.RETENTION_DAYS)) * DAY_MS,
    maxFutureSkewMs: skew === null ? DEFAULT_BOUNDS.maxFutureSkewMs : skew * 1000,
  };
}

const warned = new Set<string>();
function warnOnce(raw: string | undefined, parsed: number | null, name: string, expected: string): void {
  if (raw === undefined || parsed !== null || warned.has(name)) return;
  warned.add(name);
  console.warn(`[ingest] ${name}=${JSON.stringify(raw).slice(0, 50)} is not ${expected}; using the default`);
}
