import { isInternalSdkName, type RunKind, type RunOutcome, runEffectOf, runStateOf, type TelemetryEvent } from "@agent-oncall/telemetry";
import { HOOK_UNKNOWN_REASON } from "./fiber-incident-facts";
import { listedAt } from "./listed-at";
import { projection, stampColumns } from "./merge";
import { FALLBACK_STAMP, UNCONFIRMED_STAMP } from "./outcome-stamps";
import { RESUMED_BY_HOOK } from "./read-models/runs";
import * as schema from "./schema";
import { names, type SqlRow } from "./sql-names";

/**
 * What an event says about a run (a runs row): which run (kind + id), and which of its facts. Pure;
 * merging is merge.ts's job. Every kind reaches an outcome that says how it ended:
 *
 * - fiber: completed | failed | interrupted, then its recovery (recovering, recovered, recovery_skipped,
 *   recovery_failed): the SDK keeps no record of a plain runFiber once it ended, so the events are all there is;
 * - managed_fiber: what the SDK records (`fiberStatus`, read by the agent side right after the event, mapped by
 *   sdk-states.ts FIBER_STATUS): an evicted one whose recovery hook returned undefined stays `interrupted`
 *   (the SDK waits for `resolveFiber`), one the hook completed, failed or aborted ends so, a cancelled one is
 *   cancelled; `fiber.resolved` (the agent's resolveFiber) ends it with the status it was given;
 * - task: completed | failed | cancelled. An interrupted attempt is not an end (the SDK replays it): it is
 *   the task's `phase`, as are pending, running and waiting;
 * - chat_turn: ONE run per user turn, keyed by its request id. The SDK recovers an interrupted or stalled turn by
 *   running new turns under their own request ids; the agent's telemetry names the user turn each of them (and
 *   their fibers, Tasks carriers and chat-recovery events) runs for (`rootRequestId`, src/telemetry/chat-turns.ts),
 *   and they fold into it: a recovery turn's start makes it live again and counts an attempt (`turnAttempt`: 2 for
 *   the first recovery). Its outcome: completed | failed | cancelled from chat.turn.finished's status (sdk-states.ts
 *   CHAT_TURN_STATUS; `unknown`, with the SDK's word as its reason, for a word it does not know);
 *   interrupted when its internal fiber was; recovering once a recovery is scheduled (a finish the SDK already
 *   routed into recovery says so, `recovering`); exhausted when the SDK gave up (chat.recovery.exhausted: the
 *   reason, and the terminal message the user saw as the error; what the SDK reports after that is `sealed` and
 *   changes nothing); recovery_skipped when it declined to recover. The SDK's internal machinery (chat-turn
 *   fibers, the Task carrying a turn, recovery Tasks) never makes a run of its own.
 * - any kind: force_idled (run.force_idled, for work the SDK keeps no record of; what the SDK records of work the
 *   action stopped, a cancelled Tasks run or managed fiber, is shown as the SDK says), and from run.reconciled: `ended` with the outcome the
 *   agent still records (mapped by sdk-states.ts), or ended_unreported (a fallback) when it records none.
 */

export type RunRow = SqlRow<typeof schema.runs>;

/** A managed fiber's outcome from an event, by the SDK status read with it (or carried by fiber.resolved). */
function managedOutcome(e: TelemetryEvent, p: P): Facts["outcome"] | undefined {
  const word = e.type === "fiber.resolved" ? s(p.status) : s(p.fiberStatus);
  const mapped = runStateOf("managed_fiber", word);
  // resolveFiber's report says when the SDK settled it; the other events are that moment themselves.
  if (mapped?.outcome) return { value: mapped.outcome, endedAt: n(p.settledAt) ?? e.time, error: s(p.fiberError) ?? s(p.error), reason: null };
  if (mapped) return undefined; // live again: nothing ended
  if (e.type === "fiber.recovery.handled") {
    // Its recovery hook ran but the sender did not say what the SDK made of it: it was interrupted, and whether it
    // was settled is for reconciliation to ask (inspectFiber). Never "recovered" on our own reading. Dated when the
    // hook was called, where the tail saw it (the tail path's messages carry no fiberStatus): what the agent records
    // (reconciliation's `ended`, dated when the SDK settled it, from then on) then supersedes this, whichever
    // arrives first, and this still supersedes the recovery attempt before it.
    const at = n(p.hookStartedAt) ?? e.time;
    return { value: "interrupted", endedAt: e.time, reason: "the recovery hook ran; the fiber's status after it was not reported", at };
  }
  return undefined;
}

