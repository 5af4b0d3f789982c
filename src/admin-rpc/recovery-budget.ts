import type { RecoveryBudgetRecords } from "./records-contract.js";
import type { BudgetRecord, ChatRecoveryBounds, RecoveryBudgetOutput } from "./recovery-budget-contract.js";
import { textOf } from "./sdk-layout.js";

export type { RecoveryBudgetInput } from "./inputs.js";
export { recoveryBudgetInput } from "./inputs.js";
export * from "./recovery-budget-contract.js";

/**
 * The recovery budget as the agent itself holds it (read-only), read on the Worker side from the agent's records
 * (records.ts, contract 7): the chat-recovery bounds the SDK resolved for this agent (Think / AIChatAgent
 * `_resolveChatRecoveryConfig`, the SDK's own defaulting of `chatRecovery`) and each chat-recovery record's counters,
 * which the chat:recovery:* events do not carry (progress, work baseline, last progress, interrupted attempts).
 * Plain agents and fibers have no such budget: the SDK bounds only chat recovery, so they answer `config: null` and
 * no records.
 */

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The bounds from the SDK's own resolution of the agent's `chatRecovery`; null when the agent is not a chat agent. */
export function boundsOf(c: Record<string, unknown> | null): ChatRecoveryBounds | null {
  if (!c) return null;
  return {
    maxAttempts: Number(c.maxAttempts),
    stableTimeoutMs: Number(c.stableTimeoutMs),
    noProgressTimeoutMs: Number(c.noProgressTimeoutMs),
    maxRecoveryWork: num(c.maxRecoveryWork),
    maxInterruptedAttempts: num(c.maxInterruptedAttempts),
  };
}

/** The budget: the bounds and the chat-recovery records' counters. */
export function budgetOf(raw: RecoveryBudgetRecords): RecoveryBudgetOutput {
  const records: BudgetRecord[] = raw.records.map(({ incidentId, record: v }) => {
    const progress = num(v?.progress);
    const baseline = num(v?.workBaseline);
    return {
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
    };
  });
  return { now: raw.now, config: boundsOf(raw.config), records };
}
