import type { Agent } from "agents";
import { readBusy } from "./check.js";
import type { FindRunsInput, RecoveryBudgetInput } from "./inputs.js";
import type { AgentWork, TaskSnapshot } from "./inspect.js";
import type {
  CheckRecord,
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

/** One id from the first place that records it; a chat turn is matched (and built) by the client. */
async function findOne(w: AgentWork, id: string, turns: () => Promise<TurnRecords>): Promise<FoundRecord> {
  const fiber = await w.inspectFiber(id);
  if (fiber) return { id, fiber: lean(fiber) };
  const row = rowOf(w, id);
  if (row) return { id, row };
  const task = await w.getTask(id);
  if (task) return { id, task: withStep(w, task) };
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

/** One run read back by its SDK id (run-check.ts judges it): Think's submission, else tasks.get, else inspectFiber, else its row. */
export async function checkRecord(w: AgentWork, id: string): Promise<CheckRecord> {
  const inMemory = w.active()?.has(id) ?? false;
  const submission = await w.inspectSubmission?.(id);
  if (submission) return { id, inMemory, submission: lean(submission) };
  const task = await w.getTask(id);
  if (task) return { id, inMemory, task: lean(task) };
  const fiber = await w.inspectFiber(id);
  return fiber ? { id, inMemory, fiber: lean(fiber) } : { id, inMemory, row: rowOf(w, id) ?? null };
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
    records: (await chatRecoveryRecords(storage))
      .filter((r) => !input.incidentId || r.incidentId === input.incidentId)
      .map(({ incidentId, record }) => ({ incidentId, record })),
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
  return {
    id,
    readAt: Date.now(),
    ...(row ? { row: { id: row.id, name: row.name, created_at: row.created_at } } : {}),
    ...(fiber ? { fiber: lean(fiber) } : {}),
    ...(task ? { task: lean(task), step: taskCurrentStep(w.sql, task.runId) } : {}),
    text: text?.slice(0, SNAPSHOT_CHARS) ?? null,
    bytes: text ? new TextEncoder().encode(text).byteLength : 0,
  };
}
