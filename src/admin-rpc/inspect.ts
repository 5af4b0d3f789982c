import type { DerivedStatus, ListRunsAnswer, ListRunsOutput, RunKind, StatusAnswer, StatusWork, TaskRunAnswer } from "./contract.js";
import {
  CHAT_RECOVERY_TASK,
  CHAT_TURN_SNAPSHOT_KEY_PREFIX,
  CHAT_TURN_TASK,
  chatRecoveryRecords,
  chatTurnRequestIdOf,
  chatTurnRootOf,
  FIBER_DONE_STATUSES,
  sdkRows as rows,
  taskCurrentStep,
  textOf,
} from "./sdk-layout.js";

/**
 * Read-only views of an agent's durable work: `cf_agents_runs` (live runFiber rows, which the SDK gives no
 * public list of), managed fibers and Tasks runs through the SDK's public APIs, schedules
 * (`cf_agents_jobs`) and the chat-recovery records in KV. Each read tolerates a table the agent never created.
 */

const SCHEDULES_SHOWN = 20;
const FIBERS_SHOWN = 50;
const TASKS_SHOWN = 50;

type Sql = SqlStorage;

/** The public SDK surface (agents 0.32) these reads use, handed in by the mixin. */
export type FiberInspection = {
  fiberId: string;
  name: string;
  status: string;
  snapshot?: unknown;
  createdAt: number;
  startedAt?: number;
  settledAt?: number;
  error?: string;
};
export type TaskSnapshot = {
  runId: string;
  definition: string;
  state: string;
  createdAt: number;
  attempt?: number;
  startedAt?: number;
  wakeAt?: number;
  settledAt?: number;
  statusMessage?: string;
  error?: { name?: string; message?: string };
  metadata?: Record<string, unknown>;
};
/** A Think submission (`@cloudflare/think` ThinkSubmissionInspection), for agents that have them. */
export type SubmissionInspection = {
  submissionId: string;
  requestId?: string;
  status: string;
  error?: string;
  createdAt: number;
  startedAt?: number;
  completedAt?: number;
};
export type AgentWork = {
  sql: Sql;
  storage: DurableObjectStorage;
  listFibers(options: { status?: string[]; limit: number }): Promise<FiberInspection[]>;
  inspectFiber(id: string): Promise<FiberInspection | null>;
  listTasks(options: { status?: string[]; limit: number; definition?: string }): Promise<TaskSnapshot[]>;
  getTask(runId: string): Promise<TaskSnapshot | null>;
  /** Ids of the runFiber callbacks running in this instance now (sdk-layout.ts activeFiberIds); null when unknown. */
  active(): ReadonlySet<string> | null;
  /** Think's submission by id (`inspectSubmission`), where the agent has that API: a chat turn's own record. */
  inspectSubmission?(id: string): Promise<{ submissionId: string; status: string } | null>;
  /** Think's `listSubmissions`, newest first, where the agent has it. */
  listSubmissions?: (options: { limit: number }) => Promise<SubmissionInspection[]>;
  /** The agent's own `adminRunRecord` hook, where it has one. */
  runRecord?: (runId: string) => Promise<unknown>;
};

/** Tasks run states still doing (or about to do) work. */
export const LIVE_TASK_STATES = ["pending", "running", "waiting"];
/** Managed-fiber statuses still doing (or about to do) work. */
export const LIVE_FIBER_STATUSES = ["pending", "running"];

const jsonBytes = (v: unknown) => (v === undefined ? 0 : new TextEncoder().encode(JSON.stringify(v) ?? "").byteLength);

/** A chat turn's request id, from its Tasks run metadata. */
function requestIdOf(t: TaskSnapshot): string | null {
  const r = t.metadata?.requestId;
  return typeof r === "string" ? r : null;
}

