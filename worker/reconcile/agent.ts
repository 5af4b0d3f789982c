import type { ListRunsOutput, StatusOutput } from "../../src/admin-rpc";
import type { Source } from "../../src/telemetry";
import { openWorkOf } from "../../src/store/read-models/open-work";
import { recordReconciliation } from "../../src/store/reconciliations";
import { consoleAdminClient } from "../admin-client";
import { type ConsoleEvent, emitForAgent } from "../console-events";
import type { Env } from "../env";
import { type Finding, type LiveWork, reconcileFindings } from "./compare";

/** Who reconciliation acts as in the admin client: it only reads, so a viewer. */
export const RECONCILER = { email: "reconciler@console", role: "viewer" } as const;

export type AgentReconciliation = { target: Source; findings: Finding[]; error: string | null };

/**
 * Asks one agent what it is really doing (admin RPC status and live runs, in
 * one visit), compares that with the console's open work for it, and records
 * each finding as an event through the telemetry Queue. An agent that cannot
 * answer (no admin mixin, evicted, failing) is left unconfirmed: only the ask
 * and its error are recorded, so the next pass moves on to other agents.
 */
export async function reconcileAgent(env: Env, target: Source, opts: { now?: number; minAgeMs: number }): Promise<AgentReconciliation> {
  const now = opts.now ?? Date.now();
  const answer = await consoleAdminClient(env, RECONCILER).live(target);
  if (answer.ok) return recordFindings(env, target, answer.value, { ...opts, now });
  await recordReconciliation(env.DB, { ...target, askedAt: now, findings: 0, error: answer.error.message });
  return { target, findings: [], error: answer.error.message };
}

/**
 * Reconciles with an answer already in hand (the agent page has just read it):
 * the open work comes from the store, the findings go out as events.
 */
export async function recordFindings(
  env: Env,
  target: Source,
  answer: { status: StatusOutput; runs: ListRunsOutput },
  opts: { now?: number; minAgeMs: number },
): Promise<AgentReconciliation> {
  const now = opts.now ?? Date.now();
  const open = await openWorkOf(env.DB, target);
  const findings = reconcileFindings(open, liveWork(answer.status, answer.runs), { now, minAgeMs: opts.minAgeMs });
  await emitForAgent(env, target, findings.map(toEvent));
  // The next alarm as the agent answered now: an alarm already past due is what stuck detection's alarm_overdue reads.
  await recordReconciliation(env.DB, { ...target, askedAt: now, findings: findings.length, error: null, nextAlarmAt: answer.status.nextAlarm });
  return { target, findings, error: null };
}

/** The admin answers, reduced to what reconciliation compares. */
export function liveWork(status: StatusOutput, runs: ListRunsOutput): LiveWork {
  // A managed fiber keeps its cf_agents_runs row while its callback runs, so the rows and the unsettled Tasks
  // runs are all the live work; a chat turn is also known by its request id (the console's key for it).
  const ids = [
    ...runs.runs.flatMap((r) => [r.id, ...(r.requestId ? [r.requestId] : [])]),
    ...runs.tasks.flatMap((t) => [t.runId, ...(t.requestId ? [t.requestId] : [])]),
  ];
  const chatRecords = new Map(
    status.chatRecoveryIncidents.map((c) => [c.incidentId ?? c.key, { status: c.status, reason: c.reason, requestId: c.requestId }]),
  );
  return { status: status.status, liveRunIds: new Set(ids), chatRecords };
}

/** A finding as the event that records it, correlated like the agent's own events for that work. */
function toEvent(f: Finding): ConsoleEvent {
  switch (f.type) {
    case "run.reconciled": {
      const corr = f.kind === "task" ? { taskId: f.runId } : f.kind === "chat_turn" ? { requestId: f.runId } : { fiberId: f.runId };
      return { type: "run.reconciled", payload: { kind: f.kind, runId: f.runId, finding: f.finding, detail: f.detail }, corr };
    }
    case "incident.reconciled":
      return { type: "incident.reconciled", payload: { finding: f.finding, detail: f.detail }, corr: { incidentId: f.incidentId } };
    case "session.reconciled":
      return { type: "session.reconciled", payload: { finding: f.finding, detail: f.detail }, corr: { sessionName: f.name } };
  }
}