/** Why a managed fiber's end reported without the SDK's status reads `unknown` (the tail path: no read followed). */
export const FAILED_OR_CANCELLED_REASON = "the SDK's event does not tell a failure from a cancellation; the agent's record says which";

/**
 * A managed fiber's `fiber.failed` that carries no `fiberStatus`: agents 0.32 publishes `fiber:run:failed` alike for
 * a body that threw and for one `cancelFiber` aborted (the SDK then records `aborted`), so the console claims
 * neither: `unknown`, unconfirmed (outcome-stamps.ts) until reconciliation reads the SDK's status (inspectFiber). What
 * the run threw is in the reason, not the error: the SDK records a cancellation's reason as its error instead.
 */
function unconfirmedManagedEnd(e: TelemetryEvent, p: P): Facts["outcome"] {
  const threw = s(p.error);
  const reason = threw ? `${FAILED_OR_CANCELLED_REASON} (it ended with: ${threw.slice(0, 500)})` : FAILED_OR_CANCELLED_REASON;
  return { value: "unknown", endedAt: e.time, error: null, reason, unconfirmed: true };
}

/**
 * A failed Tasks run's end. `task:failed` carries only the error's class (its `name`); the agent side of the outbox
 * path reads the message (`errorMessage`, sdk-reads.ts). Without it the class is not the error the SDK records: the
 * error reads not known (null), the reason names the class, and the end is unconfirmed until reconciliation reads
 * the run's record (tasks.get → error.message).
 */
