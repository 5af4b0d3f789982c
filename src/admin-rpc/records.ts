import type { Agent } from "agents";
import { readBusy } from "./check.js";
import type { FindRunsInput, RecoveryBudgetInput } from "./inputs.js";
import type { AgentWork, TaskSnapshot } from "./inspect.js";
import type {
  CheckRecordAnswer,
  FindRunRecords,
  FoundRecord,
  RecoveryBudgetRecords,
  ResidencyRecordsAnswer,
  RunRecords,
  RunRowRecord,
  TaskWithStep,
  TurnRecords,
} from "./records-contract.js";
import { CHAT_TURN_TASK, chatRecoveryRecords, keepAliveOf, sdkRows, taskCurrentStep, taskStepAt } from "./sdk-layout.js";

/**
 * Agent side of the read-only reads (contract 7): the SDK's records as read, without their payloads. The client
 * builds the console's answers from them (records-contract.ts), so this stays small in a user's Worker.
 */

/** An SDK record without the payload the console never reads here (a fiber's snapshot, a Tasks run's result, a schedule's payload). */
// biome-ignore lint/suspicious/noExplicitAny: any SDK record.
const lean = ({ snapshot, result, payload, ...r }: any) => r;

const withStep = (w: AgentWork, t: TaskSnapshot): TaskWithStep => ({ task: lean(t), step: taskStepAt(w.sql, t.runId) });

const ROWS = "SELECT id, name, created_at FROM cf_agents_runs";
const rowOf = (w: AgentWork, id: string) => sdkRows<RunRowRecord>(w.sql, `${ROWS} WHERE id = ?`, id)[0];

/** Chat-turn carriers and submissions scanned to find a turn by its request id. */
const CHAT_SCAN = 100;

/**
 * Every record the SDK keeps of one run id, without payloads: its managed fiber, its run row, its Tasks run with the
 * step it is at. The one lookup of a run by id; each reader takes them in its own order (find-runs.ts, run-check.ts).
 */
async function recordsOf(w: AgentWork, id: string): Promise<FoundRecord> {
  const fiber = await w.inspectFiber(id);
  const task = await w.getTask(id);
  return { id, fiber: fiber ? lean(fiber) : undefined, row: rowOf(w, id), task: task ? withStep(w, task) : undefined };
}

/** One id as the SDK records it; with no record, a chat turn is matched (and built) by the client, else the agent's hook answers. */
async function findOne(w: AgentWork, id: string, turns: () => Promise<TurnRecords>): Promise<FoundRecord> {
  const r = await recordsOf(w, id);
  if (r.fiber || r.row || r.task) return r;
  const t = await turns();
  if (t.submissions.some((s) => s.submissionId === id || s.requestId === id) || t.carriers.some((c) => c.task.metadata?.requestId === id)) return { id };
  return { id, own: (await w.runRecord?.(id)) ?? null };
}

/** adminFindRunRecords: the records behind reconciliation's question (FindRunsInput); find-runs.ts answers it. */
export async function findRunRecords(w: AgentWork, input: FindRunsInput): Promise<FindRunRecords> {
  let turns: Promise<TurnRecords> | null = null;
  const scan = () =>
    (turns ??= (async () => ({
      submissions: (await w.listSubmissions?.({ limit: CHAT_SCAN })) ?? [],
      carriers: (await w.listTasks({ definition: CHAT_TURN_TASK, limit: CHAT_SCAN })).map((t) => withStep(w, t)),
    }))());
  const ids = [];
  for (const id of new Set(input.ids ?? [])) ids.push(await findOne(w, id, scan));
  const n = input.recent;
  return {
    ids,
    turns: turns && (await turns),
    recent: n
      ? {
          rows: sdkRows<RunRowRecord>(w.sql, `${ROWS} ORDER BY created_at DESC LIMIT ?`, n),
          fibers: (await w.listFibers({ limit: n })).map(lean),
          tasks: (await w.listTasks({ limit: n })).map((t) => withStep(w, t)),
          submissions: (await w.listSubmissions?.({ limit: n })) ?? [],
        }
      : null,
  };
}

