import { type AgentRunRecord, agentRunRecord, type FindRunsOutput, type FoundRun } from "./contract.js";
import type { FiberRecord, FindRunRecords, RunRowRecord, SubmissionRecord, TaskWithStep } from "./records-contract.js";
import { CHAT_TURN_TASK, chatTurnRequestIdOf } from "./sdk-layout.js";

/**
 * Worker side of reconciliation's question: what the agent still records of its runs, in every state, built from
 * the records it read (records.ts, contract 7). One id is looked up in each place the SDK keeps a run (a live
 * cf_agents_runs row, `inspectFiber`, `tasks.get`, Think's submissions and the Tasks runs that carry chat turns),
 * then in the agent's own `adminRunRecord` hook; only an id none of them knows is `missing`. `recent` lists the
 * newest runs of each kind.
 */

const or = <T>(v: T | null | undefined): T | null => v ?? null;

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

function fromFiber(f: FiberRecord): FoundRun {
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

function fromTask({ task: t, step }: TaskWithStep): FoundRun {
  const chat = t.definition === CHAT_TURN_TASK;
  const requestId = chat && typeof t.metadata?.requestId === "string" ? t.metadata.requestId : null;
  return {
    runId: chat && requestId ? requestId : t.runId,
    kind: chat ? "chat_turn" : "task",
    source: "task",
    state: t.state,
    name: t.definition,
    definition: t.definition,
    requestId,
    ...(chat && requestId ? { taskId: t.runId } : {}),
    createdAt: t.createdAt,
    startedAt: or(t.startedAt),
    settledAt: or(t.settledAt),
    error: t.state === "failed" ? (t.error?.message ?? t.error?.name ?? null) : null,
    statusMessage: or(t.statusMessage),
    // The step it is at, or (failed, cancelled) the one it ended in; a completed run is past its steps.
    step: t.state === "completed" ? null : (step?.name ?? null),
    attempt: or(t.attempt),
    wakeAt: or(t.wakeAt),
  };
}

function fromSubmission(s: SubmissionRecord): FoundRun {
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

function fromRow(r: RunRowRecord): FoundRun {
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

/** Answers reconciliation's question (FindRunsInput) from the records the agent read for it. */
export function foundRunsOf(raw: FindRunRecords): FindRunsOutput {
  // The chat turns the agent knows by request id: Think's submissions, and the Tasks runs that carry turns.
  const turns = raw.turns ? [...raw.turns.submissions.map(fromSubmission), ...raw.turns.carriers.map(fromTask).filter((r) => r.requestId !== null)] : [];
  const found = new Map<string, FoundRun>();
  const missing: string[] = [];
  for (const { id, fiber, row, task, own } of raw.ids) {
    const parsed = agentRunRecord.safeParse(own);
    const r = fiber
      ? fromFiber(fiber)
      : row
        ? fromRow(row)
        : task
          ? fromTask(task)
          : (turns.find((t) => t.runId === id || t.requestId === id) ?? (parsed.success && parsed.data ? fromAgent(id, parsed.data) : null));
    if (r) found.set(id, r);
    else missing.push(id);
  }
  if (raw.recent) {
    const { rows, fibers, tasks, submissions } = raw.recent;
    const recent = [...rows.map(fromRow), ...fibers.map(fromFiber), ...tasks.map(fromTask), ...submissions.map(fromSubmission)];
    // A managed fiber also has a row while it runs: its ledger record says more.
    for (const r of recent) if (!found.has(r.runId) || found.get(r.runId)!.source === "run_row") found.set(r.runId, r);
  }
  return { runs: [...found.values()], missing };
}
