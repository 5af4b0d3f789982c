import { z } from "zod";
import { actor, target } from "../../src/admin-rpc/client-entry";
import { BULK_ACTIONS, type BulkAction } from "../../src/store/read-models/bulk-batches";

export { BULK_ACTIONS, type BulkAction };

/** One target of a batch: what the consumer needs to act on it exactly as the operator asked. */
export const bulkMessage = z.object({
  batchId: z.string().uuid(),
  action: z.enum(BULK_ACTIONS),
  reason: z.string().min(1).max(2000),
  actor,
  target,
});
export type BulkMessage = z.infer<typeof bulkMessage>;
