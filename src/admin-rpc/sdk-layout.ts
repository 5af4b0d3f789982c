/**
 * Storage-layout facts of the agents SDK (0.32) that admin RPC relies on and
 * that the SDK does not export without pulling in the AI SDK.
 */

/** KV key prefix of chat-recovery incident records (`agents/chat` exports the same constant). */
export const CHAT_RECOVERY_INCIDENT_KEY_PREFIX = "cf:chat-recovery:incident:";
