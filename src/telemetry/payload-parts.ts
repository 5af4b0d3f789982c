import { z } from "zod";
import { RUN_KINDS, type RunKind } from "./constants.js";

/**
 * The pieces payload schemas share (a preview, a fiber's or task's common fields, …). Each event type's own
 * payload is in its registry entry (registry.ts).
 */

export const ms = z.number().int().nonnegative();
export const count = z.number().int().nonnegative();
export const requestIdField = z.string().min(1).max(200);

/** A capped, redacted copy of free text or JSON: what an on-call person may see. */
export const preview = z.object({
  preview: z.string(),
  bytes: count,
  truncated: z.boolean(),
});
export type Preview = z.infer<typeof preview>;

/** The kinds of durable work agents 0.32 runs. Each is a "run" in the console. */
export { RUN_KINDS, type RunKind };

export const runKind = z.enum(RUN_KINDS);

export const fiberBase = z.object({
  fiberName: z.string(),
  managed: z.boolean().optional(),
  elapsedMs: ms.optional(),
  /**
   * The run this fiber is, as the agent side could tell from the SDK's event: "chat_turn" for the SDK's
   * internal chat-turn fiber (then corr.requestId names the turn, and the console shows the fiber as that
   * turn), else managed_fiber / fiber. Absent when the SDK event did not say (older senders, recovery failures).
   */
  kind: runKind.optional(),
  /**
   * A managed fiber's status as the SDK records it right after this event (`inspectFiber`, FiberStatus word),
   * read by the agent side where the event alone does not say (its end, its recovery's outcome). Absent for plain
   * fibers, older senders, or when the read failed.
   */
  fiberStatus: z.string().min(1).max(50).optional(),
  /** The managed fiber's error message as the SDK records it then (`inspectFiber().error`). */
  fiberError: z.string().optional(),
  /**
   * For a chat turn's fiber: the user's turn it runs for, when that is another request (a recovery turn
   * continues the SDK's `recoveryRootRequestId`). The console keys the turn by it: one run per user turn.
   */
  rootRequestId: requestIdField.optional(),
});

/** A Tasks run (`this.tasks`, `cf_agents_task_runs`). `definition` is the task's registered name. */
export const taskBase = z.object({
  definition: z.string().min(1).max(200),
  attempt: count.optional(),
  /** "chat_turn" when the Task only carries a chat turn (Think / AIChatAgent run turns on Tasks); the turn is its own run. */
  kind: z.enum(["task", "chat_turn"]).optional(),
  /**
   * The run's own progress line (`step.status()`) as the SDK records it at this event (`tasks.get`
   * `statusMessage`), read by the agent side: the SDK emits no event for it. Absent when it has none.
   */
  statusMessage: z.string().max(500).optional(),
  /** The step the run is at, waits in, or ended in, as the agent side saw it (the SDK's step events are not shipped). */
  step: z.string().max(200).optional(),
  /**
   * The SDK's own machinery (a `__cf_internal_*` definition other than the chat-turn carrier, e.g. a chat
   * recovery's transport): evidence on the timeline of what it serves, never a run of its own.
   */
  internal: z.boolean().optional(),
  /** A chat-turn carrier or a chat recovery's Task: the user's turn it serves (see fiberBase.rootRequestId). */
  rootRequestId: requestIdField.optional(),
  /** A chat-turn carrier reported as the turn's start (agents without chat:turn events): which run of the user's turn it is. */
  turnAttempt: count.optional(),
});

export const chatTurnBase = z.object({
  trigger: z.string().max(100).optional(),
  admission: z.string().max(100).optional(),
  continuation: z.boolean().optional(),
  generation: count.optional(),
  /** A recovery turn: the user's turn it continues (the SDK's `recoveryRootRequestId`); absent for the user's own turn. */
  rootRequestId: requestIdField.optional(),
  /** Which run of the user's turn this is: 2 for its first recovery turn, and so on (absent: 1, the turn itself). */
  turnAttempt: count.optional(),
});

export const chatRecoveryBase = z.object({
  attempt: count,
  maxAttempts: count,
  recoveryKind: z.enum(["retry", "continue"]),
  /** The user's turn the incident recovers (the SDK's `recoveryRootRequestId`), when the agent could tell. */
  rootRequestId: requestIdField.optional(),
});

/** Reasons the agents SDK gives for exhausting chat recovery. Unknown reasons are kept as-is. */
export const EXHAUSTION_REASONS = [
  "no_progress_timeout",
  "max_attempts_exceeded",
  "work_budget_exceeded",
  "recovery_aborted",
  "stable_timeout",
  "out_of_memory",
] as const;

export const sessionStatusBase = z.object({
  turnSeq: count.optional(),
  detail: z.string().max(2000).optional(),
});

export const opBase = z.object({
  opKind: z.string().min(1).max(200),
  turnSeq: count.optional(),
  idempotent: z.boolean().optional(),
});

export const backupBase = z.object({
  handle: z.string().min(1).max(500),
  tenant: z.string().min(1).max(200),
  environment: z.string().min(1).max(200),
  sessionName: z.string().min(1).max(500),
});

export const adminBase = z.object({
  actor: z.string().min(1).max(320),
  reason: z.string().min(1).max(2000),
  /** `partial`: the action ran, but the agent read back afterwards still runs work (or the alarm did not run to its end). */
  result: z.enum(["ok", "partial", "noop", "error", "denied"]),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});
