import type { BusyWork, RunCheck } from "./contract.js";
import { type AgentWork, LIVE_FIBER_STATUSES, taskRunOf } from "./inspect.js";
import { ALARM_LOOP_JOB_OWNERS, chatTurnRequestIdOf, runningAlarmJobs, sdkRows, TASK_TERMINAL_STATES } from "./sdk-layout.js";

/**
 * Agent side of "actions verify what they did": one run read back by its SDK id, and the work running now,
 * through the SDK's public APIs where it has them (tasks.get/list, inspectFiber) and its own records where it
 * has none (cf_agents_runs rows, the set of running runFiber callbacks, the alarm loop's job marks).
 */

const BUSY_SHOWN = 50;
/** Think's terminal submission statuses (`_isTerminalSubmissionStatus`, @cloudflare/think 0.23). */
const SUBMISSION_DONE: ReadonlySet<string> = new Set(["completed", "aborted", "skipped", "error"]);

function rowOf(sql: SqlStorage, id: string): { id: string; name: string; created_at: number } | null {
  return sdkRows<{ id: string; name: string; created_at: number }>(sql, "SELECT id, name, created_at FROM cf_agents_runs WHERE id = ?", id)[0] ?? null;
}

/**
 * One run as the SDK records it now. A Tasks run answers through `tasks.get`; a managed fiber through
 * `inspectFiber`, unless its callback still runs in memory (a cancelled fiber whose callback ignores its
 * signal); a runFiber through its row and the set of running callbacks; a Think submission (a chat turn) through
 * `inspectSubmission`. No record at all: stopped.
 */
export async function checkRun(w: AgentWork, id: string): Promise<RunCheck> {
  // A Think submission (a chat turn keyed by its submission id): its own record says where it is.
  const submission = w.inspectSubmission ? await w.inspectSubmission(id) : null;
  if (submission) {
    const now = SUBMISSION_DONE.has(submission.status) ? "stopped" : submission.status === "running" ? "running" : "pending";
    return { id, kind: "chat_turn", name: null, now, sdkState: submission.status, source: "inspectSubmission" };
  }
  const inMemory = w.active()?.has(id) ?? false;
  const task = await w.getTask(id);
  if (task) {
    const t = taskRunOf(w.sql, task);
    const now = TASK_TERMINAL_STATES.has(t.state) ? "stopped" : t.state === "running" ? "running" : "pending";
    return { id, kind: t.kind, name: t.definition, now, sdkState: t.state, source: "tasks.get" };
  }
  const fiber = await w.inspectFiber(id);
  if (fiber) {
    if (inMemory) return { id, kind: "managed_fiber", name: fiber.name, now: "running", sdkState: fiber.status, source: "in_memory" };
    const open = LIVE_FIBER_STATUSES.includes(fiber.status);
    return { id, kind: "managed_fiber", name: fiber.name, now: open ? "pending" : "stopped", sdkState: fiber.status, source: "inspectFiber" };
  }
  const row = rowOf(w.sql, id);
  const kind = row && chatTurnRequestIdOf(row.name) !== null ? "chat_turn" : "fiber";
  // A row without its callback was left by an eviction: the SDK recovers it on the next wake ("interrupted").
  if (row) return { id, kind, name: row.name, now: inMemory ? "running" : "pending", sdkState: inMemory ? "running" : "interrupted", source: "cf_agents_runs" };
  if (inMemory) return { id, kind: "fiber", name: null, now: "running", sdkState: "running", source: "in_memory" };
  return { id, kind: null, name: null, now: "stopped", sdkState: "gone", source: "none" };
}

/**
 * What runs in the agent now: chat turns and Tasks runs the SDK records as running, runFiber callbacks and
 * managed fibers running in this instance, and queued or scheduled callbacks the alarm loop runs
 * (marked since `bornAt`, the instance's start: a mark an evicted instance left runs nowhere).
 */
export async function readBusy(w: AgentWork, bornAt: number): Promise<BusyWork[]> {
  const out: BusyWork[] = [];
  const tasks = (await w.listTasks({ status: ["running"], limit: BUSY_SHOWN })).map((t) => taskRunOf(w.sql, t));
  for (const t of tasks) {
    out.push({
      kind: t.kind,
      id: t.runId,
      name: t.definition,
      requestId: t.requestId,
      step: t.currentStep,
      since: t.startedAt ?? t.createdAt,
      holdsAlarm: false,
    });
  }
  for (const id of w.active() ?? []) {
    const fiber = await w.inspectFiber(id);
    if (fiber) {
      out.push({ kind: "managed_fiber", id, name: fiber.name, requestId: null, step: null, since: fiber.createdAt, holdsAlarm: false });
      continue;
    }
    const row = rowOf(w.sql, id);
    const requestId = row ? chatTurnRequestIdOf(row.name) : null;
    // A chat turn run as a fiber (sub-agents) is the same turn as its Tasks run, when it has one.
    if (requestId !== null && out.some((b) => b.requestId === requestId)) continue;
    out.push({
      kind: requestId !== null ? "chat_turn" : "fiber",
      id,
      name: row?.name ?? null,
      requestId,
      step: null,
      since: row?.created_at ?? null,
      holdsAlarm: false,
    });
  }
  for (const j of runningAlarmJobs(w.sql, bornAt)) {
    out.push({ kind: ALARM_LOOP_JOB_OWNERS[j.owner], id: j.id, name: j.fn, requestId: null, step: null, since: j.startedAt, holdsAlarm: true });
  }
  return out.slice(0, BUSY_SHOWN);
}