/** A Tasks run as the console lists it: the SDK's record without its result, with its kind, request id and step. */
export function taskRunOf(sql: Sql, t: TaskSnapshot): TaskRunAnswer {
  const chat = t.definition === CHAT_TURN_TASK;
  const { result: _, ...record } = t as TaskSnapshot & { result?: unknown };
  return { ...record, kind: chat ? "chat_turn" : "task", requestId: chat ? requestIdOf(t) : null, currentStep: taskCurrentStep(sql, t.runId) };
}

/** The kind of a `cf_agents_runs` row. */
export function rowKind(name: string, managed: boolean): RunKind {
  if (managed) return "managed_fiber";
  return chatTurnRequestIdOf(name) !== null ? "chat_turn" : "fiber";
}

/** Live run rows (every kind), managed fibers (recent, any status) and unsettled Tasks runs. */
export async function readRuns(w: AgentWork, now = Date.now()): Promise<ListRunsAnswer> {
  const fibers = await w.listFibers({ limit: FIBERS_SHOWN });
  const managedFibers = fibers.map((f) => ({
    fiberId: f.fiberId,
    name: f.name,
    status: f.status,
    createdAt: f.createdAt,
    completedAt: f.settledAt ?? null,
    snapshotBytes: jsonBytes(f.snapshot),
  }));
  // Named in the query as the console reads them (contract.ts runSummary).
  const raw = rows<{ id: string; name: string; createdAt: number; ageMs: number; snapshotBytes: number }>(
    w.sql,
    "SELECT id, name, created_at AS createdAt, MAX(0, ? - created_at) AS ageMs, COALESCE(length(CAST(snapshot AS BLOB)), 0) AS snapshotBytes FROM cf_agents_runs ORDER BY created_at, id",
    now,
  );
  const runs = [];
  for (const r of raw) {
    const managed = managedFibers.some((f) => f.fiberId === r.id) || (await w.inspectFiber(r.id)) !== null;
    runs.push({ ...r, kind: rowKind(r.name, managed), requestId: managed ? null : chatTurnRequestIdOf(r.name) });
  }
  const tasks = await liveTaskRuns(w, TASKS_SHOWN);
  return { runs, managedFibers, tasks, inMemory: await readInMemory(w, new Set(raw.map((r) => r.id))) };
}

/** runFiber callbacks running in this instance whose row is gone (force idle removed it; nothing could stop them). */
async function readInMemory(w: AgentWork, rowIds: ReadonlySet<string>): Promise<ListRunsOutput["inMemory"]> {
  const out: ListRunsOutput["inMemory"] = [];
  for (const id of w.active() ?? []) {
    if (rowIds.has(id)) continue;
    out.push({ id, kind: (await w.inspectFiber(id)) !== null ? "managed_fiber" : "fiber" });
  }
  return out;
}

/**
 * Unsettled Tasks runs, the SDK's chat machinery named by the user turn it serves (the id the console keys a chat
 * turn by): a turn's carrier by the root its snapshot names (a recovery turn runs for the user's turn), a chat
 * recovery's transport by its incident's root. Both are chat_turn work, never the user's own tasks.
 */
export async function liveTaskRuns(w: AgentWork, limit: number): Promise<TaskRunAnswer[]> {
  const raw = await w.listTasks({ status: LIVE_TASK_STATES, limit });
  let roots: Map<string, string> | null = null;
  const out: TaskRunAnswer[] = [];
  for (const t of raw) {
    const run = taskRunOf(w.sql, t);
    if (t.definition === CHAT_TURN_TASK) {
      const root = chatTurnRootOf(await w.storage.get(`${CHAT_TURN_SNAPSHOT_KEY_PREFIX}${t.runId}`));
      out.push(root ? { ...run, requestId: root, turnRequestId: run.requestId } : run);
    } else if (t.definition === CHAT_RECOVERY_TASK) {
      roots ??= await recoveryRoots(w.storage);
      const incidentId = textOf(t.metadata?.incidentId);
      const recovered = textOf(t.metadata?.recoveredRequestId);
      out.push({ ...run, kind: "chat_turn", requestId: (incidentId ? roots.get(incidentId) : undefined) ?? recovered });
    } else out.push(run);
  }
  return out;
}

