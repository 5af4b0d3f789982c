/**
 * The one declared mapping from the agents SDK's own state words to the console's (shared through facts.ts: the
 * admin mixin derives an agent's status with it, src/telemetry re-exports it). Ingest projects events
 * with it, reconciliation closes runs with it, and the truth matrix (test/truth) predicts what the console
 * must show from what the SDK's public APIs return. A state the SDK adds later maps to `unknown` until it is
 * declared here, and the console says so rather than guessing.
 */

/**
 * How a run ended, in the console's words. `null` (no outcome) means it is still live. `unknown`: the SDK reported an
 * end in a word this mapping does not know (the SDK's word is kept beside it, as the run's reason).
 */
export const RUN_OUTCOMES = [
  "completed",
  "failed",
  "cancelled",
  "interrupted",
  "recovering",
  "recovered",
  "recovery_skipped",
  "recovery_failed",
  "exhausted",
  "force_idled",
  "ended_unreported",
  "unknown",
] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** What a live run is doing (Tasks report it; other kinds are "running" while live). */
export const RUN_PHASES = ["pending", "running", "waiting", "interrupted"] as const;
export type RunPhase = (typeof RUN_PHASES)[number];

/** An incident's status in the SDK's words (what its records and events say), mapped: stored as `status`. */
export const SDK_INCIDENT_STATUSES = ["open", "recovered", "exhausted", "failed", "skipped"] as const;
export type SdkIncidentStatus = (typeof SDK_INCIDENT_STATUSES)[number];

/**
 * What closed an incident from outside the SDK (an operator's force idle, reconciliation finding the agent no longer
 * recovering it): an overlay stored beside the SDK's word (`closed_by`), never over it.
 */
export const INCIDENT_OVERLAYS = ["force_idled", "ended_unreported"] as const;
export type IncidentOverlay = (typeof INCIDENT_OVERLAYS)[number];

/** An incident's status as the console shows it: the SDK's word, or the overlay while the SDK's word is open. */
// A pure call, not a spread: an agent's bundle, which never reads it, leaves it (and both lists) out.
export const INCIDENT_STATUSES = /* @__PURE__ */ SDK_INCIDENT_STATUSES.concat(INCIDENT_OVERLAYS as never) as unknown as readonly [
  ...typeof SDK_INCIDENT_STATUSES,
  ...typeof INCIDENT_OVERLAYS,
];
export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];

/** A state translated: either an outcome (the run ended) or a phase (it is live), never both. */
export type ConsoleRunState = { outcome: RunOutcome; phase: null } | { outcome: null; phase: RunPhase };

// Marked free of side effects so a bundler drops the tables below that a bundle does not use (a user's agent
// Worker uses two of them): without it, each table's calls would keep it.
const ended = /* @__NO_SIDE_EFFECTS__ */ (outcome: RunOutcome): ConsoleRunState => ({ outcome, phase: null });
const live = /* @__NO_SIDE_EFFECTS__ */ (phase: RunPhase): ConsoleRunState => ({ outcome: null, phase });

/** Managed fibers (`FiberStatus`, `listFibers` / `inspectFiber`). */
export const FIBER_STATUS: Record<"pending" | "running" | "completed" | "aborted" | "interrupted" | "error", ConsoleRunState> = {
  pending: live("pending"),
  running: live("running"),
  completed: ended("completed"),
  error: ended("failed"),
  aborted: ended("cancelled"),
  // The SDK keeps an interrupted managed fiber interrupted until `resolveFiber` (or a recovery hook's result)
  // says otherwise: it is an end state to the SDK, and the console must not call it recovered.
  interrupted: ended("interrupted"),
};

/** Tasks runs (`TaskRunState`, `tasks.list` / `tasks.get`). */
export const TASK_STATE: Record<"pending" | "running" | "waiting" | "completed" | "failed" | "cancelled", ConsoleRunState> = {
  pending: live("pending"),
  running: live("running"),
  waiting: live("waiting"),
  completed: ended("completed"),
  failed: ended("failed"),
  cancelled: ended("cancelled"),
};

/**
 * Chat turns: Think's submission status (`listSubmissions`), which is also the word `chat:turn:finish`
 * reports as its `status` (AIChatAgent and Think alike).
 */
