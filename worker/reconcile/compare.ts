import { type AgentStatus, FIBER_AWAITS_RESOLUTION, isInternalSdkName, type RunKind, runStateOf } from "@agent-oncall/telemetry";
import type { FoundRun } from "../../src/admin-rpc";
import type { OpenIncident, OpenRun, OpenWork } from "../../src/store/read-models";

export type { OpenWork };

/**
 * Reconciliation's judgement, kept pure: what the console's projections say is
 * still going on for one agent (src/store's open-work read model), against what
 * the agent itself answers now. Events can be lost (a process kill drops the
 * local queue, an agent is deleted, force idle removes rows); this says which
 * projections to close and how, and which to mark as confirmed. It asks before
 * it judges: a run whose end was not reported is closed with the outcome the
 * agent still records (mapped by src/telemetry/sdk-states.ts), and "ended, not
 * reported" only when the agent has no record of it at all.
 */

/** What the agent answered (admin RPC), reduced to what reconciliation compares. */
export type LiveWork = {
  status: AgentStatus;
  /** Ids of work alive in the agent: run rows (managed fibers included), Tasks runs not yet settled, and the request ids of live chat turns. */
  liveRunIds: ReadonlySet<string>;
  /** The agent's chat-recovery records: incident id → the record's status (detected, attempting, exhausted, …). */
  chatRecords: ReadonlyMap<string, { status: string; reason: string | null; requestId: string | null }>;
  /**
   * What the agent records of the runs asked about (adminFindRuns), by the console's id. Absent when the agent
   * could not be asked (an older agent without the method): runs it no longer runs are then judged as before.
   */
  records?: ReadonlyMap<string, FoundRun>;
  /** Asked-for ids the agent has no record of at all. */
  missing?: ReadonlySet<string>;
};

/** What the agent records of a run, as reconciliation's event carries it. */
export type Recorded = {
  state?: string;
  error?: string;
  endedAt?: number;
  startedAt?: number;
  name?: string;
  definition?: string;
  attempt?: number;
  statusMessage?: string;
  step?: string;
  wakeAt?: number;
};

/** One thing reconciliation found, as the event that records it. */
export type Finding =
  | ({
      type: "run.reconciled";
      kind: RunKind;
      runId: string;
      finding: "ended_unreported" | "confirmed_running" | "ended" | "unknown";
      detail: string;
    } & Recorded)
  | { type: "incident.reconciled"; incidentId: string; finding: "not_recovering" | "confirmed_open"; detail: string; fiberStatus?: string }
  | { type: "session.reconciled"; name: string; finding: "ended_unreported"; detail: string; lastEventAt: number };

/** Chat-recovery record statuses that mean recovery is still under way (agents 0.32 ChatRecoveryIncident). */
const RECOVERING = new Set(["detected", "scheduled", "attempting"]);

/** The facts of a record worth carrying (every field optional in the event). */
export function recordedOf(r: FoundRun): Recorded {
  const out: Recorded = { state: r.state };
  if (r.error) out.error = r.error.slice(0, 4000);
  if (r.settledAt !== null) out.endedAt = r.settledAt;
  if (r.startedAt !== null) out.startedAt = r.startedAt;
  else if (r.createdAt !== null) out.startedAt = r.createdAt;
  if (r.name) out.name = r.name.slice(0, 200);
  if (r.definition) out.definition = r.definition.slice(0, 200);
  if (r.attempt !== null) out.attempt = r.attempt;
  if (r.statusMessage) out.statusMessage = r.statusMessage.slice(0, 500);
  if (r.step) out.step = r.step.slice(0, 200);
  if (r.wakeAt !== null) out.wakeAt = r.wakeAt;
  return out;
}

/**
 * A run's finding from what the agent records of it: ended with its recorded outcome, or alive (with what it
 * is doing); null when the record's state is a word the mapping does not know (nothing is judged on a guess).
 */
