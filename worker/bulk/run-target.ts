import { batchProgress, type BatchBefore } from "../../src/store/read-models/bulk-batches";
import { writeAudit } from "../../src/store/audit";
import { consoleAdminClient } from "../admin-client";
import type { Env } from "../env";
import type { BulkMessage } from "./messages";

/** Whether this target of the batch already has a finished audit row (a redelivered message does nothing twice). */
async function alreadyFinished(db: D1Database, m: BulkMessage): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 FROM audit_log INDEXED BY audit_log_batch WHERE batch_id = ?1 AND target_class = ?2 AND target_name = ?3 AND result <> 'pending' LIMIT 1")
    .bind(m.batchId, m.target.agentClass, m.target.agentName)
    .first();
  return row !== null;
}

/**
 * Acts on one target of a batch through the audited admin client, which writes the target's own audit row
 * (pending first, then its outcome) under the batch id. A target's failure is its row's result, never the
 * batch's: this returns normally whatever the agent answered. It throws only when the console's own storage
 * failed, so the caller can retry the delivery.
 */
export async function runTarget(env: Env, m: BulkMessage): Promise<void> {
  if (await alreadyFinished(env.DB, m)) return;
  const admin = consoleAdminClient(env, m.actor, { batchId: m.batchId });
  const input = { reason: m.reason };
  if (m.action === "force_idle") await admin.forceIdle(m.target, input);
  else await admin.triggerAlarm(m.target, input);
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
 * Completes the batch's own audit row once every target has finished: its result (ok, or error when any
 * target failed) and a summary. Only a pending row is completed (src/store/audit.ts), so two consumers
 * finishing the last targets at once write it once. The progress page derives the same from the target rows.
 */
export async function completeIfDone(env: Env, batchId: string): Promise<void> {
  const p = await batchProgress(env.DB, batchId);
  if (!p || !p.complete || p.result !== "pending") return;
  const row = await env.DB.prepare("SELECT time, actor, role, action, target_class, target_name, reason, before FROM audit_log WHERE id = ?").bind(batchId).first<{
    time: number; actor: string; role: string; action: string; target_class: string; target_name: string; reason: string; before: string | null;
  }>();
  if (!row) return;
  const byResult: Record<string, number> = {};
  for (const t of p.targets) byResult[t.result] = (byResult[t.result] ?? 0) + 1;
  await writeAudit(env.DB, {
    id: batchId,
    time: row.time,
    actor: row.actor,
    role: row.role,
    action: row.action,
    targetClass: row.target_class,
    targetName: row.target_name,
    reason: row.reason,
    before: row.before === null ? null : (JSON.parse(row.before) as BatchBefore),
    after: { total: p.total, done: p.done, failed: p.failed, byResult },
    result: p.failed ? "error" : "ok",
    error: p.failed ? `${p.failed} of ${p.total} targets failed (see their rows in this batch)` : null,
    batchId,
  });
}
