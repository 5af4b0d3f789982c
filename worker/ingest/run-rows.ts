import * as schema from "../../src/store/schema";
import type { SqlRow } from "../../src/store/sql-names";
import { CHAT_TURN_STATUS, isInternalSdkName, mapSdkState, type RunKind, type RunOutcome, type TelemetryEvent } from "../../src/telemetry";
import { stampColumns } from "./merge";

/**
 * What an event says about a run (a fiber_runs row): which run (kind + id), and which of its facts. Pure;
 * merging is merge.ts's job. Every kind reaches an outcome that says how it ended:
 *
 * - fiber / managed_fiber: completed | failed | interrupted, then its recovery (recovering, recovered,
 *   recovery_skipped, recovery_failed), as before runs had kinds;
 * - task: completed | failed | cancelled. An interrupted attempt is not an end (the SDK replays it): it is
 *   the task's `phase`, as are pending, running and waiting;
 * - chat_turn: ONE run per user turn, keyed by its request id. The SDK recovers an interrupted or stalled turn by
 *   running new turns under their own request ids; the agent's telemetry names the user turn each of them (and
 *   their fibers, Tasks carriers and chat-recovery events) runs for (`rootRequestId`, src/telemetry/chat-turns.ts),
 *   and they fold into it: a recovery turn's start makes it live again and counts an attempt (`turnAttempt`: 2 for
 *   the first recovery). Its outcome: completed | failed | cancelled from chat.turn.finished's status;
 *   interrupted when its internal fiber was; recovering once a recovery is scheduled (a finish the SDK already
 *   routed into recovery says so, `recovering`); exhausted when the SDK gave up (chat.recovery.exhausted: the
 *   reason, and the terminal message the user saw as the error; what the SDK reports after that is `sealed` and
 *   changes nothing); recovery_skipped when it declined to recover. The SDK's internal machinery (chat-turn
 *   fibers, the Task carrying a turn, recovery Tasks) never makes a run of its own.
 * - any kind: force_idled (run.force_idled; for a chat turn, what the SDK records for it when the console read it
 *   back, `sdkState`), ended_unreported (run.reconciled).
 */

export type RunRow = SqlRow<typeof schema.fiberRuns>;

/** How chat.turn.finished's `status` (the SDK's word) ends the turn; any other word is kept as the reason. */
const TURN_STATUS: Record<string, "completed" | "failed" | "cancelled" | "interrupted"> = {
  completed: "completed",
  error: "failed",
  aborted: "cancelled",
  skipped: "cancelled",
  cancelled: "cancelled",
  interrupted: "interrupted",
};

/** What a fiber event says about the run's outcome (fiber kinds). */
const FIBER_OUTCOME: Partial<Record<TelemetryEvent["type"], string>> = {
  "fiber.completed": "completed",
  "fiber.failed": "failed",
  "fiber.interrupted": "interrupted",
  "fiber.recovery.detected": "interrupted",
  "fiber.recovery.attempt": "recovering",
  "fiber.recovery.handled": "recovered",
  "fiber.recovery.skipped": "recovery_skipped",
  "fiber.recovery.failed": "recovery_failed",
};
const FIBER_ENDED = new Set<TelemetryEvent["type"]>(["fiber.completed", "fiber.failed", "fiber.recovery.handled"]);

/** The same fiber events for a chat turn's internal fiber: the turn ended when its fiber did. */
const TURN_FIBER_OUTCOME: Partial<Record<TelemetryEvent["type"], string>> = {
  "fiber.completed": "completed",
  "fiber.failed": "failed",
  "fiber.interrupted": "interrupted",
  "fiber.recovery.detected": "interrupted",
  "fiber.recovery.attempt": "interrupted",
  "fiber.recovery.handled": "interrupted",
  "fiber.recovery.skipped": "interrupted",
  "fiber.recovery.failed": "interrupted",
};

/** A Tasks run's live states, by event. */
const TASK_PHASE: Partial<Record<TelemetryEvent["type"], string>> = {
  "task.accepted": "pending",
  "task.attempt.started": "running",
  "task.attempt.interrupted": "interrupted",
  "task.waiting": "waiting",
};
const TASK_OUTCOME: Partial<Record<TelemetryEvent["type"], string>> = {
  "task.completed": "completed",
  "task.failed": "failed",
  "task.cancelled": "cancelled",
};

/** The facts one event contributes; everything not said is null (a merge ignores it). */
type Facts = {
  kind: RunKind;
  runId: string;
  name?: string | null;
  definition?: string | null;
  attempt?: number | null;
  startedAt?: number | null;
  /** `value: null`: live again (a chat turn's recovery turn started), superseding an earlier outcome. */
  outcome?: { value: string | null; endedAt: number | null; error?: string | null; reason?: string | null; fallback?: boolean };
  phase?: { value: string; wakeAt?: number | null; step?: string | null };
  snapshot?: { preview: string; bytes: number };
  confirmedAt?: number;
  /** Reconciliation only observes: it never moves last_seen (see schema.fiberRuns). */
  observed?: boolean;
};

