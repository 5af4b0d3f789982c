import { z } from "zod";
import type { AdminActionRpc } from "./actions.js";
import { AGENT_STATUSES, agentStatusOf, RUN_KINDS } from "./facts.js";
import { ADMIN_ERROR_CODES, type AdminError, type AdminResult, OP_RESOLUTIONS, type OpResolution, type ResolveOpRequest } from "./inputs.js";
import type { FindRunRecords, RecoveryBudgetRecords, ResidencyRecordsAnswer, RunRecords, VerifyRecordsAnswer } from "./records-contract.js";
import type { RecoveryBudgetOutput } from "./recovery-budget.js";
import type { ResidencyOutput } from "./residency-contract.js";
import { ALARM_LOOP_JOB_OWNERS, chatTurnRequestIdOf, textOf } from "./sdk-layout.js";

/**
 * The admin RPC contract, shared by the Durable Object side (mixin.ts) and the
 * Worker side (client.ts). Every input and output is a zod schema; every
 * failure is a typed AdminError value, never a thrown string or stack trace.
 * What the agent side validates is in inputs.ts, re-exported here.
 */

export * from "./inputs.js";

export const adminErrorFacts = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("no_mixin"), agentClass: z.string() }),
  z.object({ kind: z.literal("upgrade"), action: z.string(), rpc: z.string(), since: z.number(), agentClass: z.string(), agentName: z.string() }),
  z.object({ kind: z.literal("not_addressable"), agentClass: z.string(), allowed: z.array(z.string()) }),
  z.object({ kind: z.literal("not_registered"), agentClass: z.string(), agentName: z.string() }),
  z.object({ kind: z.literal("no_binding"), agentClass: z.string() }),
  z.object({ kind: z.literal("nested_sub_agent"), agentClass: z.string(), depth: z.number() }),
  z.object({ kind: z.literal("other_worker"), agentClass: z.string(), worker: z.string().nullable() }),
  z.object({ kind: z.literal("timeout"), limitMs: z.number() }),
  z.object({ kind: z.literal("unreachable"), cause: z.string() }),
  z.object({ kind: z.literal("bad_answer"), detail: z.string().nullable() }),
  z.object({ kind: z.literal("lookup_failed"), cause: z.string() }),
  z.object({ kind: z.literal("audit_failed"), cause: z.string() }),
  z.object({ kind: z.literal("no_outcome") }),
  z.object({ kind: z.literal("console_failed"), cause: z.string() }),
  z.object({ kind: z.literal("role"), email: z.string(), role: z.string(), needs: z.string() }),
  z.object({ kind: z.literal("agent_failed"), cause: z.string() }),
  z.object({ kind: z.literal("no_live_run"), id: z.string() }),
  z.object({ kind: z.literal("terminated"), action: z.enum(["force_idle", "trigger_alarm"]) }),
  z.object({ kind: z.literal("no_resolve_hook"), agentClass: z.string() }),
  z.object({ kind: z.literal("hook_bad_answer"), detail: z.string() }),
  z.object({ kind: z.literal("no_op"), opId: z.string() }),
  z.object({ kind: z.literal("op_not_ambiguous"), opId: z.string(), status: z.string(), resolution: z.string().nullable() }),
]);
// Facts of a kind this console does not know (a newer agent's) are dropped: the error's message still says it.
export const adminError = z.object({
  code: z.enum(ADMIN_ERROR_CODES),
  message: z.string(),
  facts: adminErrorFacts.optional().catch(undefined),
}) satisfies z.ZodType<AdminError>;

/**
 * What the agent is doing (sdk-states.ts `agentStatusOf`): running, waiting (only parked work: a
 * Tasks run waiting to wake, a managed fiber interrupted until `resolveFiber`), idle, or terminated.
 */
export const derivedStatus = z.enum(AGENT_STATUSES);
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
  /** For chat work (a turn's carrier, a chat recovery's transport): the user turn it serves, the id the console keys it by. */
  requestId: z.string().nullable(),
  /** A turn's carrier: the request id its turn runs under (a recovery turn's own, which the SDK aborts it by). */
  turnRequestId: z.string().nullable().optional(),
  state: z.string(),
  // From contract 11 the agent sends the SDK's run record as it is: a field the SDK leaves out is null here.
  attempt: z.number().nullable().default(null),
  createdAt: z.number(),
  startedAt: z.number().nullable().default(null),
  wakeAt: z.number().nullable().default(null),
  statusMessage: z.string().nullable().default(null),
  currentStep: z.string().nullable(),
});
export type TaskRun = z.infer<typeof taskRun>;
/** A Tasks run as the agent answers it (the SDK's record with its kind, request id and step; extra fields are dropped). */
export type TaskRunAnswer = z.input<typeof taskRun>;
/**
 * A runFiber callback running in memory with no `cf_agents_runs` row (force idle removed it and nothing could
 * stop the callback): work the agent does that its tables no longer show.
 */
export const inMemoryRun = z.object({ id: z.string(), kind: runKind });
/** An agent on an older package version sends no `tasks` (or `inMemory`): none is shown rather than a contract error. */
export const listRunsOutput = z.object({
  runs: z.array(runSummary),
  managedFibers: z.array(managedFiber),
  tasks: z.array(taskRun).default([]),
  inMemory: z.array(inMemoryRun).default([]),
});
export type ListRunsOutput = z.infer<typeof listRunsOutput>;
/** The live runs as the agent answers them: its Tasks runs as TaskRunAnswer. */
export type ListRunsAnswer = Omit<ListRunsOutput, "tasks"> & { tasks: TaskRunAnswer[] };

