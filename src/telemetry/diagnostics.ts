import { subscribe } from "agents/observability";
import type { Telemetry } from "./telemetry.js";

/** Channels that carry the events our contract models (see normalize.ts). */
const CHANNELS = ["fiber", "chat", "transcript", "schedule", "lifecycle"] as const;
/**
 * agents 0.32 publishes `task:*` (Tasks runs, and so chat turns) on `agents:task`, but its typed channel map
 * does not list that key yet; `subscribe` resolves any key to `agents:<key>` all the same.
 */
const UNTYPED_CHANNELS = ["task"] as const;

/**
 * The alternative to the mixin: subscribe to the agents SDK's diagnostics
 * channels for every agent in this isolate and ship what they publish through
 * `telemetry`. Use it for agents you cannot change. Returns an unsubscribe.
 *
 * Events shipped this way carry no per-agent number (`seq`): one pipe carries every agent of the isolate, and
 * only an agent's own durable outbox numbers its events (seq.ts), so only events whose source is the
 * `Telemetry`'s own, built with that agent's `sql`, get one. The console then counts no gaps for these agents:
 * it reports no false gaps, and does not see events lost in transport either.
 */
export function subscribeAgentDiagnostics(telemetry: Pick<Telemetry, "emitSdk">): () => void {
  const offs = [
    ...CHANNELS.map((key) => subscribe(key, (event) => telemetry.emitSdk(event))),
    ...UNTYPED_CHANNELS.map((key) => subscribe(key as (typeof CHANNELS)[number], (event) => telemetry.emitSdk(event))),
  ];
  return () => {
    for (const off of offs) off();
  };
}
