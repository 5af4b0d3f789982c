import { z } from "zod";

/**
 * Payload schemas, one per event type. This file is the single place that
 * says what each event carries; the envelope and the type union are built
 * from this map.
 */

const ms = z.number().int().nonnegative();
const count = z.number().int().nonnegative();

/** A capped, redacted copy of free text or JSON: what an on-call person may see. */
export const preview = z.object({
  preview: z.string(),
  bytes: count,
  truncated: z.boolean(),
});
export type Preview = z.infer<typeof preview>;

/** The kinds of durable work agents 0.32 runs. Each is a "run" in the console. */
export const RUN_KINDS = ["fiber", "managed_fiber", "task", "chat_turn"] as const;
export type RunKind = (typeof RUN_KINDS)[number];
const runKind = z.enum(RUN_KINDS);

const fiberBase = z.object({
  fiberName: z.string(),
  managed: z.boolean().optional(),
  elapsedMs: ms.optional(),
  /**
   * The run this fiber is, as the agent side could tell from the SDK's event: "chat_turn" for the SDK's
   * internal chat-turn fiber (then corr.requestId names the turn, and the console shows the fiber as that
   * turn), else managed_fiber / fiber. Absent when the SDK event did not say (older senders, recovery failures).
   */
  kind: runKind.optional(),
});

/** A Tasks run (`this.tasks`, `cf_agents_task_runs`). `definition` is the task's registered name. */
const taskBase = z.object({
  definition: z.string().min(1).max(200),
  attempt: count.optional(),
  /** "chat_turn" when the Task only carries a chat turn (Think / AIChatAgent run turns on Tasks); the turn is its own run. */
  kind: z.enum(["task", "chat_turn"]).optional(),
});

const chatTurnBase = z.object({
  trigger: z.string().max(100).optional(),
  admission: z.string().max(100).optional(),
  continuation: z.boolean().optional(),
  generation: count.optional(),
});