export const CHAT_TURN_STATUS: Record<"pending" | "running" | "completed" | "aborted" | "skipped" | "error" | "cancelled" | "interrupted", ConsoleRunState> = {
  pending: live("pending"),
  running: live("running"),
  completed: ended("completed"),
  error: ended("failed"),
  aborted: ended("cancelled"),
  skipped: ended("cancelled"),
  cancelled: ended("cancelled"),
  interrupted: ended("interrupted"),
};

/** Chat-recovery incident records (`ChatRecoveryIncident.status`, `cf:chat-recovery:incident:*`). */
export const CHAT_RECOVERY_STATUS: Record<"detected" | "scheduled" | "attempting" | "completed" | "skipped" | "exhausted" | "failed", SdkIncidentStatus> = {
  detected: "open",
  scheduled: "open",
  attempting: "open",
  completed: "recovered",
  skipped: "skipped",
  exhausted: "exhausted",
  failed: "failed",
};

/**
 * Looks a state word up in one of the tables above. Unknown words (an SDK newer than this mapping) give null:
 * callers show the SDK's own word and say it is not understood, never a guess.
 */
export function mapSdkState<K extends string, V>(table: Record<K, V>, word: string | null | undefined): V | null {
  return word != null && Object.hasOwn(table, word) ? table[word as K] : null;
}

/**
 * The chat-recovery record status each `chat:recovery:*` event reports (the SDK writes the record, then emits the
 * event): `chat:recovery:attempt` is the record's `attempting`. Ingest reads an event's incident status through
 * this and CHAT_RECOVERY_STATUS, so events and records map the same way.
 */
export const CHAT_RECOVERY_EVENT_STATUS: Record<
  "detected" | "scheduled" | "attempt" | "completed" | "skipped" | "exhausted" | "failed",
  keyof typeof CHAT_RECOVERY_STATUS
> = {
  detected: "detected",
  scheduled: "scheduled",
  attempt: "attempting",
  completed: "completed",
  skipped: "skipped",
  exhausted: "exhausted",
  failed: "failed",
};

/**
 * The reasons the SDK gives when it exhausts a chat recovery (`ChatRecoveryExhaustedContext.reason` in agents 0.32,
 * plus Think's give-up reasons `stable_timeout` and `recovery_error`). The SDK calls this an open string: a word
 * not listed here is simply not recognised as an exhaustion in a record (events say so themselves).
 */
export const CHAT_RECOVERY_EXHAUSTION_REASONS = [
  "max_attempts_exceeded",
  "no_progress_timeout",
  "work_budget_exceeded",
  "recovery_aborted",
  "interrupted_attempts_exceeded",
  "out_of_memory",
  "stable_timeout",
  "recovery_error",
  "max_recovery_window_exceeded",
] as const;

/**
 * A chat-recovery record (`cf:chat-recovery:incident:*`) as the console shows its incident. One sequence needs more
 * than the status word: when the exhausting evaluation runs inside a recovery continuation (a stalled stream), the
 * SDK seals the record `exhausted`, fires `onExhausted`, shows the terminal message, and then the continuation
 * settles and `updateIncident(…, "failed")` rewrites the word to `failed`, keeping the exhaustion's reason (it
 * sends `chat:recovery:failed` without one). The record then says `failed` with an exhaustion reason: the SDK
 * exhausted it, and the console says `exhausted` (with that reason). A failure with any other reason is `failed`.
 */
export function chatRecoveryRecordStatus(record: { status: string; reason?: string | null }): SdkIncidentStatus | null {
  if (record.status === "failed" && record.reason && (CHAT_RECOVERY_EXHAUSTION_REASONS as readonly string[]).includes(record.reason)) return "exhausted";
  return mapSdkState(CHAT_RECOVERY_STATUS, record.status);
}

/**
 * Exhausted is final for the console: once the SDK exhausted an incident, a later status word (the sealed record's
 * `failed` above, or anything after it) does not replace it, and the exhaustion's reason stays the incident's
 * reason. Ingest merges incident status by this rank first, then by time (worker/ingest/projections.ts), so the
 * outcome does not depend on the order events arrive in.
 */
export const INCIDENT_STATUS_RANK: Partial<Record<SdkIncidentStatus, number>> = { exhausted: 1 };

/**
 * A fiber incident (an evicted runFiber or managed fiber), by the fiber's SDK status once recovery has run.
 * An `interrupted` managed fiber is still waiting for `resolveFiber`: nothing recovered it, so the incident is
 * open. A recovery result of `aborted` means the agent chose to drop the work: the recovery was skipped.
 */
