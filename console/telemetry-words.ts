import type { TelemetryHealth } from "../src/admin-rpc/contract";
import { type PipelineState, pipelineState } from "../src/admin-rpc/pipeline-state";
import { ago, count, duration } from "./format";

/**
 * The words of an agent's telemetry pipeline, from its own counts (the status's `telemetry`): whether its events
 * reach the console, so a broken pipeline is not read as a quiet agent. `tone` picks the style: `bad` when nothing
 * is being delivered, `warn` when events were lost, `ok` otherwise, `unknown` when the agent does not say.
 */
export type TelemetryTone = "ok" | "warn" | "bad" | "unknown";

const TONES: Record<PipelineState, TelemetryTone> = { no_queue: "bad", failing: "bad", lossy: "warn", shipping: "ok", unknown: "unknown" };

const events = (n: number) => `${count(n)} event${n === 1 ? "" : "s"}`;
const waiting = (n: number) => `${events(n)} ${n === 1 ? "waits" : "wait"} in the agent's storage`;
const sends = (n: number) => `${count(n)} failed send${n === 1 ? "" : "s"}`;

/** What the pipeline is doing, in one or two sentences, and how worrying that is. */
export function telemetryHealthWords(h: TelemetryHealth | null, now: number): { state: PipelineState; tone: TelemetryTone; sentence: string } {
  const state = pipelineState(h);
  const sentence = h
    ? sentenceOf(state, h, now)
    : "not reported: the agent has no telemetry outbox (none is needed when its Worker's tail carries its events), or its mixins are older than admin contract 8.";
  return { state, tone: TONES[state], sentence };
}

function sentenceOf(state: PipelineState, h: TelemetryHealth, now: number): string {
  const since = `since this instance started ${ago(h.since, now)}`;
  const dropped = h.dropped
    ? ` ${events(h.dropped)} dropped before the Queue ${since} (deleted unsent by the outbox's bound, pushed out of memory, or failed to record).`
    : "";
  const retried = h.sendErrors ? `, after ${sends(h.sendErrors)} that a retry got through` : "";
  const last = h.lastSendError ? ` Last send error: ${h.lastSendError}` : "";
  switch (state) {
    case "no_queue":
      return `not shipping: the agent's Worker has no telemetry Queue binding, so nothing reaches the console. ${waiting(h.pending)}, which keeps a bounded amount and deletes the oldest past it.${dropped}`;
    case "failing":
      // The agent's clock and ours may differ, and the request may have started before the agent's failed send.
      return `sends failing for ${duration(Math.max(0, now - (h.failingSince ?? now)))}: ${sends(h.sendErrors)} ${since}, ${h.sent} sent; ${waiting(h.pending)}.${dropped}${last}`;
    default:
      return `shipping: ${events(h.sent)} sent ${since}${retried}, ${h.pending} waiting for the next send.${dropped}`;
  }
}
