import { z } from "zod";
import { CHAT_RECOVERY_INCIDENT_KEY_PREFIX, chatIncidentIdOf } from "./sdk-layout.js";

/**
 * The recovery budget as the agent itself holds it (read-only): the chat-recovery bounds the SDK resolved for
 * this agent (Think / AIChatAgent `_resolveChatRecoveryConfig`, the SDK's own defaulting of `chatRecovery`) and
 * each chat-recovery record's counters, which the chat:recovery:* events do not carry (progress, work baseline,
 * last progress, interrupted attempts). Plain agents and fibers have no such budget: the SDK bounds only chat
 * recovery, so they answer `config: null` and no records.
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

export const recoveryBudgetInput = z.object({ incidentId: z.string().trim().min(1).max(500).optional() }).strict();
export type RecoveryBudgetInput = z.infer<typeof recoveryBudgetInput>;

export const recoveryBudgetOutput = z.object({
  /** The agent's clock when it answered: timers are measured from it. */
  now: z.number(),
  /** null: the agent keeps no chat-recovery budget (not a chat agent). */
  config: chatRecoveryBounds.nullable(),
  records: z.array(budgetRecord),
});
export type RecoveryBudgetOutput = z.infer<typeof recoveryBudgetOutput>;

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);
const bound = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The SDK's own resolution of the agent's `chatRecovery`, when the agent is a chat agent (duck-typed: no SDK chat import). */
export function boundsOf(agent: object): ChatRecoveryBounds | null {
  const resolve = (agent as { _resolveChatRecoveryConfig?: () => Record<string, unknown> })._resolveChatRecoveryConfig;
  if (typeof resolve !== "function") return null;
  const c = resolve.call(agent);
  return {
    maxAttempts: Number(c.maxAttempts),
    stableTimeoutMs: Number(c.stableTimeoutMs),
    noProgressTimeoutMs: Number(c.noProgressTimeoutMs),
    maxRecoveryWork: bound(c.maxRecoveryWork),
    maxInterruptedAttempts: bound(c.maxInterruptedAttempts),
  };
}

/** Reads the budget: the bounds and the chat-recovery records (one, when `incidentId` is given). */
export async function readRecoveryBudget(agent: object, storage: DurableObjectStorage, input: RecoveryBudgetInput): Promise<RecoveryBudgetOutput> {
  const listed = await storage.list<Record<string, unknown>>({ prefix: CHAT_RECOVERY_INCIDENT_KEY_PREFIX });
  const records: BudgetRecord[] = [];
  for (const [key, v] of listed) {
    const incidentId = chatIncidentIdOf(key, v);
    if (input.incidentId && incidentId !== input.incidentId) continue;
    const progress = num(v?.progress);
    const baseline = num(v?.workBaseline);
    records.push({
      incidentId,
      status: typeof v?.status === "string" ? v.status : "unknown",
      reason: typeof v?.reason === "string" ? v.reason : null,
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
