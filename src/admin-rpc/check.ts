import type { BusyRecords } from "./contract.js";
import { type AgentWork, taskRunOf } from "./inspect.js";
import { runningAlarmJobs, sdkRows } from "./sdk-layout.js";

/**
 * The work running in the agent now (trigger alarm, residency and the read-back after an action), through the SDK's
 * public APIs where it has them (tasks.list, inspectFiber) and its own records where it has none (cf_agents_runs
 * rows, the set of running runFiber callbacks, the alarm loop's job marks). The client builds the console's view of
 * them (contract.ts busyOf).
 */

/**
 * What runs in the agent now, as records: Tasks runs the SDK records as running, each runFiber callback running in
 * this instance with its managed fiber or its run row, and queued or scheduled callbacks the alarm loop runs
 * (marked since `bornAt`, the instance's start: a mark an evicted instance left runs nowhere).
 */
export async function readBusy(w: AgentWork, bornAt: number): Promise<BusyRecords> {
  const tasks = (await w.listTasks({ status: ["running"], limit: 50 })).map((t) => taskRunOf(w.sql, t));
  const fibers: BusyRecords["fibers"] = [];
  for (const id of w.active() ?? []) {
    const f = await w.inspectFiber(id);
    fibers.push(
      f
        ? { id, fiber: { name: f.name, createdAt: f.createdAt } }
        : { id, row: sdkRows<{ name: string; created_at: number }>(w.sql, "SELECT name, created_at FROM cf_agents_runs WHERE id = ?", id)[0] ?? null },
    );
  }
  return { tasks, fibers, jobs: runningAlarmJobs(w.sql, bornAt) };
}
