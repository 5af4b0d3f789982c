import { z } from "zod";
import { busyList, listRunsOutput, statusOutput } from "./contract.js";

/**
 * The SDK's own records, as the agent answers the read-only reads since contract 7 (find runs, residency, the
 * read-back after an action): what it read from `inspectFiber` / `listFibers`, `tasks.get` / `tasks.list`,
 * Think's submissions, `listSchedules` and its cf_agents_* rows, without their payloads (a fiber's snapshot, a
 * Tasks run's result, a schedule's payload). The Worker-side client builds the console's answers from them
 * (find-runs.ts, residency.ts, run-check.ts), so that logic never runs in a user's agent Worker. The agent
 * imports only these types; only the client parses.
 */

const when = z.number().nullish();

/** A managed fiber (`FiberInspection`), without its snapshot. */
export const fiberRecord = z.looseObject({
  fiberId: z.string(),
  name: z.string(),
  status: z.string(),
  createdAt: z.number(),
  startedAt: when,
  settledAt: when,
  error: z.string().nullish(),
});
export type FiberRecord = z.infer<typeof fiberRecord>;

/** A Tasks run (`TaskRunSnapshot`), without its result. */
export const taskRecord = z.looseObject({
  runId: z.string(),
  definition: z.string(),
  state: z.string(),
  createdAt: z.number(),
  attempt: when,
  startedAt: when,
  wakeAt: when,
  settledAt: when,
  statusMessage: z.string().nullish(),
  error: z.looseObject({ name: z.string().optional(), message: z.string().optional() }).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});
export type TaskRecord = z.infer<typeof taskRecord>;

/** A Tasks run with the step it is at (`cf_agents_task_steps`, sdk-layout.ts taskStepAt). */
export const taskWithStep = z.object({ task: taskRecord, step: z.object({ name: z.string(), state: z.string() }).nullable() });
export type TaskWithStep = z.infer<typeof taskWithStep>;

/** A Think submission (`ThinkSubmissionInspection`). */
export const submissionRecord = z.looseObject({
  submissionId: z.string(),
  requestId: z.string().nullish(),
  status: z.string(),
  error: z.string().nullish(),
  createdAt: z.number(),
  startedAt: when,
  completedAt: when,
});
export type SubmissionRecord = z.infer<typeof submissionRecord>;

/** A live `cf_agents_runs` row, without its snapshot. */
export const runRowRecord = z.object({ id: z.string(), name: z.string(), created_at: z.number() });
export type RunRowRecord = z.infer<typeof runRowRecord>;

/**
 * One asked-for id: the places that record it (a managed fiber, a run row, a Tasks run: find-runs.ts reads them in
 * that order; before contract 11 only the first was sent); else, when no chat turn matches it, what the agent's
 * `adminRunRecord` hook answered (`own`, unchecked: the client parses it).
 */
export const foundRecord = z.object({
  id: z.string(),
  fiber: fiberRecord.optional(),
  row: runRowRecord.optional(),
  task: taskWithStep.optional(),
  own: z.unknown().optional(),
});
export type FoundRecord = z.infer<typeof foundRecord>;

/** The chat turns the agent knows by request id: Think's submissions and the Tasks runs that carry turns. */
export const turnRecords = z.object({ submissions: z.array(submissionRecord), carriers: z.array(taskWithStep) });
export type TurnRecords = z.infer<typeof turnRecords>;

/** adminFindRunRecords: the ids asked about, the chat turns scanned for them (when any id got that far), the newest runs. */
export const findRunRecords = z.object({
  ids: z.array(foundRecord),
  turns: turnRecords.nullable(),
  recent: z
    .object({ rows: z.array(runRowRecord), fibers: z.array(fiberRecord), tasks: z.array(taskWithStep), submissions: z.array(submissionRecord) })
    .nullable(),
});
export type FindRunRecords = z.infer<typeof findRunRecords>;

/** A `cf_agents_jobs` row (`created_at` in seconds). */
export const jobRecord = z.object({
  id: z.string(),
  capability: z.string(),
  fn: z.string(),
  time: z.number(),
  running: z.number(),
  created_at: z.number().nullable(),
});
export type JobRecord = z.infer<typeof jobRecord>;

