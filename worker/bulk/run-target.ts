import { writeAudit } from "../../src/store/audit";
import { batchProgress, batchStartRow, targetFinished } from "../../src/store/read-models/bulk-batches";
import { consoleAdminClient } from "../admin-client";
import type { Env } from "../env";
import { reconcileAfterAction } from "../reconcile/after-action";
import type { BulkMessage } from "./messages";

/**
 * Acts on one target of a batch through the audited admin client, which writes the target's own audit row
 * (pending first, then its outcome) under the batch id. A target's failure is its row's result, never the
 * batch's: this returns normally whatever the agent answered. Its rows are then reconciled (after-action.ts). It throws only when the console's own storage
 * failed, so the caller can retry the delivery.
 */
export async function runTarget(env: Env, m: BulkMessage): Promise<void> {
  if (await targetFinished(env.DB, m.batchId, m.target)) return;
  const admin = consoleAdminClient(env, m.actor, { batchId: m.batchId });
  const r = await admin.action(m.action, m.target, { reason: m.reason });
  // As after a single action: the target's rows follow its record (after-action.ts); a failure there is noted, never the target's.
  if (r.ok) await reconcileAfterAction(env, m.action, m.target, r.value);
}

/**
 * Records that a target could not be acted on at all (its deliveries ran out): an audit row under the batch id,
 * so the batch still finishes and the failure is on record with its reason.
 */
export async function recordUndelivered(env: Env, m: BulkMessage, why: string): Promise<void> {
  await writeAudit(env.DB, {
    id: crypto.randomUUID(),
    time: Date.now(),
    actor: m.actor.email,
    role: m.actor.role,
    action: m.action,
    targetClass: m.target.agentClass,
    targetName: m.target.agentName,
    reason: m.reason,
    before: null,
    after: null,
    result: "error",
    error: `unavailable: the console could not run this target: ${why}`,
    batchId: m.batchId,
  });
}

/**
 * Completes the batch's own audit row once every target has finished: its result (ok; partial when a target's
 * was; error when any target failed) and a summary. Only a pending row is completed (src/store/audit.ts), so two consumers
 * finishing the last targets at once write it once. The progress page derives the same from the target rows.
 */
export async function completeIfDone(env: Env, batchId: string): Promise<void> {
  const p = await batchProgress(env.DB, batchId);
  if (!p?.complete || p.result !== "pending") return;
  const row = await batchStartRow(env.DB, batchId);
  if (!row) return;
  const byResult: Record<string, number> = {};
  for (const t of p.targets) byResult[t.result] = (byResult[t.result] ?? 0) + 1;
  await writeAudit(env.DB, {
    id: batchId,
    ...row,
    after: { total: p.total, done: p.done, failed: p.failed, byResult },
    // A batch whose targets all ran, some leaving work running, is partial like they are.
    result: p.failed ? "error" : byResult.partial ? "partial" : "ok",
    error: p.failed ? `${p.failed} of ${p.total} targets failed (see their rows in this batch)` : null,
    batchId,
  });
}
