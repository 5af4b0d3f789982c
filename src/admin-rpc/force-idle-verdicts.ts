import { z } from "zod";
import {
  chatIncidentRecord,
  type EndedRun,
  type ForceIdleFacts,
  type ForceIdleNotice,
  type ForceIdleOutput,
  type ForceIdleRun,
  type ForceIdleTurn,
  forceIdleOutput,
} from "./contract.js";
import { CHAT_RECOVERY_LIVE_STATUSES } from "./sdk-layout.js";

/**
 * The Worker side of force idle (contract 10): the agent answers what it found and did (ForceIdleFacts); this judges
 * each run (`stopped`, `how`, `why`), the notice, and which chat-recovery incidents the action closed, so none of it
 * ships in a user's Worker. An answer of an older mixin (it has `ended`) is its own verdict and passes unchanged.
 */

/**
 * A chat-recovery record of an incident the SDK had already closed (exhausted, failed, completed, skipped): clearing
 * it stops nothing. A record without a status the mixin can read ("unknown") is not known to be closed.
 */
const closedBySdk = (r: { status: string }) => r.status !== "unknown" && !CHAT_RECOVERY_LIVE_STATUSES.has(r.status);

/** A chat turn's verdict: stopped through the SDK's chat API, or still running after the settle time. */
function turnVerdict(t: ForceIdleTurn, evicted: boolean, settleMs: number): EndedRun {
  const base = { kind: "chat_turn" as const, runId: t.runId, ref: t.ref, name: null, sdkStatus: t.sdkStatus };
  // Its model stream may still run (its Tasks run is cancelled, so it is not replayed); an eviction stops it.
  if (t.stuck) {
    return evicted
      ? { ...base, stopped: true, how: "evicted", why: "chat_not_ended", settleMs }
      : { ...base, stopped: false, how: "still_running", why: "chat_not_ended", settleMs };
  }
  if (t.submission) {
    return t.ended
      ? { ...base, stopped: true, how: "not_running", why: "submission_ended" }
      : { ...base, stopped: true, how: "cancelled", why: t.wasRunning ? "submission_cancelled" : "submission_dropped" };
  }
  return { ...base, stopped: true, how: "cancelled", why: "chat_aborted" };
}

/** Any other run's verdict: by where it was, whether it ran, and whether it still runs. */
function runVerdict(c: ForceIdleRun, evicted: boolean, hook: boolean): EndedRun {
  const base = { kind: c.kind, runId: c.runId, ref: c.taskRunId ?? c.rowId ?? c.runId, name: c.name };
  if (c.running) {
    return evicted ? { ...base, stopped: true, how: "evicted", why: "evicted" } : { ...base, stopped: false, how: "still_running", why: "unstoppable" };
  }
  if (!c.wasRunning) return { ...base, stopped: true, how: "not_running", why: c.source === "row" ? "idle_row_removed" : "idle_cancelled" };
  if (c.source === "row") {
    return hook ? { ...base, stopped: true, how: "hook", why: "hook" } : { ...base, stopped: true, how: "not_running", why: "ended_itself" };
  }
  return { ...base, stopped: true, how: "cancelled", why: c.source === "task" ? "tasks_cancelled" : "fiber_cancelled" };
}

/** ForceIdleOutput from the agent's facts (contract 10). */
export function forceIdleFromFacts(f: ForceIdleFacts): Omit<ForceIdleOutput, "before" | "after"> & Pick<ForceIdleFacts, "before" | "after"> {
  const runs = f.runs ?? [];
  const turns = f.turns ?? [];
  const evicted = f.evicted ?? false;
  const hook = f.hook ?? false;
  const stuckRuns = runs.filter((r) => r.running).length;
  const stuckTurns = turns.filter((t) => t.stuck).length;
  // What kept running is in `ended` (still_running, or evicted); the notice says why, as a code the console words.
  const notice: ForceIdleNotice | null =
    stuckRuns + stuckTurns === 0 ? null : { code: "unstopped", cause: stuckRuns === 0 ? "chat_not_ended" : hook ? "hook_did_not_stop" : "no_hook" };
  // Every chat-recovery record force idle found (the status before it) was removed; a no-op found none.
  // Read as the client reads a status (contract 11 sends the SDK's records); a record of the wrong shape throws, and
  // the answer is then refused by forceIdleOutput with what is wrong (forceIdleAnswer).
  const records = f.noop ? [] : z.array(chatIncidentRecord).parse(f.before.chatRecoveryIncidents ?? []);
  return {
    noop: f.noop,
    instance: f.instance,
    before: f.before,
    after: f.after,
    ended: [...turns.map((t) => turnVerdict(t, evicted, f.settleMs ?? 0)), ...runs.map((r) => runVerdict(r, evicted, hook))],
    // Only what was open and this action closed: a record of an incident the SDK had already closed is removed too
    // (nothing else would, for up to an hour), but it is reported apart, with the SDK's own word for it.
    incidents: [
      ...records.filter((r) => !closedBySdk(r)).map((r) => ({ incidentId: r.incidentId ?? r.key, kind: "chat" as const })),
      ...(f.hookIncidents ?? []).map((id) => ({ incidentId: id, kind: "hook" as const })),
    ],
    alreadyClosed: records.filter(closedBySdk).map((r) => ({ incidentId: r.incidentId ?? r.key, status: r.status })),
    evicted,
    notice,
    abortedRuns: f.abortedRuns ?? [],
    cancelledFibers: f.cancelledFibers ?? [],
    clearedIncidents: f.clearedIncidents ?? [],
  };
}

/** An answer of contract 10 (facts, no `ended`), to be judged here; an older mixin's answer carries its own `ended`. */
const isFacts = (v: unknown): v is ForceIdleFacts =>
  typeof v === "object" && v !== null && !Array.isArray((v as { ended?: unknown }).ended) && typeof (v as { before?: unknown }).before === "object";

/**
 * What the client checks force idle's answer with: facts are judged first (forceIdleFromFacts), then every answer
 * is checked against ForceIdleOutput. The agent's statuses are checked there, before and after judging alike.
 */
export const forceIdleAnswer: z.ZodType<ForceIdleOutput, ForceIdleFacts> = z.preprocess((v) => {
  if (!isFacts(v)) return v;
  try {
    return forceIdleFromFacts(v);
  } catch {
    // Facts of the wrong shape: left as they came, for ForceIdleOutput to refuse with what is wrong.
    return v;
  }
}, forceIdleOutput) as unknown as z.ZodType<ForceIdleOutput, ForceIdleFacts>;
