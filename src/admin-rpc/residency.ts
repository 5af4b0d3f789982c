import type { Agent } from "agents";
import { readBusy } from "./check.js";
import type { AgentWork } from "./inspect.js";
import type { ResidencyOutput, ResidentSchedule } from "./residency-contract.js";
import { keepAliveOf, sdkRows } from "./sdk-layout.js";

/** Schedules and host jobs listed; the counts say how many there are. */
const SHOWN = 50;
const CONNECTIONS_SHOWN = 20;
/** The capability the SDK's Scheduler writes its job rows under (agents 0.32): the user's schedules. */
const SCHEDULER = "scheduler";

type JobRow = { id: string; capability: string; fn: string; time: number; running: number; created_at: number | null };

/** The SDK's job rows (`cf_agents_jobs`), oldest first; none when the agent never created the table. */
function jobRows(sql: SqlStorage): JobRow[] {
  return sdkRows<JobRow>(sql, `SELECT id, capability, fn, time, running, created_at FROM cf_agents_jobs ORDER BY time, id LIMIT ${SHOWN * 4}`);
}

/** `created_at` is unixepoch() seconds in the SDK's table. */
const secondsToMs = (s: number | null) => (typeof s === "number" ? s * 1000 : null);

/** A schedule as listSchedules returns it (agents 0.32 `Schedule`), loosely typed: the union is read field by field. */
type SdkSchedule = { id: string; callback: string; type: string; time: number; delayInSeconds?: number; intervalSeconds?: number; cron?: string };

/**
 * What keeps the agent resident, read through the SDK's public APIs where it has them (`listSchedules`,
 * `getConnections`, `ctx.storage.getAlarm`, `tasks.list`, `listFibers`) and its job table for what they do not
 * say (when a schedule or the keepAlive heartbeat began).
 */
export async function readResidency(
  // biome-ignore lint/suspicious/noExplicitAny: any agent class.
  agent: Agent<any, any>,
  w: AgentWork,
  self: { instance: string; bornAt: number },
  now = Date.now(),
): Promise<ResidencyOutput> {
  const rows = jobRows(w.sql);
  const byId = new Map(rows.map((r) => [r.id, r]));
  const sdkSchedules = (await agent.listSchedules()) as unknown as SdkSchedule[];
  const schedules: ResidentSchedule[] = sdkSchedules.slice(0, SHOWN).map((s) => {
    const row = byId.get(s.id);
    return {
      id: s.id,
      callback: s.callback,
      type: s.type as ResidentSchedule["type"],
      nextAt: s.time * 1000,
      since: secondsToMs(row?.created_at ?? null),
      intervalSeconds: s.type === "interval" ? (s.intervalSeconds ?? null) : null,
      delaySeconds: s.type === "delayed" ? (s.delayInSeconds ?? null) : null,
      cron: s.type === "cron" ? (s.cron ?? null) : null,
      running: row?.running === 1,
    };
  });
  const hostJobs = rows
    .filter((r) => r.capability !== SCHEDULER)
    .slice(0, SHOWN)
    .map((r) => ({ id: r.id, capability: r.capability, fn: r.fn, nextAt: r.time, since: secondsToMs(r.created_at), running: r.running === 1 }));
  const ka = keepAliveOf(agent);
  const beat = rows.find((r) => r.id === ka.jobId) ?? null;
  const connections = [...agent.getConnections()];
  const [waitingTasks, parkedFibers] = await Promise.all([
    w.listTasks({ status: ["pending", "waiting"], limit: SHOWN }),
    w.listFibers({ status: ["pending", "interrupted"], limit: SHOWN }),
  ]);
  return {
    readAt: now,
    instance: { id: self.instance, since: self.bornAt },
    keepAlive: {
      holders: ka.holders,
      heartbeatSince: beat ? secondsToMs(beat.created_at) : null,
      nextHeartbeat: beat ? beat.time : null,
      intervalMs: ka.intervalMs,
    },
    nextAlarm: await w.storage.getAlarm(),
    schedules,
    scheduleCount: sdkSchedules.length,
    hostJobs,
    connections: { count: connections.length, ids: connections.slice(0, CONNECTIONS_SHOWN).map((c) => c.id), since: null },
    work: await readBusy(w, self.bornAt),
    parked: { tasks: waitingTasks.length, fibers: parkedFibers.filter((f) => f.status === "pending" || f.status === "interrupted").length },
  };
}
