import type { AuditRecord, AuditResult } from "./audit-record.js";
import type {
  ForceIdleOutput,
  PauseRecoveryOutput,
  ResolveOpOutput,
  ResumeRecoveryOutput,
  StatusOutput,
  TriggerAlarmOutput,
  VerifiedForceIdleOutput,
} from "./contract.js";
import { type VerifyReads, verifyForceIdle, verifyTriggerAlarm } from "./verify.js";

/**
 * The Worker side of what an action's answer means, named by its ADMIN_ACTIONS entry: its verdict (how the client
 * judges the answer, reading the agent back where the action changes what runs; the audit records that result) and
 * its events (what it sends through the telemetry Queue once audited). Shared verdicts and events for a new action
 * are here too (`answerVerdict`, `noEvents`).
 */

/** How the client judges an action's answer: the value it returns and audits, and the audit's result. */
export type ActionVerdict = (value: unknown, reads: () => VerifyReads) => Promise<{ value: unknown; result: AuditResult }>;
/**
 * Where an action's events go: the client hands a telemetry pipe (client.ts, `@agent-oncall/telemetry`'s
 * `Telemetry`), which builds each envelope; ingest validates every payload. Structural, so this package's types
 * name no other package.
 */
export type ActionEventSink = {
  record(type: string, payload: Record<string, unknown>, corr?: { [K in "incidentId" | "opId" | "fiberId" | "taskId" | "requestId"]?: string }): unknown;
};
/** The events an action sends, from its audit record and its value (undefined unless it succeeded, fully or in part). */
export type ActionEvents = (telemetry: ActionEventSink, e: AuditRecord, value: unknown) => void;

/** The answer is its own verdict: `noop` when it says so, else `ok` (nothing to read back). */
export const answerVerdict: ActionVerdict = async (value) => ({ value, result: (value as { noop?: boolean }).noop ? "noop" : "ok" });

/** Force idle and trigger alarm change what runs, so the agent is read back (verify.ts) and `result` says what that showed. */
export const forceIdleVerdict: ActionVerdict = async (value, reads) => {
  const v = await verifyForceIdle(value as ForceIdleOutput, reads());
  return { value: v, result: v.result };
};
export const triggerAlarmVerdict: ActionVerdict = async (value, reads) => {
  const v = await verifyTriggerAlarm(value as TriggerAlarmOutput, reads());
  return { value: v, result: v.result };
};
/** A pause is ok when the agent, read again, holds it in force. */
export const pauseVerdict: ActionVerdict = async (value, reads) => {
  const live = await reads().live();
  return { value, result: live.ok && live.value.status.recoveryPause?.active ? "ok" : "partial" };
};
/** A resume is ok when the agent, read again, holds no pause and nothing waits. */
export const resumeVerdict: ActionVerdict = async (value, reads) => {
  const v = value as ResumeRecoveryOutput;
  if (v.noop) return { value, result: "noop" };
  const live = await reads().live();
  return { value, result: live.ok && !live.value.status.recoveryPause && v.after.pendingRecovery === 0 ? "ok" : "partial" };
};

/** An action that sends no event (its audit row is its record). */
export const noEvents: ActionEvents = () => {};

/**
 * Force idle: the admin.force_idle event, and one `run.force_idled` per run it ended and one `incident.force_idled`
 * per recovery incident it cleared, which close their projections.
 */
export const forceIdleEvents: ActionEvents = (telemetry, e, value) => {
  adminEvent(telemetry, "admin.force_idle", e);
  if (!value) return;
  const reason = reasonOf(e);
  const v = value as VerifiedForceIdleOutput;
  // Whether a run stopped is what the agent, read back, says now; the action's own verdict only where it could not be read.
  const now = new Map((v.after.verified ? v.after.checks : []).map((c) => [c.id, c]));
  for (const r of v.ended) {
    const corr = r.kind === "task" ? { taskId: r.runId } : r.kind === "chat_turn" ? { requestId: r.runId } : { fiberId: r.runId };
    const c = now.get(r.ref ?? r.runId);
    const stopped = c ? c.now === "stopped" : r.stopped;
    const sdkState = c ? { sdkState: c.sdkState.slice(0, 100) } : {};
    telemetry.record(
      "run.force_idled",
      { kind: r.kind, runId: r.runId.slice(0, 200), ...(r.name ? { name: r.name.slice(0, 200) } : {}), reason, stopped, how: r.how, ...sdkState },
      corr,
    );
  }
  for (const i of v.incidents) telemetry.record("incident.force_idled", { reason }, { incidentId: i.incidentId });
};

export const triggerAlarmEvents: ActionEvents = (telemetry, e) => adminEvent(telemetry, "admin.trigger_alarm", e);

// The pause's state on the console (store: recovery_pauses) follows these; only an action that took effect sends one.
export const pauseEvents: ActionEvents = (telemetry, e, value) => {
  const until = (value as PauseRecoveryOutput | undefined)?.after.pause?.until;
  if (until !== undefined) telemetry.record("recovery.paused", { actor: e.actor, reason: reasonOf(e).slice(0, 2000), until });
};
export const resumeEvents: ActionEvents = (telemetry, e, value) => {
  const v = value as ResumeRecoveryOutput | undefined;
  if (v && !v.noop)
    telemetry.record("recovery.resumed", {
      actor: e.actor,
      reason: reasonOf(e).slice(0, 2000),
      recovered: v.recovered.slice(0, 100).map((id) => id.slice(0, 200)),
    });
};

/** The op's projection closes through the normal pipeline, also for agents whose ledger reports nothing itself. */
export const resolveOpEvents: ActionEvents = (telemetry, e, value) => {
  const v = value as ResolveOpOutput | undefined;
  if (!v) return;
  telemetry.record(
    "op.resolved",
    {
      opKind: v.after.kind.slice(0, 200),
      idempotent: v.after.idempotent,
      resolution: v.recorded,
      ...(v.resultRef ? { resultRef: v.resultRef.slice(0, 500) } : {}),
      reason: reasonOf(e).slice(0, 2000),
    },
    { opId: v.opId },
  );
};

const reasonOf = (e: AuditRecord) => e.reason || "(none given)";

/** The admin.* event of an action on the agent itself: who, why, the outcome, and a summary of before and after. */
function adminEvent(telemetry: ActionEventSink, type: "admin.force_idle" | "admin.trigger_alarm", e: AuditRecord): void {
  telemetry.record(type, {
    actor: e.actor,
    reason: reasonOf(e),
    result: e.result === "invalid" || e.result === "pending" ? "error" : e.result,
    ...(e.before ? { before: summary(e.before) } : {}),
    ...(e.after ? { after: summary(e.after) } : {}),
  });
}

/** The part of a status worth keeping in an event: small and without snapshots. */
function summary(s: unknown): unknown {
  const v = s as Partial<StatusOutput>;
  return { status: v.status, runCount: v.runCount, nextAlarm: v.nextAlarm, chatRecoveryIncidents: v.chatRecoveryIncidents?.length };
}
