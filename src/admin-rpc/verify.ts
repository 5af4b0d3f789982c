import type {
  AdminResult,
  BusyWork,
  ForceIdleOutput,
  ListRunsOutput,
  RunCheck,
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

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);
const secondsSince = (t: number | null, now: number) => (t === null ? "" : ` for ${Math.max(0, Math.round((now - t) / 1000))} s`);

/** One piece of running work, in words ("a chat turn is running (request r-1)"). */
export function describeBusy(b: BusyWork, now: number): string {
  switch (b.kind) {
    case "chat_turn":
      return `a chat turn is running (request ${b.requestId ?? b.id})`;
    case "task":
      return `a Tasks run '${b.name ?? "?"}' is running (run ${b.id}${b.step ? `, at step ${b.step}` : ""})`;
    case "fiber":
      return b.name ? `a runFiber callback '${b.name}' is running` : `a runFiber callback (${b.id}) is running in memory with its row removed`;
    case "managed_fiber":
      return `a managed fiber '${b.name ?? b.id}' is running`;
    case "queued_callback":
      return `a queued callback '${b.name ?? b.id}' is running${secondsSince(b.since, now)}`;
    case "scheduled_callback":
      return `a scheduled callback '${b.name ?? b.id}' is running${secondsSince(b.since, now)}`;
  }
}

/** One run still at work after force idle, in words, as the SDK records it now. */
function describeCheck(c: RunCheck, name: string | null): string {
  const what = c.kind === "task" ? "Tasks run" : c.kind === "chat_turn" ? "chat turn" : c.kind === "managed_fiber" ? "managed fiber" : "runFiber callback";
  const shown = name ?? c.name;
  const called = shown ? `'${shown}' ` : "";
  const how =
    c.source === "tasks.get"
      ? `tasks.get says ${c.sdkState}`
      : c.source === "inspectFiber"
        ? `inspectFiber says ${c.sdkState}`
        : c.source === "in_memory"
          ? c.kind === "managed_fiber"
            ? `its callback still runs in memory (inspectFiber says ${c.sdkState})`
            : "it still runs in memory (its row is removed, so it is not recovered)"
          : c.sdkState === "interrupted"
            ? "its row is left for recovery on the next wake"
            : "it still runs";
  return `${c.now === "running" ? "a" : "an open"} ${what} ${called}(${c.id}): ${how}`;
}

/** The after-state from a read-back, with each run named as the action knew it. */
function afterFrom(read: VerifyOutput, names: Map<string, string | null>, readAt: number, notice: string | null): VerifiedAfter {
  const checks = read.checks.map((c) => ({ ...c, name: c.name ?? names.get(c.id) ?? null }));
  const busy = read.busy.map((b) => ({ ...b, name: b.name ?? names.get(b.id) ?? null }));
  return { ...read.status, verified: true, readAt, checks, busy, notice };
}

/** The action's own report at its end, standing in when the agent could not be read again. */
function unverified(status: StatusOutput, readAt: number, why: string): VerifiedAfter {
  return { ...status, verified: false, readAt, checks: [], busy: [], notice: why };
}

/**
 * Reads the agent back by these SDK ids. After an eviction (`evictedBy`: the instance that answered the action
 * and then evicted itself), only a fresh instance's answer counts: the old one is read again until it is gone.
 * Falls back to status and runs for an agent without adminVerify. Null when no answer came.
 */
async function readBack(r: VerifyReads, ids: string[], evictedBy: string | null): Promise<{ read: VerifyOutput; fallback: boolean } | { error: string }> {
  const deadline = r.now() + (evictedBy ? EVICTION_WAIT_MS : 0);
  let last = "no answer";
  for (;;) {
    const v = await r.verify(ids);
    if (v.ok && (evictedBy === null || v.value.instance !== evictedBy)) return { read: v.value, fallback: false };
    if (!v.ok && v.error.code === "unsupported") {
      const l = await r.live();
      if (!l.ok) return { error: l.error.message };
      return { read: { instance: "", status: l.value.status, runs: l.value.runs, checks: [], busy: [] }, fallback: true };
    }
    last = v.ok ? "the agent had not been evicted yet" : v.error.message;
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
    const after = unverified(
      v.after,
      readAt,
      `The console could not read the agent again after force idle (${got.error}), so what it did is not verified; check the agent's page.`,
    );
    return { ...v, result: "partial", after, live: null };
  }
  const { read } = got;
  const still = read.checks.filter((c) => c.now !== "stopped");
  // Work the action never saw (started since, or it has no record of) counts too: the agent is not idle.
  const touched = new Set(refs);
  const other = read.busy.filter((b) => !touched.has(b.id));
  const idle = read.status.status === "idle" && still.length === 0 && other.length === 0;
  const parts = [...still.map((c) => describeCheck(c, names.get(c.id) ?? null)), ...other.map((b) => describeBusy(b, readAt))];
  const notice = idle
    ? null
    : parts.length
      ? `Force idle did not stop everything: ${parts.length} ${plural(parts.length, "piece of work", "pieces of work")} still ${plural(parts.length, "runs", "run")}: ${parts.join("; ")}.`
      : `Force idle did not leave the agent idle: it reports itself ${read.status.status}${got.fallback ? " (its admin mixin is too old to say which work runs)" : ""}.`;
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
  const notice =
    v.outcome === "busy"
      ? `The alarm did not run: ${holders.map((b) => describeBusy(b, readAt)).join("; ")}, and the SDK's alarm loop would wait for ${plural(holders.length, "it", "them")} (and run ${plural(holders.length, "it", "them")} a second time meanwhile); try again once ${plural(holders.length, "it ends", "they end")}.`
      : v.outcome === "still_running"
        ? `The alarm started but had not finished after ${v.budgetMs ?? "?"} ms${v.busy.length ? ` (${v.busy.map((b) => describeBusy(b, readAt)).join("; ")})` : ""}; it goes on in the background.`
        : null;
  const result: VerifiedResult = v.outcome === "ran" ? "ok" : "partial";
  if ("error" in got) {
    const after = unverified(v.after, readAt, `${notice ? `${notice} ` : ""}The console could not read the agent again after the alarm (${got.error}).`);
    return { ...v, result: "partial", after, live: null };
  }
  return { ...v, result, after: afterFrom(got.read, new Map(), readAt, notice), live: { status: got.read.status, runs: got.read.runs } };
}
