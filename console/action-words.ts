import { ADMIN_ACTIONS, type AdminActionName, type AgentActionName } from "../src/admin-rpc/actions";
import type {
  Capabilities,
  PauseRecoveryOutput,
  ResolveOpOutput,
  ResumeRecoveryOutput,
  VerifiedForceIdleOutput,
  VerifiedTriggerAlarmOutput,
} from "../src/admin-rpc/contract";
import { forceIdleIncidentsWords } from "./admin-words";

/**
 * What each admin action says in the console beyond its ADMIN_ACTIONS entry (its label and its form's words,
 * `confirm`): its form's help where the agent's capabilities say more (formOf), and its answer (doneOf), in words
 * built from its facts where DONE has them, plainly otherwise.
 */

/** What force idle will do on this agent, in words, from its capabilities. */
function forceIdleHelp(c: Capabilities): string {
  const parts = [
    c.forceIdleHook ? "asks the agent to stop its active turn (its onAdminForceIdle hook)" : null,
    c.tasks ? "cancels its Tasks runs" : null,
    c.managedFibers ? "cancels its managed fibers" : null,
    "removes its run rows so nothing is recovered",
    c.chatRecovery ? "clears its chat-recovery records" : null,
  ].filter(Boolean);
  const plain =
    c.plainFiberStop === "evict"
      ? "A runFiber callback that nothing else stops is stopped by evicting the agent."
      : "A runFiber callback that nothing else stops keeps running until it returns; the result says so.";
  return `${parts.join(", ")}. ${plain}`.replace(/^./, (ch) => ch.toUpperCase());
}

/** An action's help from the capabilities the agent reported, where they say more than its entry's `confirm.help` (null: they do not). */
const HELP_BY_CAPABILITIES: { [K in AgentActionName]?: (c: Capabilities) => string | null } = {
  force_idle: forceIdleHelp,
  pause_recovery: (c) =>
    c.pauseRecovery ? null : "This agent's admin mixin is older than the recovery pause: upgrade @agent-oncall/admin-rpc in its Worker first.",
};

/** The form of an action on a whole agent (an op's resolution has its own control: resolve-op.tsx), for an agent with these capabilities. */
export function formOf(action: AgentActionName, c: Capabilities | null): { placeholder: string; danger: boolean; help: string } {
  const { confirm } = ADMIN_ACTIONS[action];
  const refined = c ? HELP_BY_CAPABILITIES[action]?.(c) : null;
  return { placeholder: confirm.placeholder, danger: confirm.danger, help: refined ?? confirm.help };
}

const RESOLVED_AS: Record<ResolveOpOutput["resolution"], string> = {
  verified_ran: "it ran",
  verified_not_ran: "it did not run",
  rerun: "it was re-run with its idempotency key",
};

/** What the agent is, as the console read it back after the action (the result's after-state says so), or could not. */
const readBack = (after: VerifiedForceIdleOutput["after"]) =>
  after.verified ? `The agent is now ${after.status}.` : `The agent reported itself ${after.status}, but the console could not read it back.`;

/** What the operator reads after an action that answered: from what was read back, not what was attempted. */
export type Done = {
  title: string;
  detail: string;
  /** Only what the read-back confirmed is a plain success: partial is said in the warning colour. */
  clean: boolean;
  /** The verified answer of an action that changes what runs (it re-renders the agent's live panel). */
  verified?: VerifiedForceIdleOutput | VerifiedTriggerAlarmOutput;
  forceIdle?: VerifiedForceIdleOutput;
};

