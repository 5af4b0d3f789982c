import { RUN_KINDS } from "@agent-oncall/telemetry";
import { z } from "zod";

/**
 * The admin RPC contract, shared by the Durable Object side (mixin.ts) and the
 * Worker side (client.ts). Every input and output is a zod schema; every
 * failure is a typed AdminError value, never a thrown string or stack trace.
 */

/**
 * `unsupported`: the target does not have the admin mixin (or lacks the method), so it cannot answer at all.
 * `unavailable`: it has, but could not answer now (being evicted, failing); `timeout`: it did not answer in time.
 */
export const ADMIN_ERROR_CODES = ["not_found", "not_permitted", "invalid_input", "agent_terminated", "unsupported", "timeout", "unavailable"] as const;
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

/** The kinds of durable work (src/telemetry's RUN_KINDS): runFiber, startFiber, Tasks runs, chat turns. */
export const runKind = z.enum(RUN_KINDS);
export type RunKind = z.infer<typeof runKind>;

/**
 * A live `cf_agents_runs` row, without its snapshot. `kind` says what made it: a plain runFiber, a managed
 * fiber (startFiber keeps a row here while its callback runs) or a chat turn run as a fiber.
 */
export const runSummary = z.object({
  id: z.string(),
  name: z.string(),
  kind: runKind.default("fiber"),
  /** A chat turn's request id (the id the console keys the turn by); null for other kinds and older agents. */
  requestId: z.string().nullable().default(null),
  createdAt: z.number(),
  ageMs: z.number(),
  snapshotBytes: z.number(),
});
/** A managed fiber (`startFiber`), read through the SDK's public `listFibers`. */
export const managedFiber = z.object({
  fiberId: z.string(),
  name: z.string(),
  status: z.string(),
  createdAt: z.number(),
  completedAt: z.number().nullable(),
  snapshotBytes: z.number(),
});
/**
 * A Tasks run that has not settled (`this.tasks.list`), with the step it is at. A chat turn (Think,
 * AIChatAgent) is a Tasks run of the SDK's internal chat-turn definition, keyed by its request id.
 */
export const taskRun = z.object({
  runId: z.string(),
  definition: z.string(),
  kind: z.enum(["task", "chat_turn"]),
  requestId: z.string().nullable(),
  state: z.string(),
  attempt: z.number().nullable(),
  createdAt: z.number(),
  startedAt: z.number().nullable(),
  wakeAt: z.number().nullable(),
  statusMessage: z.string().nullable(),
  currentStep: z.string().nullable(),
});
export type TaskRun = z.infer<typeof taskRun>;
/** An agent on an older package version sends no `tasks`: none is shown rather than a contract error. */
export const listRunsOutput = z.object({ runs: z.array(runSummary), managedFibers: z.array(managedFiber), tasks: z.array(taskRun).default([]) });
export type ListRunsOutput = z.infer<typeof listRunsOutput>;

/** One run with its snapshot, capped; `truncated` says so explicitly. */
export const runDetail = runSummary.extend({
  snapshot: z.unknown(),
  snapshotText: z.string().nullable(),
  truncated: z.boolean(),
});
export type RunDetail = z.infer<typeof runDetail>;

export const scheduleSummary = z.object({ id: z.string(), callback: z.string(), time: z.number(), running: z.boolean() });
/** A chat-recovery record; `incidentId` is the id the SDK's chat:recovery:* events (and the console's incidents) use. */
export const chatIncidentRecord = z.object({
  key: z.string(),
  incidentId: z.string().optional(),
  status: z.string(),
  attempt: z.number().nullable(),
  reason: z.string().nullable(),
  requestId: z.string().nullable(),
});

/**
 * What an agent supports, so the console offers only actions that will work. Reported by the mixin with
 * every status; an agent without the mixin answers nothing at all (the client's `unsupported` error).
 */
