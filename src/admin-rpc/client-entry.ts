/** The Worker side of the admin RPC: the typed, audited client the console uses. */

export {
  ADMIN_ACTION_NAMES,
  ADMIN_ACTIONS,
  type AdminActionName,
  AGENT_ACTION_NAMES,
  type AgentActionName,
  actionBySlug,
  BULK_ACTION_NAMES,
  type BulkActionName,
  inputFields,
  mayTake,
} from "./actions.js";
export { AUDIT_RESULTS, type AuditRecord, type AuditResult } from "./audit-record.js";
export { type Actor, type AdminClient, type AdminClientOptions, type AdminClientPorts, actor, createAdminClient, type Target, target } from "./client.js";
export * from "./contract.js";
export * from "./recovery-budget.js";
