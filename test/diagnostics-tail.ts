import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { AGENT_CHANNEL } from "@agent-oncall/admin-rpc/facts";
import type { TailItem } from "@agent-oncall/telemetry/tail";

/** Every channel a real tail carries: each `agents:*` channel the SDK (0.32) publishes on, and the admin package's own. */
export const TAIL_CHANNELS = [
  "agents:state",
  "agents:rpc",
  "agents:message",
  "agents:chat",
  "agents:transcript",
  "agents:fiber",
  "agents:task",
  "agents:stream",
  "agents:agent_tool",
  "agents:schedule",
  "agents:lifecycle",
  "agents:workflow",
  "agents:mcp",
  "agents:email",
  "agents:channel",
  AGENT_CHANNEL,
] as const;

/**
 * What a Tail Worker would receive of the agents in this test runtime: the diagnostics messages on the given
 * channels (by default the SDK's fiber channel and the admin package's own, which a real tail carries both of),
 * caught as they are published, handed over as one trace item. `stop` ends the listening (the runtime is reused
 * across files).
 */
export function listenLikeATail(channels: readonly string[] = ["agents:fiber", AGENT_CHANNEL]) {
  const heard: { channel: string; message: unknown }[] = [];
  const listener = (message: unknown, channel: string | symbol) => heard.push({ channel: String(channel), message });
  for (const ch of channels) subscribe(ch, listener);
  return {
    /**
     * Everything heard since the last `clear`, as one trace item of a Durable Object invocation. `of` says which
     * object and what started it, where a test knows (an alarm: `event.scheduledTime`); else a fresh object id.
     */
    item(of: { durableObjectId?: string; entrypoint?: string; event?: unknown } = {}): TailItem {
      const t = Date.now();
      return {
        scriptName: null,
        durableObjectId: of.durableObjectId ?? crypto.randomUUID().replace(/-/g, ""),
        eventTimestamp: t,
        truncated: false,
        ...(of.entrypoint ? { entrypoint: of.entrypoint } : {}),
        ...(of.event ? { event: of.event } : {}),
        diagnosticsChannelEvents: heard.map((h) => ({ timestamp: t, channel: h.channel, message: h.message })),
      };
    },
    clear: () => void (heard.length = 0),
    stop: () => {
      for (const ch of channels) unsubscribe(ch, listener);
    },
  };
}