/** Each action's answer in words built from its facts; an action without words here is answered plainly (doneOf). */
export const DONE: { [K in AdminActionName]?: (label: string, value: unknown) => Done } = {
  resolve_op: (label, value) => {
    const v = value as ResolveOpOutput;
    const ref = v.resultRef ? ` Result: ${v.resultRef}.` : "";
    return {
      clean: true,
      title: `${label} done.`,
      detail: `Op ${v.opId} (${v.after.kind}) is recorded as resolved: ${RESOLVED_AS[v.resolution]}. The agent's ledger says ${v.before.status} → ${v.after.status}.${ref}`,
    };
  },
  force_idle: (label, value) => {
    const v = value as VerifiedForceIdleOutput;
    const said = { clean: v.result !== "partial", verified: v, forceIdle: v };
    if (v.noop && v.result === "noop") return { ...said, title: `${label} done.`, detail: "Nothing to do: the agent was already idle. Recorded as a no-op." };
    if (v.noop) return { ...said, title: `${label}: nothing it can stop, but work still runs.`, detail: readBack(v.after) };
    const stillRunning = v.after.verified ? v.after.checks.filter((c) => c.now !== "stopped").length : v.ended.filter((r) => !r.stopped).length;
    const runs = v.ended.length
      ? ` Ended ${v.ended.length} run(s): ${v.ended.length - stillRunning} stopped${stillRunning ? `, ${stillRunning} NOT stopped` : ""}.`
      : "";
    const incidentWords = forceIdleIncidentsWords(v, v.before.capabilities?.contract);
    const incidents = incidentWords ? ` ${incidentWords}` : "";
    return { ...said, title: v.result === "ok" ? `${label} done.` : `${label} done, but work still runs.`, detail: `${readBack(v.after)}${runs}${incidents}` };
  },
  pause_recovery: (label, value) => {
    const v = value as PauseRecoveryOutput;
    const until = v.after.pause ? new Date(v.after.pause.until).toISOString() : "(not read back)";
    const waiting = v.after.pendingRecovery ? ` ${v.after.pendingRecovery} recovery(ies) wait and stay recoverable.` : "";
    return { clean: true, title: `${label} done.`, detail: `The agent holds its fiber recovery back until ${until}.${waiting}` };
  },
  resume_recovery: (label, value) => {
    const v = value as ResumeRecoveryOutput;
    if (v.noop) return { clean: true, title: `${label} done.`, detail: "Nothing to do: the agent held no pause. Recorded as a no-op." };
    const left = v.after.pendingRecovery;
    const alarm = v.alarm === "still_running" ? " Its alarm is still recovering in the background." : "";
    return {
      clean: left === 0,
      title: left === 0 ? `${label} done.` : `${label} done, but recovery still waits.`,
      detail: `Recovered ${v.recovered.length} fiber(s); ${left} still wait.${alarm}`,
    };
  },
  trigger_alarm: (label, value) => {
    const v = value as VerifiedTriggerAlarmOutput;
    const said = { clean: v.result !== "partial", verified: v };
    if (v.outcome === "busy") return { ...said, title: `${label}: not run, the agent is busy.`, detail: `Nothing was done. ${readBack(v.after)}` };
    const settled = `recovery settled ${v.recoveredRuns.length} fiber(s) so far`;
    if (v.outcome === "still_running")
      return { ...said, title: `${label}: started, not finished.`, detail: `The alarm goes on in the background; ${settled}. ${readBack(v.after)}` };
    return { ...said, title: `${label} done.`, detail: `Alarm ran; recovery settled ${v.recoveredRuns.length} fiber(s). ${readBack(v.after)}` };
  },
};

/** An answer DONE does not word, said plainly from its facts and verdict: a partial result, a no-op, or done. */
export function plainDone(label: string, value: unknown): Done {
  const v = value as { noop?: unknown; result?: unknown } | null;
  if (v?.result === "partial")
    return { clean: false, title: `${label} done, but not all of it took effect.`, detail: "The audit log has what the agent answered." };
  if (v?.noop === true) return { clean: true, title: `${label} done.`, detail: "Nothing changed. Recorded as a no-op." };
  return { clean: true, title: `${label} done.`, detail: "The audit log has what the agent answered." };
}

/** What the operator reads after an action answered: its words from DONE, or plainly (plainDone). */
export function doneOf(action: AdminActionName, label: string, value: unknown): Done {
  return DONE[action]?.(label, value) ?? plainDone(label, value);
}