export function findingOfRecord(kind: RunKind, runId: string, r: FoundRun): Finding | null {
  const mapped = runStateOf(kind, r.state);
  if (!mapped) return null;
  const words = kindWords(kind);
  if (mapped.outcome) {
    return {
      type: "run.reconciled",
      kind,
      runId,
      finding: "ended",
      detail: `the agent still records this ${words} as ${r.state}; its end was not reported`,
      ...recordedOf(r),
    };
  }
  return { type: "run.reconciled", kind, runId, finding: "confirmed_running", detail: `the agent records this ${words} as ${r.state}`, ...recordedOf(r) };
}

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
  // Waiting work is parked, not done: a session of an agent that waits is not judged ended.
  const idle = live.status === "idle" || live.status === "terminated";

  for (const r of open.runs) {
    if (!settled(r.lastSeen)) continue;
    const alive = r.kind === "chat_turn" ? chatTurnAlive(r, live) : live.liveRunIds.has(r.runId);
    const record = live.records?.get(r.runId);
    if (alive === true) {
      if (!recentlyConfirmed(r.confirmedAt)) {
        const facts = record ? recordedOf(record) : {};
        out.push({
          type: "run.reconciled",
          kind: r.kind,
          runId: r.runId,
          finding: "confirmed_running",
          detail: "the agent reports this run as live",
          ...facts,
        });
      }
      continue;
    }
    if (alive === null) continue;
    const judged = runVerdict(r, live);
    if (judged && !(judged.type === "run.reconciled" && judged.finding === "confirmed_running" && recentlyConfirmed(r.confirmedAt))) out.push(judged);
  }

  for (const i of open.incidents) {
    if (!settled(i.lastSeen)) continue;
    const found = incidentFindings(i, live);
    // A confirmation, and what was read with it, is not repeated within the same age.
    if (found.some((f) => f.type === "incident.reconciled" && f.finding === "confirmed_open") && recentlyConfirmed(i.confirmedAt)) continue;
    out.push(...found);
  }

  for (const s of open.sessions) {
    if (settled(s.lastSeen) && idle)
      out.push({
        type: "session.reconciled",
        name: s.name,
        finding: "ended_unreported",
        detail: `the agent reports ${live.status}; the session's end was not reported`,
        lastEventAt: s.lastSeen,
      });
  }
  return out;
}

/** A run the agent no longer runs: ended as it records, unreported when it has no record, or left for later. */
function runVerdict(r: OpenRun, live: LiveWork): Finding | null {
  const unreported = (detail: string): Finding => ({ type: "run.reconciled", kind: r.kind, runId: r.runId, finding: "ended_unreported", detail });
  const words = kindWords(r.kind);
  // An agent that cannot say what it records (an older package): judged from its live work, as before.
  if (!live.records) return unreported(`the agent no longer has this ${words}; how it ended was not reported`);
  const record = live.records.get(r.runId);
  if (record) return findingOfRecord(r.kind, r.runId, record);
  if (live.missing?.has(r.runId)) return unreported(`the agent has no record of this ${words}; how it ended was not reported`);
  return null; // not asked this time (too many open): the next pass asks
}

/** A chat turn is alive while a live run carries its request id; unknown (null) while the agent is busy with something unnamed. */
function chatTurnAlive(r: OpenRun, live: LiveWork): boolean | null {
  if (live.liveRunIds.has(r.runId)) return true;
  if (live.status === "running" && live.liveRunIds.size === 0) return null;
  return false;
}

function incidentFindings(i: OpenIncident, live: LiveWork): Finding[] {
  const one = (finding: "not_recovering" | "confirmed_open", detail: string, fiberStatus?: string): Finding[] => [
    { type: "incident.reconciled", incidentId: i.incidentId, finding, detail, ...(fiberStatus ? { fiberStatus } : {}) },
  ];
  if (i.kind === "chat") {
    const record = live.chatRecords.get(i.incidentId) ?? [...live.chatRecords.values()].find((c) => i.requestId !== null && c.requestId === i.requestId);
    if (record && RECOVERING.has(record.status)) return one("confirmed_open", `the agent's recovery record says ${record.status}`);
    if (record)
      return one(
        "not_recovering",
        `the agent's recovery record says ${record.status}${record.reason ? ` (${record.reason})` : ""}; the event was not received`,
      );
    return one("not_recovering", "the agent holds no recovery record for this turn; how it ended was not reported");
  }
  if (i.kind === "fiber") {
    if (i.fiberId !== null && live.liveRunIds.has(i.fiberId))
      return one("confirmed_open", "the fiber's row is still there: the agent will recover it on its next wake");
    const record = i.fiberId !== null ? live.records?.get(i.fiberId) : undefined;
    if (record && record.kind === "managed_fiber") {
      // A managed fiber the SDK keeps interrupted waits for resolveFiber: the incident stays open, confirmed. Its run
      // is read as the SDK records it, dated when the SDK interrupted it: a recovery hook's reason (its result
      // `interrupted`) is the fiber's error, which no event carries on the tail path. An undated record is not read
      // into the run: its date would be this pass's.
      if (FIBER_AWAITS_RESOLUTION.has(record.state)) {
        const run = record.settledAt !== null ? findingOfRecord("managed_fiber", record.runId, record) : null;
        return [
          ...one("confirmed_open", `the agent keeps this managed fiber ${record.state}: it waits for resolveFiber`),
          ...(run && run.type === "run.reconciled" && run.finding === "ended"
            ? [{ ...run, detail: `the agent keeps this managed fiber ${record.state}: it waits for resolveFiber` }]
            : []),
        ];
      }
      // Settled since (resolveFiber, whose settling the SDK reports with no event): the incident and its run close as the SDK records.
      const run = findingOfRecord("managed_fiber", record.runId, record);
      return [
        ...one("not_recovering", `the agent records this managed fiber as ${record.state}; how its recovery ended was not reported`, record.state),
        ...(run && run.type === "run.reconciled" && run.finding === "ended" ? [run] : []),
      ];
    }
    if (record && record.source === "agent")
      return one("not_recovering", `the agent's own record says ${record.state}; how its recovery ended was not reported`, record.state);
    if (i.fiberId !== null && live.records && !live.missing?.has(i.fiberId) && !record) return []; // not asked this time
    return one("not_recovering", "the fiber's row is gone; how recovery ended was not reported");
  }
  // A session turn: the agent's own derived status says whether it is still working on it.
  if (live.status === "running" || live.status === "waiting") return one("confirmed_open", `the agent reports it is ${live.status}`);
  return one("not_recovering", `the agent reports ${live.status}; how recovery ended was not reported`);
}

