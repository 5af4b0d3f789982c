import { z } from "zod";
import { RUN_KINDS, type RunKind } from "./constants.js";

/**
 * Payload schemas, one per event type. This file is the single place that
 * says what each event carries; the envelope and the type union are built
 * from this map.
 */

const ms = z.number().int().nonnegative();
const count = z.number().int().nonnegative();
const requestIdField = z.string().min(1).max(200);

/** A capped, redacted copy of free text or JSON: what an on-call person may see. */
export const preview = z.object({
  preview: z.string(),
  bytes: count,
  truncated: z.boolean(),
});
export type Preview = z.infer<typeof preview>;

/** The kinds of durable work agents 0.32 runs. Each is a "run" in the console. */
export { RUN_KINDS, type RunKind };

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
const taskBase = z.object({
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

const chatTurnBase = z.object({
  trigger: z.string().max(100).optional(),
  admission: z.string().max(100).optional(),
  continuation: z.boolean().optional(),
  generation: count.optional(),
  /** A recovery turn: the user's turn it continues (the SDK's `recoveryRootRequestId`); absent for the user's own turn. */
  rootRequestId: requestIdField.optional(),
  /** Which run of the user's turn this is: 2 for its first recovery turn, and so on (absent: 1, the turn itself). */
  turnAttempt: count.optional(),
});

const chatRecoveryBase = z.object({
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
  "fiber.stashed": z.object({ fiberName: z.string(), snapshot: preview, kind: runKind.optional(), rootRequestId: requestIdField.optional() }),

  // Fiber recovery after eviction
  "fiber.recovery.detected": fiberBase,
  "fiber.recovery.attempt": fiberBase,
  "fiber.recovery.handled": fiberBase.extend({
    status: z.string().optional(),
    /**
     * What a plain runFiber's `onFiberRecovered` did, as the tail could tell from the SDK's own messages of that
     * invocation (tail.ts): "resumed" when a run of the same name started while the hook ran (`resumedAs` is its
     * fiber id), else "unknown" (the SDK publishes nothing that tells dropped work from work resumed later).
     * Absent when the sender did not look (the outbox path).
     */
    hook: z.enum(["resumed", "unknown"]).optional(),
    resumedAs: z.string().max(200).optional(),
  }),
  "fiber.recovery.skipped": fiberBase.extend({ reason: z.string() }),
  "fiber.recovery.failed": fiberBase.extend({ error: z.string(), reason: z.string().optional() }),
  /**
   * Our own: the agent settled an interrupted managed fiber with `resolveFiber` (the SDK emits nothing for it).
   * `status` is the fiber's status afterwards (FiberStatus word), `error` its error message then, `settledAt` when
   * the SDK records it settled.
   */
  "fiber.resolved": fiberBase.extend({ status: z.string().min(1).max(50), error: z.string().optional(), settledAt: ms.optional() }),

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
  /**
   * `sealed`: the SDK reported this after it had already exhausted the incident (a recovery turn the exhaustion
   * aborted then fails): the incident stays exhausted, as the SDK's give-up said.
   */
  "chat.recovery.failed": chatRecoveryBase.extend({ reason: z.string().optional(), sealed: z.boolean().optional() }),
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
  "task.attempt.interrupted": taskBase,
  "task.waiting": taskBase.extend({ reason: z.string().max(500).optional(), wakeAt: ms.optional() }),
  "task.completed": taskBase,
  /** `error` is what the SDK's event carries (agents 0.32: the error's name); `errorMessage` is its message, as the run records it (`tasks.get`). */
  "task.failed": taskBase.extend({ error: z.string(), errorMessage: z.string().optional() }),
  "task.cancelled": taskBase.extend({ reason: z.string().optional() }),

  // Chat turns (AIChatAgent / Think `chat:turn:start|finish`); the turn is keyed by corr.requestId.
  "chat.turn.started": chatTurnBase,
  /**
   * `status` is the SDK's own word for how the turn ended (completed, error, aborted, …). Where the SDK's recovery
   * of the user's turn stood then, as the agent saw it: `recovering` (a recovery was already scheduled: this status
   * is not the user's turn's end) or `sealed` (recovery was already exhausted: the turn ended with that).
   */
  "chat.turn.finished": chatTurnBase.extend({
    status: z.string().min(1).max(100),
    durationMs: ms.optional(),
    error: z.string().optional(),
    recovering: z.boolean().optional(),
    sealed: z.boolean().optional(),
  }),

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
    /** How it was stopped (admin contract `endedRun.how`); `cancelled` means through the SDK's own cancel, which the SDK records. */
    how: z.string().max(50).optional(),
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
    /**
     * `ended`: the agent still records how the run ended (`state`, `error`, `endedAt`): the console closes it
     * with that. `ended_unreported`: the agent has no record of it. `confirmed_running`: it is live (with what
     * the agent records of it now: `state`, `step`, `statusMessage`, …). `unknown`: the agent cannot be asked (no admin
     * package, or a class the console has no binding for) and no event came for a stated age: how it ended is not known.
     */
    finding: z.enum(["ended_unreported", "confirmed_running", "ended", "unknown"]),
    detail: z.string().max(2000).optional(),
    /** The SDK's own state word for the run (FiberStatus, Tasks state, submission status), mapped by src/telemetry/sdk-states.ts. */
    state: z.string().min(1).max(50).optional(),
    error: z.string().max(4000).optional(),
    /** When the agent says the run settled. */
    endedAt: ms.optional(),
    startedAt: ms.optional(),
    name: z.string().max(200).optional(),
    definition: z.string().min(1).max(200).optional(),
    attempt: count.optional(),
    statusMessage: z.string().max(500).optional(),
    step: z.string().max(200).optional(),
    wakeAt: ms.optional(),
  }),
  /**
   * `fiberStatus`: for a fiber incident, the managed fiber's status the agent records now (FiberStatus word),
   * mapped to the incident's status by src/telemetry/sdk-states.ts.
   */
  "incident.reconciled": z.object({
    finding: z.enum(["not_recovering", "confirmed_open"]),
    detail: z.string().max(2000).optional(),
    fiberStatus: z.string().min(1).max(50).optional(),
  }),
  /** Reconciliation found the agent idle while the session (corr.sessionName) still showed running: its end was not reported. */
  /**
   * `lastEventAt`: the time of the session's last event the judgement saw. The finding's status stands only until
   * an event from after that time, whenever it arrives: what happened outranks "its end was not reported".
   */
  "session.reconciled": z.object({
    finding: z.literal("ended_unreported"),
    detail: z.string().max(2000).optional(),
    lastEventAt: z.number().int().positive().optional(),
  }),

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

  // Recovery paused by an operator (schema version 2). paused / resumed are sent by the audited admin path, with
  // the target as source; skipped_paused by the agent, for each recovery the pause held back (the SDK's own
  // fiber:recovery:failed of a paused runFiber, normalised; the mixin's record for a managed fiber).
  "recovery.paused": z.object({
    actor: z.string().min(1).max(320),
    reason: z.string().min(1).max(2000),
    /** Epoch ms when the pause stops applying by itself. */
    until: ms,
  }),
  "recovery.resumed": z.object({
    actor: z.string().min(1).max(320),
    reason: z.string().min(1).max(2000),
    /** Fibers the resume recovered (their ids, capped), as the agent read them back. */
    recovered: z.array(z.string().max(200)).max(100),
  }),
  "recovery.skipped_paused": z.object({
    kind: runKind,
    /** The fiber's name; for a chat turn, the SDK's name of the turn's fiber (`<CHAT_FIBER_NAME>:<requestId>`) or the class's. */
    fiberName: z.string().max(200),
    /**
     * What the pause did to it: `held` (the SDK keeps it for after the pause: a runFiber's row, a managed fiber left
     * interrupted) or `declined` (a chat turn: the agent's onChatRecovery answered `continue: false`, so the SDK ends
     * the turn and records the recovery skipped; resuming does not restart it). Absent from older senders: held.
     */
    decision: z.enum(["held", "declined"]).optional(),
    /** A chat turn's recovery: the SDK's attempt number for the incident, and the kind of recovery it declined. */
    attempt: count.optional(),
    recoveryKind: z.enum(["retry", "continue"]).optional(),
    /** The operator's reason for the pause, as the agent holds it; absent when the event is the SDK's own (normalised). */
    reason: z.string().max(2000).optional(),
    until: ms.optional(),
  }),

  // Admin actions (written by the audited admin-rpc path)
  "admin.force_idle": adminBase,
  "admin.trigger_alarm": adminBase,

  // Runtime housekeeping
  /**
   * A schedule's callback ran (`schedule:execute`, first attempt): the alarm fired for it. What the console counts
   * to see an alarm that keeps firing with nothing to do (its rate per agent), never a run of its own. `count`:
   * the firings of this callback the event stands for (alarm-firings.ts ships at most one per ALARM_COALESCE_MS),
   * the last of them at the event's time; absent means 1 (older senders). `scheduleId` is that last firing's.
   */
  "schedule.executed": z.object({
    callback: z.string().min(1).max(200),
    scheduleId: z.string().min(1).max(200),
    count: z.number().int().min(1).max(1_000_000).optional(),
  }),
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
