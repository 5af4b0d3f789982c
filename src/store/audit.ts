/** The audit log: written by the admin RPC client, read by the console (read-models/audit.ts). */

import type { AuditRecord } from "../admin-rpc/audit-record.js";
import { auditLog } from "./schema";
import { names } from "./sql-names";

export { AUDIT_RESULTS } from "../admin-rpc/audit-record.js";
/** One audit row, as written and as read: the admin client's record. */
export type AuditEntry = AuditRecord;

const json = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

const L = names(auditLog);
const INSERT = `INSERT INTO ${L.$table} (${L.id}, ${L.time}, ${L.actor}, ${L.role}, ${L.action}, ${L.targetClass}, ${L.targetName}, ${L.reason}, ${L.before}, ${L.after}, ${L.result}, ${L.error}, ${L.batchId})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (${L.id}) DO UPDATE SET ${L.before} = excluded.${L.before}, ${L.after} = excluded.${L.after}, ${L.result} = excluded.${L.result}, ${L.error} = excluded.${L.error}
       WHERE ${L.$table}.${L.result} = 'pending'`;

/**
 * Writes one audit row, or completes it: the admin client writes every action first as "pending", then
 * again under the same id with its outcome. Only a pending row is completed; who, what and why never change.
 */
export async function writeAudit(db: D1Database, e: AuditEntry): Promise<void> {
  await db
    .prepare(INSERT)
    .bind(e.id, e.time, e.actor, e.role, e.action, e.targetClass, e.targetName, e.reason, json(e.before), json(e.after), e.result, e.error, e.batchId ?? null)
    .run();
}
