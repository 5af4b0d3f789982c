import { z } from "zod";
import { actor, target } from "../../src/admin-rpc/client-entry";

/** The bulk-action Queue, as declared in wrangler.jsonc (producer binding BATCH_QUEUE). */
export const BULK_QUEUE_NAME = "agent-oncall-batches";

/** The admin actions a bulk action may take (ADMIN_ACTIONS may hold more; bulk takes only these). */
export const BULK_ACTIONS = ["force_idle", "trigger_alarm"] as const;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** One target of a batch: what the consumer needs to act on it exactly as the operator asked. */
export const bulkMessage = z.object({
  batchId: z.string().uuid(),
  action: z.enum(BULK_ACTIONS),
  reason: z.string().min(1).max(2000),
  actor,
  target,
});
export type BulkMessage = z.infer<typeof bulkMessage>;
