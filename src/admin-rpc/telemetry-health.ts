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
  return { since, queueBound: s.queueBound, failingSince, pending, sent, sendErrors, dropped, lastError: typeof s.lastError === "string" ? s.lastError : null };
}

/**
 * What an agent's telemetry counts say of its pipeline (the console's side; the agent only reports the counts):
 * - `no_queue`: its Worker has no telemetry Queue binding, so nothing reaches the console;
 * - `failing`: its last send failed (it retries with backoff), so events wait;
 * - `degraded`: it ships, after failed sends it got through, or with events dropped;
 * - `shipping`: it ships, nothing failed or lost;
 * - `unknown`: the agent does not report it (no telemetry mixin, or mixins before contract 8).
 */
export type PipelineState = "no_queue" | "failing" | "degraded" | "shipping" | "unknown";

/** The pipeline's state from the status's `telemetry`. */
export function pipelineState(h: TelemetryHealth | null): PipelineState {
  if (!h) return "unknown";
  if (!h.queueBound) return "no_queue";
  if (h.failingSince !== null) return "failing";
  if (h.sendErrors || h.dropped) return "degraded";
  return "shipping";
}

/** Whether nothing of the agent's reaches the console now: what the telemetry alert fires on. */
export const pipelineBroken = (h: TelemetryHealth | null): boolean => {
  const s = pipelineState(h);
  return s === "no_queue" || s === "failing";
};
