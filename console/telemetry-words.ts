import type { TelemetryHealth } from "../src/admin-rpc/contract";
import { ago } from "./format";

/**
 * The words of an agent's telemetry pipeline, from its own counts (the status's `telemetry`): whether its events
 * reach the console, so a broken pipeline is not read as a quiet agent. `tone` picks the style: `bad` when nothing
 * is being delivered, `warn` when something was lost or failed, `ok` otherwise, `unknown` when the agent does not say.
 */
export type TelemetryTone = "ok" | "warn" | "bad" | "unknown";

const events = (n: number) => `${n} event${n === 1 ? "" : "s"}`;
const sends = (n: number) => `${n} failed send${n === 1 ? "" : "s"}`;

/** What the pipeline is doing, in one or two sentences, and how worrying that is. */
export function telemetryHealthWords(h: TelemetryHealth | null, now: number): { tone: TelemetryTone; sentence: string } {
  if (!h) return { tone: "unknown", sentence: "not reported: the agent has no telemetry mixin, or its mixins are older than admin contract 8." };
  const since = `since this instance started ${ago(h.since, now)}`;
  const dropped = h.dropped
    ? ` ${events(h.dropped)} dropped before the Queue ${since} (the outbox's bound deleted them unsent, or they failed to record).`
    : "";
  const last = h.lastError ? ` Last error: ${h.lastError}` : "";
  if (!h.queueBound)
    return {
      tone: "bad",
      sentence: `not shipping: the agent's Worker has no telemetry Queue binding, so nothing reaches the console. ${events(h.pending)} wait in the agent's storage, which keeps only the newest of them.${dropped}`,
    };
  if (h.sendErrors && h.pending)
    return {
      tone: "bad",
      sentence: `sends failing: ${sends(h.sendErrors)} ${since}, ${h.sent} sent; ${events(h.pending)} wait in the agent's storage.${dropped}${last}`,
    };
  if (h.sendErrors || h.dropped)
    return {
      tone: "warn",
      sentence: `shipping: ${events(h.sent)} sent ${since}, ${h.pending} waiting${h.sendErrors ? `, after ${sends(h.sendErrors)}` : ""}.${dropped}${last}`,
    };
  return { tone: "ok", sentence: `shipping: ${events(h.sent)} sent ${since}, ${h.pending} waiting for the next send.` };
}
