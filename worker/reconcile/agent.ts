import type { Source } from "@agent-oncall/telemetry";
import type { FindRunsOutput, FoundRun, ListRunsOutput, StatusOutput, TelemetryHealth } from "../../src/admin-rpc";
import { pipelineState } from "../../src/admin-rpc/pipeline-state";
import type { OpenWork, UnconfirmedRun } from "../../src/store/read-models/open-work";
import { consoleAdminClient } from "../admin-client";
import { type ConsoleEvent, emitForAgent } from "../console-events";
import type { Env } from "../env";
import { consoleStoreFromEnv } from "../store";
import { type Finding, fillFindings, type LiveWork, readBackFindings, reconcileFindings, UNASKABLE, unknownFindings } from "./compare";

/** Who reconciliation acts as in the admin client: it only reads, so a viewer. */
export const RECONCILER = { email: "reconciler@console", role: "viewer" } as const;

/** What one agent said: the findings recorded, why it could not answer, and its telemetry's own counts (null: not said). */
export type AgentReconciliation = { target: Source; findings: Finding[]; error: string | null; telemetry: TelemetryHealth | null };

/** Ids asked about in one adminFindRuns call (the contract's maximum). */
const FIND_BATCH = 100;

export type ReconcileOptions = {
  now?: number;
  minAgeMs: number;
  /**
   * Also fill in the agent's most recent runs (this many of each kind, newest first) that the console does not
   * know or still shows open: for an agent some of whose events never arrived (a sequence gap).
   */
  fillRecent?: number;
  /** For an agent that cannot be asked: how long its open runs may go without an event before they are shown as unknown. */
  unknownAfterMs?: number;
  /**
   * Runs to read back whatever their age, and close as the agent records them if it records an end: the runs an
   * action just ended (after-action.ts). The agent's unconfirmed runs are always read back.
   */
  readBack?: readonly UnconfirmedRun[];
};

/**
 * Asks one agent what it is really doing (admin RPC status and live runs, in
 * one visit), compares that with the console's open work for it, asks what it
 * still records of the runs it no longer runs, and records each finding as an
 * event through the telemetry Queue. An agent that cannot answer (no admin
 * mixin, evicted, failing) is left unconfirmed: only the ask and its error are
 * recorded, so the next pass moves on to other agents.
 */
export async function reconcileAgent(env: Env, target: Source, opts: ReconcileOptions): Promise<AgentReconciliation> {
  const now = opts.now ?? Date.now();
  const answer = await consoleAdminClient(env, RECONCILER).live(target);
  if (answer.ok) return recordFindings(env, target, answer.value, { ...opts, now });
  // An agent no one can ask (no admin package, no binding): its runs silent past the stated age become unknown.
  const findings =
    answer.error.facts && UNASKABLE.has(answer.error.facts.kind) && opts.unknownAfterMs !== undefined
      ? unknownFindings(await consoleStoreFromEnv(env).reconcile.openWork(target), answer.error.message, { now, unknownAfterMs: opts.unknownAfterMs })
      : [];
  if (findings.length) await emitForAgent(env, target, findings.map(toEvent));
  await consoleStoreFromEnv(env).reconcile.record({ ...target, askedAt: now, findings: findings.length, error: answer.error.message });
  return { target, findings, error: answer.error.message, telemetry: null };
}

/**
 * Reconciles with an answer already in hand (the agent page has just read it):
 * the open work comes from the store, the agent is asked what it records of the
 * runs it no longer runs, and the findings go out as events.
 */
export async function recordFindings(
  env: Env,
  target: Source,
  answer: { status: StatusOutput; runs: ListRunsOutput },
  opts: ReconcileOptions,
): Promise<AgentReconciliation> {
  const now = opts.now ?? Date.now();
  const store = consoleStoreFromEnv(env, now);
  const [open, unconfirmed] = await Promise.all([store.reconcile.openWork(target), store.reconcile.unconfirmed(target, FIND_BATCH)]);
  const live = liveWork(answer.status, answer.runs);
  // Ends the console holds without the agent's word (unconfirmed, or just acted on) are asked about first: they are few.
  const readBack = [...(opts.readBack ?? []), ...unconfirmed];
  const ids = [...new Set([...readBack.map((r) => r.runId), ...toAsk(open, live, { now, minAgeMs: opts.minAgeMs })])].slice(0, FIND_BATCH);
  const asked = await askRecords(env, target, ids);
  const findings = reconcileFindings(open, { ...live, ...asked }, { now, minAgeMs: opts.minAgeMs });
  findings.push(...readBackFindings(readBack, asked.records, findings));
  // Events lost after the last one that arrived leave no gap in the numbers: the agent's own count says so. An agent
  // whose events carry no numbers (captured from its Worker's tail, no outbox) cannot show a loss at all: a run all
  // of whose events were lost (a killed local Queue, a tail item lost with its invocation) is found only by asking.
  const fill = opts.fillRecent ?? (unnumbered(answer.status) || (await trailingLoss(env, target, answer.status)) ? GAP_FILL_RECENT : 0);
  if (fill) findings.push(...(await fillIn(env, target, fill, findings)));
  await emitForAgent(env, target, findings.map(toEvent));
  // The next alarm as the agent answered now: an alarm already past due is what stuck detection's alarm_overdue reads.
  // What it said of its telemetry too: the overview counts agents whose events cannot reach the console.
  const pipeline = pipelineState(answer.status.telemetry);
  await store.reconcile.record({
    ...target,
    askedAt: now,
    findings: findings.length,
    error: null,
    nextAlarmAt: answer.status.nextAlarm,
    pipeline: pipeline === "no_queue" || pipeline === "failing" ? pipeline : null,
  });
  return { target, findings, error: null, telemetry: answer.status.telemetry };
}

