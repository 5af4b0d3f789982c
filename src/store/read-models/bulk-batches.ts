import { z } from "zod";
import { BULK_ACTION_NAMES } from "../../admin-rpc/actions.js";
import type { AuditResult } from "../../admin-rpc/audit-record.js";
import { auditLog } from "../schema";
import { names } from "../sql-names";
import { BULK_TARGET_CAP } from "./bulk-targets";
import { BadRequest } from "./errors";

/**
 * A bulk action's progress, derived from the audit log alone: the batch's own row (its target count in
 * `before`) and the rows the audited admin client wrote for each target, all sharing audit_log.batch_id.
 * Nothing else stores a batch's status.
 */

/** The admin actions a bulk action may take: those ADMIN_ACTIONS marks `bulk` (others, such as resolving an op, need more than an agent). */
export const BULK_ACTIONS = BULK_ACTION_NAMES;
export type BulkAction = (typeof BULK_ACTIONS)[number];

/** Audit actions of a batch's own row: `bulk_` and the admin action. */
export const BULK_ACTION_PREFIX = "bulk_";
/** The audit action of a batch's own row. */
export const batchAuditAction = <A extends BulkAction>(action: A) => `${BULK_ACTION_PREFIX}${action}` as const;
/** What a batch's own row names as its target class (its target name is the filter). */
export const BATCH_TARGET_CLASS = "batch";

/** What a batch's own row keeps in `before`: the filter, the target count and (the start of) the list. */
export type BatchBefore = { filter: Record<string, string>; total: number; capped: boolean; targets: string[] };

export type BatchTargetRow = { agentClass: string; agentName: string; result: AuditResult; error: string | null; time: number };
export type BatchProgress = {
  batchId: string;
  action: string;
  actor: string;
  reason: string;
  time: number;
  /** The filter, as the URL parameters of /bulk. */
  filter: Record<string, string>;
  /** The batch row's own result: pending until the last target finished, then ok or error (or denied/invalid: never started). */
  result: AuditResult;
  error: string | null;
  total: number;
  /** Targets that finished with ok or noop. */
  done: number;
  /** Targets that finished with anything else (error, denied, invalid). */
  failed: number;
  /** Targets whose action started and has not finished. */
  running: number;
  /** Targets not reached yet. */
  queued: number;
  /** Every target finished. */
  complete: boolean;
  /** One row per target reached so far, failures first. */
  targets: BatchTargetRow[];
};

const L = names(auditLog);
export const batchIdParam = z.string().regex(/^[0-9a-f-]{36}$/, "a batch id is a UUID such as 0f8c…-…");

const parse = (v: string | null): unknown => {
  if (v === null) return null;
  try {
    return JSON.parse(v);
  } catch {
    return null;
  }
};

/** Targets whose action ran: `partial` ran too (work still runs there; its audit row says what). */
const FINISHED_OK: AuditResult[] = ["ok", "partial", "noop"];

/** One batch's progress, or null when no batch has that id. A malformed id is a BadRequest. */
export async function batchProgress(db: D1Database, batchId: string): Promise<BatchProgress | null> {
  const id = batchIdParam.safeParse(batchId);
  if (!id.success) throw new BadRequest(`no such batch "${batchId.slice(0, 60)}": ${id.error.issues[0]!.message}`);
  const [own, rows] = (await db.batch([
    db
      .prepare(
        `SELECT ${L.action} AS action, ${L.actor} AS actor, ${L.reason} AS reason, ${L.time} AS time, ${L.before} AS before, ${L.result} AS result, ${L.error} AS error FROM ${L.$table} WHERE ${L.id} = ?1 AND ${L.batchId} = ?1`,
      )
      .bind(id.data),
    // Each target has one row per attempt (a retried delivery may write a second): at most a few per target.
    db
      .prepare(
        `SELECT ${L.targetClass} AS agentClass, ${L.targetName} AS agentName, ${L.result} AS result, ${L.error} AS error, ${L.time} AS time
         FROM ${L.$table} INDEXED BY audit_log_batch WHERE ${L.batchId} = ?1 AND ${L.id} <> ?1 ORDER BY ${L.time}, ${L.id} LIMIT ?2`,
      )
      .bind(id.data, BULK_TARGET_CAP * 3),
  ])) as [
    D1Result<{ action: string; actor: string; reason: string; time: number; before: string | null; result: AuditResult; error: string | null }>,
    D1Result<BatchTargetRow>,
  ];
  const b = own.results[0];
  if (!b) return null;
  const before = parse(b.before) as Partial<BatchBefore> | null;
  // Per target, a finished row wins over a pending one (an attempt cut short, then retried).
  const latest = new Map<string, BatchTargetRow>();
  for (const r of rows.results) {
    const k = JSON.stringify([r.agentClass, r.agentName]);
    const prev = latest.get(k);
    if (!prev || prev.result === "pending" || (r.result !== "pending" && r.time >= prev.time)) latest.set(k, r);
  }
  const targets = [...latest.values()];
  const done = targets.filter((t) => FINISHED_OK.includes(t.result)).length;
  const running = targets.filter((t) => t.result === "pending").length;
  const failed = targets.length - done - running;
  const total = typeof before?.total === "number" ? Math.min(before.total, BULK_TARGET_CAP) : targets.length;
  const queued = Math.max(0, total - targets.length);
  const started = b.result !== "denied" && b.result !== "invalid";
  const rank = (t: BatchTargetRow) => (t.result === "pending" ? 1 : FINISHED_OK.includes(t.result) ? 2 : 0);
  return {
    batchId: id.data,
    action: b.action.startsWith(BULK_ACTION_PREFIX) ? b.action.slice(BULK_ACTION_PREFIX.length) : b.action,
    actor: b.actor,
    reason: b.reason,
    time: b.time,
    filter: before?.filter ?? {},
    result: b.result,
    error: b.error,
    total: started ? total : 0,
    done,
    failed,
    running,
    queued: started ? queued : 0,
    complete: !started || (running === 0 && queued === 0),
    targets: targets.sort((x, y) => rank(x) - rank(y) || x.agentClass.localeCompare(y.agentClass) || x.agentName.localeCompare(y.agentName)),
  };
}

/** Whether this target of the batch already has a finished audit row (a redelivered message must not act twice). */
export async function targetFinished(db: D1Database, batchId: string, target: { agentClass: string; agentName: string }): Promise<boolean> {
  const row = await db
    .prepare(
      "SELECT 1 FROM audit_log INDEXED BY audit_log_batch WHERE batch_id = ?1 AND target_class = ?2 AND target_name = ?3 AND result <> 'pending' LIMIT 1",
    )
    .bind(batchId, target.agentClass, target.agentName)
    .first();
  return row !== null;
}

/** The batch's own audit row as written when it started (who, what, why, the targets), or null. */
export async function batchStartRow(db: D1Database, batchId: string) {
  const row = await db.prepare("SELECT time, actor, role, action, target_class, target_name, reason, before FROM audit_log WHERE id = ?").bind(batchId).first<{
    time: number;
    actor: string;
    role: string;
    action: string;
    target_class: string;
    target_name: string;
    reason: string;
    before: string | null;
  }>();
  return (
    row && {
      time: row.time,
      actor: row.actor,
      role: row.role,
      action: row.action,
      targetClass: row.target_class,
      targetName: row.target_name,
      reason: row.reason,
      before: row.before === null ? null : (JSON.parse(row.before) as BatchBefore),
    }
  );
}
