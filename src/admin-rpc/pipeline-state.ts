import type { TelemetryHealth } from "./contract.js";

/**
 * What an agent's telemetry counts say of its pipeline, judged on the client's side (the agent only reports them):
 * - `no_queue`: its Worker has no telemetry Queue binding, so nothing reaches the console;
 * - `failing`: its last send failed (it retries with backoff), so events wait;
 * - `lossy`: it ships, but events were dropped before the Queue;
 * - `shipping`: it ships (earlier failed sends, if any, went through on a retry);
 * - `unknown`: the agent does not report it (no telemetry mixin, or mixins before contract 8).
 */
export type PipelineState = "no_queue" | "failing" | "lossy" | "shipping" | "unknown";

/** The pipeline's state from the status's `telemetry`. */
export function pipelineState(h: TelemetryHealth | null): PipelineState {
  if (!h) return "unknown";
  if (!h.queueBound) return "no_queue";
  if (h.failingSince !== null) return "failing";
  if (h.dropped) return "lossy";
  return "shipping";
}
