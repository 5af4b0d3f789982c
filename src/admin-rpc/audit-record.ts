/** What the admin client audits for every action, whatever its result. The console stores it (src/store/audit.ts). */

/**
 * Every outcome an audited action can have. `pending` is the row written before the action starts; it is
 * completed with the outcome, so one left pending is an attempt whose outcome never came back. `partial`: the
 * action ran, but the agent read back afterwards still runs work (or the alarm did not run to its end).
 */
export const AUDIT_RESULTS = ["ok", "partial", "noop", "error", "denied", "invalid", "pending"] as const;
export type AuditResult = (typeof AUDIT_RESULTS)[number];

/** One audit record: who did what to which agent, why, and what came of it. */
export type AuditRecord = {
  id: string;
  time: number;
  actor: string;
  role: string;
  action: string;
  targetClass: string;
  targetName: string;
  reason: string;
  before: unknown;
  after: unknown;
  result: AuditResult;
  error: string | null;
  /** The bulk action this record belongs to (its own record and one per target share it); absent for a single action. */
  batchId?: string | null;
};