type P = Record<string, unknown>;
const s = (v: unknown): string | null => (typeof v === "string" && v ? v : null);
const n = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null);

/** The run an event is about, and its facts; null when it is about none. */
function factsOf(e: TelemetryEvent): Facts | null {
  const c = e.corr;
  const p = e.payload as P;
  if (e.type.startsWith("fiber.")) {
    const fiberName = s(p.fiberName);
    const named = fiberName && fiberName !== "(unnamed)" ? fiberName : null;
    const snapshot = e.type === "fiber.stashed" ? (p.snapshot as { preview: string; bytes: number }) : undefined;
    if (p.kind === "chat_turn" && c.requestId) {
      const outcome = TURN_FIBER_OUTCOME[e.type];
      const root = s(p.rootRequestId);
      return {
        kind: "chat_turn", runId: root ?? c.requestId, name: root ? null : "chat turn",
        startedAt: e.type === "fiber.started" && !root ? e.time : null,
        outcome: outcome ? { value: outcome, endedAt: e.time, error: s(p.error) } : undefined,
        snapshot,
      };
    }
    if (!c.fiberId) return null;
    const outcome = FIBER_OUTCOME[e.type];
    const kind: RunKind = p.kind === "managed_fiber" || p.managed === true ? "managed_fiber" : "fiber";
    return {
      kind, runId: c.fiberId, name: named,
      startedAt: e.type === "fiber.started" ? e.time : null,
      outcome: outcome ? { value: outcome, endedAt: FIBER_ENDED.has(e.type) ? e.time : null, error: s(p.error), reason: e.type === "fiber.recovery.skipped" || e.type === "fiber.recovery.failed" ? s(p.reason) : null } : undefined,
      snapshot,
    };
  }
  if (e.type.startsWith("task.")) {
    // A Task that only carries a chat turn is that turn (its request id, from the agent); the SDK's other machinery
    // (a chat recovery's transport, …) is evidence on timelines, never a run.
    if (p.kind === "chat_turn") return c.requestId ? carrierFacts(e, c.requestId, p) : null;
    if (!c.taskId || p.internal === true || isInternalSdkName(s(p.definition) ?? "")) return null;
    const phase = TASK_PHASE[e.type];
    const outcome = TASK_OUTCOME[e.type];
    return {
      kind: "task", runId: c.taskId, name: s(p.definition), definition: s(p.definition), attempt: n(p.attempt),
      startedAt: e.type === "task.attempt.started" ? e.time : null,
      phase: phase ? { value: phase, wakeAt: n(p.wakeAt), step: s(p.step) } : undefined,
      outcome: outcome ? { value: outcome, endedAt: e.time, error: e.type === "task.failed" ? s(p.error) : null, reason: e.type === "task.cancelled" ? s(p.reason) : null } : undefined,
    };
  }
  if (e.type === "chat.turn.started" || e.type === "chat.turn.finished") {
    if (!c.requestId) return null;
    const trigger = s(p.trigger);
    const root = s(p.rootRequestId);
    if (e.type === "chat.turn.started") return turnStart(e, c.requestId, root, trigger, p);
    const status = s(p.status) ?? "unknown";
    const base = { kind: "chat_turn" as const, runId: root ?? c.requestId, name: root ? null : trigger ? `chat turn (${trigger})` : "chat turn" };
    // After the SDK gave up on the turn, what its aborted recovery turn reports changes nothing.
    if (p.sealed === true) return base;
    if (p.recovering === true) return { ...base, outcome: { value: "recovering", endedAt: null } };
    const value = Object.hasOwn(TURN_STATUS, status) ? TURN_STATUS[status]! : "completed";
    const durationMs = n(p.durationMs);
    return {
      ...base,
      // Without its start event, the turn's own duration still says when it started.
      startedAt: durationMs !== null && !root ? e.time - durationMs : null,
      outcome: { value, endedAt: e.time, error: s(p.error), reason: status === value || (status === "error" && value === "failed") ? null : status },
    };
  }
  if (e.type.startsWith("chat.recovery.")) {
    // Only where the agent named the user's turn: an incident's request id may be one of its recovery turns.
    const root = s(p.rootRequestId);
    if (!root) return null;
    const run = { kind: "chat_turn" as const, runId: root };
    if (e.type === "chat.recovery.scheduled") return { ...run, outcome: { value: "recovering", endedAt: null } };
    if (e.type === "chat.recovery.skipped") return { ...run, outcome: { value: "recovery_skipped", endedAt: e.time, reason: s(p.reason) } };
    if (e.type === "chat.recovery.exhausted") {
      const terminal = (p.terminalMessage as { preview?: unknown } | undefined)?.preview;
      return { ...run, outcome: { value: "exhausted", endedAt: e.time, reason: s(p.reason), error: s(terminal) } };
    }
    return null;
  }
  if (e.type === "run.force_idled") {
    const pl = e.payload;
    // A chat turn read back after force idle has the SDK's own record of how it ended (a Think submission's `aborted`,
    // an AIChatAgent turn's record gone once it ended): that word, in the console's, is its outcome.
    const value = pl.kind === "chat_turn" ? (chatTurnForceIdled(pl.sdkState) ?? "force_idled") : "force_idled";
    return {
      kind: pl.kind, runId: pl.runId, name: pl.name ?? null,
      outcome: { value, endedAt: e.time, reason: pl.stopped ? pl.reason : `${pl.reason} (its in-memory work was not stopped)` },
    };
  }
  if (e.type === "run.reconciled") {
    const pl = e.payload;
    if (pl.finding === "confirmed_running") return { kind: pl.kind, runId: pl.runId, confirmedAt: e.time, observed: true };
    return { kind: pl.kind, runId: pl.runId, outcome: { value: "ended_unreported", endedAt: e.time, reason: pl.detail ?? null, fallback: true }, observed: true };
  }
  return null;
}