/**
 * One run as the agent records it now, in the SDK's own words (`state`: a FiberStatus, a Tasks state, a Think
 * submission status; sdk-states.ts maps them), from the first source that has it:
 * `run_row` (a live cf_agents_runs row), `managed_fiber` (inspectFiber), `task` (tasks.get), `submission`
 * (Think's submissions), `agent` (the agent's own `adminRunRecord` hook, for runs the SDK keeps no record of).
 */
export const foundRun = z.object({
  runId: z.string(),
  kind: runKind,
  source: z.enum(["run_row", "managed_fiber", "task", "submission", "agent"]),
  state: z.string(),
  name: z.string().nullable(),
  definition: z.string().nullable(),
  requestId: z.string().nullable(),
  /**
   * A chat turn carried by a Tasks run: that run's id (`chat_<nonce>`). The tail names a top-level AIChatAgent's turn
   * by it, since the SDK publishes no request id for it (src/telemetry/tail-chat-turns.ts). Absent from older agents.
   */
  taskId: z.string().nullable().optional(),
  createdAt: z.number().nullable(),
  startedAt: z.number().nullable(),
  settledAt: z.number().nullable(),
  error: z.string().nullable(),
  statusMessage: z.string().nullable(),
  step: z.string().nullable(),
  attempt: z.number().nullable(),
  wakeAt: z.number().nullable(),
});
export type FoundRun = z.infer<typeof foundRun>;
/** What `adminRunRecord` may answer: the agent's own record of a run the SDK keeps none of (a plain runFiber once it ended). */
export const agentRunRecord = z.object({
  /** In the managed-fiber words (FiberStatus): completed, error, aborted, interrupted, running. */
  state: z.enum(["pending", "running", "completed", "error", "aborted", "interrupted"]),
  name: z.string().max(200).optional(),
  error: z.string().max(4000).optional(),
  settledAt: z.number().optional(),
});
/** The shape the agent's hook may answer in (optional fields may be absent). */
export type AgentRunRecord = z.input<typeof agentRunRecord>;

/** `missing`: asked-for ids the agent has no record of at all (only those may be closed "ended, not reported"). */
export const findRunsOutput = z.object({ runs: z.array(foundRun), missing: z.array(z.string()) });
export type FindRunsOutput = z.infer<typeof findRunsOutput>;

/** One run with its snapshot, capped; `truncated` says so explicitly. */
export const runDetail = runSummary.extend({
  snapshot: z.unknown(),
  snapshotText: z.string().nullable(),
  truncated: z.boolean(),
});
export type RunDetail = z.infer<typeof runDetail>;

/** A schedule of the status; from contract 11 `running` is the job row's own 0 or 1, read here as a boolean. */
export const scheduleSummary = z.object({
  id: z.string(),
  callback: z.string(),
  time: z.number(),
  running: z.union([z.boolean(), z.number().transform((n) => n === 1)]),
});
/** A chat-recovery record; `incidentId` is the id the SDK's chat:recovery:* events (and the console's incidents) use. */
const chatIncidentSummary = z.object({
  key: z.string(),
  incidentId: z.string().optional(),
  status: z.string(),
  attempt: z.number().nullable(),
  reason: z.string().nullable(),
  requestId: z.string().nullable(),
});
/**
 * From contract 11 the agent sends each chat-recovery record as the SDK keeps it in KV (sdk-layout.ts
 * chatRecoveryRecords: its key, incident id and value), and the client picks the fields the console shows.
 */
const chatIncidentKv = z.object({ key: z.string(), incidentId: z.string(), record: z.record(z.string(), z.unknown()).nullish() });
export const chatIncidentRecord = z.union([
  chatIncidentSummary,
  chatIncidentKv.transform(({ key, incidentId, record: v }) => ({
    key,
    incidentId,
    status: textOf(v?.status) ?? "unknown",
    attempt: typeof v?.attempt === "number" ? v.attempt : null,
    reason: textOf(v?.reason),
    requestId: textOf(v?.requestId),
  })),
]);

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
  /** The agent implements `onAdminResolveOp`: an operator can record how its ambiguous ops were resolved. Absent (false) before contract 3. */
  resolveOps: z.boolean().default(false),
  /** The agent's mixin can pause its recovery (adminPauseRecovery / adminResumeRecovery). Absent (false) before contract 5. */
  pauseRecovery: z.boolean().default(false),
});
export type Capabilities = z.infer<typeof capabilities>;

/**
 * A recovery pause as the agent holds it in its own storage (src/admin-rpc/pause.ts). `held`: the managed fibers
 * whose recovery it held back (left `interrupted` by the SDK; the resume recovers them). `skipped`: how many
 * recoveries it held back, of every kind (a plain runFiber's row stays, and the SDK retries it with backoff).
 */
export const recoveryPause = z.object({
  /** Whether it holds recovery back now: false once `until` passed (what it held still waits for the resume). */
  active: z.boolean(),
  reason: z.string(),
  pausedAt: z.number(),
  until: z.number(),
  skipped: z.number().int(),
  held: z.array(z.string()),
});
export type RecoveryPause = z.infer<typeof recoveryPause>;

