/**
 * The chat rows of the truth matrix (issue 15), as data: the main suite's matrix (test/truth) covers fibers and
 * Tasks; chat turns load Think, so they run in the chat suite. A new chat primitive or fault is one row here (plus
 * its driver in drive.ts). Each row runs on a fresh foreign chat agent (test/fixtures/chat-agents.ts); afterwards
 * the SDK's own records and the console's own JSON are compared field by field (observe.ts, test/truth/compare.ts).
 */

/**
 * Think (`@cloudflare/think`) and AIChatAgent (`@cloudflare/ai-chat`), each with both mixins; and a Think sub-agent
 * (a facet of a Think agent, `subAgent()`), whose turns run as `__cf_internal_chat_turn:<requestId>` fibers.
 */
export const CHAT_PRIMITIVES = ["think", "aichat", "think-sub"] as const;
export type ChatPrimitive = (typeof CHAT_PRIMITIVES)[number];

/**
 * Faults:
 * - none: the turn completes; failure: the model rejects the call (a provider 400, not retried);
 * - abort: `ctx.abort()` mid-stream, then the next wake recovers the turn (a recovery turn continues it);
 * - evictions: evicted again during every recovery turn until the SDK gives up (interrupted_attempts_exceeded);
 * - stalls: the model stalls on every call; the SDK's stall watchdog routes each stall into recovery until it gives
 *   up (max_attempts_exceeded), then reports the aborted last recovery turn as a failure;
 * - force-idle: the console's audited force idle mid-stream, then a new turn.
 */
export const CHAT_FAULTS = ["none", "failure", "abort", "evictions", "stalls", "force-idle"] as const;
export type ChatFault = (typeof CHAT_FAULTS)[number];

export type ChatRow = { primitive: ChatPrimitive; fault: ChatFault };

/**
 * Every chat row. The sub-agent meets the faults its parent can drive through `subAgent()`: a completed and a failed
 * turn (evicting a facet alone, and force idle, need the console to address a facet, which it cannot: its Durable
 * Object binding reaches a top-level object of that class, not the parent's facet).
 */
export const CHAT_MATRIX: ChatRow[] = [
  ...(["think", "aichat"] as const).flatMap((primitive) => CHAT_FAULTS.map((fault) => ({ primitive, fault }))),
  { primitive: "think-sub", fault: "none" },
  { primitive: "think-sub", fault: "failure" },
];

export const chatRowName = (r: ChatRow) => `${r.primitive} chat turn × ${r.fault}`;
