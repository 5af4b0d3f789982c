import type { IngestBounds } from "./bounds";

/**
 * The event time window. An event dated far in the future would sort first in
 * every list and never age out of retention (and a time past what a Date can
 * hold broke every page that showed it); one older than the retention period
 * would be deleted by the next cron run. Both are refused with a reason.
 */

const YEAR_MS = 365.25 * 86_400_000;
/** Largest time a Date can hold. */
const MAX_DATE_MS = 8.64e15;

/** A time as a person reads it: ISO when a Date can hold it, else the number itself. */
function describeTime(t: number): string {
  return Math.abs(t) <= MAX_DATE_MS ? new Date(t).toISOString() : `${t} (past any date)`;
}

/** "231 years", "3 days", "14 minutes", "42 s". */
function describeSpan(ms: number): string {
  const units: [number, string][] = [
    [YEAR_MS, "year"],
    [86_400_000, "day"],
    [3_600_000, "hour"],
    [60_000, "minute"],
  ];
  for (const [size, name] of units) {
    const n = Math.floor(ms / size);
    if (n >= 1) return `${String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",")} ${name}${n === 1 ? "" : "s"}`;
  }
  return `${Math.round(ms / 1000)} s`;
}

/** Why `time` is outside the window around `receivedAt`, or null when inside. Only for numbers; the contract checks the type. */
export function timeOutsideWindow(time: number, receivedAt: number, bounds: IngestBounds): string | null {
  if (!Number.isFinite(time)) return null;
  const ahead = time - receivedAt;
  if (ahead > bounds.maxFutureSkewMs) {
    return `event time ${describeTime(time)} is ${describeSpan(ahead)} in the future; the console accepts at most ${Math.round(bounds.maxFutureSkewMs / 1000)} s of clock skew (INGEST_MAX_FUTURE_SKEW_SECONDS)`;
  }
  if (-ahead > bounds.maxAgeMs) {
    return `event time ${describeTime(time)} is ${describeSpan(-ahead)} old; the console accepts events up to ${describeSpan(bounds.maxAgeMs)} old (INGEST_MAX_AGE_DAYS, default the retention period)`;
  }
  return null;
}