/** The pause and the recovery it holds back, as the agent reads them: an action's before and after. */
export const pauseState = z.object({
  /** The pause the agent holds (active, or expired and not resumed yet); null when none. */
  pause: recoveryPause.nullable(),
  /** Interrupted fibers waiting for recovery now: run rows not running in this instance, plus managed fibers the pause held. */
  pendingRecovery: z.number().int(),
});
export type PauseState = z.infer<typeof pauseState>;

/** A repeated pause replaces the reason and expiry and keeps what the earlier one held; never a no-op. */
export const pauseRecoveryOutput = z.object({ noop: z.literal(false).default(false), before: pauseState, after: pauseState });
export type PauseRecoveryOutput = z.infer<typeof pauseRecoveryOutput>;

/**
 * Resuming ends the pause and recovers what it held now: each held managed fiber through the agent's own
 * onFiberRecovered and the SDK's `resolveFiber`, and run rows through the agent's alarm (the SDK's recovery), given
 * `alarm` says how that went. `recovered`: fiber ids the agent no longer has waiting afterwards.
 */
export const resumeRecoveryOutput = z.object({
  noop: z.boolean(),
  before: pauseState,
  after: pauseState,
  alarm: z.enum(["ran", "still_running", "not_needed"]),
  recovered: z.array(z.string()),
});
export type ResumeRecoveryOutput = z.infer<typeof resumeRecoveryOutput>;

/** Longest telemetry error message carried to the console: enough for the sentence, not a whole stack. */
const MAX_TELEMETRY_ERROR_CHARS = 300;

/**
 * The agent's telemetry pipeline as its own telemetry mixin counts it (`telemetry.stats()`), so an on-call engineer
 * can tell a broken pipeline from a quiet agent. Counts are since `since`, when this instance of the agent started;
 * `pending` is what waits in its storage now, whatever instance wrote it.
 */
export const telemetryHealth = z.object({
  since: z.number(),
  /** False: the agent's Worker has no telemetry Queue binding, so nothing is ever sent. */
  queueBound: z.boolean(),
  /** When the current run of failed sends began; null while the last send went through. */
  failingSince: z.number().nullable(),
  /** Events waiting to be sent (in the outbox, or memory without one). */
  pending: z.number().int(),
  sent: z.number().int(),
  sendErrors: z.number().int(),
  /** Events lost before the Queue: deleted unsent by the outbox's bound, pushed out of memory, or failed to record. */
  dropped: z.number().int(),
  /** The last failed send's error, cut to MAX_TELEMETRY_ERROR_CHARS. */
  lastSendError: z
    .string()
    .nullable()
    .transform((s) => (s === null ? null : s.slice(0, MAX_TELEMETRY_ERROR_CHARS))),
});
export type TelemetryHealth = z.infer<typeof telemetryHealth>;

/**
 * What the SDK holds that an agent's status is derived from (contract 11): its live run rows (and runFiber callbacks
 * running in memory without one), the states of its live Tasks runs and the statuses of its live or parked managed
 * fibers. The client derives the status (sdk-states.ts `agentStatusOf`), so the mapping never ships in an agent.
 */
export const statusWork = z.object({ runRows: z.number().int(), taskStates: z.array(z.string()), fiberStatuses: z.array(z.string()) });
export type StatusWork = z.infer<typeof statusWork>;

export const statusOutput = z.object({
  /** The status; from contract 11 the agent sends what it is derived from (StatusWork) unless its own hook derives it. */
  status: z.union([derivedStatus, statusWork.transform(agentStatusOf)]),
  runCount: z.number(),
  nextAlarm: z.number().nullable(),
  schedules: z.array(scheduleSummary),
  pendingScheduleCount: z.number(),
  chatRecoveryIncidents: z.array(chatIncidentRecord),
  /** Absent from agents on an older package version: the console then offers the actions every mixin has. */
  capabilities: capabilities.optional(),
  /**
   * The highest event number the agent's telemetry outbox has handed to the Queue (null: no telemetry mixin, or
   * nothing numbered sent yet). Above the highest the console received, the difference never arrived.
   */
  eventsShippedThrough: z.number().int().nullable().default(null),
  /** The recovery pause the agent holds (`active` says whether it is in force); null: none, and always from mixins before contract 5. */
  recoveryPause: recoveryPause.nullable().default(null),
  /** The telemetry pipeline's figures; null: no telemetry mixin, or mixins older than contract 8. */
  // A field this console cannot read makes the line "not reported", not the whole status unreadable.
  telemetry: telemetryHealth.nullable().default(null).catch(null),
});
export type StatusOutput = z.infer<typeof statusOutput>;
/**
 * A status as the agent answers it: from contract 11 its `status` may be StatusWork, its incidents the SDK's records
 * and a schedule's `running` the row's number. (The other fields as the client reads them: their input types are
 * looser than an RPC result can be typed with.)
 */
export type StatusAnswer = Omit<StatusOutput, "status" | "chatRecoveryIncidents" | "schedules"> &
  Pick<z.input<typeof statusOutput>, "status" | "schedules"> & { chatRecoveryIncidents: (StatusOutput["chatRecoveryIncidents"][number] | ChatIncidentKv)[] };
