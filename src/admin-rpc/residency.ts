import type { ResidencyRecords } from "./records-contract.js";
import type { ResidencyOutput, ResidentSchedule } from "./residency-contract.js";

/**
 * Worker side of "why is this agent awake": the answer built from what the agent read (records.ts, contract 7):
 * its schedules as `listSchedules` lists them, each with when its job row began, the jobs its alarm loop holds for
 * itself, the keepAlive heartbeat, connections, running and parked work.
 */

/** Schedules and host jobs listed; the counts say how many there are. */
const SHOWN = 50;
/** The capability the SDK's Scheduler writes its job rows under (agents 0.32): the user's schedules. */
const SCHEDULER = "scheduler";

/** `created_at` is unixepoch() seconds in the SDK's table. */
const secondsToMs = (s: number | null) => (typeof s === "number" ? s * 1000 : null);

/** What keeps the agent resident, from the records it read. */
export function residencyOf(raw: ResidencyRecords): ResidencyOutput {
  const byId = new Map(raw.jobs.map((r) => [r.id, r]));
  const schedules: ResidentSchedule[] = raw.schedules.slice(0, SHOWN).map((s) => {
    const row = byId.get(s.id);
    return {
      id: s.id,
      callback: s.callback,
      type: s.type,
      nextAt: s.time * 1000,
      since: secondsToMs(row?.created_at ?? null),
      intervalSeconds: s.type === "interval" ? (s.intervalSeconds ?? null) : null,
      delaySeconds: s.type === "delayed" ? (s.delayInSeconds ?? null) : null,
      cron: s.type === "cron" ? (s.cron ?? null) : null,
      running: row?.running === 1,
    };
  });
  const hostJobs = raw.jobs
    .filter((r) => r.capability !== SCHEDULER)
    .slice(0, SHOWN)
    .map((r) => ({ id: r.id, capability: r.capability, fn: r.fn, nextAt: r.time, since: secondsToMs(r.created_at), running: r.running === 1 }));
  const beat = byId.get(raw.keepAlive.jobId) ?? null;
  return {
    readAt: raw.readAt,
    instance: raw.instance,
    keepAlive: {
      holders: raw.keepAlive.holders,
      heartbeatSince: beat ? secondsToMs(beat.created_at) : null,
      nextHeartbeat: beat ? beat.time : null,
      intervalMs: raw.keepAlive.intervalMs,
    },
    nextAlarm: raw.nextAlarm,
    schedules,
    scheduleCount: raw.scheduleCount,
    hostJobs,
    connections: { ...raw.connections, since: null },
    work: raw.work,
    parked: { tasks: raw.parked.tasks, fibers: raw.parked.fibers.filter((s) => s === "pending" || s === "interrupted").length },
  };
}
