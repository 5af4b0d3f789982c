import { liveSubmissions, stopChatTurns } from "./chat-stop.js";
import type { ForceIdleFacts, ForceIdleHookResult, ForceIdleRun, StatusAnswer } from "./contract.js";
import { type AgentWork, idleStatus, liveManagedFibers, liveTaskRuns, readRuns } from "./inspect.js";
import { activeFiberIds, TASK_TERMINAL_STATES } from "./sdk-layout.js";

/** What stopWork needs from the agent: its work, its hook, and the SDK's public cancel calls. */
export type StopWorkInput = {
  /** The agent instance (only to see which runFiber callbacks run in it: sdk-layout.ts activeFiberIds). */
  agent: object;
  work: AgentWork;
  reason: string;
  before: StatusAnswer;
  hook: ((reason: string) => Promise<ForceIdleHookResult> | ForceIdleHookResult) | null;
  cancelTask: (runId: string, reason: string) => Promise<boolean>;
  cancelFiber: (fiberId: string, reason: string) => Promise<boolean>;
  settleMs: number;
  evictToStop: boolean;
};

type Candidate = Omit<ForceIdleRun, "running">;

const POLL_MS = 20;

/** The hook's answer in one shape. */
function hookResult(r: ForceIdleHookResult | undefined | null): { cleared: string[]; incidentIds: string[] } {
  if (!r) return { cleared: [], incidentIds: [] };
  if (Array.isArray(r)) return { cleared: r.map(String), incidentIds: [] };
  return { cleared: (r.cleared ?? []).map(String), incidentIds: (r.incidentIds ?? []).map(String) };
}

/**
 * Force idle's work, in the order that stops the most: the agent's hook (in-memory turns), Tasks cancel,
 * cancelFiber, removal of every run row (so nothing is recovered), chat-recovery records; then a short wait
 * for what was aborted to settle, and each run as it is now (the client judges them: force-idle-verdicts.ts).
 * Returns `noop` when there was nothing to do.
 */
export async function stopWork(i: StopWorkInput): Promise<{ noop: boolean; output: Omit<ForceIdleFacts, "before" | "after" | "instance"> }> {
  const { work: w, reason } = i;
  const why = `force idle: ${reason}`.slice(0, 500);
  const live = await readRuns(w);
  const managed = await liveManagedFibers(w);
  const tasks = await liveTaskRuns(w, 100);
  const records = i.before.chatRecoveryIncidents;
  const submissions = await liveSubmissions(i.agent);
  if (
    idleStatus(i.before.status) &&
    live.runs.length === 0 &&
    live.inMemory.length === 0 &&
    managed.length === 0 &&
    tasks.length === 0 &&
    records.length === 0 &&
    submissions.length === 0
  ) {
    return { noop: true, output: { noop: true } };
  }

  // Which callbacks run in this instance now (a row without one was left by an eviction). Unknown: assume running.
  const activeAtStart = new Set(activeFiberIds(i.agent) ?? [...live.runs.map((r) => r.id), ...managed.map((f) => f.fiberId)]);
  const candidates: Candidate[] = [
    ...live.runs.map((r) => ({
      kind: r.kind,
      // The console keys a chat turn by its request id, the tail of the turn fiber's name.
      runId: r.kind === "chat_turn" ? (r.requestId ?? r.id) : r.id,
      name: r.name,
      rowId: r.id,
      source: r.kind === "managed_fiber" ? ("managed" as const) : ("row" as const),
      wasRunning: activeAtStart.has(r.id),
    })),
    ...managed
      .filter((f) => !live.runs.some((r) => r.id === f.fiberId))
      .map((f) => ({
        kind: "managed_fiber" as const,
        runId: f.fiberId,
        name: f.name,
        rowId: f.fiberId,
        source: "managed" as const,
        wasRunning: activeAtStart.has(f.fiberId),
      })),
    ...tasks.map((t) => ({
      kind: t.kind,
      runId: t.kind === "chat_turn" ? (t.requestId ?? t.runId) : t.runId,
      name: t.definition,
      rowId: null,
      source: "task" as const,
      taskRunId: t.runId,
      wasRunning: t.state === "running",
    })),
    // Callbacks still running with no row (an earlier force idle removed it and could not stop them).
    ...live.inMemory
      .filter((m) => !managed.some((f) => f.fiberId === m.id))
      .map((m) => ({ kind: m.kind, runId: m.id, name: null, rowId: m.id, source: "row" as const, wasRunning: true })),
  ];

  // 1. The agent's own hook: it can abort what only it holds (a turn's AbortController, a model stream).
  const hooked = hookResult(i.hook ? await i.hook(reason) : null);
  // 1b. Chat turns (Think, AIChatAgent): their Tasks carrier's cancel does not stop them. Stopped through the SDK's
  // chat API and judged by what the SDK records after (chat-stop.ts); their carriers are not judged again below.
  const fiberTurns = live.runs.filter((r) => r.kind === "chat_turn" && r.requestId).map((r) => r.requestId!);
  const chat = await stopChatTurns({ agent: i.agent, work: w, tasks, fiberTurns, reason: why, settleMs: i.settleMs, cancelTask: i.cancelTask });
  const judged = candidates.filter((c) => !(c.source === "task" && chat.handled.has(c.taskRunId!)));
  // 2. The SDK's public cancellation.
  for (const t of tasks) if (!chat.handled.has(t.runId)) await i.cancelTask(t.runId, why);
  const cancelledFibers: string[] = [];
  for (const f of managed) if (await i.cancelFiber(f.fiberId, why)) cancelledFibers.push(f.fiberId);
  // 3. No row, no recovery: removed even where the callback runs on, so a later eviction does not bring it back.
  w.sql.exec("DELETE FROM cf_agents_runs");
  // 4. Chat-recovery records: the SDK would otherwise keep scheduling recovery attempts for them.
  const keys = records.map((r) => r.key);
  if (keys.length) await w.storage.delete(keys);

  // 5. Give what was aborted or cancelled a moment to settle, then judge each run by what is still running.
  const stillRunning = async (c: Candidate): Promise<boolean> => {
    if (c.source === "task") {
      const t = await w.getTask(c.taskRunId!);
      return t !== null && !TASK_TERMINAL_STATES.has(t.state);
    }
    if (!c.wasRunning) return false;
    const active = activeFiberIds(i.agent);
    return active === null || active.has(c.rowId!);
  };
  const asked = i.hook !== null || tasks.length > 0 || managed.length > 0;
  const deadline = Date.now() + (asked ? i.settleMs : 0);
  let running: Candidate[] = [];
  for (;;) {
    running = [];
    for (const c of judged) if (await stillRunning(c)) running.push(c);
    if (running.length === 0 || Date.now() >= deadline) break;
    await scheduler.wait(POLL_MS);
  }
  const evicted = (running.length > 0 || chat.stuck > 0) && i.evictToStop;
  return {
    noop: false,
    output: {
      noop: false,
      // Each run as found and as it is now: the client judges how it ended (force-idle-verdicts.ts).
      runs: judged.map((c) => ({ ...c, running: running.includes(c) })),
      turns: chat.turns,
      hook: i.hook !== null,
      settleMs: i.settleMs,
      hookIncidents: hooked.incidentIds,
      evicted,
      abortedRuns: live.runs.map((r) => r.id),
      cancelledFibers,
      clearedIncidents: [...keys, ...hooked.cleared],
    },
  };
}
