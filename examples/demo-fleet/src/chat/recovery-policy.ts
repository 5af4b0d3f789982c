import type { ChatRecoveryConfig } from "@cloudflare/think";
import { z } from "zod";

/**
 * The chat agent's recovery budgets, as data: persisted in the agent's SQLite
 * so a driver can tune them per agent and they apply again after an eviction
 * (the SDK reads `chatRecovery` on wake, before `onStart`, so it is rebuilt in
 * the constructor from this row). Defaults are deliberately small so that
 * recovery and exhaustion play out in seconds.
 */
export const recoveryPolicySchema = z
  .object({
    /** Attempt cap; also caps retries after transient errors and stalls. */
    maxAttempts: z.number().int().min(1).max(100).default(3),
    /** How long a recovery attempt waits for the agent to be idle before it reschedules or gives up. */
    stableTimeoutMs: z.number().int().min(0).max(600_000).default(1_000),
    /** Seal an incident that made no forward progress for this long. */
    noProgressTimeoutMs: z.number().int().min(0).max(3_600_000).default(60_000),
    /** Seal an incident after this much recovery work (durable stream segments). */
    maxRecoveryWork: z.number().int().min(0).max(1_000_000).default(1_000),
    /** Seal a turn after this many of its attempts died with their isolate. */
    maxInterruptedAttempts: z.number().int().min(1).max(100).default(5),
    /** Spend budget: stop recovering once this agent made this many chat model calls. Null: no budget. */
    maxModelCalls: z.number().int().min(1).max(10_000).nullable().default(null),
    /** Inactivity watchdog for a model stream (ms); 0 turns it off. */
    stallTimeoutMs: z.number().int().min(0).max(600_000).default(0),
    /** false: persist the partial but never continue automatically (`onChatRecovery` returns `continue: false`). */
    autoContinue: z.boolean().default(true),
    /** Prompt size (tokens) the proactive context guard protects. */
    maxInputTokens: z.number().int().min(1).max(10_000_000).default(100_000),
    terminalMessage: z.string().min(1).max(2000).default("The assistant was interrupted and could not finish. Please try again."),
  })
  .strict();

export type RecoveryPolicy = z.output<typeof recoveryPolicySchema>;
export type RecoveryPolicyInput = z.input<typeof recoveryPolicySchema>;

/** The persisted policy of one agent. Synchronous, so it can run in a constructor. */
export class RecoveryPolicyStore {
  constructor(private readonly sql: SqlStorage) {
    sql.exec("CREATE TABLE IF NOT EXISTS chat_recovery_policy (id INTEGER PRIMARY KEY CHECK (id = 1), policy TEXT NOT NULL)");
  }

  /** The stored policy, with defaults for whatever is not set. */
  read(): RecoveryPolicy {
    const row = this.sql.exec<{ policy: string }>("SELECT policy FROM chat_recovery_policy WHERE id = 1").toArray()[0];
    return recoveryPolicySchema.parse(row ? JSON.parse(row.policy) : {});
  }

  /** Merges `patch` into the stored policy and returns the result; throws on invalid input. */
  update(patch: unknown): RecoveryPolicy {
    const parsed = recoveryPolicySchema.partial().safeParse(patch ?? {});
    if (!parsed.success) throw new Error(`invalid recovery policy: ${z.prettifyError(parsed.error)}`);
    const next = recoveryPolicySchema.parse({ ...this.read(), ...stripUndefined(parsed.data) });
    this.sql.exec("INSERT OR REPLACE INTO chat_recovery_policy (id, policy) VALUES (1, ?)", JSON.stringify(next));
    return next;
  }
}

/**
 * Builds the SDK `chatRecovery` config from a policy. `modelCalls` reads the
 * durable spend meter the caller policy checks (the SDK calls
 * `shouldKeepRecovering` unbound, from the second attempt on).
 */
export function chatRecoveryConfig(policy: RecoveryPolicy, modelCalls: () => number): ChatRecoveryConfig {
  const budget = policy.maxModelCalls;
  return {
    maxAttempts: policy.maxAttempts,
    stableTimeoutMs: policy.stableTimeoutMs,
    noProgressTimeoutMs: policy.noProgressTimeoutMs,
    maxRecoveryWork: policy.maxRecoveryWork,
    maxInterruptedAttempts: policy.maxInterruptedAttempts,
    terminalMessage: policy.terminalMessage,
    ...(budget !== null ? { shouldKeepRecovering: () => modelCalls() < budget } : {}),
  };
}

function stripUndefined<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