/** A schedule as `listSchedules` answers it (agents 0.32 `Schedule`), without its payload. */
export const scheduleRecord = z.looseObject({
  id: z.string(),
  callback: z.string(),
  type: z.enum(["scheduled", "delayed", "cron", "interval"]),
  time: z.number(),
  delayInSeconds: z.number().optional(),
  intervalSeconds: z.number().optional(),
  cron: z.string().optional(),
});
export type ScheduleRecord = z.infer<typeof scheduleRecord>;

/** adminResidencyRecords: what the agent read of what keeps it resident (residency.ts builds the answer). */
export const residencyRecords = z.object({
  readAt: z.number(),
  instance: z.object({ id: z.string(), since: z.number() }),
  /** The job rows, oldest first (at most 200). */
  jobs: z.array(jobRecord),
  /** The first 50 schedules `listSchedules` answered, and how many it did. */
  schedules: z.array(scheduleRecord),
  scheduleCount: z.number().int(),
  /** sdk-layout.ts keepAliveOf. */
  keepAlive: z.object({ holders: z.number().nullable(), intervalMs: z.number().nullable(), jobId: z.string() }),
  nextAlarm: z.number().nullable(),
  /** How many connections are open, and the first 20 ids. */
  connections: z.object({ count: z.number().int(), ids: z.array(z.string()) }),
  work: busyList,
  /** How many Tasks runs are pending or waiting, and the statuses of the managed fibers pending or interrupted. */
  parked: z.object({ tasks: z.number().int(), fibers: z.array(z.string()) }),
});
export type ResidencyRecords = z.infer<typeof residencyRecords>;
/** What the agent answers: its running work as records (contract.ts BusyRecords) from contract 10. */
export type ResidencyRecordsAnswer = z.input<typeof residencyRecords>;

/**
 * One run read back by its SDK id: Think's submission, the Tasks run, the managed fiber, its run row (null: none),
 * with whether a runFiber callback of that id runs in this instance now; run-check.ts reads them in that order. From
 * contract 11 the agent answers every record it has (its one lookup by id), its Tasks run with the step it is at.
 */
export const checkRecord = z.object({
  id: z.string(),
  inMemory: z.boolean(),
  submission: z.looseObject({ status: z.string() }).optional(),
  task: z.union([taskWithStep.transform((t) => t.task), taskRecord]).optional(),
  fiber: fiberRecord.optional(),
  row: runRowRecord.nullish(),
});
export type CheckRecord = z.infer<typeof checkRecord>;
/** What the agent answers (its Tasks run with the step, from contract 11). */
export type CheckRecordAnswer = z.input<typeof checkRecord>;

/** adminVerifyRecords: adminVerify's answer with each run as the records it was read from (run-check.ts judges them). */
export const verifyRecords = z.object({
  instance: z.string(),
  status: statusOutput,
  runs: listRunsOutput,
  checks: z.array(checkRecord),
  busy: busyList,
});
export type VerifyRecords = z.infer<typeof verifyRecords>;
/** What the agent answers: its running work as records (contract.ts BusyRecords) from contract 10. */
export type VerifyRecordsAnswer = z.input<typeof verifyRecords>;

/**
 * adminRecoveryBudgetRecords: the chat-recovery bounds the SDK resolved for the agent (`_resolveChatRecoveryConfig`,
 * without its callbacks; null for an agent that is not a chat agent) and the chat-recovery records (one, given its
 * incident id) as the SDK keeps them in KV. recovery-budget.ts reads the budget from them.
 */
export const recoveryBudgetRecords = z.object({
  now: z.number(),
  config: z.record(z.string(), z.unknown()).nullable(),
  records: z.array(z.object({ incidentId: z.string(), record: z.record(z.string(), z.unknown()).nullish() })),
});
export type RecoveryBudgetRecords = z.infer<typeof recoveryBudgetRecords>;

/**
 * adminGetRunRecords: one live run as the agent records it: its `cf_agents_runs` row, else its managed fiber
 * (`inspectFiber`; with a row too, the row is a managed fiber's), else its Tasks run with its step; null when none has
 * the id. `text` is the snapshot (the row's, or the fiber's as JSON) cut at twice the cap the viewer shows
 * (run-detail.ts masks and caps it); `bytes` its whole size.
 */
export const runRecords = z
  .object({
    id: z.string(),
    readAt: z.number(),
    row: runRowRecord.optional(),
    fiber: fiberRecord.optional(),
    task: taskRecord.optional(),
    step: z.string().nullable().optional(),
    text: z.string().nullable(),
    bytes: z.number(),
  })
  .nullable();
export type RunRecords = z.infer<typeof runRecords>;
