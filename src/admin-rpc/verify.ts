import type {
  AdminResult,
  AfterNotice,
  ForceIdleOutput,
  ListRunsOutput,
  StatusOutput,
  TriggerAlarmOutput,
  VerifiedAfter,
  VerifiedForceIdleOutput,
  VerifiedResult,
  VerifiedTriggerAlarmOutput,
  VerifyOutput,
} from "./contract.js";

/**
 * Worker side of "actions verify what they did": once an action answered, the client reads the agent again
 * (adminVerify) and reports what is true then, run by run, instead of what the action attempted. The audit
 * records that after-state and a result that follows from it: `ok` only when the agent shows what was asked.
 */

/** How the client reads the agent back: adminVerify, or for an agent whose mixin predates it, status and runs. */
export type VerifyReads = {
  verify: (ids: string[]) => Promise<AdminResult<VerifyOutput>>;
  /** Status and live runs (every mixin has them): the fallback for agents without adminVerify. */
  live: () => Promise<AdminResult<{ status: StatusOutput; runs: ListRunsOutput }>>;
  now: () => number;
  wait: (ms: number) => Promise<void>;
};

/** After force idle evicted the agent, how long the client waits for a fresh instance to answer. */
export const EVICTION_WAIT_MS = 1500;
const POLL_MS = 100;

/** The after-state from a read-back, with each run named as the action knew it. */
function afterFrom(read: VerifyOutput, names: Map<string, string | null>, readAt: number, notice: AfterNotice | null): VerifiedAfter {
  const checks = read.checks.map((c) => ({ ...c, name: c.name ?? names.get(c.id) ?? null }));
  const busy = read.busy.map((b) => ({ ...b, name: b.name ?? names.get(b.id) ?? null }));
  return { ...read.status, verified: true, readAt, checks, busy, notice };
}

/** The action's own report at its end, standing in when the agent could not be read again (`notice` says why). */
function unverified(status: StatusOutput, readAt: number, notice: AfterNotice): VerifiedAfter {
  return { ...status, verified: false, readAt, checks: [], busy: [], notice };
}

/**
 * Reads the agent back by these SDK ids. After an eviction (`evictedBy`: the instance that answered the action
 * and then evicted itself), only a fresh instance's answer counts: the old one is read again until it is gone.
 * Falls back to status and runs for an agent without adminVerify. `error` (null: the old instance still answered) when no answer came.
 */
async function readBack(
  r: VerifyReads,
  ids: string[],
  evictedBy: string | null,
): Promise<{ read: VerifyOutput; fallback: boolean } | { error: string | null }> {
  const deadline = r.now() + (evictedBy ? EVICTION_WAIT_MS : 0);
  // null: the instance that evicted itself still answered (it had not been evicted yet).
  let last: string | null = null;
  for (;;) {
    const v = await r.verify(ids);
    if (v.ok && (evictedBy === null || v.value.instance !== evictedBy)) return { read: v.value, fallback: false };
    if (!v.ok && v.error.code === "unsupported") {
      const l = await r.live();
      if (!l.ok) return { error: l.error.message };
      return { read: { instance: "", status: l.value.status, runs: l.value.runs, checks: [], busy: [] }, fallback: true };
    }
    last = v.ok ? null : v.error.message;
    if (r.now() >= deadline) return { error: last };
    await r.wait(POLL_MS);
  }
}

/**
 * Force idle, verified: each run it ended read back through the SDK (tasks.get, inspectFiber, the run rows and
 * running callbacks), with the agent's status and everything running now. `ok` only when the agent is idle and
 * nothing runs; otherwise `partial`, with one sentence saying what still runs. Nothing to do is `noop` only when
 * the read-back agrees (a queued callback it cannot stop makes it `partial`).
 */
export async function verifyForceIdle(v: ForceIdleOutput, r: VerifyReads): Promise<VerifiedForceIdleOutput> {
  const refs = v.ended.map((e) => e.ref ?? e.runId);
  const names = new Map(v.ended.map((e) => [e.ref ?? e.runId, e.name]));
  const got = await readBack(r, refs, v.evicted ? v.instance : null);
  const readAt = r.now();
  if ("error" in got) {
    const after = unverified(v.after, readAt, { code: "not_read_back", action: "force_idle", error: got.error, alarm: null });
    return { ...v, result: "partial", after, live: null };
  }
  const { read } = got;
  const still = read.checks.filter((c) => c.now !== "stopped");
  // Work the action never saw (started since, or it has no record of) counts too: the agent is not idle.
  const touched = new Set(refs);
  const other = read.busy.filter((b) => !touched.has(b.id));
  const idle = read.status.status === "idle" && still.length === 0 && other.length === 0;
  // What still runs is in `after` (its checks not stopped, its busy work); the notice says which case it is.
  const notice: AfterNotice | null = idle ? null : still.length || other.length ? { code: "still_runs" } : { code: "not_idle", oldMixin: got.fallback };
  // Nothing to do is a no-op only if the agent, read back, is indeed idle with nothing running.
  const result: VerifiedResult = !idle ? "partial" : v.noop ? "noop" : "ok";
  return { ...v, result, after: afterFrom(read, names, readAt, notice), live: { status: read.status, runs: read.runs } };
}

/**
 * Trigger alarm, verified: the runs recovery settled read back, with the agent's status and what runs now.
 * `ok` only when the alarm ran to its end; `partial` when it did not run (busy: one sentence names what holds
 * it) or had not finished within its budget.
 */
export async function verifyTriggerAlarm(v: TriggerAlarmOutput, r: VerifyReads): Promise<VerifiedTriggerAlarmOutput> {
  const got = await readBack(r, v.recoveredRuns, null);
  const readAt = r.now();
  const holders = v.busy.filter((b) => b.holdsAlarm);
  const notice: AfterNotice | null =
    v.outcome === "busy"
      ? { code: "alarm_busy", holders }
      : v.outcome === "still_running"
        ? { code: "alarm_unfinished", budgetMs: v.budgetMs, busy: v.busy }
        : null;
  const result: VerifiedResult = v.outcome === "ran" ? "ok" : "partial";
  if ("error" in got) {
    const after = unverified(v.after, readAt, { code: "not_read_back", action: "trigger_alarm", error: got.error, alarm: notice });
    return { ...v, result: "partial", after, live: null };
  }
  return { ...v, result, after: afterFrom(got.read, new Map(), readAt, notice), live: { status: got.read.status, runs: got.read.runs } };
}
