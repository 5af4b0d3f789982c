import type { Env } from "../env";
import { maxDeliveries, QUEUES } from "../topology";
import { bulkMessage } from "./messages";
import { completeIfDone, recordUndelivered, runTarget } from "./run-target";

/** Deliveries of one target before it is recorded as failed: the first plus the queue's max_retries (worker/topology.ts). */
export const BULK_MAX_ATTEMPTS = maxDeliveries(QUEUES.batches);

/**
 * Consumer of the bulk-action Queue: one message per target. Targets of a delivery run concurrently; each
 * is acked once its audit row is finished. A failure of the console's own storage retries that message; on
 * its last delivery the target is recorded as failed instead, so a batch always finishes.
 */
export async function handleBulkBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const batches = new Set<string>();
  await Promise.all(
    batch.messages.map(async (msg) => {
      const parsed = bulkMessage.safeParse(msg.body);
      if (!parsed.success) {
        // Not ours to act on; nothing would make it valid on a retry.
        console.error(`[bulk] dropped an invalid message ${msg.id}: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
        msg.ack();
        return;
      }
      const m = parsed.data;
      batches.add(m.batchId);
      try {
        await runTarget(env, m);
        msg.ack();
      } catch (e) {
        const why = e instanceof Error ? e.message : String(e);
        if (msg.attempts >= BULK_MAX_ATTEMPTS) {
          await recordUndelivered(env, m, why).then(
            () => msg.ack(),
            () => msg.retry({ delaySeconds: 5 }),
          );
        } else {
          console.error(
            `[bulk] ${m.target.agentClass} "${m.target.agentName}" of batch ${m.batchId} failed in the console (attempt ${msg.attempts}), retrying: ${why}`,
          );
          msg.retry({ delaySeconds: 2 });
        }
      }
    }),
  );
  for (const id of batches) {
    await completeIfDone(env, id).catch((e) => console.error(`[bulk] batch ${id} could not be completed: ${e instanceof Error ? e.message : String(e)}`));
  }
}