/** A chat-recovery record as the SDK keeps it in KV (sdk-layout.ts chatRecoveryRecords), as the agent sends it from contract 11. */
export type ChatIncidentKv = { key: string; incidentId: string; record?: Record<string, string | number | boolean | object | null> | null | undefined };

/**
 * Why force idle judged a run as it did, as a code the console words (console/admin-words.ts):
 * - `evicted`: still running after every other way was tried, so the agent is evicted (its row is gone);
 * - `unstoppable`: still running in memory, nothing could stop it (its row is removed, so it is not recovered);
 * - `idle_row_removed` / `idle_cancelled`: nothing ran for it in this instance (left by an eviction, or waiting);
 *   its row is removed / it is cancelled, so it never resumes;
 * - `hook`: the agent's onAdminForceIdle stopped it; `ended_itself`: it ended on its own while force idle ran;
 * - `tasks_cancelled` / `fiber_cancelled`: cancelled through the Tasks API / cancelFiber, and it settled;
 * - chat turns (chat-stop.ts): `chat_not_ended` (its request was aborted but the turn had not ended `settleMs`
 *   later; its Tasks run is cancelled, so it is not replayed), `submission_ended` (it had already ended),
 *   `submission_cancelled` (cancelled through Think's cancelSubmission while running), `submission_dropped`
 *   (queued, never started: cancelled the same way), `chat_aborted` (its request aborted, the turn ended).
 */
export const ENDED_WHYS = [
  "evicted",
  "unstoppable",
  "idle_row_removed",
  "idle_cancelled",
  "hook",
  "ended_itself",
  "tasks_cancelled",
  "fiber_cancelled",
  "chat_not_ended",
  "submission_ended",
  "submission_cancelled",
  "submission_dropped",
  "chat_aborted",
] as const;
export type EndedWhy = (typeof ENDED_WHYS)[number];

/**
 * One run force idle ended. `stopped` says whether its work really stopped (not only its row): `how` says
 * by what, `why` says which case that was (ENDED_WHYS), with the facts it needs (`settleMs`, `sdkStatus`).
 * - `hook`: the agent's onAdminForceIdle stopped it; `cancelled`: Tasks cancel / cancelFiber, and it settled;
 * - `evicted`: nothing else could stop it, so the agent is evicted right after answering;
 * - `not_running`: no callback was running in this instance (a row left by an eviction): removed, never recovered;
 * - `still_running`: it is still running in memory and nothing could stop it (stopped is false).
 * A chat turn (Think, AIChatAgent) is ended through the SDK's chat API (src/admin-rpc/chat-stop.ts) and keyed by
 * its user turn's request id (`ref`: its submission, or the Tasks run that carried it); `sdkStatus` says what the SDK
 * records for it afterwards. A chat turn evicted keeps the `why` of its chat verdict, with `how: "evicted"`.
 * Mixins before contract 6 send `detail`, a sentence, instead of `why`: the console shows it as it is.
 */
export const endedRun = z.object({
  kind: runKind,
  runId: z.string(),
  /** The SDK's own id for it (the Tasks run id of a chat turn keyed by its request id; else runId): what the console reads it back by. */
  ref: z.string().nullable().default(null),
  name: z.string().nullable(),
  stopped: z.boolean(),
  how: z.enum(["hook", "cancelled", "evicted", "not_running", "still_running"]),
  /** Which case it was (contract 6); absent from older mixins, which send `detail`. */
  why: z.enum(ENDED_WHYS).optional(),
  /** How long force idle waited for a chat turn to end (`chat_not_ended`). */
  settleMs: z.number().optional(),
  /** An older mixin's sentence (before contract 6), shown as it is. */
  detail: z.string().optional(),
  /** The SDK's own word for the run, re-read by the agent after stopping it (a Think submission's status); null where it keeps none. */
  sdkStatus: z.string().nullable().optional(),
});
export type EndedRun = z.infer<typeof endedRun>;
/** A recovery incident force idle cleared, by the id the console's incidents use: a chat-recovery record, or one the agent's hook reported. */
export const clearedIncident = z.object({ incidentId: z.string(), kind: z.enum(["chat", "hook"]) });

/**
 * Why work kept running after force idle: `chat_not_ended` (the SDK aborted the chat turn, but it had not ended
 * when force idle looked again); `hook_did_not_stop` (the agent's onAdminForceIdle hook did not stop it, and the
 * SDK cannot cancel a runFiber callback from outside); `no_hook` (the same, and the agent has no such hook).
 */
export const UNSTOPPED_CAUSES = ["chat_not_ended", "hook_did_not_stop", "no_hook"] as const;
export const forceIdleNotice = z.object({ code: z.literal("unstopped"), cause: z.enum(UNSTOPPED_CAUSES) });
export type ForceIdleNotice = z.infer<typeof forceIdleNotice>;

