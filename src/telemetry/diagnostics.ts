import { subscribe } from "agents/observability";
import type { Telemetry } from "./telemetry.js";

/** Channels that carry the events our contract models (see normalize.ts). */
const CHANNELS = ["fiber", "chat", "transcript", "schedule", "lifecycle"] as const;

/**
 * The alternative to the mixin: subscribe to the agents SDK's diagnostics
 * channels for every agent in this isolate and ship what they publish through
 * `telemetry`. Use it for agents you cannot change. Returns an unsubscribe.
 */
export function subscribeAgentDiagnostics(telemetry: Pick<Telemetry, "emitSdk">): () => void {
  const offs = CHANNELS.map((key) => subscribe(key, (event) => telemetry.emitSdk(event)));
  return () => {
    for (const off of offs) off();
  };
}
