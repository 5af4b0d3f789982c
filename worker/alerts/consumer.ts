import { z } from "zod";
import { recordDelivery } from "../../src/store/alerts";
import { maxDeliveries, QUEUES } from "../topology";
import { type AlertEnv, type AlertMessage, alertConfig } from "./config";
import { deliver } from "./deliver";

/**
 * Deliveries per alert and channel: the first plus the queue's max_retries (worker/topology.ts). The
 * consumer gives up on the last one itself (status failed), so a message never outlives its row's story.
 */
export const ALERT_MAX_ATTEMPTS = maxDeliveries(QUEUES.alerts);

const messageSchema = z.object({ alertKey: z.string().min(1), channel: z.enum(["webhook", "slack"]), body: z.string() });

/**
 * Consumer of the alerts queue: POSTs each payload to its channel's URL and records the outcome on the
 * delivery row (status, attempts, HTTP status, last error). A failure is retried with a growing delay
 * until ALERT_MAX_ATTEMPTS, then the row is marked failed; a 4xx other than 408/429 fails at once.
 */
export async function handleAlertBatch(batch: MessageBatch<unknown>, env: AlertEnv & { DB: D1Database }): Promise<void> {
  const config = alertConfig(env);
  for (const m of batch.messages) {
    const parsed = messageSchema.safeParse(m.body);
    if (!parsed.success) {
      console.error(`[alerts] dropping a malformed alert message ${m.id}`);
      m.ack();
      continue;
    }
    try {
      await handleOne(m, parsed.data, config, env.DB);
    } catch (e) {
      // Recording failed (D1): the queue tries again; recording is idempotent per attempt.
      console.error(`[alerts] could not record a delivery, retrying: ${e instanceof Error ? e.message : String(e)}`);
      m.retry({ delaySeconds: 10 });
    }
  }
}

async function handleOne(m: Message<unknown>, msg: AlertMessage, config: ReturnType<typeof alertConfig>, db: D1Database): Promise<void> {
  const key = { alertKey: msg.alertKey, channel: msg.channel };
  const url = config.enabled ? config.channels.find((c) => c.channel === msg.channel)?.url : undefined;
  if (!url || !config.enabled) {
    // Configuration changed since the alert was raised: nowhere to send it.
    const reason = config.enabled ? `the ${msg.channel} channel is no longer configured` : config.reason;
    await recordDelivery(db, key, { status: "failed", attempts: m.attempts, httpStatus: null, lastError: reason, now: Date.now() });
    m.ack();
    return;
  }
  const out = await deliver(url, msg.body);
  const last = out.result === "permanent" || m.attempts >= ALERT_MAX_ATTEMPTS;
  const status = out.result === "ok" ? "sent" : last ? "failed" : "queued";
  const lastError = out.result === "retry" && last ? `${out.error} (gave up after ${m.attempts} attempts)` : out.error;
  await recordDelivery(db, key, { status, attempts: m.attempts, httpStatus: out.httpStatus, lastError, now: Date.now() });
  if (status === "queued") m.retry({ delaySeconds: Math.min(m.attempts * config.retryDelaySeconds, 43_200) });
  else m.ack();
}
