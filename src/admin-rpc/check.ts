import type { BusyWork } from "./contract.js";
import { type AgentWork, taskRunOf } from "./inspect.js";
import { ALARM_LOOP_JOB_OWNERS, chatTurnRequestIdOf, runningAlarmJobs, sdkRows } from "./sdk-layout.js";

/**
 * The work running in the agent now (trigger alarm, residency and the read-back after an action), through the SDK's
 * public APIs where it has them (tasks.list, inspectFiber) and its own records where it has none (cf_agents_runs
 * rows, the set of running runFiber callbacks, the alarm loop's job marks).
 */

const BUSY_SHOWN = 50;
function rowOf(sql: SqlStorage, id: string): { id: string; name: string; created_at: number } | null {
  return sdkRows<{ id: string; name: string; created_at: number }>(sql, "SELECT id, name, created_at FROM cf_agents_runs WHERE id = ?", id)[0] ?? null;
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
