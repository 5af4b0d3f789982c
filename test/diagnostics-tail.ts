import { env } from "cloudflare:workers";
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { AGENT_CHANNEL, PARENT_MESSAGE_TYPE } from "@agent-oncall/admin-rpc/facts";
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
     * object and what started it, where a test knows (an alarm: `event.scheduledTime`); else the object the runtime
     * would name: the top-level id of the first agent heard whose class the test worker binds, or a fresh id.
     */
    item(of: { durableObjectId?: string; entrypoint?: string; event?: unknown } = {}): TailItem {
      const t = Date.now();
      return {
        scriptName: null,
        durableObjectId: of.durableObjectId ?? topLevelIdOf(heard) ?? crypto.randomUUID().replace(/-/g, ""),
        eventTimestamp: t,
        truncated: false,
        ...(of.entrypoint ? { entrypoint: of.entrypoint } : {}),
        ...(of.event ? { event: of.event } : {}),
        diagnosticsChannelEvents: heard.map((h) => ({ timestamp: t, channel: h.channel, message: h.message })),
      };
    },
    clear: () => void (heard.length = 0),
    /**
     * Resolves once nothing new was heard for a moment (three 15 ms looks): work a step set going (a recovery hook,
     * a cancelled fiber's end) may publish just after the call returned.
     */
    async quiet(): Promise<void> {
      for (let last = -1, still = 0; still < 3; ) {
        const n = heard.length;
        still = n === last ? still + 1 : 0;
        last = n;
        await scheduler.wait(15);
      }
    },
    stop: () => {
      for (const ch of channels) unsubscribe(ch, listener);
    },
  };
}

/**
 * The Durable Object id a trace item of these messages carries, as the runtime gives it: the binding's id of the
 * first agent named whose class the test worker binds, leaving out sub-agents (their ancestry announced or carried),
 * whose ids only their parent's path gives. Undefined when none is bound.
 */
function topLevelIdOf(heard: readonly { channel: string; message: unknown }[]): string | undefined {
  const announced = new Set<string>();
  for (const h of heard) {
    const m = h.message as Record<string, unknown> | undefined;
    if (!m || typeof m.agent !== "string" || typeof m.name !== "string") continue;
    const key = `${m.agent}\0${m.name}`;
    if (h.channel === AGENT_CHANNEL && m.type === PARENT_MESSAGE_TYPE) announced.add(key);
    if (announced.has(key) || m.parentPath !== undefined) continue;
    const ns = (env as unknown as Record<string, DurableObjectNamespace | undefined>)[m.agent];
    if (typeof ns?.idFromName === "function" && typeof ns.get === "function") return ns.idFromName(m.name).toString();
  }
  return undefined;
}