const chatRecoveryBase = z.object({
  attempt: count,
  maxAttempts: count,
  recoveryKind: z.enum(["retry", "continue"]),
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

const sessionStatusBase = z.object({
  turnSeq: count.optional(),
  detail: z.string().max(2000).optional(),
});

const opBase = z.object({
  opKind: z.string().min(1).max(200),
  turnSeq: count.optional(),
  idempotent: z.boolean().optional(),
});

const backupBase = z.object({
  handle: z.string().min(1).max(500),
  tenant: z.string().min(1).max(200),
  environment: z.string().min(1).max(200),
  sessionName: z.string().min(1).max(500),
});

const adminBase = z.object({
  actor: z.string().min(1).max(320),
  reason: z.string().min(1).max(2000),
  /** `partial`: the action ran, but the agent read back afterwards still runs work (or the alarm did not run to its end). */
  result: z.enum(["ok", "partial", "noop", "error", "denied"]),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
});

export const payloadSchemas = {
  // Fiber lifecycle (agents SDK runFiber / startFiber)
  "fiber.started": fiberBase,
  "fiber.completed": fiberBase,
  "fiber.failed": fiberBase.extend({ error: z.string() }),
  "fiber.interrupted": fiberBase,
  /** Our own: a stash() checkpoint, so the console can show the last-known snapshot after the row is gone. */
  "fiber.stashed": z.object({ fiberName: z.string(), snapshot: preview, kind: runKind.optional() }),

  // Fiber recovery after eviction
  "fiber.recovery.detected": fiberBase,
  "fiber.recovery.attempt": fiberBase,
  "fiber.recovery.handled": fiberBase.extend({ status: z.string().optional() }),
  "fiber.recovery.skipped": fiberBase.extend({ reason: z.string() }),
  "fiber.recovery.failed": fiberBase.extend({ error: z.string(), reason: z.string().optional() }),

  // Chat turn recovery (AIChatAgent / Think)
  "chat.recovery.detected": chatRecoveryBase,
  "chat.recovery.scheduled": chatRecoveryBase,
  "chat.recovery.attempt": chatRecoveryBase,
  "chat.recovery.completed": chatRecoveryBase,
  "chat.recovery.skipped": chatRecoveryBase.extend({ reason: z.string().optional() }),
  "chat.recovery.exhausted": chatRecoveryBase.extend({
    reason: z.string().min(1),
    partialText: preview.optional(),
    partialParts: z.object({ count, bytes: count }).optional(),
    terminalMessage: preview.optional(),
  }),
  "chat.recovery.failed": chatRecoveryBase.extend({ reason: z.string().optional() }),
  "chat.context.compacted": z.object({
    mode: z.enum(["proactive", "reactive"]),
    shortened: z.boolean(),
    attempt: count.optional(),
  }),
  "chat.transcript.repaired": z.object({
    removedToolCalls: count,
    normalizedInputs: count,
    toolCallIds: z.array(z.string()).max(100).optional(),
  }),
  "chat.stream.stalled": z.object({ timeoutMs: ms }),

  // Tasks (agents 0.32 `this.tasks`; Think and AIChatAgent run chat turns on them). Steps are not shipped: too many.
  "task.accepted": taskBase,
  "task.attempt.started": taskBase,
  /** The attempt was cut off (eviction, crash); the SDK replays the handler in a new attempt. */
  "task.attempt.interrupted": taskBase.extend({ step: z.string().max(200).optional() }),
  "task.waiting": taskBase.extend({ reason: z.string().max(500).optional(), wakeAt: ms.optional() }),
  "task.completed": taskBase,
  "task.failed": taskBase.extend({ error: z.string() }),
  "task.cancelled": taskBase.extend({ reason: z.string().optional() }),

  // Chat turns (AIChatAgent / Think `chat:turn:start|finish`); the turn is keyed by corr.requestId.
  "chat.turn.started": chatTurnBase,
  /** `status` is the SDK's own word for how the turn ended (completed, error, aborted, …). */
  "chat.turn.finished": chatTurnBase.extend({ status: z.string().min(1).max(100), durationMs: ms.optional(), error: z.string().optional() }),

  /**
   * Written by the audited admin path when force idle ends a run (row removed, managed fiber or task cancelled,
   * turn aborted), so its projection closes. `stopped` says whether in-memory work was stopped too: a plain
   * runFiber callback without a hook keeps running until it returns or the agent is evicted.
   */
  "run.force_idled": z.object({
    kind: runKind,
    runId: z.string().min(1).max(200),
    name: z.string().max(200).optional(),
    reason: z.string(),
    stopped: z.boolean(),
    /**
     * What the SDK records for the run when the console read the agent back after force idle: a Tasks state
     * (`cancelled`…), a managed-fiber status (`aborted`…), `running`, or `gone` (nothing of it remains). Absent
     * when the agent could not be read back.
     */
    sdkState: z.string().max(100).optional(),
  }),
  /** Written by force idle for each chat-recovery incident record it clears. */
  "incident.force_idled": z.object({ reason: z.string() }),
  /**
   * Written by the console's reconciliation when events could not tell: it asked the agent (admin RPC) and
   * records what it found. `finding` closes the projection ("ended_unreported", "not_recovering") or
   * confirms it ("confirmed_running", "confirmed_open").
   */
  "run.reconciled": z.object({
    kind: runKind,
    runId: z.string().min(1).max(200),
    finding: z.enum(["ended_unreported", "confirmed_running"]),
    detail: z.string().max(2000).optional(),
  }),
  "incident.reconciled": z.object({ finding: z.enum(["not_recovering", "confirmed_open"]), detail: z.string().max(2000).optional() }),
  /** Reconciliation found the agent idle while the session (corr.sessionName) still showed running: its end was not reported. */
  "session.reconciled": z.object({ finding: z.literal("ended_unreported"), detail: z.string().max(2000).optional() }),

  // Session status (derived in the agent, reported here)
  "session.status_running": sessionStatusBase,
  "session.status_idle": sessionStatusBase,
  "session.status_rescheduled": sessionStatusBase.extend({ recoveryCount: count.optional() }),
  "session.status_terminated": sessionStatusBase,
  /** `reason` is a short code for grouping (e.g. max_turn_recoveries); `error` says it in words. */
  "session.error": sessionStatusBase.extend({ error: z.string().max(4000), reason: z.string().min(1).max(200).optional() }),

  // Cost-op ledger
  "op.started": opBase,
  "op.completed": opBase.extend({ resultRef: z.string().max(500).optional() }),
  "op.ambiguous": opBase.extend({ detail: z.string().max(4000) }),
  /** `resultRef` points at the result (verified_ran) or the re-run's (reissued); `reason` is the person's, when one resolved it. */
  "op.resolved": opBase.extend({
    resolution: z.enum(["verified_ran", "verified_not_ran", "reissued", "abandoned"]),
    resultRef: z.string().max(500).optional(),
    reason: z.string().max(2000).optional(),
  }),

  /**
   * Model tokens one call spent, as the agent reported them (see usage.ts). corr.incidentId is set when the
   * call ran inside a recovery attempt (the telemetry stamps it), so the console sums what recovery re-spent.
   * `attempt` is that recovery's attempt number; `turnSeq` names the session turn when the agent gave one.
   */
  "model.usage": z.object({
    inputTokens: count,
    outputTokens: count,
    model: z.string().min(1).max(200).optional(),
    attempt: count.optional(),
    turnSeq: count.optional(),
  }),

  // Workspace backups
  "backup.created": backupBase.extend({ expiresAt: ms, bytes: count.optional() }),
  "backup.restored": backupBase,
  "backup.expired": backupBase,

  // Admin actions (written by the audited admin-rpc path)
  "admin.force_idle": adminBase,
  "admin.trigger_alarm": adminBase,

  // Runtime housekeeping
  "alarm.memory_limit_reset": z.object({
    strikes: count,
    limit: count,
    sealed: z.boolean(),
    error: z.string(),
  }),

  /** Any agents-SDK event we do not model yet: kept, never dropped. */
  "sdk.event": z.object({ sdkType: z.string().min(1).max(200), data: preview }),

  /**
   * Stands in for an event too large to ship (over MAX_EVENT_BYTES as JSON). It keeps the original's id,
   * time, source and correlation ids, so the fact that it happened reaches the console and its timelines.
   */
  "event.too_large": z.object({
    originalType: z.string().min(1).max(200),
    /** UTF-8 bytes of the original event's JSON. */
    bytes: count,
    /** The limit it exceeded. */
    limit: count,
    /** The masked start of the original payload. */
    preview: preview.optional(),
  }),
} as const;

export type EventType = keyof typeof payloadSchemas;
export type PayloadOf<T extends EventType> = z.infer<(typeof payloadSchemas)[T]>;
export const EVENT_TYPES = Object.keys(payloadSchemas) as EventType[];
