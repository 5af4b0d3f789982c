import { maskSecrets } from "@agent-oncall/telemetry";
import type { Actor } from "../../src/admin-rpc/client-entry";
import { writeAudit } from "../../src/store/audit";
import { BATCH_TARGET_CLASS, type BatchBefore, batchAuditAction } from "../../src/store/read-models/bulk-batches";
import { type BulkTargets, bulkFilterQuery } from "../../src/store/read-models/bulk-targets";
import type { Env } from "../env";
import { handleBulkBatch } from "./consumer";
import type { BulkAction, BulkMessage } from "./messages";

/** Targets named in the batch row's `before` (the audit caps keep the JSON small; the count is always whole). */
const LISTED_TARGETS = 100;
/** Queues take at most 100 messages per sendBatch. */
const SEND_CHUNK = 100;

/** The batch's own audit row: who, which action, why, and the filter with its targets. */
function batchRecord(
  id: string,
  who: { email: string; role: string },
  action: BulkAction,
  reason: string,
  selection: BulkTargets | null,
  filter: Record<string, string>,
) {
  const before: BatchBefore | null = selection
    ? {
        filter,
        total: selection.targets.length,
        capped: selection.capped,
        targets: selection.targets.slice(0, LISTED_TARGETS).map((t) => `${t.agentClass}/${t.agentName}`),
      }
    : null;
  return {
    id,
    time: Date.now(),
    actor: who.email,
    role: who.role,
    action: batchAuditAction(action),
    targetClass: BATCH_TARGET_CLASS,
    targetName: new URLSearchParams(filter).toString() || "(no filter)",
    reason: maskSecrets(reason.slice(0, 2000)),
    before,
    after: null,
    batchId: id,
  };
}

/**
 * Records a refused bulk action (a viewer, a missing reason) as one audit row of its own batch, like the
 * admin client records a refused single action. Nothing is queued.
 */
export async function recordRefusedBatch(
  env: Env,
  who: { email: string; role: string },
  action: BulkAction,
  reason: string,
  filter: Record<string, string>,
  result: "denied" | "invalid",
  error: string,
): Promise<string> {
  const id = crypto.randomUUID();
  await writeAudit(env.DB, { ...batchRecord(id, who, action, reason, null, filter), result, error });
  return id;
}

/**
 * Starts a bulk action on `selection` (non-empty; the caller says so otherwise): the batch's audit row first,
 * pending, then one Queue message per target. Without a Queue binding the targets run after the response
 * (waitUntil), through the same consumer code. Returns the batch id.
 */
export async function startBatch(
  env: Env,
  ctx: ExecutionContext | null,
  who: Actor,
  action: BulkAction,
  reason: string,
  selection: BulkTargets,
): Promise<string> {
  const id = crypto.randomUUID();
  const filter = bulkFilterQuery(selection.filter);
  await writeAudit(env.DB, { ...batchRecord(id, who, action, reason, selection, filter), result: "pending", error: null });
  const messages: BulkMessage[] = selection.targets.map((t) => ({
    batchId: id,
    action,
    reason,
    actor: who,
    target: { agentClass: t.agentClass, agentName: t.agentName },
  }));
  const queue = env.BATCH_QUEUE;
  if (queue) {
    for (let i = 0; i < messages.length; i += SEND_CHUNK) {
      await queue.sendBatch(messages.slice(i, i + SEND_CHUNK).map((body) => ({ body, contentType: "json" as const })));
    }
  } else {
    const run = inline(env, messages);
    if (ctx) ctx.waitUntil(run);
    else await run;
  }
  return id;
}

/** Runs the targets as the consumer would, a few at a time. */
async function inline(env: Env, messages: BulkMessage[]): Promise<void> {
  for (let i = 0; i < messages.length; i += 10) {
    const chunk = messages.slice(i, i + 10);
    await handleBulkBatch(
      {
        queue: "inline",
        messages: chunk.map((body) => ({ id: crypto.randomUUID(), timestamp: new Date(), body, attempts: 1, ack() {}, retry() {} })),
        ackAll() {},
        retryAll() {},
      } as unknown as MessageBatch<unknown>,
      env,
    );
  }
}