function taskFailure(e: TelemetryEvent, p: P): Facts["outcome"] {
  const message = s(p.errorMessage);
  if (message) return { value: "failed", endedAt: e.time, error: message, reason: null };
  const name = s(p.error);
  const reason = `its error's message was not reported${name ? ` (the SDK's event names only its class: ${name.slice(0, 200)})` : ""}`;
  return { value: "failed", endedAt: e.time, error: null, reason, unconfirmed: true };
}

/**
 * A plain runFiber's end from `fiber.recovery.handled` with the hook's outcome: `recovered` when a run of the same
 * name started while the hook ran (the reason names it), `unknown` when none did: dropped work and work resumed some
 * other way look the same in the SDK's events. Undefined when the sender did not say (the outbox path).
 */
function plainHookOutcome(e: TelemetryEvent, p: P): Facts["outcome"] | undefined {
  if (p.hook === "resumed") return { value: "recovered", endedAt: e.time, reason: `${RESUMED_BY_HOOK}${s(p.resumedAs) ?? "(unnamed)"}` };
  if (p.hook === "unknown") return { value: "unknown", endedAt: e.time, reason: HOOK_UNKNOWN_REASON };
  return undefined;
}

/**
 * The fixed run effects (outcome, end, live phase) come from each event type's registry entry (src/telemetry
 * registry.ts `run`, read with runEffectOf); what depends on the SDK's own record is decided here by sdk-states.ts.
 */

/** The facts one event contributes; everything not said is null (a merge ignores it). */
type Facts = {
  kind: RunKind;
  runId: string;
  name?: string | null;
  definition?: string | null;
  attempt?: number | null;
  startedAt?: number | null;
  /**
   * `fallback`: stamped 0, so any reported outcome supersedes it; `at`: stamped then rather than at the event's time.
   * `unconfirmed`: stamped UNCONFIRMED_STAMP (outcome-stamps.ts), an end the event could not say whole.
   * `value: null`: live again (a chat turn's recovery turn started), superseding an earlier outcome. Typed as the
   * closed set sdk-states.ts declares: the runs list merges runs_kind_outcome over exactly those values.
   */
  outcome?: {
    value: RunOutcome | null;
    endedAt: number | null;
    error?: string | null;
    reason?: string | null;
    fallback?: boolean;
    unconfirmed?: boolean;
    at?: number;
  };
  phase?: { value: string; wakeAt?: number | null; step?: string | null; statusMessage?: string | null };
  snapshot?: { preview: string; bytes: number };
  confirmedAt?: number;
  /** Reconciliation only observes: it never moves last_seen (see schema.runs). */
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
    const effect = runEffectOf(e.type);
    if (p.kind === "chat_turn" && c.requestId) {
      const outcome = effect.turnOutcome;
      const root = s(p.rootRequestId);
      return {
        kind: "chat_turn",
        runId: root ?? c.requestId,
        name: root ? null : "chat turn",
        startedAt: e.type === "fiber.started" && !root ? e.time : null,
        outcome: outcome ? { value: outcome, endedAt: e.time, error: s(p.error) } : undefined,
        snapshot,
      };
    }
    if (!c.fiberId) return null;
    const kind: RunKind = p.kind === "managed_fiber" || p.managed === true ? "managed_fiber" : "fiber";
    if (
      kind === "managed_fiber" &&
      effect.settlesManaged &&
      (p.fiberStatus !== undefined || e.type === "fiber.recovery.handled" || e.type === "fiber.resolved")
    ) {
      return { kind, runId: c.fiberId, name: named, outcome: managedOutcome(e, p), snapshot };
    }
    if (kind === "managed_fiber" && e.type === "fiber.failed") return { kind, runId: c.fiberId, name: named, outcome: unconfirmedManagedEnd(e, p), snapshot };
    const outcome = effect.outcome;
    const hooked = e.type === "fiber.recovery.handled" ? plainHookOutcome(e, p) : undefined;
    return {
      kind,
      runId: c.fiberId,
      name: named,
      startedAt: e.type === "fiber.started" ? e.time : null,
      outcome: hooked
        ? hooked
        : outcome
          ? {
              value: outcome,
              endedAt: effect.ends ? e.time : null,
              error: s(p.error),
              reason: e.type === "fiber.recovery.skipped" || e.type === "fiber.recovery.failed" ? s(p.reason) : null,
            }
          : undefined,
      snapshot,
    };
  }
  if (e.type.startsWith("task.")) {
    // A Task that only carries a chat turn is that turn (its request id, from the agent); the SDK's other machinery
    // (a chat recovery's transport, …) is evidence on timelines, never a run.
    if (p.kind === "chat_turn") return c.requestId ? carrierFacts(e, c.requestId, p) : null;
    if (!c.taskId || p.internal === true || isInternalSdkName(s(p.definition) ?? "")) return null;
    const { phase, outcome } = runEffectOf(e.type);
    return {
      kind: "task",
      runId: c.taskId,
      name: s(p.definition),
      definition: s(p.definition),
      attempt: n(p.attempt),
      startedAt: e.type === "task.attempt.started" ? e.time : null,
      phase: phase ? { value: phase, wakeAt: n(p.wakeAt), step: s(p.step), statusMessage: s(p.statusMessage) } : undefined,
      outcome:
        e.type === "task.failed"
          ? taskFailure(e, p)
          : outcome
            ? { value: outcome, endedAt: e.time, error: null, reason: e.type === "task.cancelled" ? s(p.reason) : null }
            : undefined,
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
    // The SDK's word, by the one mapping (sdk-states.ts CHAT_TURN_STATUS). A word it does not know, or one that
    // says the turn is still live, ends the turn as `unknown`: the console does not guess how it ended.
    const value: RunOutcome = runStateOf("chat_turn", status)?.outcome ?? "unknown";
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
    // The user turn's outcome is the entry's (recovering, recovery_skipped, exhausted); the rest say nothing of it.
    const { outcome, ends } = runEffectOf(e.type);
    if (!outcome) return null;
    // The terminal message the user saw is the exhausted turn's error.
    const terminal = (p.terminalMessage as { preview?: unknown } | undefined)?.preview;
    return { kind: "chat_turn", runId: root, outcome: { value: outcome, endedAt: ends ? e.time : null, reason: s(p.reason), error: s(terminal) } };
  }
  if (e.type === "run.force_idled") {
    const pl = e.payload;
    // What the SDK records of the run once the action was done (`sdkState`, read back by the console), mapped by
    // sdk-states.ts: a Tasks run or managed fiber cancelled through the SDK ended `cancelled`, whatever the console
    // calls its action. Only work the SDK keeps no record of (a row removed, an agent evicted) is `force_idled`.
    const recorded = runStateOf(pl.kind, pl.sdkState)?.outcome ?? null;
    return {
      kind: pl.kind,
      runId: pl.runId,
      name: pl.name ?? null,
      // Stopped through the SDK's own cancel (`how: cancelled`), the SDK also reports how it ended, with its own
      // words (the error it records): then this is a fallback that report supersedes.
      outcome: {
        value: recorded ?? "force_idled",
        endedAt: e.time,
        reason: pl.stopped ? pl.reason : `${pl.reason} (its in-memory work was not stopped)`,
        fallback: pl.how === "cancelled",
      },
    };
  }
  if (e.type === "run.reconciled") return reconciledFacts(e as TelemetryEvent<"run.reconciled">);
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
 * What reconciliation found, as facts: what the agent records of the run, mapped by sdk-states.ts. A finding
 * only observes (it never moves last_seen). `ended` closes the run with the agent's recorded outcome, stamped
 * when the agent says it settled; `ended_unreported` is a fallback any reported outcome supersedes;
 * `confirmed_running` confirms it and, where the agent said, what it is doing now (phase, step, status message).
 */
function reconciledFacts(e: TelemetryEvent<"run.reconciled">): Facts {
  const pl = e.payload;
  const base = {
    kind: pl.kind,
    runId: pl.runId,
    observed: true as const,
    name: pl.name ?? pl.definition ?? null,
    definition: pl.definition ?? null,
    attempt: pl.attempt ?? null,
    startedAt: pl.startedAt ?? null,
  };
  const mapped = runStateOf(pl.kind, pl.state);
  if (pl.finding === "ended_unreported" || pl.finding === "unknown")
    return { ...base, outcome: { value: pl.finding, endedAt: e.time, reason: pl.detail ?? null, fallback: true } };
  if (pl.finding === "ended" && mapped?.outcome) {
    const at = pl.endedAt ?? e.time;
    return { ...base, outcome: { value: mapped.outcome, endedAt: at, error: pl.error ?? null, reason: pl.detail ?? null, at } };
  }
  // Alive (or an ended finding whose state is live after all): confirmed, with what the agent says it is doing.
  const phase = mapped?.phase ?? null;
  return {
    ...base,
    confirmedAt: e.time,
    phase: phase ? { value: phase, wakeAt: pl.wakeAt ?? null, step: pl.step ?? null, statusMessage: pl.statusMessage ?? null } : undefined,
  };
}

/** A stamp pair of `group` (see merge.ts), present only when the group's fact is. */
function stamp(group: "outcome" | "phase" | "snapshot", at: number | null, eventId: string) {
  const [atCol, idCol] = stampColumns(schema.runs, group);
  return (at === null ? { [atCol]: null, [idCol]: null } : { [atCol]: at, [idCol]: eventId }) as Record<typeof atCol, number | null> &
    Record<typeof idCol, string | null>;
}

/** The runs row an event contributes, or null. */
export function runRowOf(e: TelemetryEvent): RunRow | null {
  const f = factsOf(e);
  if (!f) return null;
  const o = f.outcome;
  return {
    fiber_id: f.runId,
    agent_class: e.source.agentClass,
    agent_name: e.source.agentName,
    kind: f.kind,
    name: f.name ?? null,
    definition: f.definition ?? null,
    attempt: f.attempt ?? null,
    started_at: f.startedAt ?? null,
    // A reconciliation's finding is a fallback: stamped at 0, any reported outcome supersedes it.
    outcome: o?.value ?? null,
    ended_at: o?.endedAt ?? null,
    error: o?.error ?? null,
    reason: o?.reason ?? null,
    ...stamp("outcome", o ? (o.fallback ? FALLBACK_STAMP : o.unconfirmed ? UNCONFIRMED_STAMP : (o.at ?? e.time)) : null, e.id),
    phase: f.phase?.value ?? null,
    wake_at: f.phase?.wakeAt ?? null,
    step: f.phase?.step ?? null,
    status_message: f.phase?.statusMessage ?? null,
    ...stamp("phase", f.phase ? e.time : null, e.id),
    confirmed_at: f.confirmedAt ?? null,
    snapshot_preview: f.snapshot?.preview ?? null,
    snapshot_bytes: f.snapshot?.bytes ?? null,
    ...stamp("snapshot", f.snapshot ? e.time : null, e.id),
    // first_seen is a minimum, so a reconciliation's (later) time never moves it; last_seen it must not touch.
    first_seen: e.time,
    last_seen: f.observed ? null : e.time,
    listed_at: f.observed ? null : listedAt(e.time),
  };
}

/**
 * How a run's rows merge (merge.ts): ingest folds a batch with it and upserts by it; the console folds a finished run's
 * R2 history with it, so both read the same mapping. `kind` is a maximum: "managed_fiber" sorts after "fiber", so a
 * fiber any of whose events says it is managed is managed (recovery failures and stashes do not say).
 */
export const RUNS_SPEC = projection(schema.runs, {
  key: ["fiberId", "agentClass", "agentName"],
  columns: {
    kind: "max",
    name: "max",
    definition: "max",
    attempt: "max",
    startedAt: "min",
    outcome: { latest: "outcome" },
    endedAt: { latest: "outcome" },
    error: { latest: "outcome" },
    reason: { latest: "outcome" },
    phase: { latest: "phase" },
    wakeAt: { latest: "phase" },
    step: { latest: "phase" },
    statusMessage: { latest: "phase" },
    confirmedAt: "max",
    snapshotPreview: { latest: "snapshot" },
    snapshotBytes: { latest: "snapshot" },
    firstSeen: "min",
    lastSeen: "max",
    listedAt: "max",
  },
  // last_seen 0 only for a run nothing but reconciliation ever reported: 0 never wins the maximum.
  defaults: { name: "'(unnamed)'", kind: "'fiber'", lastSeen: "0", listedAt: "0" },
  // runs_open (partial) holds listed_at: its own statement, so a running run's entry moves once a minute. Both partial
  // indexes, runs_open and runs_kind_outcome, hold or test the outcome: its own unit, so a run's other updates leave them be.
  separate: ["listedAt", "outcome"],
  // A run's end moves its outcome and its last_seen in one row write.
  withPlain: "outcome",
});

const RN = names(schema.runs);

/**
 * A runs row (stored as `t`) of a run that is running and never went wrong: no outcome was ever reported (a recovery
 * turn's start clears the outcome but keeps its stamp) and no replayed or recovery attempt. Both only grow under the
 * merge, so a row that fails this once fails it for good.
 */
export const healthyRunningSql = (t: string) => `(${t}.${RN.outcomeAt} IS NULL AND COALESCE(${t}.${RN.attempt}, 1) <= 1)`;

/** A batch row that says its run went wrong: any outcome but completed, an error, a replayed or recovery attempt, an interruption. */
function troubled(r: RunRow): boolean {
  return (r.outcome_at !== null && r.outcome !== "completed") || r.error !== null || (r.attempt ?? 1) > 1 || r.phase === "interrupted";
}

const runKey = (r: Pick<RunRow, "fiber_id" | "agent_class" | "agent_name">) => JSON.stringify([r.fiber_id, r.agent_class, r.agent_name]);

/**
 * Which of a batch's folded runs rows complete healthily (outcome completed, and none of the batch's rows of the run
 * says it went wrong): those leave D1 (the rest stay). A completed run is a rollup count and R2 history; D1 keeps
 * what is running or needs a person. `rows` are the batch's rows before folding, `folded` after (merge.ts foldRows).
 */
export function splitHealthyCompleted<R extends Record<string, unknown>>(rows: R[], folded: R[]): { leaving: R[]; staying: R[] } {
  const bad = new Set((rows as unknown as RunRow[]).filter(troubled).map(runKey));
  const leaving: R[] = [];
  const staying: R[] = [];
  for (const r of folded) {
    const run = r as unknown as RunRow;
    (run.outcome === "completed" && run.error === null && !bad.has(runKey(run)) ? leaving : staying).push(r);
  }
  return { leaving, staying };
}

const rowKeySql = (t: string) =>
  `${t}.${RN.fiberId} = j ->> '$.${RN.fiberId}' AND ${t}.${RN.agentClass} = j ->> '$.${RN.agentClass}' AND ${t}.${RN.agentName} = j ->> '$.${RN.agentName}'`;

/**
 * The upserts' filter (merge.ts upsertSqls `only`) for the runs that complete healthily in a batch: merged into a
 * stored row that went wrong (it stays, with its end), inserted when no row exists and the batch does not show the
 * start (an end whose start D1 never saw stays visible); never inserted when the batch shows the whole run, never
 * merged into a healthy running row (RUNS_LEAVE_SQL deletes that one).
 */
export const RUNS_LEAVING_UPSERT_ONLY = `((j ->> '$.${RN.startedAt}') IS NULL AND NOT EXISTS (SELECT 1 FROM ${RN.$table} r WHERE ${rowKeySql("r")} AND ${healthyRunningSql("r")}))
  OR EXISTS (SELECT 1 FROM ${RN.$table} r WHERE ${rowKeySql("r")} AND NOT ${healthyRunningSql("r")})`;

/**
 * Deletes the healthy running rows of runs that complete healthily in the batch, in the transaction that records their
 * end (after the upserts, which leave such rows alone). One parameter: a JSON array of their rows.
 */
export const RUNS_LEAVE_SQL = `DELETE FROM ${RN.$table} WHERE (${RN.fiberId}, ${RN.agentClass}, ${RN.agentName}) IN (SELECT j ->> '$.${RN.fiberId}', j ->> '$.${RN.agentClass}', j ->> '$.${RN.agentName}' FROM (SELECT value AS j FROM json_each(?1)))
  AND ${healthyRunningSql(RN.$table)}`;
