import type { RunKind } from "./constants.js";

/**
 * The agents SDK's own names for its internal machinery (agents 0.32, Think, AIChatAgent), declared once: the
 * telemetry maps events by them and the admin side (src/admin-rpc/sdk-layout.ts) reads the SDK's tables by them.
 */

/**
 * The SDK's internal chat-turn name (Think / AIChatAgent `CHAT_FIBER_NAME`, agents 0.32). A chat turn runs as
 * a Tasks run of this definition (its runId is `chat_<nonce>`, not the request id), or, in a sub-agent, as a
 * runFiber named `__cf_internal_chat_turn:<requestId>`. When an evicted turn is replayed, the SDK hands the
 * recovery hook a context with that same name and the Task's runId, which is the only place the two meet.
 */
export const CHAT_TURN_NAME = "__cf_internal_chat_turn";

/** The prefix the SDK reserves for its own Tasks definitions and fiber names (agents 0.32, Think, AIChatAgent). */
const INTERNAL_SDK_PREFIX = "__cf_internal_";

/**
 * Whether a Tasks definition or fiber name is the SDK's own machinery (`__cf_internal_*`: chat-turn carriers, chat
 * recovery transports, messenger replies): never a run its user started.
 */
export function isInternalSdkName(name: string): boolean {
  return name.startsWith(INTERNAL_SDK_PREFIX);
}
const CHAT_TURN_PREFIX = `${CHAT_TURN_NAME}:`;

/**
 * What a fiber's name and `managed` flag say about the run it is: the SDK's internal chat-turn fiber is the
 * chat turn named by its request id; anything else is a fiber, managed when the SDK says so.
 */
export function fiberRunOf(fiberName: string, managed?: boolean): { kind?: RunKind; requestId?: string } {
  if (fiberName.startsWith(CHAT_TURN_PREFIX) && fiberName.length > CHAT_TURN_PREFIX.length) {
    return { kind: "chat_turn", requestId: fiberName.slice(CHAT_TURN_PREFIX.length, CHAT_TURN_PREFIX.length + 200) };
  }
  return managed === undefined ? {} : { kind: managed ? "managed_fiber" : "fiber" };
}