function kindWords(kind: RunKind): string {
  return { fiber: "fiber", managed_fiber: "managed fiber", task: "task run", chat_turn: "chat turn" }[kind];
}

/**
 * Whether a record is work its user started. The SDK's own machinery (`__cf_internal_*`: chat recovery transports,
 * a chat turn's carrier) is never a run of its own: a carrier is the chat turn named by its request id, and one
 * that names none cannot be told from the turn it carries, so reconciliation does not invent a run for it.
 */
function userWork(r: FoundRun): boolean {
  if (!isInternalSdkName(r.definition ?? "") && !isInternalSdkName(r.name ?? "")) return true;
  return r.kind === "chat_turn" && r.requestId !== null;
}

/**
 * Runs the agent records that the console does not know, or still shows open (`known`: console outcome by run
 * id, null while open or while its end awaits the agent's word, knownRunOutcomes): what reconciliation fills in
 * when events never arrived (a sequence gap), or arrived without what only the agent's record says (the tail path).
 */
export function fillFindings(recorded: readonly FoundRun[], known: ReadonlyMap<string, string | null>): Finding[] {
  const out: Finding[] = [];
  for (const r of recorded) {
    if (!userWork(r)) continue;
    if (known.has(r.runId) && known.get(r.runId) !== null) continue;
    const f = findingOfRecord(r.kind, r.runId, r);
    if (f?.type !== "run.reconciled") continue;
    // A run the console never heard of: said so, so its page tells where it came from.
    out.push(known.has(r.runId) ? f : { ...f, detail: `${f.detail}; its events never arrived` });
  }
  return out;
}

/**
 * Runs whose end the console holds without the agent's word on it (`runs`: an unconfirmed end, or work an action
 * just ended), closed as the agent records them (`records`, adminFindRuns), dated when it settled them, which
 * outranks the unconfirmed stamp. Only a recorded end is read in: a run the agent still runs, has no record of, or
 * records in a word the mapping does not know stays as the console shows it. A run `already` judged is skipped.
 */
export function readBackFindings(
  runs: readonly { kind: RunKind; runId: string }[],
  records: ReadonlyMap<string, FoundRun> | undefined,
  already: readonly Finding[],
): Finding[] {
  if (!records) return [];
  const done = new Set(already.flatMap((f) => (f.type === "run.reconciled" ? [f.runId] : [])));
  const out: Finding[] = [];
  for (const r of runs) {
    const record = records.get(r.runId);
    if (done.has(r.runId) || !record) continue;
    done.add(r.runId);
    const f = findingOfRecord(record.kind, r.runId, record);
    if (f?.type === "run.reconciled" && f.finding === "ended")
      out.push({ ...f, detail: `the agent records this ${kindWords(record.kind)} as ${record.state}` });
  }
  return out;
}

/** Why the console cannot ask an agent at all (admin client error facts): it has no admin package, or no binding reaches its class. */
export const UNASKABLE = new Set(["no_mixin", "not_addressable", "no_binding", "other_worker"]);

/**
 * The open runs of an agent the console cannot ask whose last event is older than `unknownAfterMs`: shown as
 * unknown, since nothing can tell whether they still run. A fallback any reported outcome supersedes.
 */
export function unknownFindings(open: OpenWork, why: string, opts: { now: number; unknownAfterMs: number }): Finding[] {
  const minutes = Math.round(opts.unknownAfterMs / 60_000);
  return open.runs
    .filter((r) => opts.now - r.lastSeen >= opts.unknownAfterMs)
    .map((r) => ({
      type: "run.reconciled" as const,
      kind: r.kind,
      runId: r.runId,
      finding: "unknown" as const,
      detail: `no event for ${minutes} min and the agent cannot be asked (${why}): whether it still runs, and how it ended, is not known`,
    }));
}