export const forceIdleOutput = z.object({
  noop: z.boolean(),
  /** Which instance of the agent answered (a fresh one after an eviction answers with another): see adminVerify. */
  instance: z.string().nullable().default(null),
  before: statusOutput,
  after: statusOutput,
  /** Every run ended, of every kind. */
  ended: z.array(endedRun).default([]),
  /**
   * Recovery incidents this action closed: those open when it ran (chat-recovery records the SDK was still recovering:
   * detected, scheduled, attempting) and those the agent's hook reports. Mixins before contract 9 counted every record here.
   */
  incidents: z.array(clearedIncident).default([]),
  /**
   * Chat-recovery records of incidents the SDK had already closed (its status for each: exhausted, failed, completed,
   * skipped), removed with the rest but not closed by this action. Empty from older mixins.
   */
  alreadyClosed: z.array(z.object({ incidentId: z.string(), status: z.string() })).default([]),
  /** The agent is evicted right after this answer, to stop callbacks nothing else could stop. */
  evicted: z.boolean().default(false),
  /**
   * Set when some work could not be stopped (or was stopped by evicting the agent): why (UNSTOPPED_CAUSES); the runs
   * are those of `ended` left `still_running` or `evicted`. A string from mixins before contract 6 (their sentence,
   * shown as it is); null otherwise.
   */
  notice: z.union([z.string(), forceIdleNotice]).nullable().default(null),
  /** Ids of the run rows removed (every kind), kept for older callers. */
  abortedRuns: z.array(z.string()),
  /** Managed fibers cancelled. */
  cancelledFibers: z.array(z.string()),
  /** Chat-recovery record keys deleted, and what the agent's hook reported clearing. */
  clearedIncidents: z.array(z.string()),
});
export type ForceIdleOutput = z.infer<typeof forceIdleOutput>;

/**
 * One run force idle found (contract 10), as the agent saw it: where it was (`source`: a run row, a managed fiber, a
 * Tasks run), whether it was running in this instance when force idle began, and whether it still ran after every
 * way to stop it. The client judges how it ended (force-idle-verdicts.ts: `how`, `why`).
 */
export type ForceIdleRun = {
  kind: RunKind;
  runId: string;
  name: string | null;
  rowId: string | null;
  taskRunId?: string;
  source: "row" | "managed" | "task";
  wasRunning: boolean;
  running: boolean;
};

/**
 * One chat turn force idle stopped through the SDK's chat API (chat-stop.ts), keyed by its user turn: whether it
 * had a Think submission, was running, had already ended when cancelled (`ended`), still ran after the settle time
 * (`stuck`), and the submission's status read back (`sdkStatus`).
 */
export type ForceIdleTurn = {
  runId: string;
  ref: string;
  submission: boolean;
  wasRunning: boolean;
  ended: boolean;
  stuck: boolean;
  sdkStatus: string | null;
};

/**
 * What the agent answers to force idle from contract 10: what it found and did, as facts. The client turns them into
 * ForceIdleOutput (force-idle-verdicts.ts), so the judging and its words never ship in a user's Worker. Empty lists
 * may be left out (a no-op answers none).
 */
export type ForceIdleFacts = {
  noop: boolean;
  instance: string;
  before: StatusAnswer;
  after: StatusAnswer;
  runs?: ForceIdleRun[];
  turns?: ForceIdleTurn[];
  /** Whether the agent has an onAdminForceIdle hook (it was asked first). */
  hook?: boolean;
  settleMs?: number;
  /** Incident ids the hook reported ending. */
  hookIncidents?: string[];
  evicted?: boolean;
  abortedRuns?: string[];
  cancelledFibers?: string[];
  clearedIncidents?: string[];
};

/**
 * Work running in the agent now, read through the SDK: chat turns and Tasks runs (`this.tasks.list`), runFiber
 * callbacks and managed fibers (the SDK's set of running callbacks, `inspectFiber`), and queued or scheduled
 * callbacks the SDK's alarm loop is running (`cf_agents_jobs` rows it marked running in this instance).
 */
export const BUSY_KINDS = ["chat_turn", "task", "fiber", "managed_fiber", "queued_callback", "scheduled_callback"] as const;
export const busyWork = z.object({
  kind: z.enum(BUSY_KINDS),
  id: z.string(),
  /** Its name: the fiber's, the Tasks definition, the callback's; null when the agent no longer records it (a row removed). */
  name: z.string().nullable(),
  /** A chat turn's request id. */
  requestId: z.string().nullable(),
  /** A Tasks run's current step. */
  step: z.string().nullable(),
  /** When it started, where the SDK records it. */
  since: z.number().nullable(),
  /**
   * The SDK's alarm loop is running it (a queued or scheduled callback): an alarm triggered now would wait for it
   * to end, and run it a second time meanwhile (the loop re-dispatches a due job that is still running).
   */
  holdsAlarm: z.boolean(),
});
export type BusyWork = z.infer<typeof busyWork>;

/**
 * The work running in the agent now as the agent answers it from contract 10 (check.ts readBusy): the SDK's records
 * (its running Tasks runs, each running runFiber callback's managed fiber or run row, the alarm loop's running jobs).
 * The client builds BusyWork from them (busyOf), so a user's Worker never carries that.
 */
export type BusyRecords = {
  tasks: TaskRunAnswer[];
  fibers: { id: string; fiber?: { name: string; createdAt: number }; row?: { name: string; created_at: number } | null }[];
  jobs: { id: string; owner: keyof typeof ALARM_LOOP_JOB_OWNERS; fn: string; startedAt: number }[];
};

/** Work shown at most, as the agent read it. */
const BUSY_SHOWN = 50;
const idle = { requestId: null, step: null, holdsAlarm: false } as const;

/**
 * BusyWork from the agent's records: chat turns and Tasks runs the SDK records as running, runFiber callbacks and
 * managed fibers running in the instance, and queued or scheduled callbacks the alarm loop runs (they hold the alarm).
 */
