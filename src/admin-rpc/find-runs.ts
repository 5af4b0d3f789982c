import type { FindRunsOutput, FoundRun } from "./contract.js";
import { type AgentRunRecord, agentRunRecord, type FindRunsInput } from "./inputs.js";
import type { AgentWork, FiberInspection, SubmissionInspection, TaskSnapshot } from "./inspect.js";
import { CHAT_TURN_TASK, chatTurnRequestIdOf, sdkRows, taskStepAt } from "./sdk-layout.js";

/**
 * What the agent still records of its runs, in every state, for reconciliation: it asks before it judges. One
 * id is looked up in each place the SDK keeps a run (a live cf_agents_runs row, `inspectFiber`, `tasks.get`,
 * Think's submissions and the Tasks runs that carry chat turns), then in the agent's own `adminRunRecord`
 * hook; only an id none of them knows is `missing`. `recent` lists the newest runs of each kind.
 */

/** Chat-turn carriers and submissions scanned to find a turn by its request id. */
const CHAT_SCAN = 100;

const or = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The fields a source does not record: each from* below sets only what its source knows. */
const UNKNOWN = {
  definition: null,
  requestId: null,
  startedAt: null,
  settledAt: null,
  error: null,
  statusMessage: null,
  step: null,
  attempt: null,
  wakeAt: null,
} satisfies Partial<FoundRun>;

function fromFiber(f: FiberInspection): FoundRun {
  return {
    ...UNKNOWN,
    runId: f.fiberId,
    kind: "managed_fiber",
    source: "managed_fiber",
    state: f.status,
    name: f.name,
    createdAt: f.createdAt,
    startedAt: or(f.startedAt),
    settledAt: or(f.settledAt),
    error: or(f.error),
  };
}

function fromTask(w: AgentWork, t: TaskSnapshot): FoundRun {
  const chat = t.definition === CHAT_TURN_TASK;
  const requestId = chat && typeof t.metadata?.requestId === "string" ? t.metadata.requestId : null;
  // The step it is at, or (failed, cancelled) the one it ended in; a completed run is past its steps.
  const step = t.state === "completed" ? null : (taskStepAt(w.sql, t.runId)?.name ?? null);
  return {
    runId: chat && requestId ? requestId : t.runId,
    kind: chat ? "chat_turn" : "task",
    source: "task",
    state: t.state,
    name: t.definition,
    definition: t.definition,
    requestId,
    createdAt: t.createdAt,
    startedAt: or(t.startedAt),
    settledAt: or(t.settledAt),
    error: t.state === "failed" ? (t.error?.message ?? t.error?.name ?? null) : null,
    statusMessage: or(t.statusMessage),
    step,
    attempt: or(t.attempt),
    wakeAt: or(t.wakeAt),
  };
}

function fromSubmission(s: SubmissionInspection): FoundRun {
  return {
    ...UNKNOWN,
    runId: s.submissionId,
    kind: "chat_turn",
    source: "submission",
    state: s.status,
    name: "chat turn",
    requestId: or(s.requestId),
    createdAt: s.createdAt,
    startedAt: or(s.startedAt),
    settledAt: or(s.completedAt),
    error: or(s.error),
  };
}

function fromRow(r: { id: string; name: string; created_at: number }): FoundRun {
  const requestId = chatTurnRequestIdOf(r.name);
  return {
    ...UNKNOWN,
    runId: requestId ?? r.id,
    kind: requestId ? "chat_turn" : "fiber",
    source: "run_row",
    state: "running",
    name: r.name,
    requestId,
    createdAt: r.created_at,
    startedAt: r.created_at,
  };
}

function fromAgent(runId: string, r: AgentRunRecord): FoundRun {
  return {
    ...UNKNOWN,
    runId,
    kind: "fiber",
    source: "agent",
    state: r.state,
    name: r.name ?? null,
    createdAt: null,
    settledAt: r.settledAt ?? null,
    error: r.error ?? null,
  };
}

function runRows(w: AgentWork, id?: string): { id: string; name: string; created_at: number }[] {
  const q = "SELECT id, name, created_at FROM cf_agents_runs";
  return id === undefined ? sdkRows(w.sql, `${q} ORDER BY created_at DESC LIMIT 100`) : sdkRows(w.sql, `${q} WHERE id = ?`, id);
}

/** The chat turns the agent knows by request id: Think's submissions, and the Tasks runs that carry turns. */
async function chatTurns(w: AgentWork, limit: number): Promise<FoundRun[]> {
  const subs = w.listSubmissions ? (await w.listSubmissions({ limit })).map(fromSubmission) : [];
  const carriers = (await w.listTasks({ definition: CHAT_TURN_TASK, limit })).map((t) => fromTask(w, t)).filter((r) => r.requestId !== null);
  return [...subs, ...carriers];
}

/** One id, from the first place that records it; null when none does. */
async function findOne(w: AgentWork, id: string, turns: () => Promise<FoundRun[]>): Promise<FoundRun | null> {
  const fiber = await w.inspectFiber(id);
  if (fiber) return fromFiber(fiber);
  const [row] = runRows(w, id);
  if (row) return fromRow(row);
  const task = await w.getTask(id);
  if (task) return fromTask(w, task);
  const turn = (await turns()).find((r) => r.runId === id || r.requestId === id);
  if (turn) return turn;
  if (w.runRecord) {
    const own = agentRunRecord.safeParse(await w.runRecord(id));
    if (own.success && own.data) return fromAgent(id, own.data);
  }
  return null;
}

/** Answers reconciliation's question (FindRunsInput). */
export async function findRuns(w: AgentWork, input: FindRunsInput): Promise<FindRunsOutput> {
  let turnCache: Promise<FoundRun[]> | null = null;
  const turns = () => (turnCache ??= chatTurns(w, CHAT_SCAN));
  const found = new Map<string, FoundRun>();
  const missing: string[] = [];
  for (const id of new Set(input.ids ?? [])) {
    const r = await findOne(w, id, turns);
    if (r) found.set(id, r);
    else missing.push(id);
  }
  if (input.recent !== undefined) {
    const n = input.recent;
    const [fibers, tasks] = await Promise.all([w.listFibers({ limit: n }), w.listTasks({ limit: n })]);
    const recent = [
      ...runRows(w).slice(0, n).map(fromRow),
      ...fibers.map(fromFiber),
      ...tasks.map((t) => fromTask(w, t)),
      ...(w.listSubmissions ? (await w.listSubmissions({ limit: n })).map(fromSubmission) : []),
    ];
    // A managed fiber also has a row while it runs: its ledger record says more.
    for (const r of recent) if (!found.has(r.runId) || found.get(r.runId)!.source === "run_row") found.set(r.runId, r);
  }
  return { runs: [...found.values()], missing };
}
