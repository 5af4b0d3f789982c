import { z } from "zod";
import { ADMIN_ACTION_NAMES, type AdminActionName } from "../../admin-rpc/actions.js";
import { AUDIT_RESULTS, type AuditEntry } from "../audit";
import { auditLog } from "../schema";
import { type ColumnKey, names, selectList } from "../sql-names";
import { BULK_ACTIONS, type BulkAction, batchAuditAction } from "./bulk-batches";
import { instant, oneOf, parseFilters, sinceBeforeUntil, text } from "./filters";
import { type AccessPath, choosePath, cond, keysetPage, type Page, type PageOptions } from "./paging";

/** The audit log, read side (src/store/audit.ts writes it). Newest first: time DESC, id DESC. */

export { AUDIT_RESULTS };

/** Every action the audit log records: each admin action, and the own row of a bulk action of each that may be one. */
export const AUDIT_ACTIONS = [...ADMIN_ACTION_NAMES, ...BULK_ACTIONS.map(batchAuditAction)] as unknown as readonly [AuditAction, ...AuditAction[]];
export type AuditAction = AdminActionName | ReturnType<typeof batchAuditAction<BulkAction>>;

/** Audit filters; since / until bound the entry's time (inclusive). */
export const auditFilters = z
  .object({
    actor: text("actor"),
    action: oneOf("action", AUDIT_ACTIONS),
    targetClass: text("targetClass"),
    targetName: text("targetName"),
    result: oneOf("result", AUDIT_RESULTS),
    since: instant("since"),
    until: instant("until"),
    /** The rows of one bulk action: its own and one per target. */
    batchId: text("batchId"),
  })
  .superRefine(sinceBeforeUntil);
export type AuditFilters = z.output<typeof auditFilters>;
export type AuditFilterInput = { [K in keyof AuditFilters]?: unknown };

/** Rows read back have the shape they were written with. */
export type AuditRow = AuditEntry;

const L = names(auditLog);
const SELECT = selectList(auditLog, [
  "id",
  "time",
  "actor",
  "role",
  "action",
  "targetClass",
  "targetName",
  "reason",
  "before",
  "after",
  "result",
  "error",
  "batchId",
]);

/** Most selective first; any other pair of filters is a bounded scan (SCAN_BUDGET) over the first index that serves one. */
const PATHS: AccessPath<ColumnKey<typeof auditLog>>[] = [
  { index: "audit_log_batch", cols: ["batchId"] },
  { index: "audit_log_target", cols: ["targetClass", "targetName"] },
  { index: "audit_log_target_name", cols: ["targetName"] },
  { index: "audit_log_actor", cols: ["actor"] },
  { index: "audit_log_action", cols: ["action"] },
  { index: "audit_log_target_class", cols: ["targetClass"] },
  { index: "audit_log_result", cols: ["result"] },
  { index: "audit_log_time", cols: [] },
];

const parseJson = (v: unknown) => {
  if (typeof v !== "string") return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

/** Lists audit entries, newest first. */
export async function listAudit(db: D1Database, filters: AuditFilterInput, page: PageOptions = {}): Promise<Page<AuditRow>> {
  const f = parseFilters(auditFilters, filters);
  const eq = (v: string | undefined, col: string) => (v === undefined ? undefined : cond(`${col} = ?`, v));
  const p = choosePath(PATHS, {
    targetClass: eq(f.targetClass, L.targetClass),
    targetName: eq(f.targetName, L.targetName),
    actor: eq(f.actor, L.actor),
    action: eq(f.action, L.action),
    result: eq(f.result, L.result),
    batchId: eq(f.batchId, L.batchId),
  });
  return keysetPage<AuditRow>(
    db,
    {
      tag: "audit",
      table: L.$table,
      index: p.index,
      select: SELECT,
      order: [L.time, L.id],
      types: ["number", "string"],
      dir: "DESC",
      where: p.where,
      residual: p.residual,
      range: { min: f.since, max: f.until },
      keyOf: (r) => [r.time, r.id],
      map: (r) => ({ ...r, before: parseJson(r.before), after: parseJson(r.after) }),
    },
    page,
  );
}