/** incident id → the user turn its chat-recovery record recovers (`recoveryRootRequestId`). */
async function recoveryRoots(storage: DurableObjectStorage): Promise<Map<string, string>> {
  const roots = new Map<string, string>();
  for (const { incidentId, record: v } of await chatRecoveryRecords(storage)) {
    const root = textOf(v?.recoveryRootRequestId) ?? textOf(v?.requestId);
    if (root) roots.set(incidentId, root);
  }
  return roots;
}

/** Live managed fibers (pending or running), through the public listFibers. */
export async function liveManagedFibers(w: AgentWork): Promise<FiberInspection[]> {
  return (await w.listFibers({ status: LIVE_FIBER_STATUSES, limit: 100 })).filter((f) => !FIBER_DONE_STATUSES.has(f.status));
}

/** Runs of each kind looked at to derive a status: enough to see one live and one parked. */
const STATUS_SCAN = 20;

/**
 * What the agent's status is derived from (contract.ts StatusWork): its live rows (`runRows`), and Tasks runs (chat
 * turns included) and managed fibers, live or parked until they wake or are resolved. The client derives the status
 * through the one mapping (sdk-states.ts `agentStatusOf`).
 */
async function statusWork(w: AgentWork, runRows: number): Promise<StatusWork> {
  const [tasks, fibers] = await Promise.all([
    w.listTasks({ status: LIVE_TASK_STATES, limit: STATUS_SCAN }),
    w.listFibers({ status: [...LIVE_FIBER_STATUSES, "interrupted"], limit: STATUS_SCAN }),
  ]);
  return { runRows, taskStates: tasks.map((t) => t.state), fiberStatuses: fibers.map((f) => f.status) };
}

/**
 * Whether a status as the agent answers it says idle: its own hook's word, or no work at all. Only states the SDK
 * lists as live or parked are read, each of which makes the agent running or waiting (agentStatusOf), so "none" is idle.
 */
export function idleStatus(s: StatusAnswer["status"]): boolean {
  return typeof s === "string" ? s === "idle" : s.runRows + s.taskStates.length + s.fiberStatuses.length === 0;
}

/** Everything `status()` reports but capabilities and the telemetry's event number. `derived` comes from the agent's hook, else the live work. */
export async function readStatus(
  w: AgentWork,
  derived: DerivedStatus | null,
): Promise<Omit<StatusAnswer, "capabilities" | "eventsShippedThrough" | "recoveryPause" | "telemetry">> {
  const runCount = Number(rows<{ n: number }>(w.sql, "SELECT COUNT(*) AS n FROM cf_agents_runs")[0]?.n ?? 0);
  // Named in the query as the client reads them; `running` stays the row's 0 or 1 (contract.ts scheduleSummary).
  const schedules = rows<{ id: string; callback: string; time: number; running: number }>(
    w.sql,
    `SELECT id, fn AS callback, time, running FROM cf_agents_jobs ORDER BY time, id LIMIT ${SCHEDULES_SHOWN}`,
  );
  const pendingScheduleCount = Number(rows<{ n: number }>(w.sql, "SELECT COUNT(*) AS n FROM cf_agents_jobs")[0]?.n ?? 0);
  // A runFiber callback still running in memory after its row was removed (force idle could not stop it) is
  // live work as much as a row is.
  return {
    status: derived ?? (await statusWork(w, runCount + (w.active()?.size ?? 0))),
    runCount,
    nextAlarm: await w.storage.getAlarm(),
    schedules,
    pendingScheduleCount,
    // The SDK's records as they are: the client picks what the console shows (contract.ts chatIncidentRecord).
    chatRecoveryIncidents: (await chatRecoveryRecords(w.storage)) as StatusAnswer["chatRecoveryIncidents"],
  };
}