/**
 * A chat turn's start: the user's own turn (run 1), or one of its recovery turns (`root`), which makes the user's
 * turn live again and counts its attempt. A recovery turn's name and start time never replace the user turn's.
 */
function turnStart(e: TelemetryEvent, requestId: string, root: string | null, trigger: string | null, p: P): Facts {
  if (!root) return { kind: "chat_turn", runId: requestId, name: trigger ? `chat turn (${trigger})` : "chat turn", startedAt: e.time, attempt: 1 };
  return { kind: "chat_turn", runId: root, attempt: n(p.turnAttempt), outcome: { value: null, endedAt: null } };
}

/**
 * The Task carrying a chat turn, once the agent named its turn: for SDKs that report no chat:turn events (the
 * agent ships the carrier's acceptance then), its acceptance is the turn's start; its failure or cancellation
 * ends the turn. Its other events (an interrupted attempt, …) are on the turn's timeline only: the turn's
 * fiber says the same.
 */
function carrierFacts(e: TelemetryEvent, requestId: string, p: P): Facts | null {
  const root = s(p.rootRequestId);
  if (e.type === "task.accepted") return turnStart(e, requestId, root, null, p);
  const runId = root ?? requestId;
  if (e.type === "task.failed") return { kind: "chat_turn", runId, outcome: { value: "failed", endedAt: e.time, error: s(p.error) } };
  if (e.type === "task.cancelled") return { kind: "chat_turn", runId, outcome: { value: "cancelled", endedAt: e.time, reason: s(p.reason) } };
  return null;
}

/**
 * How a chat turn force idle stopped ended, by what the SDK records when the console read it back: a submission's
 * end state through the one mapping; `gone` (no record left: a turn without a submission, whose request force idle
 * aborted) is the abort's own outcome. Null (keep force_idled) for anything else, or no read-back.
 */
function chatTurnForceIdled(sdkState: string | undefined): RunOutcome | null {
  if (sdkState === "gone") return mapSdkState(CHAT_TURN_STATUS, "aborted")?.outcome ?? null;
  return sdkState ? (mapSdkState(CHAT_TURN_STATUS, sdkState)?.outcome ?? null) : null;
}

/** A stamp pair of `group` (see merge.ts), present only when the group's fact is. */
function stamp(group: "outcome" | "phase" | "snapshot", at: number | null, eventId: string) {
  const [atCol, idCol] = stampColumns(schema.fiberRuns, group);
  return (at === null ? { [atCol]: null, [idCol]: null } : { [atCol]: at, [idCol]: eventId }) as Record<typeof atCol, number | null> & Record<typeof idCol, string | null>;
}

/** The fiber_runs row an event contributes, or null. */
export function runRowOf(e: TelemetryEvent): RunRow | null {
  const f = factsOf(e);
  if (!f) return null;
  const o = f.outcome;
  return {
    fiber_id: f.runId, agent_class: e.source.agentClass, agent_name: e.source.agentName,
    kind: f.kind, name: f.name ?? null, definition: f.definition ?? null, attempt: f.attempt ?? null,
    started_at: f.startedAt ?? null,
    // A reconciliation's finding is a fallback: stamped at 0, any reported outcome supersedes it.
    outcome: o?.value ?? null, ended_at: o?.endedAt ?? null, error: o?.error ?? null, reason: o?.reason ?? null,
    ...stamp("outcome", o ? (o.fallback ? 0 : e.time) : null, e.id),
    phase: f.phase?.value ?? null, wake_at: f.phase?.wakeAt ?? null, step: f.phase?.step ?? null, status_message: null,
    ...stamp("phase", f.phase ? e.time : null, e.id),
    confirmed_at: f.confirmedAt ?? null,
    snapshot_preview: f.snapshot?.preview ?? null, snapshot_bytes: f.snapshot?.bytes ?? null,
    ...stamp("snapshot", f.snapshot ? e.time : null, e.id),
    // first_seen is a minimum, so a reconciliation's (later) time never moves it; last_seen it must not touch.
    first_seen: e.time, last_seen: f.observed ? null : e.time,
  };
}

