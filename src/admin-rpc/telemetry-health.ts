import type { TelemetryHealth } from "./contract.js";

/**
 * What an agent's telemetry counts say of its pipeline (the console's side; the agent only reports the counts):
 * - `no_queue`: its Worker has no telemetry Queue binding, so nothing reaches the console;
 * - `failing`: sends failed and events wait;
 * - `degraded`: it ships, after failed sends or with events dropped;
 * - `shipping`: it ships, nothing failed or lost;
 * - `unknown`: the agent does not report it (no telemetry mixin, or mixins before contract 8).
 */
export type PipelineState = "no_queue" | "failing" | "degraded" | "shipping" | "unknown";

/** The pipeline's state from the status's `telemetry`. */
export function pipelineState(h: TelemetryHealth | null): PipelineState {
  if (!h) return "unknown";
  if (!h.queueBound) return "no_queue";
  if (h.sendErrors && h.pending) return "failing";
  if (h.sendErrors || h.dropped) return "degraded";
  return "shipping";
}

/** Whether nothing of the agent's reaches the console now: what the telemetry alert fires on. */
export const pipelineBroken = (h: TelemetryHealth | null): boolean => {
  const s = pipelineState(h);
  return s === "no_queue" || s === "failing";
};
