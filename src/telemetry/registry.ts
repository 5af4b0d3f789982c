import type { ObservabilityEvent } from "agents/observability";
import { z } from "zod";
import type { IncidentTransition } from "./incident-lifecycle.js";
import {
  adminBase,
  backupBase,
  chatRecoveryBase,
  chatTurnBase,
  count,
  fiberBase,
  ms,
  opBase,
  preview,
  requestIdField,
  runKind,
  sessionStatusBase,
  taskBase,
} from "./payload-parts.js";
import { capField, toPreview } from "./redact.js";
import { byRequest, compact, type FromSdk, fromChatRecovery, fromChatTurn, fromFiber, fromTask, num, str } from "./sdk-payloads.js";
import { CHAT_RECOVERY_EVENT_STATUS, CHAT_RECOVERY_STATUS, type RunOutcome, type RunPhase } from "./sdk-states.js";

/**
 * The event-type registry: one entry per event type, and the only place that says what an event type means. Its
 * payload (zod), the agents-SDK type it normalises (or `sdk: null` for an event of our own), and, as data, what it
 * does elsewhere: to incidents, runs and sessions, its timeline tone, its chart series, its alert candidacy. The
 * rooms read these fields (through the contract) rather than keep tables of their own; words stay in console/.
 *
 * Adding an event type: one entry here, plus its test. `payload`, `sdk` and `tone` are required, so the typecheck
 * asks for each decision; an optional fact left out means "no effect" (documented on EventEntry).
 */

/** How an event reads on a timeline; console/ says how each looks. `null`: neutral. */
export type Tone = "bad" | "warn" | "ok" | null;

/** The statuses a session's projection takes from its events (the store lists sessions by them). */
export const SESSION_STATUSES = ["running", "idle", "rescheduled", "terminated", "error", "ended_unreported"] as const;
export type SessionStatusWord = (typeof SESSION_STATUSES)[number];

/**
 * An agents-SDK event type, as the SDK's own union declares it, so a misspelt or renamed type fails the typecheck.
 * agents 0.32 publishes `task:*` without declaring it in that union (see diagnostics.ts).
 */
export type SdkEventType = ObservabilityEvent["type"] | `task:${string}`;

/**
 * What an event says of its run's state, where a fixed answer exists (src/store/run-rows.ts reads it; events
 * whose effect depends on the SDK's own record, such as a managed fiber's status, are decided there by sdk-states.ts).
 */
export type RunEffect = {
  /** The run's outcome after this event (fibers, Tasks, the user's chat turn for chat.recovery.*). */
  readonly outcome?: RunOutcome;
  /** The outcome is an end: the run's ended_at is the event's time (absent: it may still recover or go on). */
  readonly ends?: true;
  /** For a chat turn's internal fiber: the turn's outcome (the turn ended when its fiber did). */
  readonly turnOutcome?: RunOutcome;
  /** A managed fiber's status after this event is what the SDK records (`fiberStatus`, read by the agent side). */
  readonly settlesManaged?: true;
  /** A Tasks run's live phase. */
  readonly phase?: RunPhase;
};

type Facts = {
  /** The zod schema of the payload: the envelope validates every event of this type with it. */
  readonly payload: z.ZodType;
  readonly tone: Tone;
  /** How an event of this type moves the incident it carries the id of (absent: not at all). See incident-lifecycle.ts. */
  readonly incident?: IncidentTransition;
  readonly run?: RunEffect;
  /** The status a session takes from it (absent: none). */
  readonly session?: SessionStatusWord;
  /** The chart series it adds to, when that is not its own type (several types make one series). */
  readonly series?: string;
  /** Its rollup dimension is its `reason` (for "top reasons"); else it rolls up under ''. */
  readonly reasonDim?: true;
  /** It is a schedule's callback firing: what the console counts to see an alarm that keeps firing. */
  readonly alarmFiring?: true;
  /** An op alert candidate: an event with its op id that can make the op ambiguous (incident candidates are the `incident` movers). */
  readonly opAlert?: true;
};

