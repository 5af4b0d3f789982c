import { CHAT_RECOVERY_TASK_NAME, CHAT_TURN_NAME } from "@agent-oncall/admin-rpc/facts";
import type { RunKind } from "./constants.js";

/**
 * The agents SDK's own names for its internal machinery (agents 0.32, Think, AIChatAgent), declared once: the
 * telemetry maps events by them and the admin side (src/admin-rpc/sdk-layout.ts) reads the SDK's tables by them.
 */

/** The SDK's internal chat-turn name (one owner: the admin package's facts, whose SDK reads need it too). */
/** The SDK's chat recovery Task definition (one owner: the admin package's facts, as for the chat-turn name). */
export { CHAT_RECOVERY_TASK_NAME, CHAT_TURN_NAME };

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
