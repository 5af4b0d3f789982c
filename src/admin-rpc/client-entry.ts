/** The Worker side of the admin RPC: the typed, audited client the console uses. */
export { createAdminClient, actor, target, type AdminClient, type AdminClientOptions, type AdminClientPorts, type Actor, type Target } from "./client.js";
export { AUDIT_RESULTS, type AuditRecord, type AuditResult } from "./audit-record.js";
export * from "./contract.js";
export {
  ADMIN_ACTIONS,
  ADMIN_ACTION_NAMES,
  AGENT_ACTION_NAMES,
  BULK_ACTION_NAMES,
  actionBySlug,
  type AdminActionName,
  type AgentActionName,
  type BulkActionName,
  inputFields,
  mayTake,
} from "./actions.js";