/**
 * adminResidencyRecords: what keeps the agent resident, through the SDK's public APIs where it has them
 * (`listSchedules`, `getConnections`, `ctx.storage.getAlarm`, `tasks.list`, `listFibers`) and its job table for
 * what they do not say (when a schedule or the keepAlive heartbeat began); residency.ts answers from them.
 */
export async function residencyRecords(
  // biome-ignore lint/suspicious/noExplicitAny: any agent class.
  agent: Agent<any, any>,
  w: AgentWork,
  self: { instance: string; bornAt: number },
): Promise<ResidencyRecordsAnswer> {
  const schedules = await agent.listSchedules();
  const connections = [...agent.getConnections()];
  return {
    readAt: Date.now(),
    instance: { id: self.instance, since: self.bornAt },
    jobs: sdkRows(w.sql, "SELECT id, capability, fn, time, running, created_at FROM cf_agents_jobs ORDER BY time, id LIMIT 200"),
    schedules: schedules.slice(0, 50).map(lean),
    scheduleCount: schedules.length,
    keepAlive: keepAliveOf(agent),
    nextAlarm: await w.storage.getAlarm(),
    connections: { count: connections.length, ids: connections.slice(0, 20).map((c) => c.id) },
    work: await readBusy(w, self.bornAt),
    parked: {
      tasks: (await w.listTasks({ status: ["pending", "waiting"], limit: 50 })).length,
      fibers: (await w.listFibers({ status: ["pending", "interrupted"], limit: 50 })).map((f) => f.status),
    },
  };
}

/** One run read back by its SDK id, as every record of it and Think's submission (run-check.ts judges them). */
export async function checkRecord(w: AgentWork, id: string): Promise<CheckRecordAnswer> {
  const submission = await w.inspectSubmission?.(id);
  return { ...(await recordsOf(w, id)), inMemory: w.active()?.has(id) ?? false, submission: submission ? lean(submission) : undefined };
}

/**
 * adminRecoveryBudgetRecords: the chat-recovery bounds the SDK resolved (Think / AIChatAgent
 * `_resolveChatRecoveryConfig`, duck-typed; its callbacks cannot cross RPC and the budget reads none) and the
 * chat-recovery records, one when `incidentId` is given; recovery-budget.ts reads the budget from them.
 */
export async function recoveryBudgetRecords(agent: object, storage: DurableObjectStorage, input: RecoveryBudgetInput): Promise<RecoveryBudgetRecords> {
  const resolve = (agent as { _resolveChatRecoveryConfig?: () => Record<string, unknown> })._resolveChatRecoveryConfig;
  const config = typeof resolve === "function" ? resolve.call(agent) : null;
  return {
    now: Date.now(),
    config: config && Object.fromEntries(Object.entries(config).filter(([, v]) => typeof v !== "function")),
    // Each with its key too, which the client's schema leaves out.
    records: (await chatRecoveryRecords(storage)).filter((r) => !input.incidentId || r.incidentId === input.incidentId),
  };
}

/** The viewer shows at most 64 KiB of a snapshot: twice that many characters always hold it (run-detail.ts). */
const SNAPSHOT_CHARS = 128 * 1024;

/** adminGetRunRecords: one live run's records with its snapshot's text (records-contract.ts runRecords). */
export async function runRecords(w: AgentWork, id: string): Promise<RunRecords> {
  const row = sdkRows<RunRowRecord & { snapshot: string | null }>(w.sql, "SELECT id, name, created_at, snapshot FROM cf_agents_runs WHERE id = ?", id)[0];
  const fiber = await w.inspectFiber(id);
  const task = row || fiber ? null : await w.getTask(id);
  if (!row && !fiber && !task) return null;
  const text = row ? row.snapshot : fiber?.snapshot === undefined ? null : JSON.stringify(fiber.snapshot);
  // Records the run does not have are left undefined (absent, to the client's schema).
  return {
    id,
    readAt: Date.now(),
    row: row && lean(row),
    fiber: fiber ? lean(fiber) : undefined,
    task: task ? lean(task) : undefined,
    step: task ? taskCurrentStep(w.sql, task.runId) : undefined,
    text: text?.slice(0, SNAPSHOT_CHARS) ?? null,
    bytes: text ? new TextEncoder().encode(text).byteLength : 0,
  };
}