/** One event type: its facts, and where it comes from (the SDK's type and its builder, or `null`: ours). */
export type EventEntry = Facts & ({ readonly sdk: null } | { readonly sdk: SdkEventType; readonly fromSdk: FromSdk });

/** A chat-recovery event: the record status the SDK writes before it (CHAT_RECOVERY_EVENT_STATUS), mapped. */
const chat = /* @__NO_SIDE_EFFECTS__ */ <S extends "detected" | "attempt" | "ended">(word: keyof typeof CHAT_RECOVERY_EVENT_STATUS, recovery: S) =>
  ({ kind: "status", status: CHAT_RECOVERY_STATUS[CHAT_RECOVERY_EVENT_STATUS[word]], recovery }) as const;

export const EVENT_REGISTRY = {
  // Fiber lifecycle (agents SDK runFiber / startFiber)
  "fiber.started": { payload: fiberBase, sdk: "fiber:run:started", fromSdk: fromFiber, tone: null },
  "fiber.completed": {
    payload: fiberBase,
    sdk: "fiber:run:completed",
    fromSdk: fromFiber,
    tone: "ok",
    run: { outcome: "completed", ends: true, turnOutcome: "completed", settlesManaged: true },
  },
  "fiber.failed": {
    payload: fiberBase.extend({ error: z.string() }),
    sdk: "fiber:run:failed",
    fromSdk: fromFiber,
    tone: "bad",
    run: { outcome: "failed", ends: true, turnOutcome: "failed", settlesManaged: true },
  },
  "fiber.interrupted": {
    payload: fiberBase,
    sdk: "fiber:run:interrupted",
    fromSdk: fromFiber,
    tone: "warn",
    run: { outcome: "interrupted", turnOutcome: "interrupted" },
  },
  /** Our own: a stash() checkpoint, so the console can show the last-known snapshot after the row is gone. */
  "fiber.stashed": {
    payload: z.object({ fiberName: z.string(), snapshot: preview, kind: runKind.optional(), rootRequestId: requestIdField.optional() }),
    sdk: null,
    tone: null,
  },

  // Fiber recovery after eviction
  "fiber.recovery.detected": {
    payload: fiberBase,
    sdk: "fiber:recovery:detected",
    fromSdk: fromFiber,
    tone: null,
    incident: { kind: "status", status: "open", recovery: "detected" },
    run: { outcome: "interrupted", turnOutcome: "interrupted" },
  },
  "fiber.recovery.attempt": {
    payload: fiberBase,
    sdk: "fiber:recovery:attempt",
    fromSdk: fromFiber,
    tone: "warn",
    incident: { kind: "status", status: "open", recovery: "attempt" },
    run: { outcome: "recovering", turnOutcome: "interrupted" },
    series: "recovery",
  },
  "fiber.recovery.handled": {
    payload: fiberBase.extend({
      status: z.string().optional(),
      /**
       * What a plain runFiber's `onFiberRecovered` did, as the tail could tell from the SDK's own messages of that
       * invocation (tail.ts): "resumed" when a run of the same name started while the hook ran (`resumedAs` is its
       * fiber id), else "unknown" (the SDK publishes nothing that tells dropped work from work resumed later).
       * Absent when the sender did not look (the outbox path).
       */
      hook: z.enum(["resumed", "unknown"]).optional(),
      resumedAs: z.string().max(200).optional(),
      /**
       * When the SDK called the hook (its `fiber:recovery:attempt` in the same invocation), where the tail saw it: a
       * managed fiber's settlement by the hook happens from then on, and the tail's message does not say which.
       */
      hookStartedAt: z.number().optional(),
    }),
    sdk: "fiber:recovery:handled",
    fromSdk: fromFiber,
    tone: "ok",
    incident: { kind: "fiber_record", recovery: "ended" },
    run: { outcome: "recovered", ends: true, turnOutcome: "interrupted", settlesManaged: true },
  },
  "fiber.recovery.skipped": {
    payload: fiberBase.extend({ reason: z.string() }),
    sdk: "fiber:recovery:skipped",
    fromSdk: fromFiber,
    tone: null,
    incident: { kind: "status", status: "skipped", recovery: "ended" },
    run: { outcome: "recovery_skipped", turnOutcome: "interrupted" },
    reasonDim: true,
  },
  "fiber.recovery.failed": {
    payload: fiberBase.extend({ error: z.string(), reason: z.string().optional() }),
    sdk: "fiber:recovery:failed",
    fromSdk: fromFiber,
    tone: "bad",
    incident: { kind: "status", status: "failed", recovery: "ended" },
    run: { outcome: "recovery_failed", turnOutcome: "interrupted", settlesManaged: true },
    reasonDim: true,
  },
  /**
   * Our own: the agent settled an interrupted managed fiber with `resolveFiber` (the SDK emits nothing for it).
   * `status` is the fiber's status afterwards (FiberStatus word), `error` its error message then, `settledAt` when
   * the SDK records it settled. Its record says how the incident ended.
   */
  "fiber.resolved": {
    payload: fiberBase.extend({ status: z.string().min(1).max(50), error: z.string().optional(), settledAt: ms.optional() }),
    sdk: null,
    tone: null,
    incident: { kind: "fiber_record", recovery: null },
    run: { settlesManaged: true },
  },

  // Chat turn recovery (AIChatAgent / Think)
  "chat.recovery.detected": {
    payload: chatRecoveryBase,
    sdk: "chat:recovery:detected",
    fromSdk: fromChatRecovery,
    tone: null,
    incident: chat("detected", "detected"),
  },
  "chat.recovery.scheduled": {
    payload: chatRecoveryBase,
    sdk: "chat:recovery:scheduled",
    fromSdk: fromChatRecovery,
    tone: null,
    incident: chat("scheduled", "detected"),
    run: { outcome: "recovering" },
  },
  "chat.recovery.attempt": {
    payload: chatRecoveryBase,
    sdk: "chat:recovery:attempt",
    fromSdk: fromChatRecovery,
    tone: "warn",
    incident: chat("attempt", "attempt"),
    series: "recovery",
  },
  "chat.recovery.completed": {
    payload: chatRecoveryBase,
    sdk: "chat:recovery:completed",
    fromSdk: fromChatRecovery,
    tone: "ok",
    incident: chat("completed", "ended"),
  },
  "chat.recovery.skipped": {
    payload: chatRecoveryBase.extend({ reason: z.string().optional() }),
    sdk: "chat:recovery:skipped",
    fromSdk: fromChatRecovery,
    tone: null,
    incident: chat("skipped", "ended"),
    run: { outcome: "recovery_skipped", ends: true },
    reasonDim: true,
  },
  "chat.recovery.exhausted": {
    payload: chatRecoveryBase.extend({
      reason: z.string().min(1),
      partialText: preview.optional(),
      partialParts: z.object({ count, bytes: count }).optional(),
      terminalMessage: preview.optional(),
    }),
    sdk: "chat:recovery:exhausted",
    fromSdk: fromChatRecovery,
    tone: "bad",
    incident: chat("exhausted", "ended"),
    run: { outcome: "exhausted", ends: true },
    reasonDim: true,
  },
  /**
   * `sealed`: the SDK reported this after it had already exhausted the incident (a recovery turn the exhaustion
   * aborted then fails): the incident stays exhausted, as the SDK's give-up said.
   */
  "chat.recovery.failed": {
    payload: chatRecoveryBase.extend({ reason: z.string().optional(), sealed: z.boolean().optional() }),
    sdk: "chat:recovery:failed",
    fromSdk: fromChatRecovery,
    tone: "bad",
    incident: chat("failed", "ended"),
    reasonDim: true,
  },
  "chat.context.compacted": {
    payload: z.object({ mode: z.enum(["proactive", "reactive"]), shortened: z.boolean(), attempt: count.optional() }),
    sdk: "chat:context:compacted",
    fromSdk: ({ type, p }) => ({
      type,
      payload: compact({ mode: p.reason === "reactive" ? "reactive" : "proactive", shortened: p.shortened === true, attempt: num(p.attempt) }),
      corr: byRequest(p),
    }),
    tone: null,
  },
  "chat.transcript.repaired": {
    payload: z.object({ removedToolCalls: count, normalizedInputs: count, toolCallIds: z.array(z.string()).max(100).optional() }),
    sdk: "chat:transcript:repaired",
    fromSdk: ({ type, p }) => ({
      type,
      payload: compact({
        removedToolCalls: num(p.removedToolCalls) ?? 0,
        normalizedInputs: num(p.normalizedInputs) ?? 0,
        toolCallIds: Array.isArray(p.toolCallIds) ? p.toolCallIds.filter((x): x is string => typeof x === "string").slice(0, 100) : undefined,
      }),
      corr: byRequest(p),
    }),
    tone: null,
  },
  "chat.stream.stalled": {
    payload: z.object({ timeoutMs: ms }),
    sdk: "chat:stream:stalled",
    fromSdk: ({ type, p }) => ({ type, payload: { timeoutMs: num(p.timeoutMs) ?? 0 }, corr: byRequest(p) }),
    tone: "warn",
  },

  // Tasks (agents 0.32 `this.tasks`; Think and AIChatAgent run chat turns on them). Steps are not shipped: too many.
  "task.accepted": { payload: taskBase, sdk: "task:accepted", fromSdk: fromTask, tone: null, run: { phase: "pending" } },
  "task.attempt.started": { payload: taskBase, sdk: "task:attempt:started", fromSdk: fromTask, tone: null, run: { phase: "running" } },
  /** The attempt was cut off (eviction, crash); the SDK replays the handler in a new attempt. */
  "task.attempt.interrupted": { payload: taskBase, sdk: "task:attempt:interrupted", fromSdk: fromTask, tone: "warn", run: { phase: "interrupted" } },
  "task.waiting": {
    payload: taskBase.extend({ reason: z.string().max(500).optional(), wakeAt: ms.optional() }),
    sdk: "task:waiting",
    fromSdk: fromTask,
    tone: null,
    run: { phase: "waiting" },
  },
  "task.completed": { payload: taskBase, sdk: "task:completed", fromSdk: fromTask, tone: "ok", run: { outcome: "completed", ends: true } },
  /** `error` is what the SDK's event carries (agents 0.32: the error's name); `errorMessage` is its message, as the run records it (`tasks.get`). */
  "task.failed": {
    payload: taskBase.extend({ error: z.string(), errorMessage: z.string().optional() }),
    sdk: "task:failed",
    fromSdk: fromTask,
    tone: "bad",
    run: { outcome: "failed", ends: true },
  },
  "task.cancelled": {
    payload: taskBase.extend({ reason: z.string().optional() }),
    sdk: "task:cancelled",
    fromSdk: fromTask,
    tone: null,
    run: { outcome: "cancelled", ends: true },
  },

  // Chat turns (AIChatAgent / Think `chat:turn:start|finish`); the turn is keyed by corr.requestId.
  "chat.turn.started": { payload: chatTurnBase, sdk: "chat:turn:start", fromSdk: fromChatTurn, tone: null },
  /**
   * `status` is the SDK's own word for how the turn ended (completed, error, aborted, …), mapped by sdk-states.ts
   * CHAT_TURN_STATUS. Where the SDK's recovery of the user's turn stood then, as the agent saw it: `recovering` (a
   * recovery was already scheduled: this status is not the user's turn's end) or `sealed` (recovery was already
   * exhausted: the turn ended with that).
   */
  "chat.turn.finished": {
    payload: chatTurnBase.extend({
      status: z.string().min(1).max(100),
      durationMs: ms.optional(),
      error: z.string().optional(),
      recovering: z.boolean().optional(),
      sealed: z.boolean().optional(),
    }),
    sdk: "chat:turn:finish",
    fromSdk: fromChatTurn,
    tone: null,
  },

  /**
   * Written by the audited admin path when force idle ends a run (row removed, managed fiber or task cancelled,
   * turn aborted), so its projection closes. `stopped` says whether in-memory work was stopped too: a plain
   * runFiber callback without a hook keeps running until it returns or the agent is evicted.
   */
  "run.force_idled": {
    payload: z.object({
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
    sdk: null,
    tone: "warn",
  },
  /** Written by force idle for each chat-recovery incident record it clears. */
  "incident.force_idled": {
    payload: z.object({ reason: z.string() }),
    sdk: null,
    tone: "warn",
    incident: { kind: "closed_by", overlay: "force_idled", recovery: "ended" },
  },
  /**
   * Written by the console's reconciliation when events could not tell: it asked the agent (admin RPC) and
   * records what it found. `finding` closes the projection ("ended_unreported", "not_recovering") or
   * confirms it ("confirmed_running", "confirmed_open").
   */
  "run.reconciled": {
    payload: z.object({
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
    sdk: null,
    tone: "warn",
  },
  /**
   * `fiberStatus`: for a fiber incident, the managed fiber's status the agent records now (FiberStatus word),
   * mapped to the incident's status by src/telemetry/sdk-states.ts. Reconciliation: the fiber's SDK record when
   * the agent still keeps one, else the overlay when the agent said it is not recovering the incident any more.
   */
  "incident.reconciled": {
    payload: z.object({
      finding: z.enum(["not_recovering", "confirmed_open"]),
      detail: z.string().max(2000).optional(),
      fiberStatus: z.string().min(1).max(50).optional(),
    }),
    sdk: null,
    tone: "warn",
    incident: { kind: "reconciled", overlay: "ended_unreported", recovery: null },
  },
  /**
   * Reconciliation found the agent idle while the session (corr.sessionName) still showed running: its end was not
   * reported. `lastEventAt`: the time of the session's last event the judgement saw. The finding's status stands
   * only until an event from after that time, whenever it arrives: what happened outranks "its end was not reported".
   */
  "session.reconciled": {
    payload: z.object({
      finding: z.literal("ended_unreported"),
      detail: z.string().max(2000).optional(),
      lastEventAt: z.number().int().positive().optional(),
    }),
    sdk: null,
    tone: null,
    session: "ended_unreported",
  },

  // Session status (derived in the agent, reported here). A session turn's recovery: rescheduled is an attempt;
  // running again is still open; idle is recovered; an error is the session giving up (its runtime's exhaustion).
  "session.status_running": {
    payload: sessionStatusBase,
    sdk: null,
    tone: null,
    incident: { kind: "status", status: "open", recovery: null },
    session: "running",
  },
  "session.status_idle": {
    payload: sessionStatusBase,
    sdk: null,
    tone: null,
    incident: { kind: "status", status: "recovered", recovery: "ended" },
    session: "idle",
  },
  "session.status_rescheduled": {
    payload: sessionStatusBase.extend({ recoveryCount: count.optional() }),
    sdk: null,
    tone: "warn",
    incident: { kind: "status", status: "open", recovery: "attempt" },
    session: "rescheduled",
  },
  "session.status_terminated": { payload: sessionStatusBase, sdk: null, tone: null, session: "terminated" },
  /** `reason` is a short code for grouping (e.g. max_turn_recoveries); `error` says it in words. */
  "session.error": {
    payload: sessionStatusBase.extend({ error: z.string().max(4000), reason: z.string().min(1).max(200).optional() }),
    sdk: null,
    tone: "bad",
    incident: { kind: "status", status: "exhausted", recovery: "ended" },
    session: "error",
    reasonDim: true,
  },

  // Cost-op ledger
  "op.started": { payload: opBase, sdk: null, tone: null },
  "op.completed": { payload: opBase.extend({ resultRef: z.string().max(500).optional() }), sdk: null, tone: "ok" },
  "op.ambiguous": { payload: opBase.extend({ detail: z.string().max(4000) }), sdk: null, tone: "bad", opAlert: true },
  /** `resultRef` points at the result (verified_ran) or the re-run's (reissued); `reason` is the person's, when one resolved it. */
  "op.resolved": {
    payload: opBase.extend({
      resolution: z.enum(["verified_ran", "verified_not_ran", "reissued", "abandoned"]),
      resultRef: z.string().max(500).optional(),
      reason: z.string().max(2000).optional(),
    }),
    sdk: null,
    tone: "ok",
  },

  /**
   * Model tokens one call spent, as the agent reported them (see usage.ts). corr.incidentId is set when the
   * call ran inside a recovery attempt (the telemetry stamps it), so the console sums what recovery re-spent.
   * `attempt` is that recovery's attempt number; `turnSeq` names the session turn when the agent gave one.
   */
  "model.usage": {
    payload: z.object({
      inputTokens: count,
      outputTokens: count,
      model: z.string().min(1).max(200).optional(),
      attempt: count.optional(),
      turnSeq: count.optional(),
    }),
    sdk: null,
    tone: null,
  },

  // Workspace backups
  "backup.created": { payload: backupBase.extend({ expiresAt: ms, bytes: count.optional() }), sdk: null, tone: null },
  "backup.restored": { payload: backupBase, sdk: null, tone: null },
  "backup.expired": { payload: backupBase, sdk: null, tone: null },

  // Recovery paused by an operator (schema version 2). paused / resumed are sent by the audited admin path, with
  // the target as source; skipped_paused by the agent, for each recovery the pause held back (the SDK's own
  // fiber:recovery:failed of a paused runFiber, normalised; the mixin's record for a managed fiber).
  "recovery.paused": {
    payload: z.object({
      actor: z.string().min(1).max(320),
      reason: z.string().min(1).max(2000),
      /** Epoch ms when the pause stops applying by itself. */
      until: ms,
    }),
    sdk: null,
    tone: "warn",
  },
  "recovery.resumed": {
    payload: z.object({
      actor: z.string().min(1).max(320),
      reason: z.string().min(1).max(2000),
      /** Fibers the resume recovered (their ids, capped), as the agent read them back. */
      recovered: z.array(z.string().max(200)).max(100),
    }),
    sdk: null,
    tone: "ok",
  },
  /** The incident stays open: its run is kept for after the pause. */
  "recovery.skipped_paused": {
    payload: z.object({
      kind: runKind,
      /** The fiber's name; for a chat turn, the SDK's name of the turn's fiber (`<CHAT_TURN_NAME>:<requestId>`) or the class's. */
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
    sdk: null,
    tone: "warn",
    incident: { kind: "status", status: "open", recovery: null },
  },

  // Admin actions (written by the audited admin-rpc path)
  "admin.force_idle": { payload: adminBase, sdk: null, tone: null },
  "admin.trigger_alarm": { payload: adminBase, sdk: null, tone: null },

  // Runtime housekeeping
  /**
   * A schedule's callback ran (`schedule:execute`, first attempt): the alarm fired for it. What the console counts
   * to see an alarm that keeps firing with nothing to do (its rate per agent), never a run of its own. `count`:
   * the firings of this callback the event stands for (alarm-firings.ts ships at most one per ALARM_COALESCE_MS),
   * the last of them at the event's time; absent means 1 (older senders). `scheduleId` is that last firing's.
   */
  "schedule.executed": {
    payload: z.object({
      callback: z.string().min(1).max(200),
      scheduleId: z.string().min(1).max(200),
      count: z.number().int().min(1).max(1_000_000).optional(),
    }),
    sdk: "schedule:execute",
    fromSdk: ({ type, p }) => ({
      type,
      payload: { callback: (str(p.callback) ?? "(unknown)").slice(0, 200) || "(unknown)", scheduleId: (str(p.id) ?? "(unknown)").slice(0, 200) || "(unknown)" },
      corr: {},
    }),
    tone: null,
    alarmFiring: true,
  },
  "alarm.memory_limit_reset": {
    payload: z.object({ strikes: count, limit: count, sealed: z.boolean(), error: z.string() }),
    sdk: "alarm:memory_limit_reset",
    fromSdk: ({ type, p, mask }) => ({
      type,
      payload: { strikes: num(p.strikes) ?? 0, limit: num(p.limit) ?? 0, sealed: p.sealed === true, error: capField(str(p.error) ?? "", undefined, mask) },
      corr: {},
    }),
    tone: null,
  },

  /** Any agents-SDK event we do not model yet: kept, never dropped (normalize.ts builds it for every unmapped SDK type). */
  "sdk.event": {
    payload: z.object({ sdkType: z.string().min(1).max(200), data: preview }),
    sdk: null,
    tone: null,
  },

  /**
   * Stands in for an event too large to ship (over MAX_EVENT_BYTES as JSON). It keeps the original's id,
   * time, source and correlation ids, so the fact that it happened reaches the console and its timelines.
   */
  "event.too_large": {
    payload: z.object({
      originalType: z.string().min(1).max(200),
      /** UTF-8 bytes of the original event's JSON. */
      bytes: count,
      /** The limit it exceeded. */
      limit: count,
      /** The masked start of the original payload. */
      preview: preview.optional(),
    }),
    sdk: null,
    tone: null,
  },
} as const satisfies Record<string, EventEntry>;

/** Our payload for an SDK type the registry does not map (and that is not noise): kept as `sdk.event`. */
export const fromUnmodelled: FromSdk = ({ raw, p, mask }) => ({
  type: "sdk.event",
  payload: { sdkType: raw.type.slice(0, 200) || "(empty)", data: toPreview(p, undefined, mask) },
  corr: byRequest(p),
});

/**
 * SDK event types that fire on every RPC, message, state change or task step
 * (measured: ~12 per chat turn). Not shipped: they would drown the signal.
 * Their failure and interruption siblings (stream:errored, task:attempt:interrupted, …) are shipped.
 *
 * Tasks: a run's own lifecycle is shipped (task.*); its steps are not. `task:step:*` fires for every step of
 * every attempt (and again on replay), while what a step tells an on-call person is already where it matters:
 * `task:attempt:interrupted` carries the step the attempt was cut off in, and the admin RPC shows a live run's
 * current step. `task:deleted` is retention housekeeping of a run that already settled (runs started with
 * `retain: false`, every chat turn among them, are deleted right after their terminal event): it says nothing
 * about how the run ended.
 *
 * Schedules: `schedule:execute` is shipped (`schedule.executed`, one per callback the alarm runs): it is how the
 * console sees an alarm that keeps firing with nothing to do. `schedule:create` is not (execute says it all).
 */
export const NOISY_SDK_TYPES: ReadonlySet<string> = new Set([
  "rpc",
  "state:update",
  "message:request",
  "message:response",
  "connect",
  "disconnect",
  "task:step:started",
  "task:step:completed",
  "task:step:retry",
  "task:deleted",
  "session:message:appended",
  "session:message:updated",
  "stream:opened",
  "stream:closed",
  "stream:deleted",
  "queue:create",
  "schedule:create",
]);
