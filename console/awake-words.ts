import type { ResidencyOutput } from "../src/admin-rpc/residency-contract";
import {
  type AlarmRate,
  FIRINGS_REPORT_WINDOW_MS,
  IDLE_EVICTION_MS,
  LOOP_MIN_FIRINGS,
  RATE_WINDOW_MS,
  type ResidentEstimate,
  type SilentWakeRate,
} from "../src/store/read-models/residency";
import { count, duration } from "./format";

/**
 * The words of "why is this agent awake": the store and the agent return facts (residency.ts), these say them.
 * An unknown is said as unknown, with why; never as a guessed time.
 */

/** For a `since` the SDK does not record. */
export const UNKNOWN_SINCE = "unknown (the SDK does not record it)";

/** A schedule's cadence, in the SDK's words. */
export function cadence(s: ResidencyOutput["schedules"][number]): string {
  switch (s.type) {
    case "interval":
      return `every ${s.intervalSeconds ?? "?"} s`;
    case "delayed":
      return `once, ${s.delaySeconds ?? "?"} s after it was set (a callback that sets it again loops at this period)`;
    case "cron":
      return `cron ${s.cron ?? "?"}`;
    case "scheduled":
      return "once, at a date";
  }
}

/** A host job in a few words (the SDK's own jobs that re-arm the alarm). */
export function hostJobLabel(j: ResidencyOutput["hostJobs"][number]): string {
  if (j.id === "cf:keep-alive") return "keepAlive heartbeat";
  if (j.id === "cf:housekeeping") return "fiber-recovery housekeeping";
  if (j.capability === "queue") return `queued callback ${j.fn}`;
  return `${j.capability} ${j.fn}`;
}

/** One line saying whether anything keeps the agent resident, from what it answered. */
export function residencySummary(r: ResidencyOutput): string {
  const holders: string[] = [];
  if ((r.keepAlive.holders ?? 0) > 0) holders.push(`${r.keepAlive.holders} keepAlive holder${r.keepAlive.holders === 1 ? "" : "s"}`);
  if (r.work.length) holders.push(`${count(r.work.length)} running work item${r.work.length === 1 ? "" : "s"}`);
  if (r.connections.count) holders.push(`${count(r.connections.count)} open connection${r.connections.count === 1 ? "" : "s"}`);
  if (r.scheduleCount) holders.push(`${count(r.scheduleCount)} schedule${r.scheduleCount === 1 ? "" : "s"}`);
  if (r.hostJobs.length) holders.push(`${count(r.hostJobs.length)} SDK job${r.hostJobs.length === 1 ? "" : "s"}`);
  if (r.parked.tasks + r.parked.fibers) holders.push(`${r.parked.tasks + r.parked.fibers} parked run${r.parked.tasks + r.parked.fibers === 1 ? "" : "s"}`);
  return holders.length ? `Kept resident by: ${holders.join(", ")}.` : "Nothing keeps this agent resident: it will be evicted when idle.";
}

/** The alarm rate, and why it is flagged. */
export function alarmRateSentence(a: AlarmRate): string {
  const rate = `${Math.round(a.perHour)} alarms/hour (${a.firings} firings ${a.windowFrom === a.firstAt ? "since its first firing" : "in the last hour"})`;
  if (a.loop) return `${rate}, with no run open or seen: an alarm that keeps firing with nothing to do.`;
  if (!a.idle) return `${rate}, with runs open or seen in that time.`;
  return `${rate}.`;
}

/** How the loop flag is decided (shown beside the list). */
export const LOOP_RULE = `An alarm loop: at least ${LOOP_MIN_FIRINGS} schedule firings in the last ${duration(RATE_WINDOW_MS)}, the last reported within three periods (plus the agent's reporting window of ${duration(FIRINGS_REPORT_WINDOW_MS)} for faster alarms, whose firings it ships as counts), and no run of the agent open or seen in that window.`;

/** The resident-time estimate with its method and error. */
export function residentSentence(e: ResidentEstimate): string {
  const range = `${duration(e.lowMs)} to ${duration(e.highMs)}`;
  const cap = e.capped ? " (read cap reached: counts from the start shown only)" : "";
  return `Resident about ${range} of the last 24 h${cap}.`;
}

export const RESIDENT_METHOD = `Estimated from the agent's events: each burst of events (a segment of its timeline, events at most a minute apart) keeps it resident until idle eviction, ${duration(IDLE_EVICTION_MS.low)} to ${duration(IDLE_EVICTION_MS.high)} after it; the range is those two bounds. Residency that sends no event (keepAlive heartbeats, open connections, calls without events) is not seen, so both bounds can be low.`;

/** What the "woken by alarms that reported nothing" list is, and why it does not say keepAlive outright. */
export const SILENT_WAKES_RULE =
  "Alarm invocations of an agent's Durable Object in which the agents SDK published nothing, seen by the console's tail. The SDK publishes nothing for keepAlive(): its heartbeat is such an alarm (every 30 s by default), so an agent kept awake by keepAlive() alone shows here. The SDK's own housekeeping alarms (retrying a fiber recovery) look the same. The name is the one the object's own events gave; an object that never published an event is known by its class and id only.";

/** An object woken with nothing reported, in words: its agent when its events named it, else its class and id. */
export function silentWakeAgent(w: SilentWakeRate): string {
  if (w.agentClass && w.agentName) return `${w.agentClass} · ${w.agentName}`;
  return `${w.agentClass ?? "unknown class"} · name unknown (it published no event), object ${w.objectId.slice(0, 12)}…`;
}