/** How many of its most recent runs of each kind an agent that lost events is asked for. */
export const GAP_FILL_RECENT = 50;

/** The agent numbers no events (no telemetry outbox): the console cannot count what it lost. */
const unnumbered = (status: StatusOutput): boolean => status.eventsShippedThrough == null;

/** The agent shipped numbered events beyond the highest the console received: they never arrived. */
async function trailingLoss(env: Env, target: Source, status: StatusOutput): Promise<boolean> {
  if (status.eventsShippedThrough == null) return false;
  const agent = await consoleStoreFromEnv(env).agents.find(target);
  return agent !== null && status.eventsShippedThrough > (agent.seqMax ?? 0);
}

/** The admin answers, reduced to what reconciliation compares. */
export function liveWork(status: StatusOutput, runs: ListRunsOutput): LiveWork {
  // A managed fiber keeps its cf_agents_runs row while its callback runs, so the rows and the unsettled Tasks
  // runs are all the live work; a chat turn is also known by its request id (the console's key for it).
  const ids = [
    ...runs.runs.flatMap((r) => [r.id, ...(r.requestId ? [r.requestId] : [])]),
    ...runs.tasks.flatMap((t) => [t.runId, ...(t.requestId ? [t.requestId] : [])]),
  ];
  const chatRecords = new Map(status.chatRecoveryIncidents.map((c) => [c.incidentId ?? c.key, { status: c.status, reason: c.reason, requestId: c.requestId }]));
  return { status: status.status, liveRunIds: new Set(ids), chatRecords };
}

/**
 * The ids worth asking about: open runs old enough to judge (live ones too, for what they are doing now), and
 * the fibers of open fiber incidents whose row is gone (a managed fiber may wait for resolveFiber, or have
 * been settled by it). Oldest first; the caller keeps FIND_BATCH of them, the rest waits for the next pass.
 */
function toAsk(open: OpenWork, live: LiveWork, o: { now: number; minAgeMs: number }): string[] {
  const old = (t: number) => o.now - t >= o.minAgeMs;
  const ids = [
    ...open.runs.filter((r) => old(r.lastSeen)).map((r) => r.runId),
    ...open.incidents.filter((i) => i.kind === "fiber" && i.fiberId !== null && old(i.lastSeen) && !live.liveRunIds.has(i.fiberId)).map((i) => i.fiberId!),
  ];
  return [...new Set(ids)];
}

/**
 * What the agent records of `ids`. An agent without the method (an older package) is judged as before
 * (`records` absent); one that could not answer now has every id left for the next pass.
 */
async function askRecords(env: Env, target: Source, ids: string[]): Promise<Pick<LiveWork, "records" | "missing">> {
  if (!ids.length) return { records: new Map(), missing: new Set() };
  const r = await consoleAdminClient(env, RECONCILER).findRuns(target, { ids });
  if (!r.ok) return r.error.code === "unsupported" ? {} : { records: new Map(), missing: new Set() };
  return { records: byId(r.value), missing: new Set(r.value.missing) };
}

function byId(v: FindRunsOutput): Map<string, FoundRun> {
  const m = new Map<string, FoundRun>();
  for (const run of v.runs) {
    m.set(run.runId, run);
    if (run.requestId) m.set(run.requestId, run);
    // A top-level AIChatAgent's turn seen by the tail is keyed by the Tasks run carrying it.
    if (run.taskId) m.set(run.taskId, run);
  }
  return m;
}

/** The agent's recent runs the console does not know or shows open, as the agent records them (gap filling). */
async function fillIn(env: Env, target: Source, recent: number, already: Finding[]): Promise<Finding[]> {
  const r = await consoleAdminClient(env, RECONCILER).findRuns(target, { recent });
  if (!r.ok) return [];
  const done = new Set(already.flatMap((f) => (f.type === "run.reconciled" ? [f.runId] : [])));
  // A chat turn is asked about by its request id and by the Tasks run carrying it: the console keys a top-level
  // AIChatAgent's turn seen by the tail by the latter (the SDK publishes no request id for it).
  const ids = r.value.runs.flatMap((x) => (x.taskId ? [x.runId, x.taskId] : [x.runId]));
  // A run that completed healthily left D1 at its end: the R2 history knows it, so it is not one to fill in.
  const known = await consoleStoreFromEnv(env).reconcile.knownOutcomes(target, ids);
  const runs = r.value.runs
    .map((x) => (x.taskId && known.has(x.taskId) && !known.has(x.runId) ? { ...x, runId: x.taskId } : x))
    .filter((x) => !done.has(x.runId));
  return fillFindings(runs, known);
}

/** A finding as the event that records it, correlated like the agent's own events for that work. */
function toEvent(f: Finding): ConsoleEvent {
  switch (f.type) {
    case "run.reconciled": {
      const { type: _type, kind, runId, finding, detail, ...recorded } = f;
      const corr = kind === "task" ? { taskId: runId } : kind === "chat_turn" ? { requestId: runId } : { fiberId: runId };
      return { type: "run.reconciled", payload: { kind, runId, finding, detail, ...recorded }, corr };
    }
    case "incident.reconciled":
      return {
        type: "incident.reconciled",
        payload: { finding: f.finding, detail: f.detail, ...(f.fiberStatus ? { fiberStatus: f.fiberStatus } : {}) },
        corr: { incidentId: f.incidentId },
      };
    case "session.reconciled":
      return {
        type: "session.reconciled",
        payload: { finding: f.finding, detail: f.detail, ...(f.lastEventAt > 0 ? { lastEventAt: f.lastEventAt } : {}) },
        corr: { sessionName: f.name },
      };
  }
}
