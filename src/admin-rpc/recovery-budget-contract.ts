import { z } from "zod";

/**
 * The recovery budget's answer (recovery-budget.ts reads it): schemas only the Worker-side client parses, kept
 * apart so a user's agent Worker does not bundle them.
 */

/** The SDK's resolved chat-recovery bounds. `maxRecoveryWork` / `maxInterruptedAttempts` null: unbounded (Infinity). */
export const chatRecoveryBounds = z.object({
  maxAttempts: z.number(),
  stableTimeoutMs: z.number(),
  noProgressTimeoutMs: z.number(),
  maxRecoveryWork: z.number().nullable(),
  maxInterruptedAttempts: z.number().nullable(),
});
export type ChatRecoveryBounds = z.infer<typeof chatRecoveryBounds>;

/** One chat-recovery record's budget counters, as the SDK stored them at its last attempt. */
export const budgetRecord = z.object({
  incidentId: z.string(),
  status: z.string(),
  reason: z.string().nullable(),
  /** The attempt counter the attempt cap compares (it restarts at 1 when an attempt made progress). */
  attempt: z.number().nullable(),
  maxAttempts: z.number().nullable(),
  firstSeenAt: z.number().nullable(),
  lastAttemptAt: z.number().nullable(),
  /** The no-progress timer runs from here (the SDK falls back to firstSeenAt). */
  lastProgressAt: z.number().nullable(),
  /** Work spent since the incident opened: progress − workBaseline (durable stream segments), as of the last attempt. */
  work: z.number().nullable(),
  interruptedAttempts: z.number(),
  /** Retries after transient model errors; the SDK seals the incident once they reach maxAttempts. */
  transientRetries: z.number(),
});
export type BudgetRecord = z.infer<typeof budgetRecord>;

export const recoveryBudgetOutput = z.object({
  /** The agent's clock when it answered: timers are measured from it. */
  now: z.number(),
  /** null: the agent keeps no chat-recovery budget (not a chat agent). */
  config: chatRecoveryBounds.nullable(),
  records: z.array(budgetRecord),
});
export type RecoveryBudgetOutput = z.infer<typeof recoveryBudgetOutput>;
