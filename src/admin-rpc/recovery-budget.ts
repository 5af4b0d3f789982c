import { z } from "zod";
import type { BudgetRecord, ChatRecoveryBounds, RecoveryBudgetOutput } from "./recovery-budget-contract.js";
import { chatRecoveryRecords, textOf } from "./sdk-layout.js";

export * from "./recovery-budget-contract.js";

/**
 * The recovery budget as the agent itself holds it (read-only): the chat-recovery bounds the SDK resolved for
 * this agent (Think / AIChatAgent `_resolveChatRecoveryConfig`, the SDK's own defaulting of `chatRecovery`) and
 * each chat-recovery record's counters, which the chat:recovery:* events do not carry (progress, work baseline,
 * last progress, interrupted attempts). Plain agents and fibers have no such budget: the SDK bounds only chat
 * recovery, so they answer `config: null` and no records.
 */

export const recoveryBudgetInput = z.object({ incidentId: z.string().trim().min(1).max(500).optional() }).strict();
export type RecoveryBudgetInput = z.infer<typeof recoveryBudgetInput>;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The SDK's own resolution of the agent's `chatRecovery`, when the agent is a chat agent (duck-typed: no SDK chat import). */
export function boundsOf(agent: object): ChatRecoveryBounds | null {
  const resolve = (agent as { _resolveChatRecoveryConfig?: () => Record<string, unknown> })._resolveChatRecoveryConfig;
  if (typeof resolve !== "function") return null;
  const c = resolve.call(agent);
  return {
    maxAttempts: Number(c.maxAttempts),
    stableTimeoutMs: Number(c.stableTimeoutMs),
    noProgressTimeoutMs: Number(c.noProgressTimeoutMs),
    maxRecoveryWork: num(c.maxRecoveryWork),
    maxInterruptedAttempts: num(c.maxInterruptedAttempts),
  };
}

/** Reads the budget: the bounds and the chat-recovery records (one, when `incidentId` is given). */
export async function readRecoveryBudget(agent: object, storage: DurableObjectStorage, input: RecoveryBudgetInput): Promise<RecoveryBudgetOutput> {
  const records: BudgetRecord[] = [];
  for (const { incidentId, record: v } of await chatRecoveryRecords(storage)) {
    if (input.incidentId && incidentId !== input.incidentId) continue;
    const progress = num(v?.progress);
    const baseline = num(v?.workBaseline);
    records.push({
      incidentId,
      status: textOf(v?.status) ?? "unknown",
      reason: textOf(v?.reason),
      attempt: num(v?.attempt),
      maxAttempts: num(v?.maxAttempts),
      firstSeenAt: num(v?.firstSeenAt),
      lastAttemptAt: num(v?.lastAttemptAt),
      lastProgressAt: num(v?.lastProgressAt) ?? num(v?.firstSeenAt),
      work: progress !== null ? progress - (baseline ?? progress) : null,
      interruptedAttempts: num(v?.interruptedAttempts) ?? 0,
      transientRetries: num(v?.transientRetries) ?? 0,
    });
  }
  return { now: Date.now(), config: boundsOf(agent), records };
}