export const capabilities = z.object({
  /** The admin RPC contract the agent speaks. */
  contract: z.number().int(),
  /** The agent implements `onAdminForceIdle`: force idle asks it to stop its in-memory turns. */
  forceIdleHook: z.boolean(),
  /** The agent derives its own status (`adminDerivedStatus`). */
  derivedStatus: z.boolean(),
  /** The agent declares Tasks definitions or has Tasks runs: force idle cancels them through `this.tasks`. */
  tasks: z.boolean(),
  /** The agent has managed fibers (`startFiber`): force idle cancels them through `cancelFiber`. */
  managedFibers: z.boolean(),
  /** The agent keeps chat-recovery records (Think / AIChatAgent): force idle clears them. */
  chatRecovery: z.boolean(),
  /**
   * How force idle stops a plain runFiber callback that the agent's hook did not stop: `evict` (the agent is
   * evicted once its rows are gone) or `none` (the callback runs on until it returns; the result says so).
   */
  plainFiberStop: z.enum(["evict", "none"]),
});
export type Capabilities = z.infer<typeof capabilities>;
/** Version of this contract, reported in `capabilities.contract`. */
export const ADMIN_CONTRACT_VERSION = 2;

export const statusOutput = z.object({
  status: derivedStatus,
  runCount: z.number(),
  nextAlarm: z.number().nullable(),
  schedules: z.array(scheduleSummary),
  pendingScheduleCount: z.number(),
  chatRecoveryIncidents: z.array(chatIncidentRecord),
  /** Absent from agents on an older package version: the console then offers the actions every mixin has. */
  capabilities: capabilities.optional(),
});
export type StatusOutput = z.infer<typeof statusOutput>;

/**
 * One run force idle ended. `stopped` says whether its work really stopped (not only its row): `how` says
 * by what, `detail` says it in words for the operator.
 * - `hook`: the agent's onAdminForceIdle stopped it; `cancelled`: Tasks cancel / cancelFiber, and it settled;
 * - `evicted`: nothing else could stop it, so the agent is evicted right after answering;
 * - `not_running`: no callback was running in this instance (a row left by an eviction): removed, never recovered;
 * - `still_running`: it is still running in memory and nothing could stop it (stopped is false).
 */
export const endedRun = z.object({
  kind: runKind,
  runId: z.string(),
  name: z.string().nullable(),
  stopped: z.boolean(),
  how: z.enum(["hook", "cancelled", "evicted", "not_running", "still_running"]),
  detail: z.string(),
});
export type EndedRun = z.infer<typeof endedRun>;
/** A recovery incident force idle cleared, by the id the console's incidents use: a chat-recovery record, or one the agent's hook reported. */
export const clearedIncident = z.object({ incidentId: z.string(), kind: z.enum(["chat", "hook"]) });

export const forceIdleOutput = z.object({
  noop: z.boolean(),
  before: statusOutput,
  after: statusOutput,
  /** Every run ended, of every kind. */
  ended: z.array(endedRun).default([]),
  /** Recovery incidents cleared (chat-recovery records, and those the agent's hook reports). */
  incidents: z.array(clearedIncident).default([]),
  /** The agent is evicted right after this answer, to stop callbacks nothing else could stop. */
  evicted: z.boolean().default(false),
  /** One plain sentence when some work could not be stopped (or was stopped by evicting the agent); null otherwise. */
  notice: z.string().nullable().default(null),
  /** Ids of the run rows removed (every kind), kept for older callers. */
  abortedRuns: z.array(z.string()),
  /** Managed fibers cancelled. */
  cancelledFibers: z.array(z.string()),
  /** Chat-recovery record keys deleted, and what the agent's hook reported clearing. */
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

/**
 * What `onAdminForceIdle` may return: what it cleared (free text for the audit), or that plus the ids of
 * recovery incidents it ended (e.g. turnIncidentId of turns whose recovery counters it reset).
 */
export type ForceIdleHookResult = string[] | { cleared?: string[]; incidentIds?: string[] };

/** Optional hooks an agent may implement to take part in admin actions (SessionAgent and the demo ChatAgent do). */
export interface AdminHooks {
  /** The agent's own derived status; defaults to running-if-run-rows-exist. */
  adminDerivedStatus?(): DerivedStatus;
  /**
   * Abort in-memory work (the active turn) and clear the agent's own recovery counters. Called before the
   * mixin cancels Tasks runs and managed fibers and removes run rows; callbacks it aborts count as stopped.
   */
  onAdminForceIdle?(reason: string): Promise<ForceIdleHookResult> | ForceIdleHookResult;
}

/** Formats zod issues for a person. */
export function describeInput(error: z.ZodError): string {
  return error.issues.map((i) => (i.path.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
}