export function busyOf(r: BusyRecords): BusyWork[] {
  const out: BusyWork[] = r.tasks.map((t) => ({
    ...idle,
    kind: t.kind,
    id: t.runId,
    name: t.definition,
    requestId: t.requestId,
    step: t.currentStep,
    since: t.startedAt ?? t.createdAt,
  }));
  for (const { id, fiber, row } of r.fibers) {
    if (fiber) {
      out.push({ ...idle, kind: "managed_fiber", id, name: fiber.name, since: fiber.createdAt });
      continue;
    }
    const requestId = row ? chatTurnRequestIdOf(row.name) : null;
    // A chat turn run as a fiber (sub-agents) is the same turn as its Tasks run, when it has one.
    if (requestId !== null && out.some((b) => b.requestId === requestId)) continue;
    out.push({ ...idle, kind: requestId !== null ? "chat_turn" : "fiber", id, name: row?.name ?? null, requestId, since: row?.created_at ?? null });
  }
  for (const j of r.jobs) out.push({ ...idle, kind: ALARM_LOOP_JOB_OWNERS[j.owner], id: j.id, name: j.fn, since: j.startedAt, holdsAlarm: true });
  return out.slice(0, BUSY_SHOWN);
}

const isBusyRecords = (v: unknown): v is BusyRecords => typeof v === "object" && v !== null && Array.isArray((v as { tasks?: unknown }).tasks);

/**
 * The work running in the agent, as the client checks it: BusyWork, built from the records of a contract-10 agent
 * (busyOf) or as an older agent answered it. Records of the wrong shape are refused, not built.
 */
export const busyList = z.preprocess((v) => {
  try {
    return isBusyRecords(v) ? busyOf(v) : v;
  } catch {
    return v;
  }
}, z.array(busyWork)) as unknown as z.ZodType<BusyWork[], BusyRecords | BusyWork[]>;

/** How a triggered alarm went: `ran` to its end; `busy`: not run, because work the alarm loop waits for is running (`busy` names it); `still_running`: started, not finished within the budget, going on in the background. */
export const ALARM_OUTCOMES = ["ran", "busy", "still_running"] as const;

export const triggerAlarmOutput = z.object({
  /** Older agents always ran the alarm to its end. */
  outcome: z.enum(ALARM_OUTCOMES).default("ran"),
  /** What was running when the alarm was asked for (and, when it did not run, what held it). */
  busy: busyList.default([]),
  /** How long the agent waited for the alarm before answering `still_running`. */
  budgetMs: z.number().nullable().default(null),
  instance: z.string().nullable().default(null),
  before: statusOutput,
  after: statusOutput,
  /** Fibers recovery settled: rows gone during the alarm, plus those recovered on wake. */
  recoveredRuns: z.array(z.string()),
  /**
   * Recovery events since the agent woke (the SDK recovers on wake) and from this alarm. The agent answers them in
   * the SDK's words (`fiber:recovery:handled`, with `fiberName`); the client names them in the event contract
   * (`fiber.recovery.handled`, with the fiber's incident id). An older mixin answered contract types, kept as they are.
   */
  recoveryEvents: z.array(
    z.object({
      type: z.string(),
      fiberId: z.string().nullable(),
      fiberName: z.string().nullable().optional(),
      incidentId: z.string().nullable(),
      detail: z.string().nullable(),
    }),
  ),
});
export type TriggerAlarmOutput = z.infer<typeof triggerAlarmOutput>;
/** What the agent answers to trigger alarm: the work running as records (BusyRecords) from contract 10. */
export type TriggerAlarmAnswer = z.input<typeof triggerAlarmOutput>;

/**
 * One run as the SDK records it now, read back after an action by its SDK id.
 * `now`: `running` (work for it executes: a callback in memory, a Tasks attempt, a managed fiber), `pending`
 * (nothing executes for it now, but the SDK still has it open and acts on it by itself: a Tasks run pending or waiting, a row left for
 * recovery, a managed fiber not yet recovered) or `stopped` (settled, or nothing of it remains). `sdkState` is the SDK's own word and `source`
 * the public API (or table) that said so.
 */
export const RUN_NOW = ["running", "pending", "stopped"] as const;
export const runCheck = z.object({
  id: z.string(),
  kind: runKind.nullable(),
  name: z.string().nullable(),
  now: z.enum(RUN_NOW),
  sdkState: z.string(),
  source: z.enum(["tasks.get", "inspectFiber", "inspectSubmission", "cf_agents_runs", "in_memory", "none"]),
});
export type RunCheck = z.infer<typeof runCheck>;

/** What the agent answers when read back after an action: its status, its live runs, the runs asked about, and what runs now. */
export const verifyOutput = z.object({
  /** Which instance answered: after force idle evicted the agent, only a fresh instance's answer is the after-state. */
  instance: z.string(),
  status: statusOutput,
  runs: listRunsOutput,
  checks: z.array(runCheck),
  busy: z.array(busyWork),
});
export type VerifyOutput = z.infer<typeof verifyOutput>;

/**
 * The verified result of an action, as the audit records it: `ok` only when the agent, read again after the
 * action, shows what was asked (force idle: idle with nothing running; trigger alarm: the alarm ran); `partial`
 * when work still runs (or the alarm did not run to its end); `noop` when there was nothing to do.
 */
