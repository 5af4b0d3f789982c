import { channel } from "node:diagnostics_channel";
import { AGENT_CHANNEL, AGENT_MESSAGE_VERSION, type AgentMessage, EVENT_PIPE, type EventPipe, PARENT_MESSAGE_TYPE } from "./facts.js";

/**
 * The agent side's publishing helper: what the SDK does not publish (force idle's report, stash snapshots, paid
 * ops, session turns, model usage, a sub-agent's ancestry) goes on the agent's own diagnostics channel
 * (AGENT_CHANNEL), which the Workers runtime forwards to the Worker's Tail Workers like the SDK's channels. The
 * console's tail handler validates each message against the event contract. Publishing never writes to the agent's
 * storage and never throws into the agent. An agent with the opt-in outbox (`withTelemetry`) ships through it
 * instead (EVENT_PIPE), so each event takes one path.
 */

const events = channel(AGENT_CHANNEL);

/** The parts of an agents-SDK Agent the helper reads: its class (constructor), name and ancestry. */
type Named = { readonly name: string; readonly parentPath?: readonly { className: string; name: string }[] };

/** Who publishes: the SDK's own words for the agent (class and instance name), and a sub-agent's ancestry. */
function whoOf(agent: object): Pick<AgentMessage, "agent" | "name" | "parentPath"> {
  const a = agent as Named;
  const path = a.parentPath?.map((s) => ({ className: s.className, name: s.name })) ?? [];
  return { agent: (agent.constructor as { name: string }).name, name: a.name, ...(path.length ? { parentPath: path } : {}) };
}

/**
 * Publishes one event of the console's contract for `agent`: `type` (`op.ambiguous`, `model.usage`,
 * `session.turn_started`, …) with its payload and correlation ids as the contract defines them. Never throws.
 */
export function publishEvent(agent: object, type: string, payload: Record<string, unknown>, corr?: Record<string, string>): void {
  try {
    const pipe = (agent as { [EVENT_PIPE]?: EventPipe })[EVENT_PIPE];
    if (pipe) return void pipe.record(type, payload, corr);
    const m: AgentMessage = { v: AGENT_MESSAGE_VERSION, type, ...whoOf(agent), payload, ...(corr ? { corr } : {}), timestamp: Date.now() };
    events.publish(m);
  } catch {
    /* publishing never fails the agent */
  }
}

/**
 * Before a sub-agent's SDK message: its ancestry, once per synchronous burst (the SDK's messages name only the
 * sub-agent's class and name, the same under every parent). Every trace item that holds the sub-agent's SDK messages
 * holds it too: each invocation starts a new burst. A top-level agent publishes nothing.
 */
export function ancestryPublisher(agent: object): () => void {
  let burst = false;
  return () => {
    if (burst) return;
    try {
      const who = whoOf(agent);
      if (!who.parentPath) return;
      burst = true;
      queueMicrotask(() => {
        burst = false;
      });
      const m: AgentMessage = { v: AGENT_MESSAGE_VERSION, type: PARENT_MESSAGE_TYPE, ...who, payload: {}, timestamp: Date.now() };
      events.publish(m);
    } catch {
      /* never breaks the agent */
    }
  };
}
