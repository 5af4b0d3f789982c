import type { OpenIncident, OpenRun, OpenWork } from "../../src/store/read-models";
import type { RunKind } from "../../src/telemetry";

export type { OpenWork };

/**
 * Reconciliation's judgement, kept pure: what the console's projections say is
 * still going on for one agent (src/store's open-work read model), against what
 * the agent itself answers now. Events can be lost (a process kill drops the
 * local queue, an agent is deleted, force idle removes rows); this says which
 * projections to close ("ended, not reported") and which to mark as confirmed.
 */

/** What the agent answered (admin RPC), reduced to what reconciliation compares. */
export type LiveWork = {
  status: "running" | "idle" | "terminated";
  /** Ids of work alive in the agent: run rows (managed fibers included), Tasks runs not yet settled, and the request ids of live chat turns. */
  liveRunIds: ReadonlySet<string>;
  /** The agent's chat-recovery records: incident id → the record's status (detected, attempting, exhausted, …). */
  chatRecords: ReadonlyMap<string, { status: string; reason: string | null; requestId: string | null }>;
};

/** One thing reconciliation found, as the event that records it. */
export type Finding =
  | { type: "run.reconciled"; kind: RunKind; runId: string; finding: "ended_unreported" | "confirmed_running"; detail: string }
  | { type: "incident.reconciled"; incidentId: string; finding: "not_recovering" | "confirmed_open"; detail: string }
  | { type: "session.reconciled"; name: string; finding: "ended_unreported"; detail: string };

/** Chat-recovery record statuses that mean recovery is still under way (agents 0.32 ChatRecoveryIncident). */
const RECOVERING = new Set(["detected", "scheduled", "attempting"]);

/**
 * Compares the open work with the live answer. Only work whose last event is
 * older than `minAgeMs` is judged: a younger one may still have its events in
 * flight, and closing it would be a lie of our own.
 */
export function reconcileFindings(open: OpenWork, live: LiveWork, opts: { now: number; minAgeMs: number }): Finding[] {
  const settled = (lastSeen: number) => opts.now - lastSeen >= opts.minAgeMs;
  // A confirmation is not repeated within the same age: a long run would otherwise collect one per pass.
  const recentlyConfirmed = (at: number | null | undefined) => at != null && opts.now - at < opts.minAgeMs;
  const out: Finding[] = [];
  const idle = live.status !== "running";

  for (const r of open.runs) {
    if (!settled(r.lastSeen)) continue;
    const alive = r.kind === "chat_turn" ? chatTurnAlive(r, live) : live.liveRunIds.has(r.runId);
    if (alive === true && !recentlyConfirmed(r.confirmedAt)) out.push({ type: "run.reconciled", kind: r.kind, runId: r.runId, finding: "confirmed_running", detail: "the agent reports this run as live" });
    else if (alive === false)
      out.push({ type: "run.reconciled", kind: r.kind, runId: r.runId, finding: "ended_unreported", detail: `the agent no longer has this ${kindWords(r.kind)}; how it ended was not reported` });
  }

  for (const i of open.incidents) {
    if (!settled(i.lastSeen)) continue;
    const verdict = incidentVerdict(i, live);
    if (verdict && !(verdict.finding === "confirmed_open" && recentlyConfirmed(i.confirmedAt))) out.push({ type: "incident.reconciled", incidentId: i.incidentId, ...verdict });
  }

  for (const s of open.sessions) {
    if (settled(s.lastSeen) && idle) out.push({ type: "session.reconciled", name: s.name, finding: "ended_unreported", detail: `the agent reports ${live.status}; the session's end was not reported` });
  }
  return out;
}

/** A chat turn is alive while a live run carries its request id; unknown (null) while the agent is busy with something unnamed. */
function chatTurnAlive(r: OpenRun, live: LiveWork): boolean | null {
  if (live.liveRunIds.has(r.runId)) return true;
  if (live.status === "running" && live.liveRunIds.size === 0) return null;
  return false;
}

function incidentVerdict(i: OpenIncident, live: LiveWork): { finding: "not_recovering" | "confirmed_open"; detail: string } | null {
  if (i.kind === "chat") {
    const record = live.chatRecords.get(i.incidentId) ?? [...live.chatRecords.values()].find((c) => i.requestId !== null && c.requestId === i.requestId);
    if (record && RECOVERING.has(record.status)) return { finding: "confirmed_open", detail: `the agent's recovery record says ${record.status}` };
    if (record) return { finding: "not_recovering", detail: `the agent's recovery record says ${record.status}${record.reason ? ` (${record.reason})` : ""}; the event was not received` };
    return { finding: "not_recovering", detail: "the agent holds no recovery record for this turn; how it ended was not reported" };
  }
  if (i.kind === "fiber") {
    if (i.fiberId !== null && live.liveRunIds.has(i.fiberId)) return { finding: "confirmed_open", detail: "the fiber's row is still there: the agent will recover it on its next wake" };
    return { finding: "not_recovering", detail: "the fiber's row is gone; how recovery ended was not reported" };
  }
  // A session turn: the agent's own derived status says whether it is still working on it.
  if (live.status === "running") return { finding: "confirmed_open", detail: "the agent reports it is still running" };
  return { finding: "not_recovering", detail: `the agent reports ${live.status}; how recovery ended was not reported` };
}

function kindWords(kind: RunKind): string {
  return { fiber: "fiber", managed_fiber: "managed fiber", task: "task run", chat_turn: "chat turn" }[kind];
}
