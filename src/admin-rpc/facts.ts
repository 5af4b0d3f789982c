/**
 * `@agent-oncall/admin-rpc/facts`: the facts both sides of the console need, with one owner. The agent side (this
 * package's mixin and publishing helper) and the console side (`@agent-oncall/telemetry`, which reads what agents
 * publish) import them from here. Dependency-free and side-effect-free, so an agent's bundle keeps only what it uses.
 */

export * from "./sdk-states.js";

/** The kinds of run the console tracks (a run's `kind`). */
export const RUN_KINDS = ["fiber", "managed_fiber", "task", "chat_turn"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/**
 * The SDK's internal chat-turn name (Think / AIChatAgent `CHAT_FIBER_NAME`, agents 0.32). A chat turn runs as
 * a Tasks run of this definition (its runId is `chat_<nonce>`, not the request id), or, in a sub-agent, as a
 * runFiber named `__cf_internal_chat_turn:<requestId>`. When an evicted turn is replayed, the SDK hands the
 * recovery hook a context with that same name and the Task's runId, which is the only place the two meet.
 */
export const CHAT_TURN_NAME = "__cf_internal_chat_turn";

/**
 * The SDK's chat recovery Task definition (agents/chat `CHAT_RECOVERY_TASK_NAME`, agents 0.32): one short run per
 * recovery attempt. The admin side reads its runs; the tail's chat-turn fold knows a top-level AIChatAgent's recovery
 * run as the chat-turn carrier accepted inside its attempt.
 */
export const CHAT_RECOVERY_TASK_NAME = "__cf_internal_chat_recovery";

/**
 * How a fiber recovery the operator paused fails in the SDK's words: the admin mixin's onFiberRecovered throws
 * an error whose message starts with this, so the SDK keeps the run row for later (pause.ts), and the console
 * reports the SDK's `fiber:recovery:failed` as `recovery.skipped_paused`, not as a failure.
 */
export const RECOVERY_PAUSED_MARK = "recovery paused by an operator";

/** Incident id for a fiber recovery: one fiber run is one incident, however many recovery passes it takes. */
export function fiberIncidentId(agentClass: string, agentName: string, fiberId: string): string {
  return `fiber:${agentClass}/${agentName}/${fiberId}`;
}

/**
 * The `node:diagnostics_channel` channel an agent publishes what the SDK does not (publish.ts). The Workers runtime
 * forwards it to the Worker's Tail Workers like the SDK's own `agents:*` channels; the console's tail handler
 * reads it (src/telemetry/tail.ts) and nothing else of ours.
 */
export const AGENT_CHANNEL = "agent-oncall:events";

/** Version of the messages on AGENT_CHANNEL; the tail sends any other to dead letters. */
export const AGENT_MESSAGE_VERSION = 1;

/**
 * The message a sub-agent publishes on AGENT_CHANNEL just before its SDK messages (the SDK's do not name its parent):
 * its ancestry as the SDK records it (`parentPath`, root-first). The tail keys the SDK messages after it, of the same
 * class and name in the same trace item, by that ancestry.
 */
export const PARENT_MESSAGE_TYPE = "agent.parent";

/**
 * A message on AGENT_CHANNEL. `type` is an event type of the console's contract (`session.status_idle`,
 * `fiber.stashed`, `op.ambiguous`, `model.usage`, …) with its `payload` and `corr` as the contract defines them, or
 * PARENT_MESSAGE_TYPE. `agent` and `name` name the agent as the SDK's messages do; `parentPath` is a sub-agent's
 * ancestry. The console validates all of it; a message that does not fit is a dead letter with its reason.
 */
export type AgentMessage = {
  v: typeof AGENT_MESSAGE_VERSION;
  type: string;
  agent: string;
  name: string;
  parentPath?: { className: string; name: string }[];
  payload: Record<string, unknown>;
  corr?: Record<string, string>;
  timestamp: number;
};

/**
 * Where an agent with the opt-in outbox (`withTelemetry`) takes the events the admin package would publish: the
 * telemetry mixin sets this property on the agent to its pipe, so each event goes one way (the outbox, numbered)
 * and the console does not get it twice. Also read by the admin status for the pipe's own counts.
 */
export const EVENT_PIPE = Symbol.for("agent-oncall.event-pipe");

/** What the telemetry mixin puts under EVENT_PIPE. Every method never throws. */
export type EventPipe = {
  record(type: string, payload: Record<string, unknown>, corr?: Record<string, string>): unknown;
  /** The highest number its outbox handed to the Queue; null when unknown. */
  shippedThrough(): number | null;
  /** Its counts of what it sent and what waits (validated by the client). */
  stats(): unknown;
};