export const FIBER_RECOVERY_INCIDENT: Record<keyof typeof FIBER_STATUS, SdkIncidentStatus> = {
  pending: "open",
  running: "open",
  interrupted: "open",
  completed: "recovered",
  error: "failed",
  aborted: "skipped",
};

/** The part of a chat-recovery record (`ChatRecoveryIncident`, `cf:chat-recovery:incident:*`) its status depends on. */
export type ChatRecoveryRecordState = { status: string; reason?: string | null };

/**
 * How a chat turn (one user turn, whatever recovery turns the SDK ran for it) ended, from the SDK's records: the
 * turn's own status (Think's submission status, `listSubmissions`; or what the turn reported) and the chat-recovery
 * record of its incident, while the SDK keeps one. An exhausted recovery is the turn's end (the SDK marks its
 * submission `error`, with the terminal message as the error); a recovery the SDK declined or cancelled
 * (`skipped`) ends it as recovery_skipped. Otherwise the turn's own status says it (CHAT_TURN_STATUS).
 */
export function chatTurnState(turnStatus: string, record?: ChatRecoveryRecordState | null): ConsoleRunState | null {
  if (record) {
    const incident = chatRecoveryRecordStatus(record);
    if (incident === "exhausted") return ended("exhausted");
    if (incident === "skipped") return ended("recovery_skipped");
  }
  return mapSdkState(CHAT_TURN_STATUS, turnStatus);
}

/**
 * The SDK's state table for each kind of run whose state the agent still records: managed fibers
 * (`inspectFiber`), Tasks runs (`tasks.get`) and chat turns (Think's submissions). A plain runFiber keeps no
 * record once it ended; an agent that records its own answers in the managed-fiber words (FiberStatus).
 */
export const RUN_STATE_TABLES = {
  fiber: FIBER_STATUS,
  managed_fiber: FIBER_STATUS,
  task: TASK_STATE,
  chat_turn: CHAT_TURN_STATUS,
} as const satisfies Record<"fiber" | "managed_fiber" | "task" | "chat_turn", Record<string, ConsoleRunState>>;

/** A run's SDK state word, by its kind, in the console's words; null for a word this mapping does not know. */
export function runStateOf(kind: keyof typeof RUN_STATE_TABLES, word: string | null | undefined): ConsoleRunState | null {
  return mapSdkState<string, ConsoleRunState>(RUN_STATE_TABLES[kind], word);
}

/**
 * A managed fiber's incident, by the fiber's status now: the incident status, or null for a word this mapping
 * does not know (the incident then keeps the status it has).
 */
export function fiberIncidentStatusOf(fiberStatus: string | null | undefined): SdkIncidentStatus | null {
  return mapSdkState(FIBER_RECOVERY_INCIDENT, fiberStatus);
}

/** What an agent is doing, as the console shows it (admin status, agent page). */
export const AGENT_STATUSES = ["running", "waiting", "idle", "terminated"] as const;
export type AgentStatus = (typeof AGENT_STATUSES)[number];

/**
 * An agent's status from what the SDK holds for it: `running` while any work is live (a runFiber row, a
 * managed fiber or Tasks run pending or running); else `waiting` while work is parked and will go on (a Tasks
 * run waiting for its wake time, or a managed fiber `interrupted` that the SDK keeps until `resolveFiber`
 * settles it); else `idle`. An agent that derives its own status (SessionAgent) says so itself.
 */
export function agentStatusOf(work: { runRows: number; taskStates: readonly string[]; fiberStatuses: readonly string[] }): Exclude<AgentStatus, "terminated"> {
  const phases = [
    ...work.taskStates.map((w) => mapSdkState(TASK_STATE, w)?.phase ?? null),
    ...work.fiberStatuses.map((w) => mapSdkState(FIBER_STATUS, w)?.phase ?? null),
  ];
  if (work.runRows > 0 || phases.some((p) => p === "running" || p === "pending")) return "running";
  if (phases.includes("waiting") || work.fiberStatuses.some((w) => FIBER_AWAITS_RESOLUTION.has(w))) return "waiting";
  return "idle";
}

/** Managed-fiber statuses the SDK keeps until the agent settles them (`resolveFiber`): parked, not ended for good. */
export const FIBER_AWAITS_RESOLUTION: ReadonlySet<string> = new Set(["interrupted"]);