export const VERIFIED_RESULTS = ["ok", "partial", "noop"] as const;
export type VerifiedResult = (typeof VERIFIED_RESULTS)[number];

/**
 * What the read-back after an action found wrong, as facts the console words (console/admin-words.ts):
 * - `still_runs`: after force idle, work still runs: the `checks` not stopped, and `busy` work it never touched;
 * - `not_idle`: after force idle nothing runs that the agent names, but it reports itself `status` (`oldMixin`: its
 *   admin mixin predates adminVerify, so it cannot say which work runs);
 * - `alarm_busy`: the alarm did not run: `holders` (work the alarm loop would wait for) were running;
 * - `alarm_unfinished`: the alarm started but had not finished after `budgetMs` (`busy`: what ran meanwhile);
 * - `not_read_back`: the agent could not be read again after `action` (`error`: the read's error), with what the
 *   action itself said (`alarm`: the alarm's finding), so nothing is verified; `error` null: the evicting instance still answered.
 */
export const ALARM_FINDINGS = ["alarm_busy", "alarm_unfinished"] as const;
const alarmFinding = z.discriminatedUnion("code", [
  z.object({ code: z.literal("alarm_busy"), holders: z.array(busyWork) }),
  z.object({ code: z.literal("alarm_unfinished"), budgetMs: z.number().nullable(), busy: z.array(busyWork) }),
]);
export const afterNotice = z.discriminatedUnion("code", [
  z.object({ code: z.literal("still_runs") }),
  z.object({ code: z.literal("not_idle"), oldMixin: z.boolean() }),
  ...alarmFinding.options,
  z.object({
    code: z.literal("not_read_back"),
    action: z.enum(["force_idle", "trigger_alarm"]),
    /** The read's error message; null when the instance that evicted itself still answered (it had not gone yet). */
    error: z.string().nullable(),
    alarm: alarmFinding.nullable(),
  }),
]);
export type AfterNotice = z.infer<typeof afterNotice>;
export type AfterNoticeCode = AfterNotice["code"];

/**
 * The after-state of an action as the console read it from the agent once the action had answered: the agent's
 * status (the same fields as a status answer, so the audit shows it alike), each run the action touched as the
 * SDK records it now, what runs now, and what the read-back found wrong (`notice`, facts; null when nothing).
 * `verified` is false when the agent could not be read again (then the fields are the agent's own report at the end
 * of the action). Audit rows written before these facts hold a sentence in `notice`: the console shows it as it is.
 */
export const verifiedAfter = statusOutput.extend({
  verified: z.boolean(),
  readAt: z.number(),
  checks: z.array(runCheck),
  busy: z.array(busyWork),
  notice: afterNotice.nullable(),
});
export type VerifiedAfter = z.infer<typeof verifiedAfter>;

/** An action's output once verified by the client: `after` is the verified after-state, `live` the agent's live runs read with it (for the agent page). */
export const verifiedFields = z.object({
  result: z.enum(VERIFIED_RESULTS),
  after: verifiedAfter,
  live: z.object({ status: statusOutput, runs: listRunsOutput }).nullable(),
});
export const verifiedForceIdleOutput = forceIdleOutput.extend(verifiedFields.shape);
export type VerifiedForceIdleOutput = z.infer<typeof verifiedForceIdleOutput>;
export const verifiedTriggerAlarmOutput = triggerAlarmOutput.extend(verifiedFields.shape);
export type VerifiedTriggerAlarmOutput = z.infer<typeof verifiedTriggerAlarmOutput>;

/** One op as the agent's own ledger sees it. `status` is in the ledger's words (ambiguous, completed, resolved…). */
export const opState = z.object({
  opId: z.string(),
  kind: z.string().min(1),
  status: z.string(),
  idempotent: z.boolean(),
  /** How it was settled, once it was: verified_ran | verified_not_ran | reissued (a re-run) | abandoned. */
  resolution: z.string().nullable().default(null),
  /** The result's reference (given when it ran, or the re-run's). */
  resultRef: z.string().nullable().default(null),
});
export type OpState = z.infer<typeof opState>;

/** What the ledger records for each operator resolution (the op.resolved event's words): a re-run is `reissued`. */
export const RECORDED_RESOLUTION = { verified_ran: "verified_ran", verified_not_ran: "verified_not_ran", rerun: "reissued" } as const satisfies Record<
  OpResolution,
  string
>;

/**
 * What `onAdminResolveOp` answers. The agent decides; the mixin turns anything but `recorded` / `rerun` into a
 * typed error: `not_found` (no such op), `not_ambiguous` (nothing to resolve; its state says why), `refused`
 * (e.g. a re-run of an op that is not idempotent, with a sentence for the operator).
 */
export const resolveOpHookResult = z.discriminatedUnion("outcome", [
  z.object({ outcome: z.literal("not_found") }),
  z.object({ outcome: z.literal("not_ambiguous"), state: opState }),
  z.object({ outcome: z.literal("refused"), message: z.string().min(1) }),
  z.object({ outcome: z.literal("recorded"), before: opState, after: opState }),
  z.object({ outcome: z.literal("rerun"), before: opState, after: opState, resultRef: z.string().min(1) }),
]);
export type ResolveOpHookResult = z.input<typeof resolveOpHookResult>;
export const resolveOpOutput = z.object({
  opId: z.string(),
  /** What the operator chose. */
  resolution: z.enum(OP_RESOLUTIONS),
  /** What the ledger recorded (RECORDED_RESOLUTION). */
  recorded: z.enum(["verified_ran", "verified_not_ran", "reissued"]),
  before: opState,
  after: opState,
  /** The result's reference: the one given for verified_ran, the re-run's for rerun; null otherwise. */
  resultRef: z.string().nullable(),
  /** Never a no-op: an op that is not ambiguous is refused (invalid_input) instead. */
  noop: z.literal(false).default(false),
});
export type ResolveOpOutput = z.infer<typeof resolveOpOutput>;

