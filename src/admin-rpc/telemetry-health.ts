import type { TelemetryHealth } from "./contract.js";

/**
 * The status's `telemetry`, picked from the telemetry mixin's `stats()` on the agent (no zod here: importing the
 * contract's schemas would add them to the user's Worker; the client validates the answer with `telemetryHealth`).
 * Null when the stats lack a field (a telemetry package older than these counts).
 */
export function healthOf(stats: unknown): TelemetryHealth | null {
  const s = (stats ?? {}) as { [K in keyof TelemetryHealth]?: unknown };
  const counts = [s.since, s.pending, s.sent, s.sendErrors, s.dropped];
  if (!counts.every((n) => typeof n === "number") || typeof s.queueBound !== "boolean") return null;
  const [since, pending, sent, sendErrors, dropped] = counts as number[] as [number, number, number, number, number];
  const failingSince = typeof s.failingSince === "number" ? s.failingSince : null;
  const lastSendError = typeof s.lastSendError === "string" ? s.lastSendError : null;
  return { since, queueBound: s.queueBound, failingSince, pending, sent, sendErrors, dropped, lastSendError };
}
