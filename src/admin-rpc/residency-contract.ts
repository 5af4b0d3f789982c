import { z } from "zod";
import { busyWork } from "./contract.js";

/**
 * "Why is this agent awake": what keeps it resident, as the agent itself records it. Every `since` is when
 * the agent's own records say the holder began; null where the SDK records no start (an open WebSocket, the
 * keepAlive counter itself), never a guess. Read-only: reads are not audited (only actions are).
 */

/** A schedule (`listSchedules`, the SDK's public API) with the start its job row records. */
export const residentSchedule = z.object({
  id: z.string(),
  callback: z.string(),
  /** The SDK's own word: scheduled (a date), delayed (after N seconds), cron, interval. */
  type: z.enum(["scheduled", "delayed", "cron", "interval"]),
  /** When it fires next (ms). */
  nextAt: z.number(),
  /** When its job row was created (`cf_agents_jobs.created_at`, second precision, in ms); null when the row has none. */
  since: z.number().nullable(),
  intervalSeconds: z.number().nullable(),
  delaySeconds: z.number().nullable(),
  cron: z.string().nullable(),
  /** The SDK's alarm loop is running its callback now. */
  running: z.boolean(),
});
export type ResidentSchedule = z.infer<typeof residentSchedule>;

/**
 * A job the SDK's alarm loop holds for the agent itself (`cf_agents_jobs` rows that are not the user's schedules):
 * the keepAlive heartbeat (`cf:keep-alive`), fiber-recovery housekeeping (`cf:housekeeping`), a pending destroy,
 * queued callbacks (`this.queue`). Each one re-arms the alarm.
 */
export const hostJob = z.object({
  id: z.string(),
  capability: z.string(),
  fn: z.string(),
  nextAt: z.number(),
  since: z.number().nullable(),
  running: z.boolean(),
});

export const residencyOutput = z.object({
  /** When the agent answered. */
  readAt: z.number(),
  /** This instance: when it started (it woke then; a read of an evicted agent wakes it, so `since` is then about `readAt`). */
  instance: z.object({ id: z.string(), since: z.number() }),
  keepAlive: z.object({
    /** Live `keepAlive()` holders in this instance (the SDK's counter); null when this SDK version keeps none we can read. */
    holders: z.number().int().nullable(),
    /** The heartbeat job's row: since when it has been held (second precision), and its next beat. Null: no heartbeat. */
    heartbeatSince: z.number().nullable(),
    nextHeartbeat: z.number().nullable(),
    intervalMs: z.number().nullable(),
  }),
  /** The Durable Object's alarm (`ctx.storage.getAlarm()`). */
  nextAlarm: z.number().nullable(),
  schedules: z.array(residentSchedule),
  scheduleCount: z.number().int(),
  hostJobs: z.array(hostJob),
  /** Open WebSocket connections (`getConnections()`); the SDK records no connect time, so each `since` is unknown (null). */
  connections: z.object({ count: z.number().int(), ids: z.array(z.string()), since: z.null() }),
  /** Work running now (the same reading trigger alarm uses), each with since when, where the SDK records it. */
  work: z.array(busyWork),
  /** Work parked until it wakes or is resolved: Tasks runs waiting or pending, managed fibers pending or interrupted. */
  parked: z.object({ tasks: z.number().int(), fibers: z.number().int() }),
});
export type ResidencyOutput = z.infer<typeof residencyOutput>;
