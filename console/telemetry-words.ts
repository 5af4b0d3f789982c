import type { TelemetryHealth } from "../src/admin-rpc/contract";
import { type PipelineState, pipelineState } from "../src/admin-rpc/telemetry-health";
import { ago, duration } from "./format";

/**
 * The words of an agent's telemetry pipeline, from its own counts (the status's `telemetry`): whether its events
 * reach the console, so a broken pipeline is not read as a quiet agent. `tone` picks the style: `bad` when nothing
 * is being delivered, `warn` when something was lost or failed, `ok` otherwise, `unknown` when the agent does not say.
 */
export type TelemetryTone = "ok" | "warn" | "bad" | "unknown";

const TONES: Record<PipelineState, TelemetryTone> = { no_queue: "bad", failing: "bad", degraded: "warn", shipping: "ok", unknown: "unknown" };

const events = (n: number) => `${n} event${n === 1 ? "" : "s"}`;
const sends = (n: number) => `${n} failed send${n === 1 ? "" : "s"}`;

/** What the pipeline is doing, in one or two sentences, and how worrying that is. */
export function telemetryHealthWords(h: TelemetryHealth | null, now: number): { state: PipelineState; tone: TelemetryTone; sentence: string } {
  const state = pipelineState(h);
  return {
    state,
    tone: TONES[state],
    sentence: h ? sentenceOf(state, h, now) : "not reported: the agent has no telemetry mixin, or its mixins are older than admin contract 8.",
  };
}

function sentenceOf(state: PipelineState, h: TelemetryHealth, now: number): string {
  const since = `since this instance started ${ago(h.since, now)}`;
  const dropped = h.dropped
    ? ` ${events(h.dropped)} dropped before the Queue ${since} (the outbox's bound deleted them unsent, or they failed to record).`
    : "";
  const last = h.lastError ? ` Last error: ${h.lastError}` : "";
  switch (state) {
    case "no_queue":
      return `not shipping: the agent's Worker has no telemetry Queue binding, so nothing reaches the console. ${events(h.pending)} wait in the agent's storage, which keeps only the newest of them.${dropped}`;
    case "failing":
      return `sends failing for ${duration(now - h.failingSince!)}: ${sends(h.sendErrors)} ${since}, ${h.sent} sent; ${events(h.pending)} wait in the agent's storage.${dropped}${last}`;
    case "degraded":
      return `shipping: ${events(h.sent)} sent ${since}, ${h.pending} waiting${h.sendErrors ? `, after ${sends(h.sendErrors)}` : ""}.${dropped}${last}`;
    default:
      return `shipping: ${events(h.sent)} sent ${since}, ${h.pending} waiting for the next send.`;
  }
}