/**
 * The Workers RPC surface the mixin adds. Method names are prefixed so they never clash with an agent's own. Each
 * action's method is its ADMIN_ACTIONS entry's `rpc`, typed by its output (actions.ts AdminActionRpc); the reads, and
 * resolve op's method (which answers its hook's answer, not the action's output), are declared here.
 */
export interface AdminRpc extends Omit<AdminActionRpc, "adminResolveOpRecords"> {
  adminListRuns(): Promise<AdminResult<ListRunsAnswer>>;
  /** One live run with its snapshot, as the SDK records it (run-detail.ts builds the view; contract 7). */
  adminGetRunRecords(input: unknown): Promise<AdminResult<RunRecords>>;
  adminStatus(): Promise<AdminResult<StatusAnswer>>;
  /**
   * Reads the agent back after an action: status, live runs, the runs asked about (by SDK id, as the SDK's
   * records; run-check.ts judges them) and what runs now (contract 7).
   */
  adminVerifyRecords(input: unknown): Promise<AdminResult<VerifyRecordsAnswer>>;
  /** Records how an ambiguous op was resolved through the agent's hook, answering the hook's answer (resolve-op.ts reads it; contract 7). */
  adminResolveOpRecords(input: unknown): Promise<AdminResult<{ answer: unknown }>>;
  /** What the agent records of runs, as the SDK's records (find-runs.ts builds the answer; contract 7). Read-only. */
  adminFindRunRecords(input: unknown): Promise<AdminResult<FindRunRecords>>;
  /** Read-only: the chat-recovery bounds and records, as the SDK keeps them (recovery-budget.ts reads the budget; contract 7). */
  adminRecoveryBudgetRecords(input: unknown): Promise<AdminResult<RecoveryBudgetRecords>>;
  /** What keeps the agent resident, as the SDK's records (residency.ts builds the answer; contract 7). Read-only. */
  adminResidencyRecords(): Promise<AdminResult<ResidencyRecordsAnswer>>;
}

/**
 * What mixins of contracts 4 to 6 answer in place of the *Records reads (the console's answers, built by the agent).
 * The client falls back to them for an agent without the newer method; this version's mixin does not have them.
 */
export interface AdminRpcBefore7 {
  adminResolveOp(input: unknown): Promise<AdminResult<ResolveOpOutput>>;
  adminGetRun(input: unknown): Promise<AdminResult<RunDetail>>;
  adminVerify(input: unknown): Promise<AdminResult<VerifyOutput>>;
  adminFindRuns(input: unknown): Promise<AdminResult<FindRunsOutput>>;
  adminResidency(): Promise<AdminResult<ResidencyOutput>>;
  adminRecoveryBudget(input: unknown): Promise<AdminResult<RecoveryBudgetOutput>>;
}

/**
 * What `onAdminForceIdle` may return: what it cleared (free text for the audit), or that plus the ids of
 * recovery incidents it ended (e.g. turnIncidentId of turns whose recovery counters it reset).
 */
export type ForceIdleHookResult = string[] | { cleared?: string[]; incidentIds?: string[] };

/** Optional hooks an agent may implement to take part in admin actions (SessionAgent and the demo ChatAgent do). */
export interface AdminHooks {
  /** The agent's own derived status; defaults to what the SDK holds (sdk-states.ts `agentStatusOf`). */
  adminDerivedStatus?(): DerivedStatus;
  /**
   * The agent's own record of a run the SDK keeps none of once it ended (a plain runFiber): how it ended, in the
   * managed-fiber words; null when the agent has none. Reconciliation asks it before it calls a run's end unreported.
   */
  adminRunRecord?(runId: string): Promise<AgentRunRecord | null> | AgentRunRecord | null;
  /**
   * Abort in-memory work (the active turn) and clear the agent's own recovery counters. Called before the
   * mixin cancels Tasks runs and managed fibers and removes run rows; callbacks it aborts count as stopped.
   */
  onAdminForceIdle?(reason: string): Promise<ForceIdleHookResult> | ForceIdleHookResult;
  /**
   * Records how an ambiguous op of the agent's own ledger was resolved (and, for `rerun`, re-runs it with its
   * idempotency key when the op is idempotent; refuse otherwise). Report the resolution through the agent's
   * telemetry (`op.resolved`) as the ledger does. When a managed fiber is waiting on the op, this is the place
   * to settle it too (the SDK's `resolveFiber(fiberId, result)`); agents 0.32 has no equivalent for Tasks runs
   * (only `this.tasks.cancel`). Without this hook the console refuses to resolve the agent's ops (`unsupported`).
   */
  onAdminResolveOp?(request: ResolveOpRequest): Promise<ResolveOpHookResult> | ResolveOpHookResult;
}
