import { z } from "zod";

/**
 * The admin RPC contract, shared by the Durable Object side (mixin.ts) and the
 * Worker side (client.ts). Every input and output is a zod schema; every
 * failure is a typed AdminError value, never a thrown string or stack trace.
 */

export const ADMIN_ERROR_CODES = ["not_found", "not_permitted", "invalid_input", "agent_terminated", "timeout", "unavailable"] as const;
export type AdminErrorCode = (typeof ADMIN_ERROR_CODES)[number];
export const adminError = z.object({ code: z.enum(ADMIN_ERROR_CODES), message: z.string() });
export type AdminError = z.infer<typeof adminError>;

/** Every admin call answers with this: a value or a typed error. */
export type AdminResult<T> = { ok: true; value: T } | { ok: false; error: AdminError };
export const ok = <T>(value: T): AdminResult<T> => ({ ok: true, value });
export const fail = <T = never>(code: AdminErrorCode, message: string): AdminResult<T> => ({ ok: false, error: { code, message } });

const reason = z
  .string({ error: "a reason is required" })
  .trim()
  .min(1, "a reason is required: say why, for the audit log")
  .max(2000, "the reason is too long (2000 characters at most)");

export const runIdInput = z.object({ id: z.string().trim().min(1, "a run id is required").max(200) }).strict();
export const actionInput = z.object({ reason }).strict();
export type ActionInput = z.infer<typeof actionInput>;

export const derivedStatus = z.enum(["running", "idle", "terminated"]);
export type DerivedStatus = z.infer<typeof derivedStatus>;

/** A live `cf_agents_runs` row, without its snapshot. */
export const runSummary = z.object({
  id: z.string(),
  name: z.string(),
  createdAt: z.number(),
  ageMs: z.number(),
  snapshotBytes: z.number(),
});
/** A row of the managed-fiber ledger (`cf_agents_fibers`), for agents that use startFiber. */
export const managedFiber = z.object({
  fiberId: z.string(),
  name: z.string(),
  status: z.string(),
  createdAt: z.number(),
  completedAt: z.number().nullable(),
  snapshotBytes: z.number(),
});
export const listRunsOutput = z.object({ runs: z.array(runSummary), managedFibers: z.array(managedFiber) });
export type ListRunsOutput = z.infer<typeof listRunsOutput>;

/** One run with its snapshot, capped; `truncated` says so explicitly. */
export const runDetail = runSummary.extend({
  snapshot: z.unknown(),
  snapshotText: z.string().nullable(),
  truncated: z.boolean(),
});
export type RunDetail = z.infer<typeof runDetail>;

export const scheduleSummary = z.object({ id: z.string(), callback: z.string(), time: z.number(), running: z.boolean() });
export const chatIncidentRecord = z.object({ key: z.string(), status: z.string(), attempt: z.number().nullable(), reason: z.string().nullable(), requestId: z.string().nullable() });

export const statusOutput = z.object({
  status: derivedStatus,
  runCount: z.number(),
  nextAlarm: z.number().nullable(),
  schedules: z.array(scheduleSummary),
  pendingScheduleCount: z.number(),
  chatRecoveryIncidents: z.array(chatIncidentRecord),
});
export type StatusOutput = z.infer<typeof statusOutput>;

export const forceIdleOutput = z.object({
  noop: z.boolean(),
  before: statusOutput,
  after: statusOutput,
  abortedRuns: z.array(z.string()),
  cancelledFibers: z.array(z.string()),
  clearedIncidents: z.array(z.string()),
});
export type ForceIdleOutput = z.infer<typeof forceIdleOutput>;

export const triggerAlarmOutput = z.object({
  before: statusOutput,
  after: statusOutput,
  /** Fibers recovery settled: rows gone during the alarm, plus those recovered on wake. */
  recoveredRuns: z.array(z.string()),
  /** Recovery events since the agent woke (the SDK recovers on wake) and from this alarm, as event contract types (fiber.recovery.handled, …). */
  recoveryEvents: z.array(z.object({ type: z.string(), fiberId: z.string().nullable(), incidentId: z.string().nullable(), detail: z.string().nullable() })),
});
export type TriggerAlarmOutput = z.infer<typeof triggerAlarmOutput>;

/** The Workers RPC surface the mixin adds. Method names are prefixed so they never clash with an agent's own. */
export interface AdminRpc {
  adminListRuns(): Promise<AdminResult<ListRunsOutput>>;
  adminGetRun(input: unknown): Promise<AdminResult<RunDetail>>;
  adminStatus(): Promise<AdminResult<StatusOutput>>;
  adminForceIdle(input: unknown): Promise<AdminResult<ForceIdleOutput>>;
  adminTriggerAlarm(input: unknown): Promise<AdminResult<TriggerAlarmOutput>>;
}

/** Optional hooks an agent may implement to take part in admin actions (SessionAgent does). */
export interface AdminHooks {
  /** The agent's own derived status; defaults to running-if-run-rows-exist. */
  adminDerivedStatus?(): DerivedStatus;
  /** Abort in-memory work (the active turn) and clear the agent's own recovery counters; returns what it cleared. */
  onAdminForceIdle?(reason: string): Promise<string[]> | string[];
}

/** Formats zod issues for a person. */
export function describeInput(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}
