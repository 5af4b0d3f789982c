/**
 * The console's queues and crons, as wrangler.jsonc declares them. wrangler.jsonc owns these facts; the Worker
 * cannot read it at run time, so they are written here once and test/worker/topology.test.ts fails while the two
 * differ. Everything else (consumer dispatch, last-attempt logic, cron dispatch, the simulator) derives from here.
 */

/** One queue the console consumes: its name and wrangler.jsonc's max_retries for its consumer. */
export type QueueSpec = { name: string; maxRetries: number; deadLetterQueue?: string };

export const QUEUES = {
  /** Agents' events → ingest (worker/ingest); failed deliveries go to the DLQ. */
  telemetry: { name: "agent-telemetry", maxRetries: 3, deadLetterQueue: "agent-telemetry-dlq" },
  /** Events ingest could not take after its retries: kept in dead_letters. */
  telemetryDlq: { name: "agent-telemetry-dlq", maxRetries: 10 },
  /** One message per alert and channel (worker/alerts). */
  alerts: { name: "agent-oncall-alerts", maxRetries: 5 },
  /** Bulk actions: one message per target (worker/bulk). */
  batches: { name: "agent-oncall-batches", maxRetries: 3 },
} as const satisfies Record<string, QueueSpec>;

export type QueueKey = keyof typeof QUEUES;

/** Deliveries a message of this queue gets: the first plus the consumer's max_retries. The last one may settle it itself. */
export const maxDeliveries = (q: QueueSpec): number => q.maxRetries + 1;

/** The Worker's cron triggers (wrangler.jsonc triggers.crons), by what each runs. */
export const CRONS = {
  /** Hourly: D1 retention and the R2 history's retention. */
  retention: "17 * * * *",
  /** Every 5 minutes: reconciliation with the agents' live state, and stuck alerts. */
  reconcile: "*/5 * * * *",
} as const;

export type CronKey = keyof typeof CRONS;

/** The queue key for a batch's queue name, or undefined when the console declares no such queue. */
export function queueKeyOf(name: string): QueueKey | undefined {
  return (Object.keys(QUEUES) as QueueKey[]).find((k) => QUEUES[k].name === name);
}

/** The cron key for a controller's cron expression, or undefined when the console declares no such cron. */
export function cronKeyOf(cron: string): CronKey | undefined {
  return (Object.keys(CRONS) as CronKey[]).find((k) => CRONS[k] === cron);
}
